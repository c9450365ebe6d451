"""flash-attn's calling convention over ringrt.torch's ring attention:
``flash_attn_func``, ``flash_attn_varlen_func`` and their qkv-packed and
kv-packed forms, with flash-attn's argument names, positions, defaults and
return values, so code written for flash-attn (or ring-flash-attention)
changes its import only. Re-exported by :mod:`ringrt.torch`.

Differences (docs/python.md, "flash-attn's calling convention"): every rank
passes its shard of the sequence; varlen ``cu_seqlens`` are the GLOBAL
offsets of the packed documents (ring-flash-attention's are per rank);
``max_seqlen_*`` are accepted and not needed; ``deterministic`` is accepted
(ringrt is deterministic whatever it says). What ringrt does not implement
(``dropout_p != 0``, ``alibi_slopes``, ``block_table``,
``cu_seqlens_k`` other than ``cu_seqlens_q``) raises NotImplementedError
(``ringrt.errors.Unsupported``) on every rank, naming the argument.
``softcap`` > 0 soft-caps the scores as flash-attn does (<= 0 or None: off);
the keyword-only ``sinks`` (one logit per query head, differentiable) are
ringrt's attention sinks (:func:`ringrt.torch.ring_attention`).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import torch

from .context import Context
from .torch import CuSeqlens, _attention


def _unsupported(dropout_p: Any, softcap: Any, alibi_slopes: Any,
                 block_table: Any = None) -> Optional[str]:
    """The first flash-attn argument whose value ringrt does not implement
    (local; agreed by the caller), or None. cu_seqlens_k is checked by the
    operator (it may be a tensor: its values are read there)."""
    if not _is_zero(dropout_p, allow_negative=False):
        return (f"dropout_p={dropout_p!r}: ringrt attention has no dropout (pass 0.0; apply "
                "dropout outside attention if the model needs it)")
    if alibi_slopes is not None:
        return "alibi_slopes: ringrt attention has no ALiBi bias (pass None)"
    if block_table is not None:
        return "block_table: ringrt attention has no paged KV cache (pass None)"
    return None


def _softcap(softcap: Any) -> Any:
    """flash-attn's softcap as ring_attention takes it: None or <= 0 is
    off (None is what a ring-flash-attention call, which has no softcap,
    puts there positionally); anything else goes through (a non-number is
    refused there, on every rank)."""
    return None if _is_zero(softcap, allow_negative=True) else softcap


def _is_zero(value: Any, allow_negative: bool) -> bool:
    """value is 0 (or, for softcap, None or any value <= 0: flash-attn's
    "off"; None is what a ring-flash-attention call, which has no softcap,
    puts there positionally)."""
    if value is None and allow_negative:
        return True
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    return x <= 0.0 if allow_negative else x == 0.0


def _unpack(packed: Any, name: str, n: int, dim: int, ndim: int
            ) -> Tuple[Tuple[Any, ...], Optional[str]]:
    """The n tensors of a packed qkv (n=3) or kv (n=2) along `dim` (views:
    gradients flow back into `packed`), or placeholders and the problem."""
    want = "[batch, seqlen_local, {n}, heads, head_dim]" if ndim == 5 else \
        "[total_local, {n}, heads, head_dim]"
    if not isinstance(packed, torch.Tensor):
        return (packed,) * n, f"{name} is a {type(packed).__name__}, not a torch.Tensor"
    if packed.dim() != ndim or packed.shape[dim] != n:
        return (packed,) * n, (f"{name} has shape {tuple(packed.shape)}; expected "
                               + want.format(n=n))
    return packed.unbind(dim), None


def _result(o: torch.Tensor, lse: torch.Tensor, return_attn_probs: bool) -> Any:
    """flash-attn's return: out, or (out, softmax_lse, None) (no probabilities:
    S_dmask is only returned with dropout, which ringrt has not)."""
    return (o, lse, None) if return_attn_probs else o


def flash_attn_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float = 0.0,
                    softmax_scale: Optional[float] = None, causal: bool = False,
                    window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                    alibi_slopes: Any = None, deterministic: bool = False,
                    return_attn_probs: bool = False, *, ctx: Optional[Context] = None,
                    sinks: Optional[torch.Tensor] = None,
                    layout: str = "zigzag", cp_comm: str = "ring", qkv_format: str = "bshd",
                    allow_identical_shards: bool = False) -> Any:
    """flash-attn's ``flash_attn_func`` on this rank's shards
    ``[batch, seqlen_local, heads, head_dim]`` (collective).

    Returns ``out`` or, with `return_attn_probs`, ``(out, softmax_lse, None)``,
    softmax_lse float32 ``[batch, heads, seqlen_local]``. The keyword-only
    arguments are ringrt's (:func:`ringrt.torch.ring_attention`)."""
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes)
    o, lse = _attention("flash_attn_func", q, k, v, causal, layout, window_size, None,
                        softmax_scale, ctx, qkv_format, allow_identical_shards, unsupported,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)


def flash_attn_qkvpacked_func(qkv: torch.Tensor, dropout_p: float = 0.0,
                              softmax_scale: Optional[float] = None, causal: bool = False,
                              window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                              alibi_slopes: Any = None, deterministic: bool = False,
                              return_attn_probs: bool = False, *, ctx: Optional[Context] = None,
                              sinks: Optional[torch.Tensor] = None,
                              layout: str = "zigzag", cp_comm: str = "ring", allow_identical_shards: bool = False) -> Any:
    """flash_attn_func on ``qkv`` ``[batch, seqlen_local, 3, heads, head_dim]``."""
    (q, k, v), packing = _unpack(qkv, "qkv", 3, 2, 5)
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes)
    o, lse = _attention("flash_attn_qkvpacked_func", q, k, v, causal, layout, window_size, None,
                        softmax_scale, ctx, "bshd", allow_identical_shards, unsupported, packing,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)


def flash_attn_kvpacked_func(q: torch.Tensor, kv: torch.Tensor, dropout_p: float = 0.0,
                             softmax_scale: Optional[float] = None, causal: bool = False,
                             window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                             alibi_slopes: Any = None, deterministic: bool = False,
                             return_attn_probs: bool = False, *, ctx: Optional[Context] = None,
                             sinks: Optional[torch.Tensor] = None,
                             layout: str = "zigzag", cp_comm: str = "ring", allow_identical_shards: bool = False) -> Any:
    """flash_attn_func on ``q`` and ``kv`` ``[batch, seqlen_local, 2, heads_kv, head_dim]``."""
    (k, v), packing = _unpack(kv, "kv", 2, 2, 5)
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes)
    o, lse = _attention("flash_attn_kvpacked_func", q, k, v, causal, layout, window_size, None,
                        softmax_scale, ctx, "bshd", allow_identical_shards, unsupported, packing,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)


def flash_attn_varlen_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           cu_seqlens_q: CuSeqlens, cu_seqlens_k: CuSeqlens, max_seqlen_q: Any,
                           max_seqlen_k: Any, dropout_p: float = 0.0,
                           softmax_scale: Optional[float] = None, causal: bool = False,
                           window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                           alibi_slopes: Any = None, deterministic: bool = False,
                           return_attn_probs: bool = False, block_table: Any = None, *,
                           ctx: Optional[Context] = None, layout: str = "zigzag", cp_comm: str = "ring",
                           sinks: Optional[torch.Tensor] = None,
                           allow_identical_shards: bool = False) -> Any:
    """flash-attn's ``flash_attn_varlen_func`` on this rank's rows
    ``[total_local, heads, head_dim]`` of the packed documents whose GLOBAL
    offsets are `cu_seqlens_q` (= `cu_seqlens_k`); max_seqlen_* are not
    needed. Returns ``out`` or ``(out, softmax_lse, None)``, softmax_lse
    float32 ``[heads, total_local]``."""
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes, block_table)
    o, lse = _attention("flash_attn_varlen_func", q, k, v, causal, layout, window_size,
                        cu_seqlens_q, softmax_scale, ctx, "thd", allow_identical_shards,
                        unsupported, cu_seqlens_k=cu_seqlens_k,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv: torch.Tensor, cu_seqlens: CuSeqlens, max_seqlen: Any,
                                     dropout_p: float = 0.0,
                                     softmax_scale: Optional[float] = None, causal: bool = False,
                                     window_size: Tuple[int, int] = (-1, -1),
                                     softcap: float = 0.0, alibi_slopes: Any = None,
                                     deterministic: bool = False,
                                     return_attn_probs: bool = False, *,
                                     ctx: Optional[Context] = None, layout: str = "zigzag", cp_comm: str = "ring",
                                     sinks: Optional[torch.Tensor] = None,
                                     allow_identical_shards: bool = False) -> Any:
    """flash_attn_varlen_func on ``qkv`` ``[total_local, 3, heads, head_dim]``."""
    (q, k, v), packing = _unpack(qkv, "qkv", 3, 1, 4)
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes)
    o, lse = _attention("flash_attn_varlen_qkvpacked_func", q, k, v, causal, layout, window_size,
                        cu_seqlens, softmax_scale, ctx, "thd", allow_identical_shards,
                        unsupported, packing,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)


def flash_attn_varlen_kvpacked_func(q: torch.Tensor, kv: torch.Tensor, cu_seqlens_q: CuSeqlens,
                                    cu_seqlens_k: CuSeqlens, max_seqlen_q: Any,
                                    max_seqlen_k: Any, dropout_p: float = 0.0,
                                    softmax_scale: Optional[float] = None, causal: bool = False,
                                    window_size: Tuple[int, int] = (-1, -1),
                                    softcap: float = 0.0, alibi_slopes: Any = None,
                                    deterministic: bool = False,
                                    return_attn_probs: bool = False, *,
                                    ctx: Optional[Context] = None, layout: str = "zigzag", cp_comm: str = "ring",
                                    sinks: Optional[torch.Tensor] = None,
                                    allow_identical_shards: bool = False) -> Any:
    """flash_attn_varlen_func on ``q`` and ``kv`` ``[total_local, 2, heads_kv, head_dim]``."""
    (k, v), packing = _unpack(kv, "kv", 2, 1, 4)
    unsupported = _unsupported(dropout_p, softcap, alibi_slopes)
    o, lse = _attention("flash_attn_varlen_kvpacked_func", q, k, v, causal, layout, window_size,
                        cu_seqlens_q, softmax_scale, ctx, "thd", allow_identical_shards,
                        unsupported, packing, cu_seqlens_k,
                        softcap=_softcap(softcap), sinks=sinks, cp_comm=cp_comm)
    return _result(o, lse, return_attn_probs)

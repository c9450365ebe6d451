"""Ring attention for PyTorch: :func:`ring_attention` (autograd, flash-attn's
conventions), flash-attn's own functions over it (``flash_attn_func``,
``flash_attn_varlen_func``, the packed forms: ringrt/_flash_api.py) and the
layout helpers :func:`shard` / :func:`unshard`.

ring_attention and the flash-attn functions are Python fronts of the
``ringrt::ring_attn_fwd`` / ``ring_attn_bwd`` operators (torch.library
custom ops, ringrt/_torch_op.py): torch.compile traces them without a graph
break, and torch.autocast casts their inputs as it does SDPA's.

Every rank holds its shard of the sequence (``ringrt.torch.shard`` cuts a
global tensor the way the layout says); K/V travel around the ring of the
context's ranks. Calls are collective: every rank of the context calls them
in the same order, and ``backward`` of their results runs on every rank.

Inputs are validated on every rank and the outcome agreed before any
communication: a wrong dtype, device or shape on one rank raises on every
rank, naming that rank. Every rank passing identical q and k (the whole
sequence instead of its shard) raises on every rank too: a hash of sampled
elements rides on the gather each call makes anyway (``allow_identical_shards``
opts out). Inputs in another ``qkv_format`` than BSHD are transposed views.
Non-contiguous inputs are copied to contiguous ones
(silently, as flash-attn does). float64 is refused: the C library stores
attention tensors in float32, bfloat16 or float16 (accumulating in f32), so
``torch.autograd.gradcheck`` in float64 is not possible.

CUDA tensors (cuda backend): ringrt's work is ordered after the work queued
on torch's current stream and before what torch queues next, through
``rrt_ctx_set_stream`` (:func:`ringrt.streams.use_stream`, events, no
synchronise); with an older libringrt that lacks it, the current stream is
synchronised before each call and ringrt's streams after it.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import operator
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import torch

from . import _attn, _coll, _lib, errors
from .context import DEFAULT_KEY, Context, default_context

__all__ = ["ring_attention", "flash_attn_func", "flash_attn_qkvpacked_func",
           "flash_attn_kvpacked_func", "flash_attn_varlen_func",
           "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "shard",
           "unshard", "shard_positions", "last_stats"]

_DTYPES = {torch.float32: _attn.DTYPE_F32, torch.bfloat16: _attn.DTYPE_BF16,
           torch.float16: _attn.DTYPE_F16}
CuSeqlens = Union[torch.Tensor, Sequence[int], None]


# ---- validation (local; the caller agrees on the outcome) ----------------------
def _device_problem(ctx: Context, name: str, t: torch.Tensor,
                    device: Optional[torch.device] = None) -> Optional[str]:
    """Why tensor `t` (on `device`, default its own) cannot be used on this
    context's backend, or None."""
    backend, device = ctx.backend, device or t.device
    if backend == "cuda":
        want = _cuda_device(ctx)
        if device.type != "cuda" or device.index != want:
            return (f"{name} is on {device}, but the context's backend is cuda "
                    f"(device cuda:{want})")
    elif device.type != "cpu":
        return f"{name} is on {device}, but the context's backend is {backend} (CPU tensors)"
    return None


def _cuda_device(ctx: Context) -> int:
    """The CUDA ordinal of a cuda-backend context (asked once per context)."""
    dev = getattr(ctx, "_torch_device", None)
    if dev is None:
        dev = ctx._torch_device = int(ctx.info()["device"])  # type: ignore[attr-defined]
    return dev


def _dtype_problem(names: Sequence[str], ts: Sequence[torch.Tensor]) -> Optional[str]:
    for name, t in zip(names, ts):
        if t.dtype == torch.float64:
            return (f"{name} is float64, which ringrt attention does not store (float32, "
                    "bfloat16 or float16, accumulated in float32): cast with .float()")
        if t.dtype not in _DTYPES:
            return (f"{name} has dtype {t.dtype}; ringrt attention takes float32, bfloat16 or "
                    "float16")
    if len({t.dtype for t in ts}) > 1:
        return "q, k, v must have one dtype, got " + ", ".join(
            f"{n} {t.dtype}" for n, t in zip(names, ts))
    return None


#: qkv_format -> the two dims whose swap makes a 4-D tensor BSHD (ringrt's
#: native layout; the swap is its own inverse), and the sequence dim as the
#: user sees it.
_FORMATS = {"bshd": (None, 1), "sbhd": ((0, 1), 0), "bhsd": ((1, 2), 2), "thd": (None, 0)}
_FORMS = {"bshd": "[batch, seqlen_local, heads, head_dim]",
          "sbhd": "[seqlen_local, batch, heads, head_dim] (qkv_format 'sbhd')",
          "bhsd": "[batch, heads, seqlen_local, head_dim] (qkv_format 'bhsd')",
          "thd": "[total_local, heads, head_dim] (qkv_format 'thd')"}


def _format_of(qkv_format: Any, cu_seqlens: CuSeqlens) -> Tuple[str, Optional[str]]:
    """The tensor format (None: "thd" with cu_seqlens, else "bshd"), or the
    problem with it."""
    if qkv_format is None:
        return ("thd" if cu_seqlens is not None else "bshd"), None
    if not isinstance(qkv_format, str) or qkv_format not in _FORMATS:
        return "bshd", (f"unknown qkv_format {qkv_format!r} (bshd, sbhd, bhsd or thd)")
    if cu_seqlens is not None and qkv_format != "thd":
        return qkv_format, (f"cu_seqlens (packed documents) needs qkv_format 'thd' "
                            f"([total_local, heads, head_dim]), got {qkv_format!r}")
    return qkv_format, None


def _swap(t: torch.Tensor, fmt: str) -> torch.Tensor:
    """A 4-D tensor in `fmt` as a BSHD view, or a BSHD one back in `fmt`
    (tensors of another rank are left for the shape check to report)."""
    dims = _FORMATS[fmt][0]
    return t.transpose(*dims) if dims is not None and t.dim() == 4 else t


def _shape_problem(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   fmt: str) -> Optional[str]:
    """Checks BSHD views (3-D for "thd"); shapes are reported as passed."""
    def shown(t: torch.Tensor) -> Tuple[int, ...]:
        return tuple(_swap(t, fmt).shape)

    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != (3 if fmt == "thd" else 4):
            return f"{name} has shape {shown(t)}; expected {_FORMS[fmt]}"
    if k.shape != v.shape:
        return f"k has shape {shown(k)} but v has {shown(v)}: they must be equal"
    if q.shape[:-2] != k.shape[:-2] or q.shape[-1] != k.shape[-1]:
        return (f"q has shape {shown(q)} and k {shown(k)}: they must agree in every "
                "dimension but heads (k/v may have fewer heads: GQA/MQA)")
    return None


def _cu_tuple(cu: CuSeqlens) -> Tuple[Optional[Tuple[int, ...]], Optional[str]]:
    """cu_seqlens as a tuple of ints, or the problem with it."""
    if cu is None:
        return None, None
    if isinstance(cu, torch.Tensor):
        if cu.dim() != 1 or cu.dtype not in (torch.int32, torch.int64):
            return None, (f"cu_seqlens must be a 1-D int32 or int64 tensor, got shape "
                          f"{tuple(cu.shape)} {cu.dtype}")
        return tuple(int(x) for x in cu.tolist()), None
    try:
        return tuple(operator.index(x) for x in cu), None
    except TypeError:
        return None, f"cu_seqlens must be a tensor or a sequence of ints, got {cu!r:.80}"


def _window_tuple(window: Any) -> Tuple[Tuple[int, int], Optional[str]]:
    try:
        left, right = (operator.index(w) for w in window)
        return (left, right), None
    except (TypeError, ValueError):
        return (-1, -1), f"window must be a pair of ints (left, right), got {window!r}"


def _scale_value(scale: Any) -> Tuple[float, Optional[str]]:
    """0.0 (the library's 1/sqrt(head_dim)) for None; the C check refuses
    negative, zero, NaN and infinite scales."""
    if scale is None:
        return 0.0, None
    try:
        value = float(scale)
    except (TypeError, ValueError):
        return 0.0, f"scale must be a number or None, got {scale!r}"
    if value == 0.0:
        return 0.0, "scale must be > 0 (None for 1/sqrt(head_dim))"
    return value, None


def _softcap_value(softcap: Any) -> Tuple[float, Optional[str]]:
    """0.0 (off) for None; the C check refuses negative, NaN and infinite
    values, naming them."""
    if softcap is None:
        return 0.0, None
    try:
        return float(softcap), None
    except (TypeError, ValueError):
        return 0.0, f"softcap must be a number or None, got {softcap!r}"


def _sinks_problem(sinks: Any, q: torch.Tensor) -> Optional[str]:
    """sinks: a floating tensor of one logit per query head, on q's device."""
    if sinks is None:
        return None
    if not isinstance(sinks, torch.Tensor):
        return f"sinks is a {type(sinks).__name__}, not a torch.Tensor"
    heads = q.shape[2] if q.dim() == 4 else -1
    if not sinks.is_floating_point() or sinks.dim() != 1 or sinks.shape[0] != heads:
        return (f"sinks must be a floating tensor of one logit per query head ({heads}), got "
                f"{sinks.dtype} of shape {tuple(sinks.shape)}")
    if sinks.device != q.device:
        return f"sinks is on {sinks.device}, q on {q.device}"
    return None


def _layout_code(layout: Any) -> Tuple[int, Optional[str]]:
    code = _attn.parse_layout(layout)
    if code is None:
        return 0, f"unknown layout {layout!r} (contiguous, zigzag or stripe)"
    return code, None


def _cp_code(cp_comm: str) -> Tuple[int, Optional[str]]:
    code = _attn.parse_cp_comm(cp_comm)
    if code is None:
        return 0, f"unknown cp_comm {cp_comm!r} (ring, a2a, allgather, a2a+ring or auto)"
    return code, None


def _invalid(message: str) -> errors.InvalidArgument:
    """The exception of a check whose outcome every rank already knows."""
    return errors.InvalidArgument(errors.INVALID_ARG, message, "RRT_ERR_INVALID_ARG")


def _first(*problems: Optional[str]) -> Optional[str]:
    return next((p for p in problems if p), None)


def _check_rows(op: str, key: _attn.Key, rows: List[int], nranks: int, what: str) -> None:
    """Raise (on every rank: `rows` is the same everywhere) when a rank's
    shard does not have the rows the layout gives it."""
    want = _attn.shard_lens(key, nranks)
    bad = [r for r in range(nranks) if rows[r] != want[r]]
    if bad:
        r = bad[0]
        layout = ("contiguous", "zigzag", "stripe")[key.layout]
        cu = key.cu_seqlens
        docs = f" in {len(cu) - 1} documents (cu_seqlens)" if cu is not None else ""
        msg = (f"{op}: rank {r} passes {rows[r]} rows ({what}), but the {layout} layout of the "
               f"{key.seq}-token sequence{docs} over {nranks} ranks gives rank {r} {want[r]} "
               f"(every rank's rows: {rows}; expected {want}; ringrt.torch.shard cuts a global "
               "tensor so)")
        if cu is not None and nranks > 1 and cu[-1] == rows[r]:
            msg += ("; cu_seqlens must be the GLOBAL offsets of the packed documents (these "
                    "end at this rank's row count: ring-flash-attention passes per-rank ones)")
        raise _invalid(msg)


# ---- the identical-shards check ---------------------------------------------------
_PROBE_SAMPLES = 32


def _probe(ctx: Context, key: _attn.Key, q: torch.Tensor, k: torch.Tensor, skip: bool) -> int:
    """A hash of this rank's inputs for the identical-shards check, or -1
    (no check: opted out, an empty shard, or a CUDA problem already probed).

    Every rank passing the same q and k means every rank passed the whole
    sequence (or one shard) instead of its own shard: a result for a
    sequence P times longer, silently. A few evenly spaced elements of q and
    k plus the shape tell shards apart (different tokens differ) for a few
    microseconds. Reading CUDA tensors waits for them, so on the cuda
    backend each problem is probed on its first call only: the mistake is
    structural and shows there."""
    if skip or q.numel() == 0:
        return -1
    if q.device.type == "cuda":
        probed, tag = _attn.cache_of(ctx).probed, _attn.key_hash(key)
        if tag in probed:
            return -1
        probed.add(tag)
    digest = hashlib.blake2b(repr((tuple(q.shape), tuple(k.shape))).encode(), digest_size=8)
    for t in (q, k):
        digest.update(_sample(t))
    return int.from_bytes(digest.digest(), "little") >> 1  # non-negative: -1 means none


def _sample(t: torch.Tensor) -> bytes:
    """The bytes of about _PROBE_SAMPLES evenly spaced elements of a
    contiguous tensor (as float32: exact for every storage type)."""
    flat = t.detach().reshape(-1)
    picked = flat[::max(1, flat.numel() // _PROBE_SAMPLES)][:_PROBE_SAMPLES]
    return picked.float().cpu().numpy().tobytes()


def _check_identical(op: str, probes: List[int], nranks: int) -> None:
    """Raise (on every rank: `probes` is the same everywhere) when every rank
    of a ring of 2 or more passed identical inputs. A rank that opted out
    sends -1, so a partial opt-out disables the check on every rank alike."""
    if nranks < 2 or probes[0] < 0 or any(p != probes[0] for p in probes):
        return
    raise _invalid(
        f"{op}: every one of the {nranks} ranks passed identical q and k: each rank must pass "
        "its own shard of the sequence, not the whole sequence (which would be read as one "
        f"{nranks} times longer). Cut global tensors with ringrt.torch.shard(x, layout=...) "
        "(and positions with ringrt.torch.shard_positions); if identical shards are really "
        "meant, pass allow_identical_shards=True")


# ---- ordering with torch's CUDA stream ------------------------------------------
def _stream_api() -> Optional[Any]:
    """ringrt.streams where the loaded library has rrt_ctx_set_stream (an
    older libringrt has not: importing ringrt.streams would then fail)."""
    if not hasattr(_lib.lib(), "rrt_ctx_set_stream"):
        return None
    from . import streams
    return streams


@contextlib.contextmanager
def _on_torch_stream(ctx: Context, device: torch.device) -> Iterator[None]:
    """Order ringrt's work on a cuda context with torch's current stream:
    queued after the stream's work and before what torch queues next
    (rrt_ctx_set_stream: events, no synchronise); with an older library,
    synchronise the stream before and ringrt's streams after."""
    if device.type != "cuda":
        yield
        return
    stream = torch.cuda.current_stream(device)
    streams = _stream_api()
    if streams is not None:
        with streams.use_stream(ctx, stream):
            yield
        return
    stream.synchronize()
    yield
    ctx.check(_lib.lib().rrt_synchronize(ctx.handle), "rrt_synchronize")


def _addr(t: torch.Tensor, scratch: List[torch.Tensor]) -> int:
    """The address of a contiguous tensor; an empty shard gets a one-element
    scratch buffer instead of NULL (the C API refuses NULL tensors)."""
    if t.numel() > 0:
        return t.data_ptr()
    scratch.append(torch.empty(1, dtype=t.dtype, device=t.device))
    return scratch[-1].data_ptr()


# ---- ring attention ---------------------------------------------------------------
def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                   layout: str = "zigzag", window: Tuple[int, int] = (-1, -1),
                   cu_seqlens: CuSeqlens = None, scale: Optional[float] = None,
                   ctx: Optional[Context] = None, return_lse: bool = False, *,
                   qkv_format: Optional[str] = None, allow_identical_shards: bool = False,
                   softcap: Optional[float] = None, sinks: Optional[torch.Tensor] = None,
                   cp_comm: str = "ring"
                   ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Softmax attention over a sequence split across the context's ranks
    (collective, differentiable in q, k, v and `sinks`).

    Args:
        q: this rank's query shard, ``[batch, seqlen_local, heads, head_dim]``
            (flash-attn's layout; see `qkv_format` for others), or
            ``[total_local, heads, head_dim]`` with `cu_seqlens`; float32,
            bfloat16 or float16.
        k: this rank's key shard, q's shape but possibly fewer heads (GQA/MQA:
            heads % heads_kv == 0).
        v: this rank's value shard, k's shape.
        causal: a query sees keys at global positions <= its own.
        layout: how the sequence is split: "zigzag" (balanced causal work),
            "contiguous" or "stripe"; :func:`shard` cuts a global tensor so.
        window: flash-attn's ``window_size`` (left, right); -1 is unlimited.
        cu_seqlens: global offsets of packed documents (flash-attn's varlen
            ``cu_seqlens``, int32/int64 tensor or list); attention stays
            within a document. The global length is ``cu_seqlens[-1]``;
            without it, the sum of the ranks' shard lengths.
        scale: softmax scale (default ``1 / sqrt(head_dim)``).
        ctx: the ringrt context (default :func:`ringrt.default_context`).
        return_lse: also return the log-sum-exp of each row's scaled scores,
            float32 ``[batch, heads, seqlen_local]`` (varlen:
            ``[heads, total_local]``), as flash-attn's softmax_lse; not
            differentiable.
        qkv_format: the dims of q, k, v and of the output: "bshd" (the
            default; flash-attn's), "sbhd" (Megatron/TransformerEngine),
            "bhsd" (``F.scaled_dot_product_attention``'s) or "thd" (packed,
            the default with `cu_seqlens`; without them one sequence).
            Other formats are transposed views of BSHD (copied once).
        allow_identical_shards: skip the check that raises when every rank
            passes identical q and k (the whole sequence instead of its shard).
        softcap: logit soft-capping (Gemma 2, flash-attn's ``softcap``): > 0
            replaces each scaled score s by ``softcap * tanh(s / softcap)``
            before the mask; None or 0 is off, negative an error.
        sinks: attention sinks (gpt-oss, TransformerEngine's learnable
            softmax offset): a floating tensor ``[heads]`` on q's device, one
            logit per query head that joins every row's softmax denominator
            (not the output); the same values on every rank. Its gradient
            (summed over every rank's rows) flows back to it; the lse
            returned includes it.
        cp_comm: how the ranks share the work (docs/attn.md, "Context-parallel
            modes"): "ring" (K/V blocks around the ring), "a2a" (Ulysses:
            heads % ranks == 0), "allgather" (all-gathered K/V) or "auto"
            (the cost model's choice); the same result within the dtype's
            rounding, the same on every rank.

    Returns:
        o, this rank's output shard in q's shape, format and dtype (and lse).

    Raises:
        ringrt.errors.InvalidArgument: (on every rank) a bad dtype, device,
            shape, qkv_format, layout, window or cu_seqlens on any rank, shard
            lengths that are not the layout's, arguments that differ between
            ranks, or identical inputs on every rank of a ring of 2 or more.
    """
    o, lse = _attention("ring_attention", q, k, v, causal, layout, window, cu_seqlens, scale,
                        ctx, qkv_format, allow_identical_shards, softcap=softcap, sinks=sinks,
                        cp_comm=cp_comm)
    return (o, lse) if return_lse else o


def _attention(op: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
               layout: str, window: Any, cu_seqlens: CuSeqlens, scale: Any,
               ctx: Optional[Context], qkv_format: Optional[str], allow_identical: bool,
               unsupported: Optional[str] = None, packing_problem: Optional[str] = None,
               cu_seqlens_k: CuSeqlens = None, softcap: Any = None,
               sinks: Optional[torch.Tensor] = None, cp_comm: str = "ring"
               ) -> Tuple[torch.Tensor, torch.Tensor]:
    """ring_attention's work, (o, lse), for every front: `op` names the
    caller in messages; `unsupported` is a flash-attn argument ringrt does
    not implement, agreed with the other checks and raised as
    NotImplementedError on every rank; `packing_problem` what is wrong with
    a packed qkv/kv tensor (q, k, v are then placeholders); `cu_seqlens_k`
    flash-attn's key offsets when they are another object than
    `cu_seqlens` (they must hold the same values).

    This front is plain Python that torch.compile traces: it reads the
    arguments, turns q, k, v into contiguous BSHD tensors (views and
    copies) and calls the ``ringrt::ring_attn_fwd`` operator
    (ringrt/_torch_op.py), which validates, agrees with the other ranks,
    plans and runs. Problems found here travel into the operator as strings
    so that they are agreed there with everything else."""
    ctx_key = DEFAULT_KEY if ctx is None else ctx.key
    fmt, fmt_problem = _format_of(qkv_format, cu_seqlens)
    problem = packing_problem
    for name, t in (("q", q), ("k", k), ("v", v)):
        if problem is None and not isinstance(t, torch.Tensor):
            problem = f"{name} is a {type(t).__name__}, not a torch.Tensor"
    cu_t, cu_l, cu_problem = _cu_arg(cu_seqlens)
    cu_k_t, cu_k_l, cu_k_problem = (None, None, None) if cu_seqlens_k is cu_seqlens \
        else _cu_arg(cu_seqlens_k)
    if unsupported is None and cu_k_problem is not None:
        unsupported = _CU_K_DIFFERS
    (wl, wr), win_problem = _window_tuple(window)
    if isinstance(layout, str):
        layout_name = layout
    else:
        layout_name, win_problem = "", win_problem or _layout_code(layout)[1]
    scale_value, scale_problem = _scale_value(scale)
    softcap_value, softcap_problem = _softcap_value(softcap)
    scale_problem = scale_problem or softcap_problem
    varlen = fmt == "thd"
    meta = ""
    if problem is None:
        # Meta tensors would run the operator's shape function, not its
        # checks: CPU stand-ins go in instead, with their names.
        meta = "".join(n for n, t in (("q", q), ("k", k), ("v", v)) if t.device.type == "meta")
        if meta:
            q, k, v = (torch.empty_like(t, device="cpu") if t.device.type == "meta" else t
                       for t in (q, k, v))
        q, k, v = (_swap(t, fmt).contiguous() for t in (q, k, v))
        if varlen:
            q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
    else:
        q = k = v = torch.empty(0)
    o, lse, _seq = torch.ops.ringrt.ring_attn_fwd(
        q, k, v, cu_t, cu_l, cu_k_t, cu_k_l, ctx_key, op, fmt, layout_name, bool(causal), wl,
        wr, scale_value, bool(allow_identical), meta, problem or "",
        _first(cu_problem, fmt_problem) or "", win_problem or "", scale_problem or "",
        unsupported or "", softcap_value, sinks,
        cp_comm if isinstance(cp_comm, str) else repr(cp_comm))
    if varlen:
        o, lse = o.squeeze(0), lse.squeeze(0)
    return _swap(o, fmt), lse


#: The message of cu_seqlens_k holding other offsets than cu_seqlens_q.
_CU_K_DIFFERS = ("cu_seqlens_k differs from cu_seqlens_q: ringrt attends within the same packed "
                 "documents for queries and keys (pass the same offsets for both)")


def _cu_arg(cu: CuSeqlens) -> Tuple[Optional[torch.Tensor], Optional[List[int]], Optional[str]]:
    """cu_seqlens as the operator takes it: a tensor stays a tensor (read in
    the operator, so that a compiled graph does not break on its values); a
    sequence becomes a list of ints (a constant of the graph), or a problem."""
    if cu is None or isinstance(cu, torch.Tensor):
        return cu, None, None
    values, problem = _cu_tuple(cu)
    return None, (list(values) if values is not None else None), problem


def _agree(ctx: Context, unsupported: Optional[str], problem: Optional[str], op: str) -> None:
    """One agreement on both kinds of problem: an unsupported argument
    raises ringrt.errors.Unsupported (a NotImplementedError) on every rank,
    any other problem InvalidArgument / RemoteError as everywhere else."""
    status = errors.UNSUPPORTED if unsupported else errors.INVALID_ARG
    try:
        ctx.agree(unsupported or problem, op, status)
    except (errors.Unsupported, errors.RemoteError) as e:
        # Messages carry the failing rank's status (rrt_error; rrt_agree
        # forwards it): in this agreement only an unsupported argument has
        # it. The library's "not supported by this build" would send the
        # reader to rebuild, so it is reworded.
        name = (_lib.lib().rrt_status_string(errors.UNSUPPORTED) or b"").decode()
        if not name or f"({name})" not in e.message:
            raise
        text = e.message.replace(f"({name})", "(not implemented by ringrt)")
        raise errors.Unsupported(errors.UNSUPPORTED, text, "RRT_ERR_UNSUPPORTED") from e


def last_stats(ctx: Optional[Context] = None) -> dict:
    """Statistics of the context's most recent ring attention run (this rank):
    times (total, compute, comm, exposed comm), the share of communication
    hidden behind compute, bytes sent, FLOPs and ring steps
    (rrt_attn_plan_stats)."""
    ctx = ctx or default_context()
    plan = _attn.cache_of(ctx).last
    if plan is None:
        raise ValueError("no ring attention has run on this context")
    return plan.stats()


# ---- layout helpers -------------------------------------------------------------
def _layout_key(layout: str, seq: int, cu_seqlens: CuSeqlens) -> Tuple[_attn.Key, Optional[str]]:
    code, layout_problem = _layout_code(layout)
    cu, cu_problem = _cu_tuple(cu_seqlens)
    return _attn.layout_key(seq, code, cu), _first(layout_problem, cu_problem)


def _valid_layout_key(op: str, ctx: Context, layout: str, seq: int,
                      cu_seqlens: CuSeqlens) -> _attn.Key:
    """The layout key of a local helper, or InvalidArgument (raised locally:
    the helpers do not communicate)."""
    key, problem = _layout_key(layout, seq, cu_seqlens)
    problem = problem or _attn.desc_problem(key, ctx.size)
    if problem:
        raise _invalid(f"{op}: {problem}")
    return key


def shard(x: torch.Tensor, layout: str = "zigzag", cu_seqlens: CuSeqlens = None, dim: int = 1,
          ctx: Optional[Context] = None) -> torch.Tensor:
    """This rank's rows of a global tensor along `dim` (the sequence dim:
    1 for ``[batch, seq, heads, head_dim]``, 0 for packed varlen), in the
    order :func:`ring_attention` wants them (rrt_attn_shard_positions).

    Local (no communication); differentiable: the gradient of `x` holds
    this rank's rows (zeros elsewhere).

    Raises:
        ringrt.errors.InvalidArgument: a bad layout or cu_seqlens, or a
            cu_seqlens whose last offset is not ``x.shape[dim]``.
    """
    ctx = ctx or default_context()
    key = _valid_layout_key("shard", ctx, layout, x.shape[dim], cu_seqlens)
    return x.index_select(dim, _positions(key, ctx, ctx.rank, x.device))


def _positions(key: _attn.Key, ctx: Context, rank: int, device: torch.device) -> torch.Tensor:
    """Global positions of `rank`'s rows as an int64 tensor on `device`."""
    return torch.from_numpy(_attn.shard_positions(key, ctx.size, rank)).to(device)


def shard_positions(seqlen: int, layout: str = "zigzag", cu_seqlens: CuSeqlens = None,
                    ctx: Optional[Context] = None) -> torch.Tensor:
    """Global (packed) positions of this rank's rows, int64 (for RoPE
    position ids, labels, ...): ``shard(x)`` is ``x[:, shard_positions(S)]``."""
    ctx = ctx or default_context()
    key = _valid_layout_key("shard_positions", ctx, layout, seqlen, cu_seqlens)
    return _positions(key, ctx, ctx.rank, torch.device("cpu"))


class _Unshard(torch.autograd.Function):
    """Rank-ordered gather of the shards (seq dim first), scattered to
    global positions. Backward: the gradient summed over ranks (the losses
    of every rank's replica add up), this rank's rows of it."""

    @staticmethod
    def forward(fctx: Any, x: torch.Tensor, ctx: Context, key: _attn.Key,
                rows: List[int]) -> torch.Tensor:
        rest = x.shape[1:]
        row_bytes = math.prod(rest) * x.element_size()
        gathered = torch.empty((sum(rows),) + tuple(rest), dtype=x.dtype, device=x.device)
        scratch: List[torch.Tensor] = []
        with _on_torch_stream(ctx, x.device):
            _coll.allgatherv(ctx, x.data_ptr() if x.numel() else 0, rows[ctx.rank] * row_bytes,
                             _addr(gathered, scratch), [r * row_bytes for r in rows])
        pos = torch.cat([_positions(key, ctx, r, x.device) for r in range(ctx.size)])
        out = torch.empty_like(gathered)
        out[pos] = gathered
        fctx.ctx, fctx.mine = ctx, _positions(key, ctx, ctx.rank, x.device)
        return out

    @staticmethod
    def backward(fctx: Any, grad: torch.Tensor) -> Tuple[Any, ...]:
        g = grad.to(torch.float64 if grad.dtype == torch.float64 else torch.float32).contiguous()
        code = _coll.REDUCE_F64 if g.dtype == torch.float64 else _coll.REDUCE_F32
        scratch: List[torch.Tensor] = []
        with _on_torch_stream(fctx.ctx, g.device):
            _coll.allreduce_sum(fctx.ctx, _addr(g, scratch), g.numel(), code)
        return g[fctx.mine].to(grad.dtype), None, None, None


def unshard(x: torch.Tensor, layout: str = "zigzag", cu_seqlens: CuSeqlens = None, dim: int = 1,
            ctx: Optional[Context] = None) -> torch.Tensor:
    """The global tensor from every rank's shard (the inverse of
    :func:`shard`), on every rank. Collective (ringrt's allgatherv, so
    waits have the context's timeout).

    Differentiable: the gradient of the shard is the sum over ranks of the
    gradients of their global copies, at this rank's rows (so a loss summed
    over ranks gets the right gradient); backward is then collective too.

    Raises:
        ringrt.errors.InvalidArgument: (on every rank) a bad layout, dim,
            device or cu_seqlens on any rank, shards that differ in dtype or
            in a dimension other than `dim`, or shard lengths that are not
            the layout's.
    """
    ctx = ctx or default_context()
    problem = None if isinstance(x, torch.Tensor) else f"x is a {type(x).__name__}, not a tensor"
    if problem is None:
        problem = _device_problem(ctx, "x", x)
        if not -x.dim() <= dim < x.dim():
            problem = f"dim {dim} is out of range for a {x.dim()}-D tensor"
    key, key_problem = _layout_key(layout, -1, cu_seqlens)
    ctx.agree(_first(problem, key_problem), "unshard")
    xt = x.movedim(dim, 0).contiguous()
    what = (tuple(xt.shape[1:]), str(xt.dtype), dim % x.dim(), key)
    gathered = _coll.allgather_ints(ctx, [xt.shape[0], _attn.key_hash(what)])
    rows = [g[0] for g in gathered]
    if any(g[1] != gathered[0][1] for g in gathered):
        bad = next(r for r, g in enumerate(gathered) if g[1] != gathered[0][1])
        raise _invalid(
            f"unshard: rank {bad}'s shard differs from rank 0's in dtype, dim, a dimension "
            f"other than dim, layout or cu_seqlens (this rank {ctx.rank}: shape "
            f"{tuple(x.shape)}, {x.dtype}, dim {dim}, layout {layout!r})")
    key = _attn.with_seq(key, rows)
    problem = _attn.desc_problem(key, ctx.size)
    if problem:  # the same on every rank (same key everywhere)
        raise _invalid(f"unshard: {problem}")
    _check_rows("unshard", key, rows, ctx.size, f"x.shape[{dim}]")
    return _Unshard.apply(xt, ctx, key, rows).movedim(0, dim)


# The ringrt::ring_attn_fwd / ring_attn_bwd operators _attention calls.
from . import _torch_op  # noqa: E402,F401

# flash-attn's calling convention (a front of the same ring_attention).
from ._flash_api import (flash_attn_func, flash_attn_kvpacked_func,  # noqa: E402
                         flash_attn_qkvpacked_func, flash_attn_varlen_func,
                         flash_attn_varlen_kvpacked_func, flash_attn_varlen_qkvpacked_func)
from . import _torch_hf as hf  # noqa: E402  (Hugging Face transformers: ringrt.torch.hf)

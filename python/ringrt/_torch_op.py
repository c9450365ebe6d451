"""The ring attention operators of ringrt.torch, registered with
``torch.library.custom_op`` so that ``torch.compile`` traces a model that
calls ring attention without a graph break:

- ``ringrt::ring_attn_fwd(q, k, v, ...) -> (o, lse, seq)``: validates on
  this rank, agrees the outcome with every rank, finds (or creates,
  collectively) the plan, runs the ring forward. ``seq`` is the global
  sequence length (an int64 scalar on the CPU) that the backward needs to
  find the same plan again.
- ``ringrt::ring_attn_bwd(q, k, v, o, lse, do, seq, ...) -> (dq, dk, dv)``.

Both take only tensors and plain scalars: the context is named by its key
in ringrt's registry of live contexts (:func:`ringrt.context.context_of_key`;
-1 is the default context) and the plan by its problem (the plan cache of
the context, ringrt/_attn.py). What cannot be a tensor or a scalar is
rebuilt from them inside the operators, so a compiled graph holds ints,
floats, strings and tensors only.

Registered here: the real implementations (eager: the same C calls, so the
same bits, as the autograd.Function they replace), the fake (shape)
functions torch.compile traces with, the autograd formula and an autocast
rule (under ``torch.autocast`` floating inputs other than float64 run in
the autocast dtype of their device, as ``scaled_dot_product_attention``
does; the gradients flow back through the casts).

The ring is collective: every rank must run the same operators in the same
order, which a model compiled the same way on every rank does (the graph
and its order are the same on every rank; two calls on identical inputs
may be merged by the compiler, on every rank alike).
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import torch

from . import _attn
from .context import context_of_key
from .torch import (_DTYPES, _CU_K_DIFFERS, _FORMATS, _addr, _agree, _check_identical,
                    _sinks_problem,
                    _check_rows, _cu_tuple, _device_problem, _dtype_problem, _first,
                    _cp_code, _layout_code, _on_torch_stream, _probe, _shape_problem)

Tensor = torch.Tensor
_META = torch.device("meta")


# ---- forward ----------------------------------------------------------------------
@torch.library.custom_op("ringrt::ring_attn_fwd", mutates_args=())
def ring_attn_fwd(q: Tensor, k: Tensor, v: Tensor, cu_t: Optional[Tensor],
                  cu_l: Optional[List[int]], cu_k_t: Optional[Tensor],
                  cu_k_l: Optional[List[int]], ctx_key: int, op: str, fmt: str, layout: str,
                  causal: bool, window_left: int, window_right: int, scale: float,
                  allow_identical: bool, meta: str, input_problem: str, arg_problem: str,
                  window_problem: str, scale_problem: str, unsupported: str, softcap: float,
                  sinks: Optional[Tensor], cp_comm: str = "ring"
                  ) -> Tuple[Tensor, Tensor, Tensor]:
    """Ring attention forward of contiguous BSHD q, k, v (batch-1 views for
    varlen, fmt "thd"). The *_problem strings are what the Python front
    found wrong (empty: nothing), agreed here in the order ring_attention
    has always reported them; `unsupported` a flash-attn argument ringrt
    does not implement (NotImplementedError on every rank); `meta` names
    the inputs that were meta tensors (CPU stand-ins here, see _attention).
    `softcap` (0 off) and `sinks` (None, or one logit per query head) are
    the softmax variants (attn.h, version 3)."""
    ctx = context_of_key(ctx_key)
    cu, cu_problem = _cu_tuple(cu_t) if cu_t is not None else (
        tuple(cu_l) if cu_l is not None else None, None)
    code, layout_problem = _layout_code(layout) if layout else (0, None)
    cp_code, cp_problem = _cp_code(cp_comm)
    problem = input_problem or None
    if problem is None:
        # Checked as the user passed them: BSHD views (3-D for "thd").
        qv, kv, vv = (t.squeeze(0) for t in (q, k, v)) if fmt == "thd" else (q, k, v)
        problem = _first(cu_problem, arg_problem, _dtype_problem("qkv", (qv, kv, vv)),
                         _shape_problem(qv, kv, vv, fmt),
                         *(_device_problem(ctx, n, t, _META if n in meta else None)
                           for n, t in zip("qkv", (qv, kv, vv))),
                         window_problem, layout_problem, scale_problem,
                         _sinks_problem(sinks, q), cp_problem)
    _agree(ctx, unsupported or _cu_k_problem(cu, cu_k_t, cu_k_l), problem, op)

    key = _attn.Key(q.shape[0], -1, q.shape[2], k.shape[2], q.shape[3], scale, int(causal), code,
                    _DTYPES[q.dtype], window_left, window_right, cu, softcap,
                    int(sinks is not None), cp_code)
    probe = _probe(ctx, key, q, k, allow_identical)
    plan, key, rows, probes = _attn.plan_for(ctx, key, q.shape[1], probe)
    _check_identical(op, probes, ctx.size)
    _check_rows(op, key, rows, ctx.size, f"q.shape[{_FORMATS[fmt][1]}]")
    o = torch.empty_like(q)
    lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32, device=q.device)
    scratch: List[Tensor] = []
    sinks32 = None if sinks is None else sinks.detach().to(torch.float32).contiguous()
    with _on_torch_stream(ctx, q.device):
        plan.run(*(_addr(t, scratch) for t in (q, k, v, o, lse)),
                 sinks=None if sinks32 is None else sinks32.data_ptr())
    return o, lse, torch.tensor(key.seq, dtype=torch.int64)


def _cu_k_problem(cu: Optional[Tuple[int, ...]], cu_k_t: Optional[Tensor],
                  cu_k_l: Optional[List[int]]) -> Optional[str]:
    """flash-attn's cu_seqlens_k (given only when it is another object than
    cu_seqlens_q) must hold the same offsets."""
    if cu_k_t is None and cu_k_l is None:
        return None
    cu_k, problem = _cu_tuple(cu_k_t) if cu_k_t is not None else (tuple(cu_k_l or ()), None)
    return _CU_K_DIFFERS if problem or cu_k != cu else None


@ring_attn_fwd.register_fake
def _ring_attn_fwd_fake(q: Tensor, k: Tensor, v: Tensor, *args: Any
                        ) -> Tuple[Tensor, Tensor, Tensor]:
    # Shapes only: the real operator raises on bad input (on every rank),
    # so a bad shape here still gives outputs rather than a local error.
    shape = (q.shape[0], q.shape[2], q.shape[1]) if q.dim() == 4 else (0,)
    return (torch.empty_like(q), q.new_empty(shape, dtype=torch.float32),
            torch.empty((), dtype=torch.int64, device="cpu"))


# ---- backward ---------------------------------------------------------------------
@torch.library.custom_op("ringrt::ring_attn_bwd", mutates_args=())
def ring_attn_bwd(q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, do: Tensor,
                  seq: Tensor, cu_t: Optional[Tensor], cu_l: Optional[List[int]], ctx_key: int,
                  layout: str, causal: bool, window_left: int, window_right: int,
                  scale: float, softcap: float, sinks: Optional[Tensor], cp_comm: str = "ring"
                  ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """dq, dk, dv and dsinks (float32 [heads_q]; empty without sinks) of
    ring_attn_fwd's output (the forward's arguments, saved tensors and
    global length `seq`): the plan is the forward's, found again in the
    context's cache by the same key (every rank's cache holds the same
    plans, so a plan evicted since the forward is recreated on every rank
    alike)."""
    ctx = context_of_key(ctx_key)
    cu = _cu_tuple(cu_t)[0] if cu_t is not None else (tuple(cu_l) if cu_l is not None else None)
    key = _attn.Key(q.shape[0], int(seq), q.shape[2], k.shape[2], q.shape[3], scale,
                    int(causal), _layout_code(layout)[0], _DTYPES[q.dtype], window_left,
                    window_right, cu, softcap, int(sinks is not None), _cp_code(cp_comm)[0])
    plan = _attn.cache_of(ctx).get(ctx, key)
    do = do.to(o.dtype).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    heads = q.shape[2] if sinks is not None else 0
    dsinks = torch.empty(heads, dtype=torch.float32, device=q.device)
    sinks32 = None if sinks is None else sinks.to(torch.float32).contiguous()
    scratch: List[Tensor] = []
    with _on_torch_stream(ctx, q.device):
        plan.run_bwd(*(_addr(t, scratch) for t in (q, k, v, o, lse, do, dq, dk, dv)),
                     sinks=None if sinks32 is None else sinks32.data_ptr(),
                     dsinks=None if sinks is None else dsinks.data_ptr())
    return dq, dk, dv, dsinks


@ring_attn_bwd.register_fake
def _ring_attn_bwd_fake(q: Tensor, k: Tensor, v: Tensor, *args: Any
                        ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    sinks = args[-1]  # dsinks: float32 [heads_q], empty without sinks
    heads = q.shape[2] if sinks is not None and q.dim() == 4 else 0
    return (torch.empty_like(q), torch.empty_like(k), torch.empty_like(v),
            q.new_empty((heads,), dtype=torch.float32))


# ---- autograd ---------------------------------------------------------------------
def _setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Tuple[Tensor, ...]) -> None:
    (q, k, v, cu_t, cu_l, _cu_k_t, _cu_k_l, ctx_key, _op, _fmt, layout, causal, wl, wr, scale,
     *_checks, softcap, sinks, cp_comm) = inputs  # ring_attn_fwd's arguments
    o, lse, seq = output
    ctx.save_for_backward(q, k, v, o, lse, seq, cu_t, sinks)
    ctx.args = (cu_l, ctx_key, layout, causal, wl, wr, scale, softcap, cp_comm)
    ctx.mark_non_differentiable(lse, seq)


def _backward(ctx: Any, do: Tensor, _dlse: Any, _dseq: Any) -> Tuple[Any, ...]:
    q, k, v, o, lse, seq, cu_t, sinks = ctx.saved_tensors
    cu_l, ctx_key, layout, causal, wl, wr, scale, softcap, cp_comm = ctx.args
    dq, dk, dv, dsinks = torch.ops.ringrt.ring_attn_bwd(q, k, v, o, lse, do, seq, cu_t, cu_l,
                                                        ctx_key, layout, causal, wl, wr, scale,
                                                        softcap, sinks, cp_comm)
    # the sinks' gradient in their own dtype (None without sinks); cp_comm: none
    dsinks = dsinks.to(sinks.dtype) if sinks is not None else None
    return (dq, dk, dv) + (None,) * 20 + (dsinks, None)


ring_attn_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---- autocast ---------------------------------------------------------------------
_lib = torch.library.Library("ringrt", "FRAGMENT")


def _register_autocast(device_type: str) -> None:
    """Under torch.autocast(device_type), cast q, k, v (floating, not
    float64, on that device) to the autocast dtype in effect (not a dtype
    fixed at registration, which is all torch.library.register_autocast
    offers), then run the operator with autocast off, as torch does for
    its own lower-precision ops (aten::scaled_dot_product_attention)."""
    key_name = "Autocast" + torch._C._dispatch_key_for_device(device_type)
    keyset = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key_name))
    fwd = torch.ops.ringrt.ring_attn_fwd.default

    def cast(t: Any, dtype: torch.dtype) -> Any:
        eligible = (isinstance(t, Tensor) and t.is_floating_point()
                    and t.device.type == device_type and t.dtype is not torch.float64)
        return t.to(dtype) if eligible else t

    def kernel(_keyset: Any, *args: Any) -> Any:
        dtype = torch.get_autocast_dtype(device_type)
        with torch._C._ExcludeDispatchKeyGuard(keyset):
            return fwd(*(cast(a, dtype) for a in args[:3]), *args[3:])

    _lib.impl("ring_attn_fwd", kernel, key_name, with_keyset=True)


for _device in ("cpu", "cuda"):
    _register_autocast(_device)

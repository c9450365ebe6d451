"""ringrt.torch's custom operators (ringrt::ring_attn_fwd / ring_attn_bwd)
under mpirun: torch.compile, eager bits, autocast, misuse.

- Eager ring_attention is bit for bit what the C API gives when called
  directly through ctypes (rrt_attn_plan_run / _run_bwd on the same
  contiguous tensors: the path ringrt.torch took before its operator),
  for o, lse and dq, dk, dv.
- torch.compile(fullgraph=True, backend="aot_eager") of a function that
  calls every option (layouts, windows, scale, GQA, return_lse, softcap
  and sinks (their gradient too),
  qkv_format sbhd/bhsd/thd, cu_seqlens as a tensor and as a list, the six
  flash-attn functions) traces without a graph break and gives the eager
  bits, outputs and gradients; torch._dynamo.explain reports one graph and
  no break for a small model; the compiled model's loss and parameter
  gradients are the eager ones, bit for bit (aot_eager runs the same
  kernels in the same order).
- Under torch.autocast("cpu", bfloat16) float32 inputs run as bfloat16
  (as scaled_dot_product_attention does): the bits of an explicit bfloat16
  call, gradients flowing back to the float32 leaves; eager and compiled.
- torch.library.opcheck of the forward operator (schema, autograd
  registration, fake against real, AOT dispatch with dynamic shapes), and
  a dynamic=True compilation over two sequence lengths (eager bits); the
  default context (ctx=None) compiled.
- Misuse inside a compiled function (a bad layout on one rank) raises
  InvalidArgument there and RemoteError on the others, never a hang.
- Argument "emu": one tiny compiled case on the emu backend (the GPU code
  path), bit for bit against eager; "--lean" (np 3) leaves out the
  every-option and autocast compilations (the longest part; np 1-2 run
  them), keeping what a third rank adds.

Bitwise comparisons are exact (torch.equal): both sides run the same C
kernels on the same bits.
"""
from __future__ import annotations

import sys
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

import rrt_testing
import ringrt
import ringrt.torch as rt
from ringrt import _attn, errors
from ringrt.context import context_of_key

S, CU = 12, [0, 5, 12]  # 12 rows: zigzag-valid at P = 1, 2, 3


def same_bits(what: str, got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype} {tuple(got.shape)} vs {want.dtype} {tuple(want.shape)}"
    assert torch.equal(got, want), f"{what}: bits differ (max |diff| " \
        f"{(got.double() - want.double()).abs().max().item():.3e})"


def randn(name: str, *shape: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))  # same on every rank
    return torch.randn(*shape, generator=gen)


# ---- eager bits against the C API called directly ---------------------------------
def direct(ctx: ringrt.Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
           do: torch.Tensor, causal: bool, layout: str, window: Tuple[int, int],
           cu: Optional[Sequence[int]], scale: Optional[float]) -> List[torch.Tensor]:
    """o, lse, dq, dk, dv from rrt_attn_plan_run / _run_bwd on contiguous
    BSHD tensors (batch-1 for packed documents)."""
    q, k, v, do = (t.detach().contiguous() for t in (q, k, v, do))
    key = _attn.Key(q.shape[0], -1, q.shape[2], k.shape[2], q.shape[3], scale or 0.0,
                    int(causal), _attn.parse_layout(layout), _attn.DTYPE_F32, *window,
                    tuple(cu) if cu is not None else None)
    plan, _key, _rows, _ = _attn.plan_for(ctx, key, q.shape[1])
    o = torch.empty_like(q)
    lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
    plan.run(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr())
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    plan.run_bwd(*(t.data_ptr() for t in (q, k, v, o, lse, do, dq, dk, dv)))
    return [o, lse, dq, dk, dv]


def check_eager_bits(ctx: ringrt.Context) -> None:
    cases = [dict(causal=True, layout="zigzag", window=(-1, -1), cu=None, scale=None),
             dict(causal=False, layout="stripe", window=(3, 2), cu=None, scale=0.4),
             dict(causal=True, layout="contiguous", window=(4, -1), cu=CU, scale=None)]
    for i, c in enumerate(cases):
        varlen = c["cu"] is not None
        glob = [randn(f"bits{i}{n}", 2, S, h, 8) for n, h in (("q", 4), ("k", 2), ("v", 2),
                                                               ("w", 4))]
        if varlen:
            glob = [t[0] for t in glob]
        local = [rt.shard(t, layout=c["layout"], cu_seqlens=c["cu"], dim=0 if varlen else 1,
                          ctx=ctx) for t in glob]
        q, k, v = (t.clone().requires_grad_() for t in local[:3])
        o, lse = rt.ring_attention(q, k, v, causal=c["causal"], layout=c["layout"],
                                   window=c["window"], cu_seqlens=c["cu"], scale=c["scale"],
                                   ctx=ctx, return_lse=True)
        assert not lse.requires_grad
        (o * local[3]).sum().backward()
        up = (lambda t: t.unsqueeze(0)) if varlen else (lambda t: t)  # noqa: E731
        want = direct(ctx, *(up(t) for t in local), **c)
        if varlen:
            want = [t.squeeze(0) for t in want]
        for n, got, w in zip(("o", "lse", "dq", "dk", "dv"), (o, lse, q.grad, k.grad, v.grad),
                             want):
            same_bits(f"eager case {i} {n}", got, w)


# ---- every option, compiled -------------------------------------------------------
def inputs(ctx: ringrt.Context) -> Dict[str, torch.Tensor]:
    """This rank's shards: BSHD q (4 heads), k, v (2: GQA) per layout, and
    packed documents (thd) cut by CU."""
    q, k, v = (randn(n, 2, S, h, 8) for n, h in (("q", 4), ("k", 2), ("v", 2)))
    x = {}
    for layout in ("zigzag", "contiguous", "stripe"):
        for n, t in (("q", q), ("k", k), ("v", v)):
            x[n + layout[0]] = rt.shard(t, layout=layout, ctx=ctx)
    for n, t in (("q", q), ("k", k), ("v", v)):
        x[n + "t"] = rt.shard(t[1], layout="stripe", cu_seqlens=CU, dim=0, ctx=ctx)
    x["sinks"] = torch.linspace(-1.0, 1.0, 4)  # one per query head, the same on every rank
    return {n: t.requires_grad_() for n, t in x.items()}


def every_option(x: Dict[str, torch.Tensor], ctx: ringrt.Context,
                 cu_t: torch.Tensor) -> List[torch.Tensor]:
    q, k, v = x["qz"], x["kz"], x["vz"]
    qt, kt, vt = x["qt"], x["kt"], x["vt"]
    ra = rt.ring_attention
    out = [ra(q, k, v, causal=True, ctx=ctx)]
    out.append(ra(q, k, v, causal=True, softcap=2.0, sinks=x["sinks"], ctx=ctx))  # issue 34
    out += ra(q, k, v, window=(3, 2), scale=0.5, return_lse=True, ctx=ctx)
    out.append(ra(x["qc"], x["kc"], x["vc"], causal=True, layout="contiguous", ctx=ctx))
    out.append(ra(x["qs"], x["ks"], x["vs"], causal=True, window=(4, -1), layout="stripe",
                  ctx=ctx))
    out.append(ra(*(t.transpose(0, 1) for t in (q, k, v)), causal=True, qkv_format="sbhd",
                  ctx=ctx))
    out.append(ra(*(t.transpose(1, 2) for t in (q, k, v)), qkv_format="bhsd", ctx=ctx))
    out += ra(qt, kt, vt, causal=True, cu_seqlens=cu_t, layout="stripe", return_lse=True,
              ctx=ctx)
    out.append(ra(qt, kt, vt, window=(2, 0), cu_seqlens=CU, layout="stripe", ctx=ctx))
    out.append(ra(q, k, v, causal=True, cp_comm="allgather", ctx=ctx))  # issue 34's modes
    out.append(rt.flash_attn_func(q, k, v, 0.0, None, True, (-1, -1), ctx=ctx, cp_comm="auto"))
    out.append(rt.flash_attn_func(q, k, v, 0.0, None, True, (-1, -1), ctx=ctx))
    out += rt.flash_attn_qkvpacked_func(torch.stack([q, 0.5 * q, q + 1], 2), causal=True,
                                        return_attn_probs=True, ctx=ctx)[:2]
    out.append(rt.flash_attn_kvpacked_func(q, torch.stack([k, v], 2), softmax_scale=0.3,
                                           ctx=ctx))
    out += rt.flash_attn_varlen_func(qt, kt, vt, cu_t, cu_t.clone(), 7, 7, causal=True,
                                     return_attn_probs=True, ctx=ctx, layout="stripe")[:2]
    out.append(rt.flash_attn_varlen_qkvpacked_func(torch.stack([qt, qt - 1, 2 * qt], 1), CU, 7,
                                                   ctx=ctx, layout="stripe"))
    out.append(rt.flash_attn_varlen_kvpacked_func(qt, torch.stack([kt, vt], 1), cu_t, CU, 7, 7,
                                                  window_size=(1, 1), ctx=ctx,
                                                  layout="stripe"))
    return out


def loss_of(outs: List[torch.Tensor]) -> torch.Tensor:
    return sum((o * o).sum() for o in outs if o.requires_grad)


def run_options(ctx: ringrt.Context, fn) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
    x = inputs(ctx)
    cu_t = torch.tensor(CU, dtype=torch.int32)
    outs = fn(x, ctx, cu_t)
    loss_of(outs).backward()
    return [o.detach() for o in outs], [x[n].grad for n in sorted(x)]


def check_every_option(ctx: ringrt.Context) -> None:
    want_o, want_g = run_options(ctx, every_option)
    torch._dynamo.reset()
    compiled = torch.compile(every_option, fullgraph=True, backend="aot_eager")
    got_o, got_g = run_options(ctx, compiled)
    for i, (g, w) in enumerate(zip(got_o, want_o)):
        same_bits(f"every option, output {i}", g, w)
    for i, (g, w) in enumerate(zip(got_g, want_g)):
        same_bits(f"every option, gradient {i}", g, w)


def check_opcheck(ctx: ringrt.Context) -> None:
    """torch.library.opcheck on the forward operator: schema (no mutation or
    aliasing), autograd registration, fake tensors against the real
    operator, AOT dispatch with dynamic shapes (every rank runs the same
    calls, so the collective stays matched)."""
    q, k, v = (rt.shard(randn("oc" + n, 1, S, h, 8), ctx=ctx).requires_grad_()
               for n, h in (("q", 4), ("k", 2), ("v", 2)))
    args = (q, k, v, None, None, None, None, ctx.key, "ring_attention", "bshd", "zigzag", True,
            -1, -1, 0.0, False, "", "", "", "", "", "", 0.0, None)
    result = torch.library.opcheck(torch.ops.ringrt.ring_attn_fwd.default, args)
    assert all(v == "SUCCESS" for v in result.values()), result
    # soft-capping and sinks (a differentiable input of the operator)
    sinks = torch.linspace(-1.0, 1.0, 4).requires_grad_()
    args = args[:-2] + (2.0, sinks)
    result = torch.library.opcheck(torch.ops.ringrt.ring_attn_fwd.default, args)
    assert all(v == "SUCCESS" for v in result.values()), result


def check_dynamic(ctx: ringrt.Context) -> None:
    """dynamic=True: one graph for several sequence lengths, eager bits."""
    f = torch.compile(lambda q: rt.ring_attention(q, q, q, causal=True, ctx=ctx),
                      fullgraph=True, backend="aot_eager", dynamic=True)
    for n in (S, 2 * S):
        q = rt.shard(randn(f"dyn{n}", 2, n, 2, 8), ctx=ctx)
        same_bits(f"dynamic S={n}", f(q), rt.ring_attention(q, q, q, causal=True, ctx=ctx))


def check_default_context() -> None:
    """ctx=None (the default context, created inside the operator on first
    use): compiled as eager."""
    q = rt.shard(randn("default", 1, S, 2, 8), ctx=ringrt.default_context())
    f = torch.compile(lambda t: rt.ring_attention(t, t, t, causal=True), fullgraph=True,
                      backend="aot_eager")
    same_bits("default context", f(q), rt.ring_attention(q, q, q, causal=True))


# ---- a small model: explain, compiled training step -------------------------------
class Attention(nn.Module):
    """x [B, S_local, 32] -> causal ring attention with 4 query heads and 2
    key/value heads (GQA) -> [B, S_local, 32]."""

    def __init__(self, ctx: ringrt.Context):
        super().__init__()
        torch.manual_seed(3)  # the same weights on every rank
        self.ctx = ctx
        self.wq, self.wkv, self.wo = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, 4, 8)
        k, v = self.wkv(x).view(B, L, 2, 2, 8).unbind(2)
        o = rt.ring_attention(q, k, v, causal=True, ctx=self.ctx)
        return self.wo(o.reshape(B, L, 32)).relu().square().mean()


def model_step(model: nn.Module, fn, x: torch.Tensor) -> List[torch.Tensor]:
    model.zero_grad()
    loss = fn(x)
    loss.backward()
    return [loss.detach()] + [p.grad.clone() for p in model.parameters()]


def check_model(ctx: ringrt.Context) -> None:
    model = Attention(ctx)
    x = rt.shard(randn("x", 2, S, 32), ctx=ctx)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1, \
        (explained.graph_break_count, explained.graph_count, explained.break_reasons)
    want = model_step(model, model, x)
    got = model_step(model, torch.compile(model, fullgraph=True, backend="aot_eager"), x)
    for i, (g, w) in enumerate(zip(got, want)):
        same_bits(f"model, {'loss' if i == 0 else f'gradient {i}'}", g, w)


# ---- autocast ---------------------------------------------------------------------
def check_autocast(ctx: ringrt.Context) -> None:
    """f32 inputs under autocast(cpu, bf16): the bits of a bf16 call; the
    leaves' gradients are that call's, cast back to f32."""
    glob = [randn("ac" + n, 1, S, h, 8) for n, h in (("q", 4), ("k", 2), ("v", 2))]
    local = [rt.shard(t, ctx=ctx) for t in glob]
    w = rt.shard(randn("acw", 1, S, 4, 8), ctx=ctx)

    def attn(q, k, v):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return rt.ring_attention(q, k, v, causal=True, ctx=ctx)

    qb, kb, vb = (t.bfloat16().requires_grad_() for t in local)
    ob = rt.ring_attention(qb, kb, vb, causal=True, ctx=ctx)
    (ob.float() * w).sum().backward()
    for fn in (attn, torch.compile(attn, fullgraph=True, backend="aot_eager")):
        q, k, v = (t.clone().requires_grad_() for t in local)
        o = fn(q, k, v)
        assert o.dtype == torch.bfloat16, o.dtype
        (o.float() * w).sum().backward()
        same_bits("autocast o", o, ob)
        for n, g, gb in (("dq", q.grad, qb.grad), ("dk", k.grad, kb.grad),
                         ("dv", v.grad, vb.grad)):
            same_bits(f"autocast {n}", g, gb.float())
    # Outside autocast the same call stays float32.
    assert rt.ring_attention(*local, ctx=ctx).dtype == torch.float32


# ---- misuse -----------------------------------------------------------------------
def check_misuse(ctx: ringrt.Context) -> None:
    bad = ctx.size - 1
    x = rt.shard(randn("m", 1, S, 2, 8), ctx=ctx)
    layout = "zagzig" if ctx.rank == bad else "zigzag"

    def f(q):
        return rt.ring_attention(q, q, q, layout=layout, ctx=ctx)

    torch._dynamo.reset()
    exc = errors.InvalidArgument if ctx.rank == bad else errors.RemoteError
    e = rrt_testing.raises(exc, lambda: torch.compile(f, fullgraph=True, backend="aot_eager")(x),
                           match="unknown layout")
    assert f"rank {bad}" in str(e), str(e)
    rrt_testing.raises(ValueError, lambda: context_of_key(10 ** 9), match="no live ringrt")
    same_bits("usable after misuse", torch.compile(rt.ring_attention, fullgraph=True,
                                                   backend="aot_eager")(x, x, x, ctx=ctx),
              rt.ring_attention(x, x, x, ctx=ctx))


def check_backend(backend: str) -> None:
    """One tiny case, compiled against eager, on another backend."""
    with ringrt.Context(backend=backend) as ctx:
        q = rt.shard(randn("b", 1, 8, 2, 8), ctx=ctx)
        f = lambda t: rt.ring_attention(t, t, t, causal=True, ctx=ctx)  # noqa: E731
        torch._dynamo.reset()
        same_bits(f"{backend} compiled", torch.compile(f, fullgraph=True, backend="aot_eager")(q),
                  f(q))


def main() -> None:
    args = sys.argv[1:]
    lean = "--lean" in args  # np 3: what a third rank adds (eager bits, misuse, the model)
    with ringrt.Context(backend="cpu") as ctx:
        check_eager_bits(ctx)
        if not lean:
            check_every_option(ctx)
            check_autocast(ctx)
            check_opcheck(ctx)
            check_dynamic(ctx)
            check_default_context()
        check_model(ctx)
        check_misuse(ctx)
    for backend in (a for a in args if not a.startswith("--")):
        check_backend(backend)


rrt_testing.run(main)

#!/usr/bin/env python3
"""ringrt's Python overhead per ring attention call: the custom operator
(ringrt::ring_attn_fwd / _bwd, eager and compiled) against the direct
ctypes call ringrt.torch made before it, on a tiny shard (where the C work
is small and the overhead shows).

    mpirun -np 1 python bench/torch_overhead.py [--iters N] [--inductor]
    mpirun -np 2 --bind-to none python bench/torch_overhead.py [--iters N] [--inductor]

Prints one JSON line per variant (rank 0), each with the median seconds of
a forward call ("fwd_s") and of forward + backward ("fwd_bwd_s") over
--iters calls (a barrier before each), and fwd_over_c_s = fwd_s - c_run_s:

- "c_run": rrt_attn_plan_run alone on a cached plan (the floor: no Python
  beyond one ctypes call); fwd_bwd adds rrt_attn_plan_run_bwd.
- "legacy": the previous front, rebuilt here from today's helpers: the
  same local checks, agreement and gather, then an autograd.Function
  around the ctypes calls (ringrt.torch at commit b8e5aaa).
- "op_eager": ringrt.torch.ring_attention today (Python front + operator).
- "op_compiled_aot_eager" / "op_compiled_inductor" (--inductor; its first
  compilation takes ~30 s on 2 cores): the same call inside
  torch.compile(fullgraph=True).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable, List

import torch

import ringrt
import ringrt.torch as rt
from ringrt import _attn

SHAPE = (1, 16, 2, 16)  # a tiny shard: [batch, S_local, heads, head_dim]


class _Legacy(torch.autograd.Function):
    """ringrt.torch's _RingAttention before the custom operator."""

    @staticmethod
    def forward(fctx: Any, q, k, v, plan):
        o = torch.empty_like(q)
        lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
        plan.run(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr())
        fctx.save_for_backward(q, k, v, o, lse)
        fctx.plan = plan
        fctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(fctx: Any, do, _dlse):
        q, k, v, o, lse = fctx.saved_tensors
        do = do.to(o.dtype).contiguous()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        fctx.plan.run_bwd(*(t.data_ptr() for t in (q, k, v, o, lse, do, dq, dk, dv)))
        return dq, dk, dv, None


def legacy(q, k, v, ctx: ringrt.Context, causal: bool = True) -> torch.Tensor:
    """The previous ring_attention(q, k, v, causal, ctx=ctx) for BSHD inputs."""
    T = rt
    fmt, fmt_problem = T._format_of(None, None)
    cu, cu_problem = T._cu_tuple(None)
    (wl, wr), win_problem = T._window_tuple((-1, -1))
    code, layout_problem = T._layout_code("zigzag")
    scale, scale_problem = T._scale_value(None)
    q, k, v = (T._swap(t, fmt) for t in (q, k, v))
    problem = T._first(cu_problem, fmt_problem, T._dtype_problem("qkv", (q, k, v)),
                       T._shape_problem(q, k, v, fmt),
                       *(T._device_problem(ctx, n, t) for n, t in zip("qkv", (q, k, v))),
                       win_problem, layout_problem, scale_problem)
    T._agree(ctx, None, problem, "ring_attention")
    q4, k4, v4 = (t.contiguous() for t in (q, k, v))
    key = _attn.Key(q4.shape[0], -1, q4.shape[2], k4.shape[2], q4.shape[3], scale, int(causal),
                    code, T._DTYPES[q4.dtype], wl, wr, cu)
    probe = T._probe(ctx, key, q4, k4, False)
    plan, key, rows, probes = _attn.plan_for(ctx, key, q4.shape[1], probe)
    T._check_identical("ring_attention", probes, ctx.size)
    T._check_rows("ring_attention", key, rows, ctx.size, "q.shape[1]")
    return _Legacy.apply(q4, k4, v4, plan)[0]


def median_s(fn: Callable[[], Any], iters: int, comm: Any) -> float:
    times: List[float] = []
    for _ in range(iters):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, attn: Callable, ctx: ringrt.Context, iters: int) -> dict:
    gen = torch.Generator().manual_seed(1 + ctx.rank)  # each rank its own shard
    q, k, v = (torch.randn(*SHAPE, generator=gen) for _ in range(3))
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def fwd_bwd() -> None:
        attn(qg, kg, vg).sum().backward()

    with torch.no_grad():
        attn(q, k, v)  # plan (and compile) outside the timing
    fwd_bwd()
    return {"bench": "torch_overhead", "variant": name, "ranks": ctx.size,
            "shape": list(SHAPE), "iters": iters,
            "fwd_s": median_s(lambda: attn(q, k, v), iters, ctx.comm),
            "fwd_bwd_s": median_s(fwd_bwd, iters, ctx.comm)}


def c_run(ctx: ringrt.Context, iters: int) -> dict:
    gen = torch.Generator().manual_seed(1 + ctx.rank)
    q, k, v = (torch.randn(*SHAPE, generator=gen) for _ in range(3))
    rt.ring_attention(q, k, v, causal=True, ctx=ctx)
    plan = _attn.cache_of(ctx).last
    o, lse = torch.empty_like(q), torch.empty(SHAPE[0], SHAPE[2], SHAPE[1])
    dq, dk, dv, do = (torch.empty_like(q) for _ in range(4))
    def fwd() -> None:
        plan.run(*(t.data_ptr() for t in (q, k, v, o, lse)))

    def bwd() -> None:
        plan.run_bwd(*(t.data_ptr() for t in (q, k, v, o, lse, do, dq, dk, dv)))

    fwd()
    do.copy_(o)
    return {"bench": "torch_overhead", "variant": "c_run", "ranks": ctx.size,
            "shape": list(SHAPE), "iters": iters, "fwd_s": median_s(fwd, iters, ctx.comm),
            "fwd_bwd_s": median_s(lambda: (fwd(), bwd()), iters, ctx.comm)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--inductor", action="store_true")
    args = ap.parse_args()
    with ringrt.Context(backend="cpu") as ctx:
        def op(q, k, v):
            return rt.ring_attention(q, k, v, causal=True, ctx=ctx)

        variants = [("legacy", lambda q, k, v: legacy(q, k, v, ctx)), ("op_eager", op),
                    ("op_compiled_aot_eager", torch.compile(op, fullgraph=True,
                                                            backend="aot_eager"))]
        if args.inductor:
            variants.append(("op_compiled_inductor", torch.compile(op, fullgraph=True)))
        rows = [c_run(ctx, args.iters)] + [measure(n, f, ctx, args.iters) for n, f in variants]
        for r in rows:
            r["fwd_over_c_s"] = r["fwd_s"] - rows[0]["fwd_s"]
            if ctx.rank == 0:
                print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()

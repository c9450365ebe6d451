#!/usr/bin/env python3
"""What the Python front (ringrt.torch.ring_attention) adds to a ring run.

    mpirun -np 2 python bench/torch_front.py [--iters N] [--json FILE]

Per shape (per-rank shard [1, S_local, H, D], f32, causal, zigzag, cpu
backend) and per rank 0: the median over --iters calls of
- front: ring_attention forward (validation, agreement, the small gather,
  the plan cache, the ringrt::ring_attn_fwd operator; bench/torch_overhead.py
  compares it with the previous front and with compiled calls);
- c_run: the C forward alone on the same plan (rrt_attn_plan_run);
- plan: creating the plan (what the cache saves per call);
- front_bwd: forward + backward through autograd, and c_bwd: the C backward
  alone. overhead = front - c_run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

import ringrt
import ringrt.torch as rt
from ringrt import _attn

SHAPES = [(64, 2, 32), (1024, 8, 64)]  # (S_local, heads, head_dim)


def median_time(fn, iters: int, comm) -> float:
    times = []
    for _ in range(iters):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(ctx: ringrt.Context, S: int, H: int, D: int, iters: int) -> dict:
    comm = ctx.comm
    gen = torch.Generator().manual_seed(1 + ctx.rank)  # each rank its own shard
    q, k, v = (torch.randn(1, S, H, D, generator=gen) for _ in range(3))
    o = rt.ring_attention(q, k, v, causal=True, ctx=ctx)  # plans once
    plan = _attn.cache_of(ctx).last
    lse = torch.empty(1, H, S)
    out = torch.empty_like(q)
    c_run = lambda: plan.run(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                             lse.data_ptr())
    c_run()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    c_bwd = lambda: plan.run_bwd(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                 lse.data_ptr(), o.data_ptr(), dq.data_ptr(), dk.data_ptr(),
                                 dv.data_ptr())
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def front_bwd() -> None:
        rt.ring_attention(qg, kg, vg, causal=True, ctx=ctx).backward(o)

    res = {
        "S_local": S, "heads": H, "head_dim": D, "ranks": ctx.size,
        "front_s": median_time(lambda: rt.ring_attention(q, k, v, causal=True, ctx=ctx),
                               iters, comm),
        "c_run_s": median_time(c_run, iters, comm),
        "plan_s": median_time(lambda: _attn.Plan(ctx, plan.key), max(3, iters // 10), comm),
        "front_bwd_s": median_time(front_bwd, iters, comm),
        "c_bwd_s": median_time(c_bwd, iters, comm),
    }
    res["overhead_s"] = res["front_s"] - res["c_run_s"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    with ringrt.Context(backend="cpu") as ctx:
        results = [bench(ctx, S, H, D, args.iters) for S, H, D in SHAPES]
        if ctx.rank == 0:
            for r in results:
                print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in r.items()), flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"bench": "torch_front", "results": results}, f, indent=1)


if __name__ == "__main__":
    main()

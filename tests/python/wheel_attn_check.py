"""Ring attention from an installed wheel, with numpy only (no torch): each
rank runs the causal zigzag forward on its shard through the package's
plan front (ringrt._attn) on the cpu backend, and compares its rows with a
float64 softmax(QK^T)V over the whole sequence computed here.

Run under mpirun (tests/python/wheel_test.sh). Prints "attn ok RANK ERR"
on success; exit 1 with the worst error otherwise.

Tolerance: f32 storage with f32 accumulation over 64 keys of head_dim 16,
inputs in [-1, 1): the f32 result is within a few ulps of the float64
reference per term; 2e-5 absolute on outputs of size <= 1 is about 100
ulps of f32 at 1.0, far above rounding, far below any mistake (a wrong
mask or a missing block moves outputs by 1e-2 or more).
"""
import numpy as np

import ringrt
from ringrt import _attn

B, S, HQ, HKV, D = 1, 64, 2, 1, 16  # GQA: two query heads share one K/V head

with ringrt.Context(backend="cpu") as ctx:
    rng = np.random.default_rng(7)
    q = rng.uniform(-1, 1, (B, S, HQ, D)).astype(np.float32)
    k = rng.uniform(-1, 1, (B, S, HKV, D)).astype(np.float32)
    v = rng.uniform(-1, 1, (B, S, HKV, D)).astype(np.float32)
    scale = 1.0 / np.sqrt(D)

    layout = _attn.parse_layout("zigzag")
    key = _attn.Key(B, S, HQ, HKV, D, scale, 1, layout, _attn.DTYPE_F32, -1, -1, None)
    rows = _attn.shard_positions(key, ctx.size, ctx.rank)
    ql, kl, vl = (np.ascontiguousarray(t[:, rows]) for t in (q, k, v))
    plan, _, _, _ = _attn.plan_for(ctx, key._replace(seq=-1), len(rows))
    o = np.zeros_like(ql)
    lse = np.zeros((B, HQ, len(rows)), dtype=np.float32)
    plan.run(ql.ctypes.data, kl.ctypes.data, vl.ctypes.data, o.ctypes.data, lse.ctypes.data)

    # The reference: the whole sequence, causal, float64.
    kk = np.repeat(k.astype(np.float64), HQ // HKV, axis=2)
    vv = np.repeat(v.astype(np.float64), HQ // HKV, axis=2)
    s = np.einsum("bihd,bjhd->bhij", q.astype(np.float64), kk) * scale
    s[:, :, np.triu(np.ones((S, S), dtype=bool), 1)] = -np.inf
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    ref = np.einsum("bhij,bjhd->bihd", p, vv)[:, rows]

    err = float(np.abs(o - ref).max())
    if not err < 2e-5:
        raise SystemExit(f"rank {ctx.rank}: ring attention differs from the reference by {err}")
    print("attn ok", ctx.rank, f"{err:.2e}", flush=True)

"""ringrt.torch under mpirun: ring_attention forward and autograd gradients
against torch's scaled_dot_product_attention in float64 on the gathered
sequence (every layout, causal and not, GQA/MQA, sliding windows, packed
documents, uneven and empty shards, f32/bf16/f16; soft-capping and sinks,
whose reference is written out: scores capped, the sink a column of the
softmax dropped after it, the sinks' gradient by autograd); shard/unshard round
trips and unshard's gradient; plan reuse; bad input on one rank raising on
every rank. Argument: a backend for one extra tiny case ("emu": the GPU code
path on the CPU), or none.

Tolerances (relative to the largest reference magnitude of each tensor):
- f32: 1e-5. Inputs are exact in f64; ringrt accumulates in f32 (scores,
  softmax statistics, O, dQ/dK/dV) and its exp2 is accurate to 2e-8, so the
  error is a few f32 roundings (6e-8 each) times the growth of sums over
  <= 40 keys and heads: measured below 1e-6 for O and below 2e-6 for the
  gradients here; 1e-5 leaves a margin without hiding a real error (a wrong
  mask or a missing key gives errors of order 1e-2..1).
- bf16/f16: inputs and dO are rounded to the storage type first and the
  reference uses those same values, so only ringrt's arithmetic differs:
  f32 accumulation, the output rounded once to bf16 (half an ulp: 2^-9 =
  2e-3 of the value) and, in backward, delta = rowsum(dO * O) computed from
  the rounded O. 2^-6 (1.6e-2) for bf16 (torch's own bf16 rtol is 1.6e-2),
  2^-9 for f16 (3 more mantissa bits). LSE is f32 whatever the storage
  (computed from the same exact inputs): 1e-5 for every dtype.
"""
from __future__ import annotations

import math
import sys
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

import rrt_testing
import ringrt
import ringrt.torch as rt
from ringrt import _attn, errors

TOL = {torch.float32: 1e-5, torch.bfloat16: 2.0 ** -6, torch.float16: 2.0 ** -9}


def mask_of(S: int, causal: bool, window: Tuple[int, int], cu: Optional[Sequence[int]]
            ) -> torch.Tensor:
    """allowed[i, j]: query i sees key j (flash-attn's semantics, written out)."""
    i = torch.arange(S).unsqueeze(1)
    j = torch.arange(S).unsqueeze(0)
    allowed = torch.ones(S, S, dtype=torch.bool)
    if causal:
        allowed &= j <= i
    wl, wr = window
    if wl >= 0:
        allowed &= j >= i - wl
    if wr >= 0 and not causal:
        allowed &= j <= i + wr
    if cu is not None:
        doc = torch.bucketize(torch.arange(S), torch.tensor(cu[1:]), right=True)
        allowed &= doc.unsqueeze(1) == doc.unsqueeze(0)
    return allowed


def reference(q, k, v, w, causal, window, cu, scale):
    """o, lse, dq, dk, dv in float64 with torch SDPA on global [B, S, H, D]
    tensors; the loss is sum(o * w). GQA by repeating K/V heads."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    rep = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k.repeat_interleave(rep, 2),
                                                 v.repeat_interleave(rep, 2)))
    S = q.shape[1]
    plain_causal = causal and window == (-1, -1) and cu is None
    mask = None if plain_causal else mask_of(S, causal, window, cu)
    o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=plain_causal,
                                       scale=scale).transpose(1, 2)
    (o * w.double()).sum().backward()
    sc = (qt @ kt.transpose(-1, -2)) * (scale or 1.0 / math.sqrt(q.shape[3]))
    lse = sc.masked_fill(~mask_of(S, causal, window, cu), -math.inf).logsumexp(-1)
    return o.detach(), lse.detach(), q.grad, k.grad, v.grad


def reference_variants(q, k, v, w, causal, window, cu, scale, softcap, sinks):
    """reference() written out for soft-capping (softcap * tanh(s / softcap)
    of the scaled scores, before the mask) and sinks (a softmax column of
    logit sinks[h] per head, dropped after the softmax); also d sinks."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    sk = None if sinks is None else sinks.detach().double().requires_grad_()
    rep = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k.repeat_interleave(rep, 2),
                                                 v.repeat_interleave(rep, 2)))
    S = q.shape[1]
    sc = (qt @ kt.transpose(-1, -2)) * (scale or 1.0 / math.sqrt(q.shape[3]))
    if softcap:
        sc = softcap * torch.tanh(sc / softcap)
    sc = sc.masked_fill(~mask_of(S, causal, window, cu), -math.inf)
    if sk is not None:
        sc = torch.cat([sc, sk.view(1, -1, 1, 1).expand(*sc.shape[:3], 1)], -1)
    lse = sc.logsumexp(-1)
    p = torch.softmax(sc, -1)[..., :S]
    o = (p @ vt).transpose(1, 2)
    (o * w.double()).sum().backward()
    return (o.detach(), lse.detach(), q.grad, k.grad, v.grad,
            None if sk is None else sk.grad)


def compare(what: str, got: torch.Tensor, want: torch.Tensor, tol: float) -> float:
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}")
    err = ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item() \
        if want.numel() else 0.0
    if not err <= tol:
        raise AssertionError(f"{what}: relative error {err:.3e} > {tol:.1e}")
    return err


def run_case(ctx: ringrt.Context, name: str, B: int, S: int, Hq: int, Hkv: int, D: int,
             causal: bool = False, layout: str = "zigzag", window=(-1, -1), cu=None,
             dtype=torch.float32, scale=None, strided: bool = False, softcap=None,
             sinks: bool = False, cp_comm: str = "ring") -> Dict[str, float]:
    """One case: global tensors (same seed on every rank), this rank's shards,
    ring_attention + backward against the float64 reference."""
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))  # same on every rank
    varlen = cu is not None

    def rand(h: int) -> torch.Tensor:
        return torch.randn(B, S, h, D, generator=gen).to(dtype)

    q, k, v, w = rand(Hq), rand(Hkv), rand(Hkv), rand(Hq)
    sk = torch.linspace(-0.5, 2.0, Hq).requires_grad_() if sinks else None
    if softcap or sinks:
        o_ref, lse_ref, dq_ref, dk_ref, dv_ref, ds_ref = reference_variants(
            q, k, v, w, causal, window, cu, scale, softcap, sk)
    else:
        o_ref, lse_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, w, causal, window, cu, scale)
    cu_arg = torch.tensor(cu, dtype=torch.int32) if varlen else None
    dim = 0 if varlen else 1

    def local(t: torch.Tensor) -> torch.Tensor:
        t = t[0] if varlen else t
        return rt.shard(t, layout=layout, cu_seqlens=cu_arg, dim=dim, ctx=ctx)

    ql, kl, vl = (local(t).clone().requires_grad_() for t in (q, k, v))
    args = (ql, kl, vl)
    if strided:  # non-contiguous inputs are copied by ring_attention
        args = tuple(t.transpose(-2, -3).contiguous().transpose(-2, -3) for t in args)
        assert not args[0].is_contiguous()
    o, lse = rt.ring_attention(*args, causal=causal, layout=layout, window=window,
                               cu_seqlens=cu_arg, scale=scale, ctx=ctx, return_lse=True,
                               softcap=softcap, sinks=sk,
                               cp_comm=cp_comm)
    assert o.shape == ql.shape and o.dtype == dtype, (o.shape, o.dtype)
    (o.float() * local(w).float()).sum().backward()
    tol = TOL[dtype]
    lse_local = local(lse_ref.transpose(1, 2)).transpose(-1, -2)  # [B, H, S_local] / [H, T_local]
    errs = {} if sk is None else {"dsinks": compare(f"{name} dsinks", sk.grad, ds_ref, tol)}
    return errs | {
        "o": compare(f"{name} o", o, local(o_ref), tol),
        "lse": compare(f"{name} lse", lse, lse_local, TOL[torch.float32]),
        "dq": compare(f"{name} dq", ql.grad, local(dq_ref), tol),
        "dk": compare(f"{name} dk", kl.grad, local(dk_ref), tol),
        "dv": compare(f"{name} dv", vl.grad, local(dv_ref), tol),
    }


def cases() -> List[Tuple[str, dict]]:
    """Small problems; the "uneven" lengths split unevenly at P = 2 and 3."""
    bf16, f16 = torch.bfloat16, torch.float16
    return [
        ("dense zigzag", dict(B=2, S=24, Hq=4, Hkv=4, D=16)),
        ("causal zigzag", dict(B=2, S=24, Hq=4, Hkv=4, D=16, causal=True)),
        ("causal zigzag uneven", dict(B=1, S=25, Hq=2, Hkv=2, D=8, causal=True)),
        ("causal contiguous uneven", dict(B=2, S=23, Hq=2, Hkv=2, D=16, causal=True,
                                          layout="contiguous")),
        ("dense stripe GQA", dict(B=2, S=20, Hq=4, Hkv=2, D=16, layout="stripe")),
        ("causal stripe MQA", dict(B=1, S=22, Hq=4, Hkv=1, D=32, causal=True, layout="stripe")),
        ("window contiguous", dict(B=1, S=30, Hq=2, Hkv=2, D=16, window=(5, 3),
                                   layout="contiguous")),
        ("causal window zigzag", dict(B=1, S=30, Hq=2, Hkv=1, D=16, causal=True,
                                      window=(4, -1))),
        ("varlen causal zigzag", dict(B=1, S=26, Hq=4, Hkv=2, D=16, causal=True,
                                      cu=[0, 7, 20, 26])),
        ("varlen stripe empty doc", dict(B=1, S=25, Hq=2, Hkv=2, D=16, layout="stripe",
                                         cu=[0, 3, 3, 17, 25])),
        ("varlen contiguous window", dict(B=1, S=21, Hq=2, Hkv=1, D=8, causal=True,
                                          layout="contiguous", window=(3, 0), cu=[0, 11, 21])),
        # 2 tokens over 3 ranks: rank 0's shard is empty (at np 2 each has one)
        ("empty shard", dict(B=1, S=2, Hq=2, Hkv=2, D=8, layout="contiguous")),
        ("scale strided", dict(B=2, S=18, Hq=2, Hkv=2, D=16, scale=0.3, strided=True)),
        ("bf16 causal zigzag GQA", dict(B=1, S=32, Hq=4, Hkv=2, D=32, causal=True, dtype=bf16)),
        ("bf16 varlen stripe", dict(B=1, S=28, Hq=2, Hkv=2, D=16, layout="stripe", cu=[0, 9, 28],
                                    dtype=bf16)),
        ("f16 dense contiguous", dict(B=2, S=18, Hq=2, Hkv=2, D=16, layout="contiguous",
                                      dtype=f16)),
        # softmax variants (issue 34)
        ("softcap sinks causal zigzag GQA", dict(B=2, S=24, Hq=4, Hkv=2, D=16, causal=True,
                                                 softcap=1.5, sinks=True)),
        ("sinks window stripe", dict(B=1, S=22, Hq=2, Hkv=1, D=16, layout="stripe",
                                     window=(4, 2), sinks=True)),
        ("softcap bf16 varlen", dict(B=1, S=28, Hq=2, Hkv=2, D=16, cu=[0, 9, 28], causal=True,
                                     dtype=bf16, softcap=2.0, sinks=True)),
    ]


def check_plan_reuse(ctx: ringrt.Context) -> None:
    """The same problem twice reuses the cached plan and gives the same bits."""
    gen = torch.Generator().manual_seed(7)
    q = rt.shard(torch.randn(1, 16, 2, 8, generator=gen), ctx=ctx)
    cache = _attn.cache_of(ctx)
    o1 = rt.ring_attention(q, q, q, causal=True, ctx=ctx)
    plan = cache.last
    o2 = rt.ring_attention(q, q, q, causal=True, ctx=ctx)
    assert cache.last is plan, "the plan was not reused"
    assert torch.equal(o1, o2)
    stats = rt.last_stats(ctx)
    assert stats["steps"] >= 1 and stats["flops"] > 0, stats
    for i in range(12):  # more problems than the cache holds: the oldest go
        rt.ring_attention(q, q, q, scale=0.1 + i, ctx=ctx)
    assert len(cache._plans) == cache.capacity


def check_shard_unshard(ctx: ringrt.Context) -> None:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 13, 3, generator=gen)
    for layout in ("contiguous", "zigzag", "stripe"):
        xl = rt.shard(x, layout=layout, ctx=ctx)
        pos = rt.shard_positions(13, layout=layout, ctx=ctx)
        assert torch.equal(xl, x[:, pos])
        assert torch.equal(rt.unshard(xl, layout=layout, ctx=ctx), x), layout
        packed = x[0]
        cu = [0, 4, 4, 13]
        pl = rt.shard(packed, layout=layout, cu_seqlens=cu, dim=0, ctx=ctx)
        assert torch.equal(rt.unshard(pl, layout=layout, cu_seqlens=cu, dim=0, ctx=ctx), packed)
    # int tensors and the last dim as the sequence dim
    ids = torch.arange(30).reshape(3, 10)
    assert torch.equal(rt.unshard(rt.shard(ids, dim=-1, ctx=ctx), dim=-1, ctx=ctx), ids)
    # unshard's gradient: the sum over ranks of each rank's global gradient
    xl = rt.shard(x, ctx=ctx).requires_grad_()
    g = rt.unshard(xl, ctx=ctx)
    weight = torch.randn(x.shape, generator=torch.Generator().manual_seed(ctx.rank + 11))
    (g * weight).sum().backward()
    total = sum(torch.randn(x.shape, generator=torch.Generator().manual_seed(r + 11))
                for r in range(ctx.size))
    compare("unshard grad", xl.grad, rt.shard(total, ctx=ctx).double(), 1e-6)


def expect_everywhere(ctx: ringrt.Context, bad: int, fn, match: str) -> None:
    """fn raises on every rank: InvalidArgument on `bad` (or every rank when
    the check is global, bad = -1), RemoteError elsewhere; message has `match`."""
    exc = errors.InvalidArgument if bad in (-1, ctx.rank) else errors.RemoteError
    e = rrt_testing.raises(exc, fn, match=match)
    if bad >= 0:
        assert f"rank {bad}" in str(e), str(e)


def check_errors(ctx: ringrt.Context) -> None:
    bad = ctx.size - 1
    gen = torch.Generator().manual_seed(5)
    x = rt.shard(torch.randn(2, 12, 4, 16, generator=gen), ctx=ctx)
    ok = dict(causal=True, ctx=ctx)
    mine = ctx.rank == bad

    def attn(q, k=None, v=None, **kw):
        args = {**ok, **kw}
        return lambda: rt.ring_attention(q, x if k is None else k, x if v is None else v, **args)

    expect_everywhere(ctx, bad, attn(x.double() if mine else x), "float64")
    expect_everywhere(ctx, bad, attn(x.to("meta") if mine else x), "meta")
    expect_everywhere(ctx, bad, attn(x, v=x[..., :8] if mine else x), "v has")
    expect_everywhere(ctx, bad, attn(x[0] if mine else x), "expected [batch")
    expect_everywhere(ctx, bad, attn(x, layout="zagzig" if mine else "zigzag"), "unknown layout")
    expect_everywhere(ctx, bad, attn(x, window=(3,) if mine else (-1, -1)), "window")
    # Locally fine, different between ranks: the plan's agreement names the field.
    h = x[:, :, :2] if mine else x
    expect_everywhere(ctx, -1, attn(h, h, h), "heads_q")
    expect_everywhere(ctx, -1, attn(x, causal=mine), "causal")
    # A shard that is not the layout's: one more row on the bad rank.
    longer = torch.cat([x, x[:, :1]], 1) if mine else x
    expect_everywhere(ctx, -1, attn(longer, longer, longer), "rows (q.shape[1]), but the zigzag")
    cu = torch.tensor([0, 5, 12] if mine else [0, 6, 12])
    packed = rt.shard(torch.randn(12, 4, 16, generator=gen), cu_seqlens=cu, dim=0, ctx=ctx)
    expect_everywhere(ctx, -1, attn(packed, packed, packed, cu_seqlens=cu), "cu_seqlens[1]")
    expect_everywhere(ctx, bad, attn(x, cu_seqlens=cu.float() if mine else None), "cu_seqlens")
    expect_everywhere(ctx, -1, lambda: rt.unshard(x.half() if mine else x, ctx=ctx),
                      f"rank {bad}'s shard differs")
    expect_everywhere(ctx, bad, lambda: rt.unshard(x, dim=7 if mine else 1, ctx=ctx), "dim 7")
    rrt_testing.raises(errors.InvalidArgument, lambda: rt.shard(packed, cu_seqlens=[0, 5],
                                                                dim=0, ctx=ctx), match="shard")
    # Still usable after all that.
    rt.ring_attention(x, x, x, ctx=ctx)


def main() -> None:
    extra = sys.argv[1] if len(sys.argv) > 1 else None
    with ringrt.Context(backend="cpu") as ctx:
        worst: Dict[str, Dict[str, float]] = {}
        for name, kw in cases():
            errs = run_case(ctx, name, **kw)
            key = str(kw.get("dtype", torch.float32))
            for t, e in errs.items():
                worst.setdefault(key, {})[t] = max(worst.get(key, {}).get(t, 0.0), e)
        if ctx.rank == 0:
            print("worst relative errors:", {k: {t: f"{e:.1e}" for t, e in v.items()}
                                             for k, v in worst.items()})
        # the context-parallel modes (issue 34): the same reference; heads 6
        # split over 2 and 3 ranks, K/V heads split or replicated
        for cp in ("a2a", "allgather", "auto"):
            run_case(ctx, f"cp {cp} causal zigzag GQA", B=1, S=24, Hq=6, Hkv=2, D=16,
                     causal=True, cp_comm=cp)
            run_case(ctx, f"cp {cp} varlen stripe", B=1, S=26, Hq=6, Hkv=3, D=8, layout="stripe",
                     cu=[0, 7, 20, 26], cp_comm=cp)
        expect_everywhere(ctx, 0, lambda: rt.ring_attention(
            torch.zeros(1, 2, 2, 8), torch.zeros(1, 2, 2, 8), torch.zeros(1, 2, 2, 8), ctx=ctx,
            cp_comm="ulysses" if ctx.rank == 0 else "ring", allow_identical_shards=True),
            "unknown cp_comm")
        check_plan_reuse(ctx)
        check_shard_unshard(ctx)
        check_errors(ctx)
    if extra:
        with ringrt.Context(backend=extra) as ctx2:
            assert ctx2.backend == extra
            run_case(ctx2, f"{extra} causal zigzag", B=1, S=4 * ctx2.size, Hq=2, Hkv=1, D=16,
                     causal=True)


rrt_testing.run(main)

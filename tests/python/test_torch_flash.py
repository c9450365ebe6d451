"""ringrt.torch's flash-attn calling convention, qkv_format and the
identical-shards check, under mpirun (np 1-3, cpu backend, eager).

- flash_attn_func / _qkvpacked / _kvpacked / _varlen_* against torch SDPA
  in float64 on the global sequence (o, softmax_lse, and the gradients of
  q, k, v or of the packed tensors); flash-attn's positional order and
  return values ((out, softmax_lse, None) with return_attn_probs).
- qkv_format "sbhd", "bhsd", "thd": the same bits as BSHD (same arithmetic
  on transposed views), gradients included.
- Misuse raises on every rank, never hangs: each unsupported argument
  (dropout_p, alibi_slopes, block_table, cu_seqlens_k) on one rank
  is NotImplementedError everywhere naming the argument; a bad qkv_format or
  packed shape on one rank is InvalidArgument there and RemoteError
  elsewhere; every rank passing the whole sequence raises InvalidArgument
  pointing at ringrt.torch.shard (np >= 2), unless allow_identical_shards
  (on any rank: a partial opt-out disables the check everywhere alike).

f32 tolerance 1e-5 relative to the largest reference value (the reasoning
is at the top of test_torch_attn.py: measured errors are below 2e-6).
"""
from __future__ import annotations

import math
import os
import zlib
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

import rrt_testing
import ringrt
import ringrt.torch as rt
from ringrt import errors

TOL = 1e-5


def allowed(S: int, causal: bool, window: Tuple[int, int], cu: Optional[Sequence[int]]):
    """allowed[i, j]: query i sees key j (flash-attn's semantics, written out)."""
    i, j = torch.arange(S).unsqueeze(1), torch.arange(S).unsqueeze(0)
    ok = torch.ones(S, S, dtype=torch.bool)
    if causal:
        ok &= j <= i
    if window[0] >= 0:
        ok &= j >= i - window[0]
    if window[1] >= 0 and not causal:
        ok &= j <= i + window[1]
    if cu is not None:
        doc = torch.bucketize(torch.arange(S), torch.tensor(cu[1:]), right=True)
        ok &= doc.unsqueeze(1) == doc.unsqueeze(0)
    return ok


def reference(q, k, v, w, causal=False, window=(-1, -1), cu=None, scale=None):
    """o, lse [B, H, S], dq, dk, dv in float64 on global BSHD tensors; loss sum(o * w)."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    rep = q.shape[2] // k.shape[2]
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k.repeat_interleave(rep, 2),
                                                 v.repeat_interleave(rep, 2)))
    mask = allowed(q.shape[1], causal, window, cu)
    o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale).transpose(1, 2)
    (o * w.double()).sum().backward()
    sc = (qt @ kt.transpose(-1, -2)) * (scale or 1.0 / math.sqrt(q.shape[3]))
    lse = sc.masked_fill(~mask, -math.inf).logsumexp(-1)
    return o.detach(), lse.detach(), q.grad, k.grad, v.grad


def compare(what: str, got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    err = ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
    assert err <= TOL, f"{what}: relative error {err:.3e} > {TOL:.1e}"


def globals_(name: str, B: int, S: int, H: int, Hkv: int, D: int):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))  # same on every rank
    return tuple(torch.randn(B, S, h, D, generator=gen) for h in (H, Hkv, Hkv, H))


def check_dense(ctx: ringrt.Context) -> None:
    """flash_attn_func (positional flash-attn order), _qkvpacked, _kvpacked."""
    q, k, v, w = globals_("dense", 2, 20, 4, 2, 16)
    o_r, lse_r, dq_r, dk_r, dv_r = reference(q, k, v, w, causal=True, window=(6, -1), scale=0.3)
    sh = lambda t: rt.shard(t, ctx=ctx)  # noqa: E731
    ql, kl, vl = (sh(t).requires_grad_() for t in (q, k, v))
    # dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
    # deterministic, return_attn_probs: flash-attn's positions.
    o, lse, probs = rt.flash_attn_func(ql, kl, vl, 0.0, 0.3, True, (6, -1), 0.0, None, True, True,
                                       ctx=ctx)
    assert probs is None
    (o * sh(w)).sum().backward()
    compare("flash_attn_func o", o, sh(o_r))
    compare("flash_attn_func lse", lse, sh(lse_r.transpose(1, 2)).transpose(1, 2))
    for n, g, r in (("dq", ql.grad, dq_r), ("dk", kl.grad, dk_r), ("dv", vl.grad, dv_r)):
        compare(f"flash_attn_func {n}", g, sh(r))
    assert isinstance(rt.flash_attn_func(ql, kl, vl, causal=True, ctx=ctx), torch.Tensor)
    # ring-flash-attention's positional order (alibi_slopes=None where softcap sits)
    rt.flash_attn_func(ql, kl, vl, 0.0, None, True, (-1, -1), None, ctx=ctx)

    # kv-packed (GQA): [B, S, 2, Hkv, D]
    kv = sh(torch.stack([k, v], 2)).requires_grad_()
    qa = sh(q).requires_grad_()
    o = rt.flash_attn_kvpacked_func(qa, kv, softmax_scale=0.3, causal=True, window_size=(6, -1),
                                    ctx=ctx)
    (o * sh(w)).sum().backward()
    compare("kvpacked o", o, sh(o_r))
    compare("kvpacked dq", qa.grad, sh(dq_r))
    compare("kvpacked dkv", kv.grad, sh(torch.stack([dk_r, dv_r], 2)))

    # qkv-packed: [B, S, 3, H, D] (no GQA)
    q, k, v, w = globals_("qkvpacked", 1, 17, 2, 2, 8)
    o_r, lse_r, dq_r, dk_r, dv_r = reference(q, k, v, w)
    qkv = sh(torch.stack([q, k, v], 2)).requires_grad_()
    o, lse, _ = rt.flash_attn_qkvpacked_func(qkv, return_attn_probs=True, ctx=ctx)
    (o * sh(w)).sum().backward()
    compare("qkvpacked o", o, sh(o_r))
    compare("qkvpacked lse", lse, sh(lse_r.transpose(1, 2)).transpose(1, 2))
    compare("qkvpacked dqkv", qkv.grad, sh(torch.stack([dq_r, dk_r, dv_r], 2)))


def check_varlen(ctx: ringrt.Context) -> None:
    """flash_attn_varlen_func and its packed forms: cu_seqlens are global."""
    cu = [0, 7, 7, 19, 26]
    cu_t = torch.tensor(cu, dtype=torch.int32)
    q, k, v, w = globals_("varlen", 1, 26, 4, 2, 16)
    o_r, lse_r, dq_r, dk_r, dv_r = reference(q, k, v, w, causal=True, window=(3, 0), cu=cu)
    packed = lambda t: rt.shard(t, layout="stripe", cu_seqlens=cu_t, dim=0, ctx=ctx)  # noqa: E731
    sh = lambda t: packed(t[0])  # noqa: E731
    ql, kl, vl = (sh(t).requires_grad_() for t in (q, k, v))
    o, lse, _ = rt.flash_attn_varlen_func(ql, kl, vl, cu_t, cu_t, 12, 12, causal=True,
                                          window_size=(3, 0), return_attn_probs=True,
                                          ctx=ctx, layout="stripe")
    (o * sh(w)).sum().backward()
    compare("varlen o", o, sh(o_r))
    compare("varlen lse", lse, packed(lse_r[0].T).T)  # [H, total_local]
    for n, g, r in (("dq", ql.grad, dq_r), ("dk", kl.grad, dk_r), ("dv", vl.grad, dv_r)):
        compare(f"varlen {n}", g, sh(r))

    kv = sh(torch.stack([k, v], 2)).requires_grad_()  # [T, 2, Hkv, D]
    o = rt.flash_attn_varlen_kvpacked_func(sh(q), kv, cu, list(cu), 12, 12, causal=True,
                                           window_size=(3, 0), ctx=ctx, layout="stripe")
    (o * sh(w)).sum().backward()
    compare("varlen kvpacked o", o, sh(o_r))
    compare("varlen kvpacked dkv", kv.grad, sh(torch.stack([dk_r, dv_r], 2)))

    q, k, v, w = globals_("varlen qkv", 1, 26, 2, 2, 8)
    o_r, *_ = reference(q, k, v, w, cu=cu)
    qkv = sh(torch.stack([q, k, v], 2))  # [T, 3, H, D]
    o = rt.flash_attn_varlen_qkvpacked_func(qkv, cu_t, 12, ctx=ctx, layout="stripe")
    compare("varlen qkvpacked o", o, sh(o_r))


def check_formats(ctx: ringrt.Context) -> None:
    """sbhd / bhsd / thd: the same bits as bshd, output in the input's format."""
    q, k, v, w = (rt.shard(t, ctx=ctx) for t in globals_("formats", 2, 18, 4, 2, 8))

    def run(fmt: str, perm):
        args = [t.permute(*perm).detach().clone().requires_grad_() for t in (q, k, v)]
        o = rt.ring_attention(*args, causal=True, qkv_format=fmt, ctx=ctx)
        (o * w.permute(*perm)).sum().backward()
        back = [t.permute(*perm) for t in [o] + [a.grad for a in args]]  # to BSHD
        return back

    base = run("bshd", (0, 1, 2, 3))
    for fmt, perm in (("sbhd", (1, 0, 2, 3)), ("bhsd", (0, 2, 1, 3))):
        for n, got, want in zip(("o", "dq", "dk", "dv"), run(fmt, perm), base):
            assert torch.equal(got, want), f"qkv_format {fmt}: {n} differs from bshd"
    o = rt.flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True,
                           qkv_format="bhsd", ctx=ctx)
    assert o.shape == (2, 4, q.shape[1], 8) and torch.equal(o.transpose(1, 2), base[0])
    # thd without cu_seqlens: one sequence, as batch 1 in bshd
    o1 = rt.ring_attention(q[:1], k[:1], v[:1], causal=True, ctx=ctx)
    ot = rt.ring_attention(q[0], k[0], v[0], causal=True, qkv_format="thd", ctx=ctx)
    assert torch.equal(ot, o1[0])


def expect_everywhere(ctx: ringrt.Context, bad: int, fn, match: str,
                      exc=errors.InvalidArgument) -> BaseException:
    """fn raises on every rank: `exc` on `bad` (every rank when bad = -1),
    RemoteError elsewhere; for exc Unsupported (NotImplementedError) every
    rank raises it. The message has `match`."""
    if exc is errors.Unsupported or bad in (-1, ctx.rank):
        return rrt_testing.raises(exc, fn, match=match)
    return rrt_testing.raises(errors.RemoteError, fn, match=match)


def check_errors(ctx: ringrt.Context) -> None:
    bad = ctx.size - 1
    mine = ctx.rank == bad
    q, k, v, _ = (rt.shard(t, ctx=ctx) for t in globals_("errors", 1, 12, 2, 2, 8))
    unsup = errors.Unsupported
    for kw, name in ((dict(dropout_p=0.1), "dropout_p"),
                     (dict(alibi_slopes=torch.ones(2)), "alibi_slopes")):
        e = expect_everywhere(ctx, bad, lambda: rt.flash_attn_func(
            q, k, v, causal=True, ctx=ctx, **(kw if mine else {})), name, unsup)
        assert isinstance(e, NotImplementedError) and f"rank {bad}" in str(e), str(e)
    cu = [0, 5, 12]
    sh = lambda t: rt.shard(t, cu_seqlens=cu, dim=0, ctx=ctx)  # noqa: E731
    qp = sh(torch.randn(12, 2, 8, generator=torch.Generator().manual_seed(1)))
    expect_everywhere(ctx, bad, lambda: rt.flash_attn_varlen_func(
        qp, qp, qp, cu, [0, 6, 12] if mine else cu, 7, 7, ctx=ctx),
        "cu_seqlens_k", unsup)
    expect_everywhere(ctx, bad, lambda: rt.flash_attn_varlen_func(
        qp, qp, qp, cu, cu, 7, 7, block_table=torch.zeros(1) if mine else None, ctx=ctx),
        "block_table", unsup)
    if ctx.size > 1:  # ring-flash-attention's per-rank offsets: named as the likely cause
        local_cu = [c // ctx.size for c in (0, 4 * ctx.size, 12 * ctx.size)]
        ql = torch.randn(12, 2, 8, generator=torch.Generator().manual_seed(ctx.rank))
        expect_everywhere(ctx, -1, lambda: rt.flash_attn_varlen_func(
            ql, ql, ql, local_cu, local_cu, 8, 8, ctx=ctx), "GLOBAL offsets")
    # Invalid (not unsupported) on one rank: InvalidArgument there, RemoteError elsewhere.
    expect_everywhere(ctx, bad, lambda: rt.ring_attention(
        q, k, v, qkv_format="hsbd" if mine else "bshd", ctx=ctx), "unknown qkv_format")
    expect_everywhere(ctx, bad, lambda: rt.ring_attention(
        q, k, v, qkv_format=["bshd"] if mine else "bshd", ctx=ctx), "unknown qkv_format")
    expect_everywhere(ctx, bad, lambda: rt.ring_attention(
        qp, qp, qp, cu_seqlens=cu, qkv_format="bshd" if mine else None, ctx=ctx),
        "needs qkv_format 'thd'")
    qkv = torch.stack([q, k, v], 2)
    expect_everywhere(ctx, bad, lambda: rt.flash_attn_qkvpacked_func(
        qkv[:, :, :2] if mine else qkv, ctx=ctx), "qkv has shape")
    qb, kb, vb = (t.transpose(1, 2) for t in (q, k, v))
    expect_everywhere(ctx, bad, lambda: rt.flash_attn_func(
        qb[0] if mine else qb, kb, vb, qkv_format="bhsd", ctx=ctx),
        "expected [batch, heads, seqlen_local, head_dim]")
    rt.flash_attn_func(q, k, v, causal=True, ctx=ctx)  # still usable


def check_identical(ctx: ringrt.Context) -> None:
    """Every rank passing the whole sequence raises on every rank (np >= 2)."""
    q, k, v, _ = globals_("identical", 1, 8 * ctx.size, 2, 2, 8)
    whole = lambda **kw: rt.flash_attn_func(q, k, v, causal=True, ctx=ctx, **kw)  # noqa: E731
    if ctx.size == 1:
        whole()  # one rank: the whole sequence is its shard
        return
    e = rrt_testing.raises(errors.InvalidArgument, whole, match="ringrt.torch.shard")
    assert "identical" in str(e) and "allow_identical_shards" in str(e), str(e)
    rrt_testing.raises(errors.InvalidArgument, lambda: rt.ring_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), qkv_format="bhsd", ctx=ctx),
        match="identical")
    whole(allow_identical_shards=True)  # the opt-out: runs (a sequence P times longer)
    whole(allow_identical_shards=ctx.rank == 0)  # a partial opt-out: no rank raises
    # Same q, each rank its own k and v (learned queries over the rank's keys): not identical.
    kr = torch.randn(q.shape, generator=torch.Generator().manual_seed(100 + ctx.rank))
    rt.flash_attn_func(q, kr, kr, ctx=ctx)


def check_world_size_under_mpirun(ctx: ringrt.Context) -> None:
    """WORLD_SIZE set to the MPI world's size (users who set torch's
    variables from mpirun's) is not the torchrun mistake."""
    os.environ["WORLD_SIZE"] = str(ctx.size)
    try:
        with ringrt.Context(backend="cpu") as c2:
            assert c2.size == ctx.size
    finally:
        del os.environ["WORLD_SIZE"]


def main() -> None:
    with ringrt.Context(backend="cpu") as ctx:
        check_dense(ctx)
        check_varlen(ctx)
        check_formats(ctx)
        check_errors(ctx)
        check_identical(ctx)
        check_world_size_under_mpirun(ctx)


rrt_testing.run(main)

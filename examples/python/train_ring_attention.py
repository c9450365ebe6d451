"""A minimal training loop with ring attention (context parallelism).

    launch/ringrt-run -n 2 -- python examples/python/train_ring_attention.py [--steps N] [--check]
    mpirun -np 2 python examples/python/train_ring_attention.py   # the same, where mpirun needs no flags

A one-layer causal attention model (rotary positions) learns to copy the
token 3 places back. Every rank holds the same parameters and its shard of
every sequence (zigzag layout); attention runs over the whole sequence
through ringrt.torch.ring_attention; the loss is summed over ranks and the
parameter gradients are summed over ranks (as context parallelism in
Megatron or TransformerEngine does).

--check compares the first step's loss and gradients with the same model
run on the whole sequence in one process (torch SDPA, float64).
"""
from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from mpi4py import MPI

import ringrt
import ringrt.torch as rt

VOCAB, DIM, HEADS, KV_HEADS, SEQ, BATCH, SHIFT = 16, 64, 4, 2, 64, 4, 3


def rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x [batch, seq, heads, head_dim] at global positions pos [seq]."""
    half = x.shape[-1] // 2
    freq = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float64) / half))
    angle = (pos.double()[:, None] * freq[None, :]).to(x.dtype)
    cos, sin = angle.cos()[None, :, None, :], angle.sin()[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.head_dim = DIM // HEADS
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wkv = nn.Linear(DIM, 2 * KV_HEADS * self.head_dim, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.out = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor, attention) -> torch.Tensor:
        """tokens [batch, seq_local] at global positions pos -> logits."""
        B, S = tokens.shape
        x = self.embed(tokens)
        q = self.wq(x).view(B, S, HEADS, self.head_dim)
        k, v = self.wkv(x).view(B, S, 2, KV_HEADS, self.head_dim).unbind(2)
        q, k = rope(q, pos), rope(k, pos)
        o = attention(q, k, v)  # flash_attn_func(q, k, v, causal=True) in one process
        return self.out(x + self.wo(o.reshape(B, S, DIM)))


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The one-process attention the ring replaces (for --check)."""
    rep = q.shape[2] // k.shape[2]
    q, k, v = (t.transpose(1, 2) for t in (q, k.repeat_interleave(rep, 2),
                                             v.repeat_interleave(rep, 2)))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)


def batch(step: int):
    """The same global batch on every rank: tokens and next-token labels."""
    gen = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    labels = torch.roll(tokens, SHIFT, dims=1)
    labels[:, :SHIFT] = -100  # nothing to copy yet
    return tokens, labels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    ctx = ringrt.Context(comm)  # cpu here, the GPU on a GPU node (then .cuda() the model)
    torch.manual_seed(0)  # the same parameters on every rank
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    pos = rt.shard_positions(SEQ, layout="zigzag", ctx=ctx)
    ring = lambda q, k, v: rt.ring_attention(q, k, v, causal=True, layout="zigzag", ctx=ctx)
    for step in range(args.steps):
        tokens, labels = batch(step)
        mine, my_labels = rt.shard(tokens, ctx=ctx), rt.shard(labels, ctx=ctx)
        logits = model(mine, pos, ring)
        n_global = (labels != -100).sum()
        # This rank's part of the global mean: the ranks' losses add up to it.
        loss = F.cross_entropy(logits.flatten(0, 1), my_labels.flatten(), ignore_index=-100,
                               reduction="sum") / n_global
        opt.zero_grad()
        loss.backward()  # collective: every rank runs it
        for p in model.parameters():  # sum the parameter gradients over ranks
            comm.Allreduce(MPI.IN_PLACE, p.grad.numpy(), op=MPI.SUM)
        total = comm.allreduce(loss.item())
        if args.check and step == 0:
            check(model, tokens, labels, total)
        opt.step()
        if ctx.rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"step {step:3d}  loss {total:.4f}", flush=True)
    ctx.close()


def check(model: Model, tokens: torch.Tensor, labels: torch.Tensor, ring_loss: float) -> None:
    """The first step on the whole sequence in one process, float64."""
    ref = Model().double()
    ref.load_state_dict(model.state_dict())
    logits = ref(tokens, torch.arange(SEQ), sdpa)
    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    loss.backward()
    assert abs(loss.item() - ring_loss) <= 1e-5 * abs(loss.item()), (loss.item(), ring_loss)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        err = ((p.grad.double() - q.grad).abs().max() / q.grad.abs().max()).item()
        assert err <= 1e-4, f"{name}: gradient relative error {err:.2e}"
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(f"check: loss {ring_loss:.6f} = {loss.item():.6f} (one process, float64); "
              "gradients agree", flush=True)


if __name__ == "__main__":
    main()

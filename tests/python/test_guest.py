"""ringrt as a guest in a torch program (issue 32): a ring attention
forward and backward leave the process's CPU affinity and torch's intra-op
thread count as they were, unless the program asks ringrt to bind
(Context(bind=True) or RINGRT_BIND=1); asked, ringrt binds the rank to the
cores its info() names and sets the thread count to match.

usage: mpirun -np N python test_guest.py"""
import os

import torch
from mpi4py import MPI

import ringrt
import ringrt.torch as rt


def state():
    return sorted(os.sched_getaffinity(0)), torch.get_num_threads()


def attention(ctx):
    torch.manual_seed(ctx.rank)
    q, k, v = (torch.randn(1, 16, 2, 8, requires_grad=True) for _ in range(3))
    o = rt.ring_attention(q, k, v, causal=True, ctx=ctx)
    o.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def cpus_of(cores: str):
    """"0-1,4" -> [0, 1, 4]"""
    out = []
    for part in cores.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def main() -> None:
    world = MPI.COMM_WORLD
    assert "RINGRT_BIND" not in os.environ, "run without RINGRT_BIND: the library's default"
    before = state()
    with ringrt.Context(backend="cpu") as ctx:
        assert ctx.info()["cores"] == "unbound", ctx.info()
        attention(ctx)
    after = state()
    assert after == before, f"rank {world.rank}: not asked, yet {before} -> {after}"

    with ringrt.Context(backend="cpu", bind=False) as ctx:
        attention(ctx)
    assert state() == before, f"rank {world.rank}: bind=False, yet {before} -> {state()}"

    with ringrt.Context(backend="cpu", bind=True) as ctx:
        info = ctx.info()
        attention(ctx)
        cpus, threads = state()
        assert info["cores"] != "unbound", info
        assert cpus == cpus_of(info["cores"]), f"bound to {cpus}, info says {info['cores']}"
        assert threads == info["threads"], f"torch has {threads} threads, info {info['threads']}"
        if len(before[0]) >= world.size:  # enough cores: each rank gets its own part
            assert len(cpus) < len(before[0]), f"rank {world.rank}: asked, yet still on {cpus}"
    world.Barrier()
    if world.rank == 0:
        print(f"guest: unchanged {before} unless asked; bound to {cpus} with {threads} threads")
        print("PASS")


if __name__ == "__main__":
    main()

"""ringrt.Context from torch.distributed under mpirun (np 2-3): a gloo
process group initialised with RANK / WORLD_SIZE from Open MPI's
environment, as docs/python.md tells users to.

- from_process_group(WORLD): ranks and size are torch's; ring attention
  on it gives the bits of the same call on a context over MPI_COMM_WORLD
  (same processes, same order, same kernels).
- A subgroup (np 3: torch ranks [0, 2]): members get a 2-rank context
  ranked as in the group, bit for bit against a context over the
  equivalent MPI communicator (MPI_Comm_split); the non-member is refused.
- A 2-D DeviceMesh on cpu ((1, P), dims "dp" x "cp"): the "cp" dimension
  is the whole ring, "dp" one process; by name and by index.
- Mismatches raise InvalidArgument on every rank, no hang: torch ranks
  rotated against MPI's (a RANK not taken from the MPI launcher), and
  a torch world of one process per MPI rank (as torchrun-style separate
  worlds would be); torch.distributed not initialised is a RuntimeError.
"""
from __future__ import annotations

import os
import socket
import zlib

import torch
import torch.distributed as dist
from mpi4py import MPI

import rrt_testing
import ringrt
import ringrt.torch as rt
from ringrt import errors

WORLD = MPI.COMM_WORLD


def init_torch(rank: int, size: int) -> None:
    """gloo over TCP on this host: rank 0's free port, broadcast over MPI."""
    port = 0
    if WORLD.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = WORLD.bcast(port, root=0)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(size))
    dist.init_process_group("gloo", rank=rank, world_size=size)


def attention(ctx: ringrt.Context) -> torch.Tensor:
    gen = torch.Generator().manual_seed(zlib.crc32(b"dist"))  # same on every rank
    q, k, v = (rt.shard(torch.randn(1, 12, h, 8, generator=gen), ctx=ctx) for h in (4, 2, 2))
    return rt.ring_attention(q, k, v, causal=True, ctx=ctx)


def same_bits(what: str, got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.shape == want.shape and torch.equal(got, want), f"{what}: bits differ"


def check_world() -> None:
    with ringrt.Context.from_process_group(backend="cpu") as ctx, \
            ringrt.Context(backend="cpu") as ref:
        assert (ctx.rank, ctx.size) == (dist.get_rank(), dist.get_world_size())
        same_bits("world group", attention(ctx), attention(ref))
    with ringrt.Context.from_process_group(dist.group.WORLD, backend="cpu") as ctx:
        assert ctx.size == dist.get_world_size()


def check_subgroup() -> None:
    """Torch ranks [0, 2] of 3 (new_group is collective over torch's world)."""
    members = [0, 2]
    pg = dist.new_group(members)
    mine = dist.get_rank() in members
    split = WORLD.Split(0 if mine else MPI.UNDEFINED, WORLD.Get_rank())
    if mine:
        with ringrt.Context.from_process_group(pg, backend="cpu") as ctx, \
                ringrt.Context(split, backend="cpu") as ref:
            assert (ctx.rank, ctx.size) == (members.index(dist.get_rank()), 2)
            same_bits("subgroup", attention(ctx), attention(ref))
        split.Free()
    else:
        rrt_testing.raises(errors.InvalidArgument,
                           lambda: ringrt.Context.from_process_group(pg, backend="cpu"),
                           match="not a member of the process group")


def check_mesh() -> None:
    from torch.distributed.device_mesh import init_device_mesh
    size = dist.get_world_size()
    mesh = init_device_mesh("cpu", (1, size), mesh_dim_names=("dp", "cp"))
    with ringrt.Context.from_device_mesh(mesh, "cp", backend="cpu") as cp, \
            ringrt.Context.from_device_mesh(mesh, 0, backend="cpu") as dp, \
            ringrt.Context(backend="cpu") as ref:
        assert (cp.rank, cp.size) == (mesh.get_local_rank("cp"), size)
        assert (dp.rank, dp.size) == (0, 1)
        same_bits("mesh cp", attention(cp), attention(ref))
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: ringrt.Context.from_device_mesh(mesh, backend="cpu"),
                       match="name one")


def check_mismatch() -> None:
    rank, size = WORLD.Get_rank(), WORLD.Get_size()
    dist.destroy_process_group()
    rrt_testing.raises(RuntimeError, lambda: ringrt.Context.from_process_group(backend="cpu"),
                       match="not initialised")
    # RANK not from the MPI launcher: torch rank r is MPI rank r-1.
    init_torch((rank + 1) % size, size)
    e = rrt_testing.raises(errors.InvalidArgument,
                           lambda: ringrt.Context.from_process_group(backend="cpu"),
                           match="ranks are not MPI's")
    # Every member reports the same first mismatch (group rank 0 is MPI rank size-1).
    assert f"its rank 0 is torch rank 0 of {size} but MPI rank {size - 1}" in str(e), str(e)
    dist.destroy_process_group()
    # One torch world per process (each alone, no MPI launcher seen by torch).
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: ringrt.Context.from_process_group(backend="cpu"),
                       match=f"torch rank 0 of 1 but MPI rank {rank} of {size}")
    dist.destroy_process_group()


def main() -> None:
    init_torch(WORLD.Get_rank(), WORLD.Get_size())
    check_world()
    if WORLD.Get_size() == 3:
        check_subgroup()
    check_mesh()
    check_mismatch()


rrt_testing.run(main)

"""torch.distributed process groups and DeviceMesh dimensions as MPI
communicators, for :meth:`ringrt.Context.from_process_group` and
:meth:`ringrt.Context.from_device_mesh`.

ringrt communicates over MPI; a torch.distributed job started by an MPI
launcher (mpirun, srun) has both: torch's ranks (RANK, WORLD_SIZE) and
MPI's (MPI_COMM_WORLD). The communicator of a process group holds the
same processes in the group's rank order, found from MPI's world ranks,
which the group's members exchange over the group itself (one
all_gather_object: it works for gloo and nccl groups alike). That
exchange is also the agreement: every member checks the same gathered
table, so a group whose torch ranks are not MPI's (another launcher,
RANK not set from the MPI rank) raises the same error on every member.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

from . import errors

#: The tag of MPI_Comm_create_group calls (any value; one kind of call).
_CREATE_TAG = 0x52524744


class _Member(NamedTuple):
    """What one member of the group says about itself."""
    mpi_rank: int
    mpi_size: int
    torch_rank: int
    torch_size: int


def _invalid(message: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(errors.INVALID_ARG, message, "RRT_ERR_INVALID_ARG")


def _mapping_problem(op: str, ranks: List[int], members: List[_Member]) -> Optional[str]:
    """Why the group's members (group-rank order) are not the MPI world
    ranks of the same numbers, or None. The same on every member."""
    for j, m in enumerate(members):
        if m.torch_size != m.mpi_size or m.torch_rank != m.mpi_rank or m.torch_rank != ranks[j]:
            hint = ""
            if m.mpi_size == 1 and m.torch_size > 1:
                hint = (" (MPI's world has 1 process: these processes were not started by an MPI "
                        "launcher; torchrun and torch.multiprocessing cannot start ringrt jobs)")
            return (f"{op}: the process group's ranks are not MPI's: its rank {j} is torch rank "
                    f"{m.torch_rank} of {m.torch_size} but MPI rank {m.mpi_rank} of "
                    f"{m.mpi_size}{hint}. ringrt runs over MPI and needs torch's ranks to be "
                    "MPI's: start every process with mpirun, srun or launch/ringrt-run and "
                    "initialise torch.distributed with RANK and WORLD_SIZE from the MPI launcher "
                    "(OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/NTASKS or PMI_RANK/SIZE; "
                    "docs/python.md, 'Launching: torchrun and mpirun')")
    return None


def comm_of_group(pg: Any = None, op: str = "Context.from_process_group") -> Any:
    """A new mpi4py communicator holding `pg`'s processes in `pg`'s rank
    order (the caller frees it). Collective over the group's members.

    Raises:
        RuntimeError: torch.distributed is not initialised (local).
        ringrt.errors.InvalidArgument: this process is not in `pg` (local),
            or the group's ranks are not MPI's (on every member).
    """
    import torch.distributed as dist
    from mpi4py import MPI
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(f"{op}: torch.distributed is not initialised (call "
                           "torch.distributed.init_process_group first, under mpirun or srun)")
    if pg is None:
        pg = dist.group.WORLD
    ranks = dist.get_process_group_ranks(pg)
    me = dist.get_rank()
    if me not in ranks:
        raise _invalid(f"{op}: this process (torch rank {me}) is not a member of the process "
                       f"group (torch ranks {ranks})")
    world = MPI.COMM_WORLD
    members: List[Any] = [None] * len(ranks)
    dist.all_gather_object(members, _Member(world.Get_rank(), world.Get_size(), me,
                                            dist.get_world_size()), group=pg)
    problem = _mapping_problem(op, ranks, [_Member(*m) for m in members])
    if problem:
        raise _invalid(problem)
    group = world.Get_group().Incl([m[0] for m in members])
    try:
        return world.Create_group(group, _CREATE_TAG)
    finally:
        group.Free()


def group_of_mesh(mesh: Any, dim: Any) -> Any:
    """The process group of one dimension (index or name) of a DeviceMesh."""
    if mesh.ndim == 1 and dim is None:
        return mesh.get_group()
    if dim is None:
        raise _invalid(f"Context.from_device_mesh: the mesh has {mesh.ndim} dimensions "
                       f"{mesh.mesh_dim_names or ''}: name one (dim=index or name)")
    return mesh.get_group(dim)

"""ringrt.Context over mpi4py: sizes, info, errors as exceptions, agreement."""
from mpi4py import MPI

import rrt_testing
import ringrt
from ringrt import errors


def check_mpi_match() -> None:
    """mpi4py's MPI against the one libringrt was built with."""
    from ringrt import _lib
    ours = _lib.lib().rrt_mpi_build_version().decode()
    name, version = MPI.get_vendor()
    assert ours.startswith(name), f"this build: ringrt {ours}, mpi4py {name} {version}"
    _lib.check_mpi_match()  # the same MPI: no error
    assert _lib.mpi_mismatch("Open MPI 4.1.4", ("Open MPI", (4, 1, 6))) is None
    assert _lib.mpi_mismatch("MPICH 4.0.2", ("Intel MPI", (2021, 10, 0))) is None
    msg = _lib.mpi_mismatch("Open MPI 4.1.4", ("MPICH", (4, 0, 2)))
    assert msg and "Open MPI 4.1.4" in msg and "MPICH 4.0.2" in msg, msg
    msg = _lib.mpi_mismatch("Open MPI 4.1.4", ("Open MPI", (5, 0, 3)))
    assert msg and "Open MPI 5.0.3" in msg, msg
    assert _lib.mpi_mismatch("MPICH 4.1", ("Open MPI", (4, 1, 4)))


def main() -> None:
    world = MPI.COMM_WORLD
    check_mpi_match()
    with ringrt.Context(backend="cpu") as ctx:
        assert (ctx.rank, ctx.size) == (world.Get_rank(), world.Get_size())
        assert ctx.backend == "cpu" and ctx.transport == "mpi"
        info = ctx.info()
        assert info["rank"] == world.Get_rank() and info["backend"] == "cpu"
        assert info["threads"] >= 1 and info["host"]
        assert ringrt.library_version() == ringrt.__version__
        ctx.barrier()
        ctx.agree(None, "test")  # all fine: returns

        # One bad rank: every rank raises; the message names that rank.
        bad = ctx.size - 1
        problem = "q has shape (3, 4), expected (2, 4)" if ctx.rank == bad else None
        e = rrt_testing.raises(errors.InvalidArgument if ctx.rank == bad else errors.RemoteError,
                               lambda: ctx.agree(problem, "ring_attention"),
                               match="expected (2, 4)")
        assert f"rank {bad}" in str(e), str(e)
        if ctx.size == 1:
            assert isinstance(e, ValueError)
    rrt_testing.raises(ValueError, lambda: ctx.handle, match="closed")
    rrt_testing.raises(ValueError, lambda: ringrt.Context(backend="gpu"), match="backend")

    # A sub-communicator: ranks are those of the sub-communicator.
    half = world.Split(world.Get_rank() % 2, world.Get_rank())
    with ringrt.Context(half, backend="cpu") as sub:
        assert (sub.rank, sub.size) == (half.Get_rank(), half.Get_size())
    half.Free()

    # The default context is created once and closed at exit.
    assert ringrt.default_context() is ringrt.default_context()


rrt_testing.run(main)

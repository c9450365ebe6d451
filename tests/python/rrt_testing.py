"""Helpers of the Python tests: run a test body on every rank; a failure on
any rank prints its traceback with the rank and aborts the job (so no rank
is left waiting in a collective); checks that every rank raised."""
from __future__ import annotations

import sys
import traceback
from typing import Callable, Type

from mpi4py import MPI


def run(main: Callable[[], None]) -> None:
    """Run main(); on an exception, print it with the rank and MPI_Abort(1)."""
    rank = MPI.COMM_WORLD.Get_rank()
    try:
        main()
    except BaseException:  # noqa: B902 - any failure must end the whole job
        sys.stderr.write(f"[rank {rank}] test failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    MPI.COMM_WORLD.Barrier()
    if rank == 0:
        print("PASS")


def raises(exc: Type[BaseException], fn: Callable[[], object], *, match: str = "") -> BaseException:
    """fn() must raise exc whose message contains `match`; returns it."""
    try:
        fn()
    except exc as e:
        if match not in str(e):
            raise AssertionError(f"{exc.__name__} raised, but {match!r} not in {str(e)!r}") from e
        return e
    raise AssertionError(f"{exc.__name__} not raised")

"""ringrt's status codes as Python exceptions.

Every failing call raises a subclass of :class:`RingrtError` carrying the
library's message (``rank R: operation: what (status)``; for a failure on
another rank, which rank and why). The subclasses also derive from the
built-in exception a Python user would catch: a bad argument is a
``ValueError``, a timeout a ``TimeoutError``, a file problem an ``OSError``.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

SUCCESS = 0
INVALID_ARG = 1
OUT_OF_MEMORY = 2
MPI = 3
NCCL = 4
CUDA = 5
NO_DEVICE = 6
UNSUPPORTED = 7
TIMEOUT = 8
IO = 9
SINGULAR = 10
NUMERIC = 11
REMOTE = 12
INTERNAL = 13


class RingrtError(RuntimeError):
    """A ringrt call failed. ``status`` is the rrt_status code, ``status_name``
    its name, ``message`` the library's message (rank, operation, cause)."""

    def __init__(self, status: int, message: str, status_name: str = ""):
        super().__init__(message)
        self.status = status
        self.status_name = status_name
        self.message = message


class InvalidArgument(RingrtError, ValueError):
    """A bad argument, shape, dtype or device (RRT_ERR_INVALID_ARG)."""


class OutOfMemory(RingrtError, MemoryError):
    """An allocation failed (RRT_ERR_OUT_OF_MEMORY)."""


class MPIError(RingrtError):
    """An MPI call failed (RRT_ERR_MPI)."""


class NCCLError(RingrtError):
    """An NCCL call failed or NCCL could not be loaded (RRT_ERR_NCCL)."""


class CUDAError(RingrtError):
    """A CUDA runtime call failed (RRT_ERR_CUDA)."""


class NoDevice(RingrtError):
    """The cuda backend was asked for but no usable GPU exists (RRT_ERR_NO_DEVICE)."""


class Unsupported(RingrtError, NotImplementedError):
    """Not built into this libringrt (RRT_ERR_UNSUPPORTED)."""


class Timeout(RingrtError, TimeoutError):
    """A blocking wait exceeded RINGRT_TIMEOUT (RRT_ERR_TIMEOUT)."""


class IOFailure(RingrtError, OSError):
    """A file could not be read or written, or is malformed (RRT_ERR_IO)."""


class Singular(RingrtError, ArithmeticError):
    """A zero pivot in a factorisation; the message names the global row (RRT_ERR_SINGULAR)."""


class NumericError(RingrtError, ArithmeticError):
    """NaN or Inf in an input or a result (RRT_ERR_NUMERIC)."""


class RemoteError(RingrtError):
    """This rank was fine but another rank failed; the message says which and why
    (RRT_ERR_REMOTE)."""


class InternalError(RingrtError):
    """A bug in ringrt (RRT_ERR_INTERNAL)."""


_BY_STATUS: Dict[int, Type[RingrtError]] = {
    INVALID_ARG: InvalidArgument, OUT_OF_MEMORY: OutOfMemory, MPI: MPIError, NCCL: NCCLError,
    CUDA: CUDAError, NO_DEVICE: NoDevice, UNSUPPORTED: Unsupported, TIMEOUT: Timeout,
    IO: IOFailure, SINGULAR: Singular, NUMERIC: NumericError, REMOTE: RemoteError,
    INTERNAL: InternalError,
}


def error_for(status: int, message: str, status_name: str = "") -> RingrtError:
    """The exception for a status code and message."""
    return _BY_STATUS.get(status, RingrtError)(status, message, status_name)


def check(status: int, ctx_handle: Optional[int] = None, op: str = "") -> None:
    """Raise the exception for a failed call: the context's last error as the
    message when there is a context, else the status name and `op`."""
    if status == SUCCESS:
        return
    from ._lib import lib
    L = lib()
    name = (L.rrt_status_string(status) or b"").decode()
    message = ""
    if ctx_handle:
        message = (L.rrt_ctx_last_error(ctx_handle) or b"").decode(errors="replace")
        L.rrt_ctx_clear_error(ctx_handle)
    if not message:
        message = f"{op}: {name}" if op else name
    raise error_for(status, message, name)

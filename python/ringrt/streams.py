"""The caller's CUDA stream of a context (C: ``rrt_ctx_set_stream``), and
which NCCL library a context loaded.

With a stream set, each ringrt call that queues GPU work (attention forward
and backward, ILU(0) factor and apply, SpMV, Krylov solves) first makes its
own streams wait for the work queued on that stream so far, and ends by
making that stream wait for its own work: event record plus stream wait, no
device-wide synchronise. A PyTorch caller passes
``torch.cuda.current_stream()`` (or its ``cuda_stream`` integer). Only
``None`` is accepted on cpu and emu contexts.
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Iterator, Optional

from ._lib import declare, lib

declare({
    "rrt_ctx_set_stream": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "rrt_ctx_stream": (ctypes.c_void_p, [ctypes.c_void_p]),
    "rrt_ctx_nccl_library": (ctypes.c_char_p, [ctypes.c_void_p]),
})


def _handle_of(stream: Any) -> Optional[int]:
    """A stream's ``cudaStream_t`` as an integer: ``None``/0, an integer, or
    an object with ``cuda_stream`` (``torch.cuda.Stream``)."""
    if stream is None:
        return None
    raw = getattr(stream, "cuda_stream", stream)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(f"stream must be None, an int cudaStream_t or have .cuda_stream; "
                        f"got {type(stream).__name__}")
    return raw or None


def set_stream(ctx: Any, stream: Any) -> None:
    """Order ``ctx``'s work with ``stream`` from now on (``None``: no caller's
    stream). Local to the rank. Raises ``InvalidArgument`` for a stream on a
    cpu/emu context."""
    ctx.check(lib().rrt_ctx_set_stream(ctx.handle, _handle_of(stream)), "rrt_ctx_set_stream")


def get_stream(ctx: Any) -> Optional[int]:
    """The stream set on ``ctx`` (a ``cudaStream_t`` integer), or ``None``."""
    return lib().rrt_ctx_stream(ctx.handle) or None


@contextlib.contextmanager
def use_stream(ctx: Any, stream: Any) -> Iterator[None]:
    """``with use_stream(ctx, torch.cuda.current_stream()): ...``: set the
    stream for the block, then restore the one set before."""
    before = get_stream(ctx)
    set_stream(ctx, stream)
    try:
        yield
    finally:
        set_stream(ctx, before)


def nccl_library(ctx: Any) -> str:
    """The path of the NCCL library ``ctx`` loaded ("" when it loaded none:
    cpu/emu backends, ``RINGRT_NCCL=0``, or a build without NCCL)."""
    return lib().rrt_ctx_nccl_library(ctx.handle).decode()

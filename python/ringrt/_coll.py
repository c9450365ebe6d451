"""Small collectives the Python fronts need, through ringrt's own transport
(so every wait has the context's timeout and reports the peer).

- :func:`allgather_ints`: a few integers per rank, on host memory for every
  backend (shapes, lengths, cache keys);
- :func:`allgatherv`: rank-ordered byte blocks in the context's backend
  memory (host for cpu/emu, device for cuda), over ``rrt_allgatherv``;
- :func:`allgather_rows`: rank-ordered rows of host numpy arrays, staged
  through backend memory;
- :func:`allreduce_sum`: an in-place sum in backend memory (``rrt_allreduce``).
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Iterator, List, Sequence

import numpy as np

from . import _lib
from . import errors
from .context import Context

_P, _c_void_p, _c_size_t = ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t


class _MinLoc(ctypes.Structure):
    """rrt_minloc (include/ringrt/transport.h)."""
    _fields_ = [("value", ctypes.c_double), ("index", ctypes.c_int64)]


_lib.declare({
    "rrt_allreduce_minloc": (ctypes.c_int, [_c_void_p, _P(_MinLoc), _c_size_t]),
    # size_t arrays pass as void pointers.
    "rrt_allgatherv": (ctypes.c_int, [_c_void_p, _c_void_p, _c_size_t, _c_void_p, _c_void_p,
                                      _c_void_p]),
    "rrt_allreduce": (ctypes.c_int, [_c_void_p, _c_void_p, _c_void_p, _c_size_t, ctypes.c_int,
                                     ctypes.c_int]),
})

#: rrt_dtype codes that rrt_allreduce reduces.
REDUCE_F32, REDUCE_F64 = 0, 1
_OP_SUM = 0


def allgather_ints(ctx: Context, values: Sequence[int]) -> List[List[int]]:
    """Every rank's `values` (the same count on every rank), in rank order.

    Collective. The public API has no host-memory allgather on the cuda
    backend (``rrt_allgatherv`` works on backend memory), but min-loc runs
    on host memory for every backend: slot (r, i) holds value 0 with index
    ``values[i]`` on rank r and value 1 elsewhere, so the minimum carries
    rank r's integer to everyone, exactly (64-bit)."""
    n, size, rank = len(values), ctx.size, ctx.rank
    slots = (_MinLoc * (n * size))()
    for r in range(size):
        for i in range(n):
            slots[r * n + i] = _MinLoc(0.0, int(values[i])) if r == rank else _MinLoc(1.0, 0)
    ctx.check(_lib.lib().rrt_allreduce_minloc(ctx.handle, slots, n * size), "allgather_ints")
    return [[slots[r * n + i].index for i in range(n)] for r in range(size)]


def allgatherv(ctx: Context, send: int, nbytes: int, recv: int, counts: Sequence[int]) -> None:
    """Gather `nbytes` at address `send` from every rank into `recv`, rank r's
    block at the sum of the counts before it (``counts[r]`` bytes). Both
    buffers are in the context's backend memory. Collective."""
    size = ctx.size
    sizes = (_c_size_t * size)(*counts)
    displs = (_c_size_t * size)()
    for r in range(1, size):
        displs[r] = displs[r - 1] + counts[r - 1]
    ctx.check(_lib.lib().rrt_allgatherv(ctx.handle, send or None, nbytes, recv or None, sizes,
                                        displs), "rrt_allgatherv")


def allreduce_sum(ctx: Context, buf: int, count: int, dtype: int) -> None:
    """Sum `count` elements (REDUCE_F32 or REDUCE_F64) at `buf` over the
    ranks, in place, in the context's backend memory. Collective."""
    ctx.check(_lib.lib().rrt_allreduce(ctx.handle, buf or None, buf or None, count, dtype,
                                       _OP_SUM), "rrt_allreduce")


@contextlib.contextmanager
def staged(ctx: Context, arrays: Sequence[np.ndarray], op: str) -> Iterator[List[int]]:
    """Backend-memory copies of host arrays (rrt_malloc, then a copy in),
    freed on exit; yields their addresses. Collective: a rank that cannot
    stage is agreed on before the caller's collective call, so no rank is
    left waiting in it."""
    L, ptrs, status = _lib.lib(), [], errors.SUCCESS
    try:
        for a in arrays:
            p = _c_void_p()
            status = L.rrt_malloc(ctx.handle, max(a.nbytes, 8), ctypes.byref(p))
            if status == errors.SUCCESS:
                ptrs.append(p.value)
                status = L.rrt_memcpy_to_backend(ctx.handle, p, a.ctypes.data, a.nbytes)
            if status != errors.SUCCESS:
                break
        ctx.agree(None if status == errors.SUCCESS else
                  f"staging {len(arrays)} arrays in backend memory failed", op, status)
        yield ptrs
    finally:
        for p in ptrs:
            L.rrt_free(ctx.handle, p)


def copy_to_host(ctx: Context, dst: np.ndarray, src: int, op: str) -> None:
    """Copy backend memory at `src` into the host array `dst` (its nbytes)."""
    ctx.check(_lib.lib().rrt_memcpy_to_host(ctx.handle, dst.ctypes.data, src, dst.nbytes), op)


def allgather_rows(ctx: Context, local: np.ndarray, counts: Sequence[int],
                   op: str = "allgather_rows") -> np.ndarray:
    """Every rank's rows of the 2-D host array `local` (same dtype and width
    on every rank; rank r has counts[r] rows), concatenated in rank order on
    every rank. Collective. The rows travel through backend memory (what
    the NCCL transport needs)."""
    send_h = np.ascontiguousarray(local)
    row_bytes = send_h.shape[1] * send_h.itemsize
    out = np.zeros((int(sum(counts)), send_h.shape[1]), dtype=send_h.dtype)
    with staged(ctx, [send_h, out], op) as (send_d, recv_d):
        allgatherv(ctx, send_d, send_h.nbytes, recv_d, [int(c) * row_bytes for c in counts])
        copy_to_host(ctx, out, recv_d, op)
    return out

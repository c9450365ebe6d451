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

import ctypes
from typing import List, Optional, Sequence

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


def allgather_rows(ctx: Context, local: np.ndarray, counts: Sequence[int],
                   op: str = "allgather_rows") -> np.ndarray:
    """Every rank's rows of the 2-D host array `local` (same dtype and width
    on every rank; rank r has counts[r] rows), concatenated in rank order on
    every rank. Collective. The rows travel through backend memory (what
    the NCCL transport needs); failing to allocate it is agreed first, so no
    rank is left waiting in the gather."""
    L = _lib.lib()
    send_h = np.ascontiguousarray(local)
    row_bytes = send_h.shape[1] * send_h.itemsize
    out = np.zeros((int(sum(counts)), send_h.shape[1]), dtype=send_h.dtype)
    bufs: List[_c_void_p] = []
    try:
        problem: Optional[str] = None
        try:
            for nbytes in (send_h.nbytes, out.nbytes):
                p = _c_void_p()
                ctx.check(L.rrt_malloc(ctx.handle, max(nbytes, 8), ctypes.byref(p)), "rrt_malloc")
                bufs.append(p)
            ctx.check(L.rrt_memcpy_to_backend(ctx.handle, bufs[0], send_h.ctypes.data,
                                              send_h.nbytes), "rrt_memcpy_to_backend")
        except errors.RingrtError as e:
            problem = str(e)
        ctx.agree(problem, op, errors.OUT_OF_MEMORY)
        allgatherv(ctx, bufs[0].value or 0, send_h.nbytes, bufs[1].value or 0,
                   [int(c) * row_bytes for c in counts])
        ctx.check(L.rrt_memcpy_to_host(ctx.handle, out.ctypes.data, bufs[1], out.nbytes),
                  "rrt_memcpy_to_host")
    finally:
        for p in bufs:
            L.rrt_free(ctx.handle, p)
    return out

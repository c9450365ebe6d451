"""Small collectives the Python fronts need, through ringrt's own transport
(so every wait has the context's timeout and reports the peer).

- :func:`allgather_ints`: a few integers per rank, on host memory for every
  backend (shapes, lengths, cache keys);
- :func:`allgatherv`: rank-ordered byte blocks in the context's backend
  memory (host for cpu/emu, device for cuda), over ``rrt_allgatherv``;
- :func:`allreduce_sum`: an in-place sum in backend memory (``rrt_allreduce``).
"""
from __future__ import annotations

import ctypes
from typing import List, Sequence

from . import _lib
from .context import Context

_P, _c_void_p, _c_size_t = ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t


class _MinLoc(ctypes.Structure):
    """rrt_minloc (include/ringrt/transport.h)."""
    _fields_ = [("value", ctypes.c_double), ("index", ctypes.c_int64)]


_lib.declare({
    "rrt_allreduce_minloc": (ctypes.c_int, [_c_void_p, _P(_MinLoc), _c_size_t]),
    # The same prototype as ringrt.seacells declares (one CDLL function, so
    # the last declaration wins): size_t arrays pass as void pointers.
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

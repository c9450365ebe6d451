"""Sparse matrices distributed over the ranks of a context, from SciPy.

:class:`SparseMatrix` hands a ``scipy.sparse`` matrix to ringrt in one of two
layouts, fixed when it is made:

- **whole**: every rank passes the same n x n matrix; ringrt splits the rows
  into contiguous blocks with about equal nonzeros (``rrt_sparse_partition``)
  and each rank keeps its block. Vectors (``b``, ``x0``, ``r`` and the
  results) are then whole length-n vectors, the same on every rank.
- **rows**: every rank passes its own row block (nrows x n), the blocks in
  rank order; ``row_begin=`` says where the block starts, else it is the sum
  of the lower ranks' rows. Vectors are this rank's block (nrows entries).

Every call is collective over the context's communicator, and bad input
raises on every rank.
"""
from __future__ import annotations

import ctypes
import weakref
import zlib
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from . import errors
from ._coll import allgather_rows, copy_to_host, staged
from ._lib import declare, lib
from .context import Context, default_context

c_int, c_int64, c_double = ctypes.c_int, ctypes.c_int64, ctypes.c_double
c_void_p = ctypes.c_void_p
P = ctypes.POINTER

declare({
    "rrt_sparse_partition": (None, [c_int64, P(c_int64), c_int, P(c_int64)]),
    "rrt_sparse_create": (c_int, [c_void_p, c_int64, c_int64, c_int64, P(c_int64), P(c_int64),
                                  P(c_double), P(c_void_p)]),
    "rrt_sparse_destroy": (c_int, [c_void_p]),
    "rrt_sparse_set_values": (c_int, [c_void_p, P(c_double)]),
    "rrt_sparse_spmv": (c_int, [c_void_p, c_void_p, c_void_p]),
    "rrt_sparse_global_nnz": (c_int64, [c_void_p]),
})


class _Handle:
    """A native handle and its destructor; close() is idempotent, so the
    owner's finaliser and the context's close may both call it."""

    def __init__(self, value: int, destroy: Callable[[int], int]):
        self.value: Optional[int] = value
        self._destroy = destroy

    def close(self) -> None:
        value, self.value = self.value, None
        if value is not None:
            self._destroy(value)


def _own(obj: Any, ctx: Context, handle: _Handle) -> None:
    """Free `handle` when `obj` is collected, or before `ctx` closes."""
    weakref.finalize(obj, handle.close)
    ctx._adopt(obj, handle.close)


def _ptr(a: np.ndarray, ctype: type) -> Any:
    return a.ctypes.data_as(P(ctype))


def _crc(*arrays: np.ndarray) -> int:
    """A checksum of arrays, to tell whether every rank passed the same data."""
    crc = 0
    for a in arrays:
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8), crc)
    return crc


def _first_nonfinite_row(indptr: np.ndarray, data: np.ndarray) -> int:
    """Local index of the first row holding NaN or Inf, or -1."""
    bad = np.flatnonzero(~np.isfinite(data))
    return -1 if bad.size == 0 else int(np.searchsorted(indptr, bad[0], side="right") - 1)


def _canonical_csr(A: Any) -> Tuple[Optional[sp.csr_array], Optional[str]]:
    """A float64 CSR copy with sorted, summed indices (the user's matrix is
    never modified), or a problem."""
    if not (sp.issparse(A) or isinstance(A, np.ndarray)):
        return None, f"A must be a scipy.sparse matrix or array, got {type(A).__name__}"
    if A.ndim != 2:
        return None, f"A must be 2-D, got {A.ndim}-D"
    if np.issubdtype(A.dtype, np.complexfloating) or not np.issubdtype(A.dtype, np.number):
        return None, f"A must hold real numbers, got dtype {A.dtype}"
    csr = sp.csr_array(A, dtype=np.float64, copy=True)
    csr.sum_duplicates()  # also sorts the column indices
    return csr, None


class SparseMatrix:
    """A square sparse matrix distributed over the ranks of a context (collective).

    Args:
        A: a ``scipy.sparse`` matrix or array (or a dense 2-D ``numpy`` array):
            the whole n x n matrix on every rank, or this rank's row block
            (nrows x n). It is copied (cast to float64, duplicates summed,
            columns sorted on the copy); the user's object is not modified.
        ctx: the :class:`ringrt.Context` (default :func:`ringrt.default_context`).
        row_begin: the block's first global row (rows layout only; default:
            the sum of the lower ranks' rows).
        layout: ``"whole"``, ``"rows"`` or ``"auto"`` (the default: ``"rows"``
            when ``row_begin`` is given or ``A`` is not square, else ``"whole"``).
            Every rank must use the same layout.

    Raises:
        ringrt.errors.InvalidArgument: on every rank when any rank's input is
            bad (not square, layouts or sizes differing between ranks, blocks
            not contiguous, whole matrices that differ between ranks).
        ringrt.errors.NumericError: on every rank when any entry is NaN or Inf.
    """

    def __init__(self, A: Any, ctx: Optional[Context] = None, *, row_begin: Optional[int] = None,
                 layout: str = "auto"):
        self.ctx = default_context() if ctx is None else ctx
        self.source = A
        op = "ringrt.SparseMatrix"
        csr, problem = _canonical_csr(A)
        if problem is None and layout not in ("auto", "whole", "rows"):
            problem = f"layout must be 'auto', 'whole' or 'rows', got {layout!r}"
        if problem is None:
            if layout == "auto":
                square = csr.shape[0] == csr.shape[1]
                layout = "whole" if row_begin is None and square else "rows"
            problem = self._local_problem(csr, layout, row_begin)
        self.ctx.agree(problem, op)
        self.layout = layout
        self.n = int(csr.shape[1])
        self._whole_crc = _crc(csr.indptr, csr.indices, csr.data) if layout == "whole" else 0
        self._check_ranks_agree(csr, row_begin, op)
        # the whole input: in the whole layout every rank names the same row
        row = _first_nonfinite_row(csr.indptr, csr.data)
        first = self.row_begin if layout == "rows" else 0
        self.ctx.agree(None if row < 0 else f"A has a NaN or Inf in global row {first + row}", op,
                       errors.NUMERIC)
        block = self._block(csr)
        self._indptr = block.indptr.astype(np.int64)
        self._indices = block.indices.astype(np.int64)
        self._data = np.ascontiguousarray(block.data, dtype=np.float64)
        self._create()

    # ---- construction steps ----
    @staticmethod
    def _local_problem(csr: sp.csr_array, layout: str, row_begin: Optional[int]) -> Optional[str]:
        m, n = csr.shape
        if layout == "whole" and m != n:
            return f"A has shape {csr.shape}: the whole matrix must be square"
        if layout == "whole" and row_begin is not None:
            return "row_begin is for the rows layout (this rank's row block), not the whole matrix"
        if row_begin is not None and not (0 <= row_begin <= n - m):
            return f"row_begin {row_begin} with {m} rows does not fit in [0, {n})"
        return None

    def _check_ranks_agree(self, csr: sp.csr_array, row_begin: Optional[int], op: str) -> None:
        """Every rank must use the same layout, n and (whole layout) matrix;
        in the rows layout, row_begin defaults to the lower ranks' rows."""
        mine = (self.layout, self.n, self._whole_crc, int(csr.shape[0]), row_begin)
        everyone = self.ctx.comm.allgather(mine)
        first = everyone[0]
        problem = None
        if mine[:2] != first[:2]:
            problem = (f"layout {self.layout!r} with n = {self.n}, but rank 0 has layout "
                       f"{first[0]!r} with n = {first[1]}")
        elif self.layout == "whole" and mine[2] != first[2]:
            problem = "the whole matrix differs from rank 0's (every rank must pass the same A)"
        elif self.layout == "rows":
            starts = [r[4] for r in everyone]
            if any(s is None for s in starts) and any(s is not None for s in starts):
                problem = "row_begin must be given on every rank or on none"
        self.ctx.agree(problem, op)
        rank = self.ctx.rank
        if self.layout == "rows":
            self.row_begin = row_begin if row_begin is not None else sum(
                r[3] for r in everyone[:rank])
            self.nrows = int(csr.shape[0])
            self._counts = [r[3] for r in everyone]

    def _block(self, csr: sp.csr_array) -> sp.csr_array:
        if self.layout == "rows":
            return csr
        indptr = csr.indptr.astype(np.int64)
        offsets = np.zeros(self.ctx.size + 1, dtype=np.int64)
        lib().rrt_sparse_partition(self.n, _ptr(indptr, c_int64), self.ctx.size,
                                   _ptr(offsets, c_int64))
        rank = self.ctx.rank
        self.row_begin, self.nrows = int(offsets[rank]), int(offsets[rank + 1] - offsets[rank])
        self._counts = [int(c) for c in np.diff(offsets)]
        return csr[self.row_begin:self.row_begin + self.nrows]

    def _create(self) -> None:
        out = c_void_p()
        L = lib()
        self.ctx.check(L.rrt_sparse_create(self.ctx.handle, self.n, self.row_begin, self.nrows,
                                           _ptr(self._indptr, c_int64),
                                           _ptr(self._indices, c_int64),
                                           _ptr(self._data, c_double), ctypes.byref(out)),
                       "rrt_sparse_create")
        self._h = _Handle(out.value, L.rrt_sparse_destroy)
        _own(self, self.ctx, self._h)

    # ---- what it is ----
    @property
    def handle(self) -> int:
        """The rrt_sparse_t as an integer; raises once closed."""
        if self._h.value is None:
            raise ValueError("the ringrt SparseMatrix is closed")
        return self._h.value

    @property
    def shape(self) -> Tuple[int, int]:
        """The global shape (n, n)."""
        return (self.n, self.n)

    @property
    def nnz(self) -> int:
        """Nonzeros over all ranks."""
        return int(lib().rrt_sparse_global_nnz(self.handle))

    def local_csr(self) -> sp.csr_array:
        """This rank's rows (nrows x n, global columns) as ringrt holds them."""
        return sp.csr_array((self._data.copy(), self._indices.copy(), self._indptr.copy()),
                            shape=(self.nrows, self.n))

    def set_values(self, A: Any) -> None:
        """Replace the values, keeping the pattern (collective): ``A`` in the
        layout this matrix was made with; call :meth:`ILU0.refactor` afterwards.

        Raises:
            ringrt.errors.InvalidArgument: on every rank if any rank's pattern differs.
            ringrt.errors.NumericError: on every rank if any value is NaN or Inf.
        """
        op = "ringrt.SparseMatrix.set_values"
        csr, problem = _canonical_csr(A)
        if problem is None:
            expected = (self.n, self.n) if self.layout == "whole" else (self.nrows, self.n)
            if csr.shape != expected:
                problem = f"A has shape {csr.shape}, expected {expected}"
        if problem is None:
            if self.layout == "whole":
                csr = csr[self.row_begin:self.row_begin + self.nrows]
            if not (np.array_equal(csr.indptr, self._indptr) and
                    np.array_equal(csr.indices, self._indices)):
                problem = "the sparsity pattern differs from the matrix's (make a new SparseMatrix)"
        self.ctx.agree(problem, op)
        row = _first_nonfinite_row(csr.indptr, csr.data)
        self.ctx.agree(None if row < 0 else
                       f"A has a NaN or Inf in global row {self.row_begin + row}", op,
                       errors.NUMERIC)
        data = np.ascontiguousarray(csr.data, dtype=np.float64)
        self.ctx.check(lib().rrt_sparse_set_values(self.handle, _ptr(data, c_double)), op)
        self._data = data

    def matvec(self, x: Any) -> np.ndarray:
        """y = A x (collective); vectors in this matrix's layout."""
        xl = self._local_vector(x, "x", "ringrt.SparseMatrix.matvec")
        y = np.empty(self.nrows)
        self._backend_call(lambda px, py: lib().rrt_sparse_spmv(self.handle, px, py),
                           [xl, y], "rrt_sparse_spmv", outputs=(1,))
        return self._global_vector(y)

    def close(self) -> None:
        """Free the native matrix (local). Close the ILU0s made on it first."""
        self._h.close()

    def __repr__(self) -> str:
        return (f"<ringrt.SparseMatrix n={self.n} layout={self.layout} rows "
                f"[{self.row_begin}, {self.row_begin + self.nrows}) on rank {self.ctx.rank}>")

    # ---- vectors in this matrix's layout ----
    def _local_vector(self, v: Any, name: str, op: str) -> np.ndarray:
        """This rank's block of a user vector, validated and agreed on every rank."""
        length = self.n if self.layout == "whole" else self.nrows
        problem, status, a = None, errors.INVALID_ARG, None
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError) as e:
            problem = f"{name} is not a real vector ({e})"
        if problem is None and a.shape != (length,):
            what = "the whole vector" if self.layout == "whole" else "this rank's rows"
            problem = f"{name} has shape {a.shape}, expected ({length},) ({what})"
        if problem is None and not np.isfinite(a).all():
            problem, status = f"{name} has a NaN or Inf", errors.NUMERIC
        self.ctx.agree(problem, op, status if problem else errors.SUCCESS)
        if self.layout == "whole":
            crc = self.ctx.comm.allgather(_crc(a))
            self.ctx.agree(None if crc[self.ctx.rank] == crc[0] else
                           f"{name} differs from rank 0's (the whole layout needs the same "
                           "vector on every rank)", op)
            a = a[self.row_begin:self.row_begin + self.nrows]
        return np.ascontiguousarray(a)

    def _global_vector(self, local: np.ndarray) -> np.ndarray:
        """The user's view of a local result: gathered in the whole layout."""
        if self.layout != "whole":
            return local
        out = allgather_rows(self.ctx, local.reshape(-1, 1), self._counts, "gathering a vector")
        return out.ravel()

    def _backend_call(self, fn: Callable[..., int], arrays: Sequence[np.ndarray], op: str,
                      outputs: Sequence[int]) -> None:
        """fn(*pointers) with the arrays in backend memory: the host arrays
        themselves on cpu; staged copies (rrt_malloc) on cuda, and on emu,
        whose memory is the host's, so that the staging runs in CPU tests.
        Outputs are copied back."""
        ctx = self.ctx
        if ctx.backend == "cpu":
            ctx.check(fn(*[a.ctypes.data for a in arrays]), op)
            return
        with staged(ctx, arrays, op) as ptrs:
            ctx.check(fn(*ptrs), op)
            for i in outputs:
                copy_to_host(ctx, arrays[i], ptrs[i], op)


def _as_matrix(A: Any, ctx: Optional[Context]) -> SparseMatrix:
    if isinstance(A, SparseMatrix):
        if ctx is not None and ctx is not A.ctx:
            raise ValueError("ctx differs from the SparseMatrix's context")
        return A
    return SparseMatrix(A, ctx)


__all__ = ["SparseMatrix"]

"""Distributed ILU(0) and Krylov solvers over SciPy sparse matrices.

:class:`SparseMatrix` hands a ``scipy.sparse`` matrix to ringrt in one of two
layouts, fixed when it is made:

- **whole**: every rank passes the same n x n matrix; ringrt splits the rows
  into contiguous blocks with about equal nonzeros (``rrt_sparse_partition``)
  and each rank keeps its block. Vectors (``b``, ``x0``, ``r`` and the
  results) are then whole length-n vectors, the same on every rank.
- **rows**: every rank passes its own row block (nrows x n), the blocks in
  rank order; ``row_begin=`` says where the block starts, else it is the sum
  of the lower ranks' rows. Vectors are this rank's block (nrows entries).

:func:`ilu0` computes the exact global ILU(0) (the factors are bitwise the
same for every rank count); :meth:`ILU0.solve` and :func:`krylov_solve` run
GMRES(m), BiCGSTAB or CG with it. Every call is collective over the
context's communicator, and bad input raises on every rank.
"""
from __future__ import annotations

import ctypes
import weakref
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from . import errors
from ._lib import declare, lib
from .context import Context, default_context

c_int, c_int64, c_double, c_size_t = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_size_t
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER


class _IluOptions(ctypes.Structure):
    """rrt_ilu0_options (include/ringrt/ilu.h)."""
    _fields_ = [("size", c_size_t), ("ordering", c_int), ("boost", c_int),
                ("boost_tol", c_double), ("boost_value", c_double), ("factors_f32", c_int)]


class _KrylovOptions(ctypes.Structure):
    """rrt_krylov_options (include/ringrt/ilu.h)."""
    _fields_ = [("size", c_size_t), ("method", c_int), ("rtol", c_double), ("maxit", c_int),
                ("restart", c_int), ("progress", c_int)]


class _KrylovResult(ctypes.Structure):
    """rrt_krylov_result (include/ringrt/ilu.h)."""
    _fields_ = [("iterations", c_int), ("converged", c_int), ("bnorm", c_double),
                ("rnorm", c_double), ("history", P(c_double)), ("history_len", c_int)]


declare({
    "rrt_sparse_partition": (None, [c_int64, P(c_int64), c_int, P(c_int64)]),
    "rrt_sparse_create": (c_int, [c_void_p, c_int64, c_int64, c_int64, P(c_int64), P(c_int64),
                                  P(c_double), P(c_void_p)]),
    "rrt_sparse_destroy": (c_int, [c_void_p]),
    "rrt_sparse_set_values": (c_int, [c_void_p, P(c_double)]),
    "rrt_sparse_spmv": (c_int, [c_void_p, c_void_p, c_void_p]),
    "rrt_sparse_global_nnz": (c_int64, [c_void_p]),
    "rrt_ilu0_create": (c_int, [c_void_p, P(_IluOptions), P(c_void_p)]),
    "rrt_ilu0_factor": (c_int, [c_void_p]),
    "rrt_ilu0_apply": (c_int, [c_void_p, c_void_p, c_void_p]),
    "rrt_ilu0_destroy": (c_int, [c_void_p]),
    "rrt_ilu0_levels": (None, [c_void_p, P(c_int), P(c_int)]),
    "rrt_ilu0_get_factors": (c_int, [c_void_p, P(c_double)]),
    "rrt_krylov_solve": (c_int, [c_void_p, c_void_p, P(_KrylovOptions), c_void_p, c_void_p,
                                 P(_KrylovResult)]),
    "rrt_krylov_result_free": (None, [P(_KrylovResult)]),
    "rrt_krylov_method_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_ilu_ordering_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_ilu_ordering_name": (c_char_p, [c_int]),
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
        from mpi4py import MPI
        out = np.empty(self.n)
        displs = np.concatenate([[0], np.cumsum(self._counts)[:-1]])
        self.ctx.comm.Allgatherv([local, MPI.DOUBLE], [out, (self._counts, displs), MPI.DOUBLE])
        return out

    def _backend_call(self, fn: Callable[..., int], arrays: Sequence[np.ndarray], op: str,
                      outputs: Sequence[int]) -> None:
        """fn(*pointers) with the arrays in backend memory: the host arrays
        themselves on cpu and emu, staged device copies on cuda (outputs are
        copied back)."""
        ctx = self.ctx
        if ctx.backend != "cuda":
            ctx.check(fn(*[a.ctypes.data for a in arrays]), op)
            return
        L, ptrs = lib(), []
        try:
            for a in arrays:
                p = c_void_p()
                ctx.check(L.rrt_malloc(ctx.handle, max(a.nbytes, 8), ctypes.byref(p)), op)
                ptrs.append(p.value)
                ctx.check(L.rrt_memcpy_to_backend(ctx.handle, p, a.ctypes.data, a.nbytes), op)
            ctx.check(fn(*ptrs), op)
            for i in outputs:
                ctx.check(L.rrt_memcpy_to_host(ctx.handle, arrays[i].ctypes.data, ptrs[i],
                                               arrays[i].nbytes), op)
        finally:
            for p in ptrs:
                L.rrt_free(ctx.handle, p)


def _as_matrix(A: Any, ctx: Optional[Context]) -> SparseMatrix:
    if isinstance(A, SparseMatrix):
        if ctx is not None and ctx is not A.ctx:
            raise ValueError("ctx differs from the SparseMatrix's context")
        return A
    return SparseMatrix(A, ctx)


def _parse(fn: Any, name: Any, what: str, choices: str) -> Tuple[int, Optional[str]]:
    """A C enum from its name (rrt_*_parse), or a problem."""
    value = c_int()
    if not isinstance(name, str) or fn(name.encode(), ctypes.byref(value)) != errors.SUCCESS:
        return 0, f"{what} must be one of {choices}, got {name!r}"
    return value.value, None


def _boost(boost: Any) -> Tuple[int, float, float, Optional[str]]:
    """(on, tol, value, problem) from None, a tolerance or (tol, value)."""
    if boost is None or boost is False:
        return 0, 0.0, 1.0, None
    try:
        tol, value = (boost, 1.0) if np.isscalar(boost) else boost
        tol, value = float(tol), float(value)
    except (TypeError, ValueError):
        return 0, 0.0, 1.0, f"boost must be None, a tolerance or (tol, value), got {boost!r}"
    if not (np.isfinite(tol) and np.isfinite(value) and tol >= 0 and value != 0):
        return 0, 0.0, 1.0, (f"boost needs a finite tol >= 0 and a finite nonzero value, "
                             f"got {boost!r}")
    return 1, tol, value, None


@dataclass
class KrylovResult:
    """What a Krylov solve did.

    Attributes:
        method: ``"gmres"``, ``"bicgstab"`` or ``"cg"``.
        iterations: iterations done (GMRES: inner iterations).
        converged: whether ``||b - A x|| <= rtol ||b||`` was reached (not
            converging within ``maxit`` is not an error).
        bnorm: ``||b||``.
        rnorm: the last (unpreconditioned) residual norm the method tracked.
        history: the residual norm per iteration, ``history[0]`` the initial one.
    """
    method: str
    iterations: int
    converged: bool
    bnorm: float
    rnorm: float
    history: np.ndarray = field(repr=False)

    @property
    def relative_residual(self) -> float:
        """``rnorm / bnorm`` (0 for b = 0)."""
        return self.rnorm / self.bnorm if self.bnorm else 0.0


class ILU0:
    """The exact global ILU(0) of a :class:`SparseMatrix` (made by :func:`ilu0`).

    Attributes:
        matrix: the :class:`SparseMatrix` it factors.
        ordering: the elimination order (``"natural"``, ``"rcm"``, ``"multicolor"``).
        result: the :class:`KrylovResult` of the last :meth:`solve` (None before).
    """

    def __init__(self, A: SparseMatrix, ordering: str = "natural", boost: Any = None,
                 factors_f32: bool = False):
        self.matrix, self.ctx = A, A.ctx
        self.result: Optional[KrylovResult] = None
        L = lib()
        op = "ringrt.ilu0"
        order, problem = _parse(L.rrt_ilu_ordering_parse, ordering, "ordering",
                                "'natural', 'rcm', 'multicolor'")
        on, tol, value, boost_problem = _boost(boost)
        self.ctx.agree(problem or boost_problem, op)
        self.ordering = L.rrt_ilu_ordering_name(order).decode()
        opts = _IluOptions(ctypes.sizeof(_IluOptions), order, on, tol, value,
                           int(bool(factors_f32)))
        out = c_void_p()
        self.ctx.check(L.rrt_ilu0_create(A.handle, ctypes.byref(opts), ctypes.byref(out)),
                       "rrt_ilu0_create")
        self._h = _Handle(out.value, L.rrt_ilu0_destroy)
        _own(self, self.ctx, self._h)
        self.refactor()

    @property
    def handle(self) -> int:
        """The rrt_ilu0_t as an integer; raises once closed."""
        if self._h.value is None:
            raise ValueError("the ringrt ILU0 is closed")
        self.matrix.handle  # noqa: B018 - raises if the matrix was closed first
        return self._h.value

    def refactor(self) -> None:
        """Factor again from the matrix's current values (collective; after
        :meth:`SparseMatrix.set_values`).

        Raises:
            ringrt.errors.Singular: on every rank for a zero pivot, naming the global row.
            ringrt.errors.NumericError: on every rank for a non-finite pivot.
        """
        self.ctx.check(lib().rrt_ilu0_factor(self.handle), "rrt_ilu0_factor")

    @property
    def levels(self) -> Tuple[int, int]:
        """The global number of dependency levels of L and of U."""
        lv_l, lv_u = c_int(), c_int()
        lib().rrt_ilu0_levels(self.handle, ctypes.byref(lv_l), ctypes.byref(lv_u))
        return lv_l.value, lv_u.value

    def factors(self) -> sp.csr_array:
        """The combined LU factors (collective in the whole layout) in the
        matrix's pattern: entries before the diagonal in elimination order hold
        L (unit diagonal implied), the others U. The whole n x n matrix in the
        whole layout, this rank's rows otherwise."""
        vals = np.empty(len(self.matrix._data))
        self.ctx.check(lib().rrt_ilu0_get_factors(self.handle, _ptr(vals, c_double)),
                       "rrt_ilu0_get_factors")
        local = self.matrix.local_csr()
        local.data = vals
        if self.matrix.layout != "whole":
            return local
        blocks = self.ctx.comm.allgather(local)
        return sp.csr_array(sp.vstack(blocks, format="csr"))

    def apply(self, r: Any) -> np.ndarray:
        """z = M^-1 r = U^-1 L^-1 r (collective); vectors in the matrix's layout."""
        A = self.matrix
        rl = A._local_vector(r, "r", "ringrt.ILU0.apply")
        z = np.empty(A.nrows)
        A._backend_call(lambda pr, pz: lib().rrt_ilu0_apply(self.handle, pr, pz), [rl, z],
                        "rrt_ilu0_apply", outputs=(1,))
        return A._global_vector(z)

    def solve(self, b: Any, method: str = "gmres", rtol: float = 1e-8, maxit: int = 1000,
              restart: int = 30, x0: Any = None) -> np.ndarray:
        """Solve A x = b by a Krylov method preconditioned by this ILU(0)
        (collective); see :func:`krylov_solve`. Returns x; the iteration
        counts and residuals are in :attr:`result`."""
        x, self.result = krylov_solve(self.matrix, b, M=self, method=method, rtol=rtol,
                                      maxit=maxit, restart=restart, x0=x0)
        return x

    def as_linear_operator(self) -> Any:
        """M^-1 as a ``scipy.sparse.linalg.LinearOperator`` (for scipy's own
        solvers, e.g. ``gmres(A, b, M=ilu.as_linear_operator())``). Its
        matvec is collective: in the whole layout every rank runs the same
        scipy solver on the whole vectors."""
        from scipy.sparse.linalg import LinearOperator
        m = self.matrix.n if self.matrix.layout == "whole" else self.matrix.nrows
        return LinearOperator((m, m), matvec=lambda r: self.apply(np.ravel(r)), dtype=np.float64)

    def close(self) -> None:
        """Free the native factors (local)."""
        self._h.close()

    def __repr__(self) -> str:
        state = "closed" if self._h.value is None else f"levels={self.levels}"
        return f"<ringrt.ILU0 n={self.matrix.n} ordering={self.ordering} {state}>"


def ilu0(A: Any, ordering: str = "natural", boost: Any = None, factors_f32: bool = False,
         ctx: Optional[Context] = None) -> ILU0:
    """The exact global ILU(0) of A (collective).

    Args:
        A: a :class:`SparseMatrix`, or a ``scipy.sparse`` matrix made into one
            (see :class:`SparseMatrix` for the whole and rows layouts).
        ordering: ``"natural"``, ``"rcm"`` or ``"multicolor"`` (a reordering
            changes the preconditioner, not the system the solvers see).
        boost: None (off), a tolerance ``tol`` or ``(tol, value)``: pivots
            with ``|u_ii| <= tol`` become ``value`` (default 1.0).
        factors_f32: apply with the factors rounded to float32 (vectors and
            arithmetic stay float64).
        ctx: the context when ``A`` is a scipy matrix (default: the default context).

    Returns:
        An :class:`ILU0`, factored.

    Raises:
        ringrt.errors.Singular: on every rank for a row without a diagonal
            entry or a zero pivot, naming the global row.
    """
    return ILU0(_as_matrix(A, ctx), ordering, boost, factors_f32)


def krylov_solve(A: Any, b: Any, M: Optional[ILU0] = None, method: str = "gmres",
                 rtol: float = 1e-8, maxit: int = 1000, restart: int = 30, x0: Any = None,
                 ctx: Optional[Context] = None) -> Tuple[np.ndarray, KrylovResult]:
    """Solve A x = b (collective) by GMRES(restart) (right preconditioned),
    BiCGSTAB or CG, preconditioned by M.

    Args:
        A: a :class:`SparseMatrix` or a scipy matrix (made into one on M's
            context, with M's row blocks, when M is given).
        b: the right-hand side in A's layout (whole vector or this rank's rows).
        M: an :class:`ILU0` or None (no preconditioner).
        method: ``"gmres"``, ``"bicgstab"`` or ``"cg"``.
        rtol: stop when ``||b - A x|| <= rtol ||b||``.
        maxit: iteration cap; restart: the GMRES restart length.
        x0: the initial guess (default zeros), in A's layout.
        ctx: the context when A is a scipy matrix and M is None.

    Returns:
        ``(x, result)``: x in A's layout and a :class:`KrylovResult`.
    """
    op = "ringrt.krylov_solve"
    if M is not None and not isinstance(M, ILU0):
        raise errors.InvalidArgument(errors.INVALID_ARG, f"{op}: M must be a ringrt ILU0 or "
                                     f"None, got {type(M).__name__}")
    if M is not None and not isinstance(A, SparseMatrix):
        A = M.matrix if A is M.matrix.source else SparseMatrix(
            A, M.ctx, **({"row_begin": M.matrix.row_begin} if M.matrix.layout == "rows" else {}))
    A = _as_matrix(A, ctx if M is None else None)
    L = lib()
    code, problem = _parse(L.rrt_krylov_method_parse, method, "method", "'gmres', 'bicgstab', 'cg'")
    if problem is None and M is not None:
        mm = M.matrix
        if mm.ctx is not A.ctx or (mm.n, mm.row_begin, mm.nrows) != (A.n, A.row_begin, A.nrows):
            problem = (f"M's matrix has n = {mm.n}, rows [{mm.row_begin}, "
                       f"{mm.row_begin + mm.nrows}) but A has n = {A.n}, rows "
                       f"[{A.row_begin}, {A.row_begin + A.nrows})")
    if problem is None and not (rtol >= 0 and maxit >= 0 and restart >= 1):
        problem = f"need rtol >= 0, maxit >= 0, restart >= 1 (got {rtol}, {maxit}, {restart})"
    A.ctx.agree(problem, op)
    bl = A._local_vector(b, "b", op)
    x = np.zeros(A.nrows) if x0 is None else A._local_vector(x0, "x0", op).copy()
    opts = _KrylovOptions(ctypes.sizeof(_KrylovOptions), code, float(rtol), int(maxit),
                          int(restart), 0)
    res = _KrylovResult()
    m_handle = None if M is None else M.handle
    try:
        A._backend_call(lambda pb, px: L.rrt_krylov_solve(A.handle, m_handle, ctypes.byref(opts),
                                                          pb, px, ctypes.byref(res)),
                        [bl, x], "rrt_krylov_solve", outputs=(1,))
        history = np.ctypeslib.as_array(res.history, (res.history_len,)).copy() \
            if res.history_len else np.empty(0)
    finally:
        L.rrt_krylov_result_free(ctypes.byref(res))
    result = KrylovResult(method, res.iterations, bool(res.converged), res.bnorm, res.rnorm,
                          history)
    return A._global_vector(x), result


__all__ = ["SparseMatrix", "ILU0", "KrylovResult", "ilu0", "krylov_solve"]

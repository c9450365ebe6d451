"""Distributed ILU(0), ILU(k) and Krylov solvers over SciPy sparse matrices.

:func:`ilu0` computes the exact global ILU(0) of a :class:`SparseMatrix`,
:func:`ilu` (also ``ringrt.ilu(A, levels=k)``) its ILU(k) with PETSc's
levels of fill (the factors are bitwise the same for every rank count); :meth:`ILU0.solve`
and :func:`krylov_solve` run GMRES(m), FGMRES(m), BiCGSTAB or CG with it
and say why they stopped with PETSc's reason names (``result.reason``). Vectors are
in the matrix's layout (see :mod:`ringrt.sparse`): whole vectors when every
rank passed the whole matrix, this rank's rows otherwise. Every call is
collective over the context's communicator, and bad input raises on every
rank.
"""
from __future__ import annotations

import ctypes
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from . import errors
from ._lib import declare, lib
from .context import Context
from .sparse import SparseMatrix, _as_matrix, _Handle, _own, _ptr

c_int, c_double, c_size_t = ctypes.c_int, ctypes.c_double, ctypes.c_size_t
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER


class _IluOptions(ctypes.Structure):
    """rrt_ilu0_options (include/ringrt/ilu.h)."""
    _fields_ = [("size", c_size_t), ("ordering", c_int), ("boost", c_int),
                ("boost_tol", c_double), ("boost_value", c_double), ("factors_f32", c_int),
                ("dd_blocks", c_int), ("levels", c_int)]


_MONITOR = ctypes.CFUNCTYPE(None, c_int, c_double, c_void_p)
_SIDES = {"right": 2, "left": 1}


class _KrylovOptions(ctypes.Structure):
    """rrt_krylov_options (include/ringrt/ilu.h)."""
    _fields_ = [("size", c_size_t), ("method", c_int), ("rtol", c_double), ("maxit", c_int),
                ("restart", c_int), ("progress", c_int), ("atol", c_double), ("dtol", c_double),
                ("side", c_int), ("guess_zero", c_int), ("monitor", _MONITOR),
                ("monitor_user", c_void_p), ("op", c_void_p), ("op_user", c_void_p),
                ("pc", c_void_p), ("pc_user", c_void_p)]


class _KrylovResult(ctypes.Structure):
    """rrt_krylov_result (include/ringrt/ilu.h)."""
    _fields_ = [("iterations", c_int), ("converged", c_int), ("bnorm", c_double),
                ("rnorm", c_double), ("history", P(c_double)), ("history_len", c_int),
                ("reason", c_int), ("true_rnorm", c_double)]


declare({
    "rrt_ilu0_create": (c_int, [c_void_p, P(_IluOptions), P(c_void_p)]),
    "rrt_ilu0_factor": (c_int, [c_void_p]),
    "rrt_ilu0_apply": (c_int, [c_void_p, c_void_p, c_void_p]),
    "rrt_ilu0_destroy": (c_int, [c_void_p]),
    "rrt_ilu0_levels": (None, [c_void_p, P(c_int), P(c_int)]),
    "rrt_ilu0_launches": (None, [c_void_p, P(ctypes.c_int64), P(ctypes.c_int64)]),
    "rrt_ilu0_get_factors": (c_int, [c_void_p, P(c_double)]),
    "rrt_ilu0_apply_transpose": (c_int, [c_void_p, c_void_p, c_void_p]),
    "rrt_ilu0_factor_nnz": (ctypes.c_int64, [c_void_p]),
    "rrt_ilu0_get_factor_pattern": (c_int, [c_void_p, P(ctypes.c_int64), P(ctypes.c_int64)]),
    "rrt_krylov_solve": (c_int, [c_void_p, c_void_p, P(_KrylovOptions), c_void_p, c_void_p,
                                 P(_KrylovResult)]),
    "rrt_krylov_result_free": (None, [P(_KrylovResult)]),
    "rrt_krylov_method_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_krylov_reason_name": (c_char_p, [c_int]),
    "rrt_ilu_ordering_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_ilu_ordering_name": (c_char_p, [c_int]),
})


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
        method: ``"gmres"``, ``"fgmres"``, ``"bicgstab"`` or ``"cg"``.
        iterations: iterations done (GMRES: inner iterations).
        converged: ``reason`` starts with ``CONVERGED`` (not converging is
            not an error).
        bnorm: ``||b||``.
        rnorm: the last monitored residual norm (right side: ``||b - A x||``
            of the returned x; left: the preconditioned norm).
        history: the monitored residual norm per iteration, ``history[0]``
            the initial one.
        reason: why it stopped, PETSc's name (``"CONVERGED_RTOL"``,
            ``"DIVERGED_ITS"``, ``"DIVERGED_NANORINF"``, ...).
        true_rnorm: ``||b - A x||`` of the returned x.
    """
    method: str
    iterations: int
    converged: bool
    bnorm: float
    rnorm: float
    history: np.ndarray = field(repr=False)
    reason: str = "CONVERGED_ITERATING"
    true_rnorm: float = float("nan")

    @property
    def relative_residual(self) -> float:
        """``rnorm / bnorm`` (0 for b = 0)."""
        return self.rnorm / self.bnorm if self.bnorm else 0.0


class ILU0:
    """The exact global ILU(k) of a :class:`SparseMatrix` (made by :func:`ilu`
    or :func:`ilu0`; k = ``fill_levels``, 0 by default).

    Attributes:
        matrix: the :class:`SparseMatrix` it factors.
        ordering: the elimination order (``"natural"``, ``"rcm"``, ``"multicolor"``,
            ``"dd"``, ``"dd-color"``).
        fill_levels: the levels of fill k (PETSc's ``-pc_factor_levels``).
        result: the :class:`KrylovResult` of the last :meth:`solve` (None before).
    """

    def __init__(self, A: SparseMatrix, ordering: str = "natural", boost: Any = None,
                 factors_f32: bool = False, dd_blocks: int = 0, levels: int = 0):
        self.matrix, self.ctx = A, A.ctx
        self.result: Optional[KrylovResult] = None
        L = lib()
        op = "ringrt.ilu0"
        order, problem = _parse(L.rrt_ilu_ordering_parse, ordering, "ordering",
                                "'natural', 'rcm', 'multicolor', 'dd', 'dd-color'")
        on, tol, value, boost_problem = _boost(boost)
        blocks_problem = None
        if not isinstance(dd_blocks, (int, np.integer)) or not 0 <= dd_blocks <= 1 << 20:
            blocks_problem = f"dd_blocks must be an integer in [0, {1 << 20}], got {dd_blocks!r}"
        if not isinstance(levels, (int, np.integer)) or not 0 <= levels <= 1 << 20:
            blocks_problem = blocks_problem or (
                f"levels must be an integer in [0, {1 << 20}], got {levels!r}")
        self.ctx.agree(problem or boost_problem or blocks_problem, op)
        self.fill_levels = int(levels)
        self.ordering = L.rrt_ilu_ordering_name(order).decode()
        opts = _IluOptions(ctypes.sizeof(_IluOptions), order, on, tol, value,
                           int(bool(factors_f32)), int(dd_blocks), int(levels))
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

    @property
    def launches(self) -> Tuple[int, int]:
        """Kernel launches of one factorisation and of one apply on this rank:
        on cuda and emu one per run of levels with no message between them (one
        rank: 1 and 2), 0 on cpu, whose kernels are host loops."""
        lf, la = ctypes.c_int64(), ctypes.c_int64()
        lib().rrt_ilu0_launches(self.handle, ctypes.byref(lf), ctypes.byref(la))
        return lf.value, la.value

    @property
    def factor_nnz(self) -> int:
        """Entries of this rank's rows of the factor pattern (the matrix's
        pattern plus the fill of ILU(k))."""
        return int(lib().rrt_ilu0_factor_nnz(self.handle))

    def factors(self) -> sp.csr_array:
        """The combined LU factors (collective in the whole layout) in the
        factor pattern (the matrix's, plus the fill for ILU(k)): entries before
        the diagonal in elimination order hold L (unit diagonal implied), the
        others U. The whole n x n matrix in the whole layout, this rank's rows
        otherwise."""
        nnz = self.factor_nnz
        vals, cols = np.empty(nnz), np.empty(nnz, dtype=np.int64)
        ptr = np.empty(self.matrix.nrows + 1, dtype=np.int64)
        i64 = ctypes.c_int64
        self.ctx.check(lib().rrt_ilu0_get_factor_pattern(self.handle, _ptr(ptr, i64),
                                                         _ptr(cols, i64)),
                       "rrt_ilu0_get_factor_pattern")
        self.ctx.check(lib().rrt_ilu0_get_factors(self.handle, _ptr(vals, c_double)),
                       "rrt_ilu0_get_factors")
        local = sp.csr_array((vals, cols, ptr), shape=(self.matrix.nrows, self.matrix.n))
        if self.matrix.layout != "whole":
            return local
        blocks = self.ctx.comm.allgather(local)
        return sp.csr_array(sp.vstack(blocks, format="csr"))

    def apply(self, r: Any, transpose: bool = False) -> np.ndarray:
        """z = M^-1 r = U^-1 L^-1 r, or with ``transpose`` z = M^-T r =
        L^-T U^-T r (collective); vectors in the matrix's layout."""
        A = self.matrix
        rl = A._local_vector(r, "r", "ringrt.ILU0.apply")
        z = np.empty(A.nrows)
        fn = lib().rrt_ilu0_apply_transpose if transpose else lib().rrt_ilu0_apply
        name = "rrt_ilu0_apply_transpose" if transpose else "rrt_ilu0_apply"
        A._backend_call(lambda pr, pz: fn(self.handle, pr, pz), [rl, z], name, outputs=(1,))
        return A._global_vector(z)

    def solve(self, b: Any, method: str = "gmres", rtol: float = 1e-8, maxit: int = 1000,
              restart: int = 30, x0: Any = None, **kw: Any) -> np.ndarray:
        """Solve A x = b by a Krylov method preconditioned by this ILU(0)
        (collective); see :func:`krylov_solve` (``atol``, ``dtol``, ``side``,
        ``monitor`` pass through). Returns x; the iteration counts, the reason
        and the residuals are in :attr:`result`."""
        x, self.result = krylov_solve(self.matrix, b, M=self, method=method, rtol=rtol,
                                      maxit=maxit, restart=restart, x0=x0, **kw)
        return x

    def as_linear_operator(self) -> Any:
        """M^-1 as a ``scipy.sparse.linalg.LinearOperator`` (for scipy's own
        solvers, e.g. ``gmres(A, b, M=ilu.as_linear_operator())``). Its
        matvec is collective: in the whole layout every rank runs the same
        scipy solver on the whole vectors.

        Raises:
            ringrt.errors.InvalidArgument: for the rows layout on several ranks
                (scipy's solvers would take the norms of the local blocks).
        """
        from scipy.sparse.linalg import LinearOperator
        if self.matrix.layout == "rows" and self.ctx.size > 1:  # agreed: the same on every rank
            raise errors.InvalidArgument(
                errors.INVALID_ARG, "ringrt.ILU0.as_linear_operator: needs the whole layout on "
                "several ranks (scipy's solvers take norms of the vectors they hold)")
        m = self.matrix.n if self.matrix.layout == "whole" else self.matrix.nrows
        return LinearOperator((m, m), matvec=lambda r: self.apply(np.ravel(r)), dtype=np.float64)

    def close(self) -> None:
        """Free the native factors (local)."""
        self._h.close()

    def __repr__(self) -> str:
        state = "closed" if self._h.value is None else f"levels={self.levels}"
        return (f"<ringrt.ILU0 n={self.matrix.n} ordering={self.ordering} "
                f"fill_levels={self.fill_levels} {state}>")


def ilu(A: Any, levels: int = 0, ordering: str = "natural", boost: Any = None,
        factors_f32: bool = False, ctx: Optional[Context] = None, dd_blocks: int = 0) -> ILU0:
    """The exact global ILU(k) of A (collective), k = ``levels`` levels of
    fill with PETSc's definition (``-pc_factor_levels k``): the same pattern
    as PETSc's with the natural ordering, and factors bitwise the same for
    every rank count and backend. In another ordering it is the ILU(k) of
    P A P^T (the pattern filled on rank 0).
    The other arguments, the result and the errors are those of :func:`ilu0`.
    """
    return ILU0(_as_matrix(A, ctx), ordering, boost, factors_f32, dd_blocks, levels)


def ilu0(A: Any, ordering: str = "natural", boost: Any = None, factors_f32: bool = False,
         ctx: Optional[Context] = None, dd_blocks: int = 0, levels: int = 0) -> ILU0:
    """The exact global ILU(0) of A (collective), or ILU(k) with ``levels`` = k
    (see :func:`ilu`).

    Args:
        A: a :class:`SparseMatrix`, or a ``scipy.sparse`` matrix made into one
            (see :class:`SparseMatrix` for the whole and rows layouts).
        ordering: ``"natural"``, ``"rcm"``, ``"multicolor"``, ``"dd"`` or
            ``"dd-color"`` (a reordering changes the preconditioner, not the
            system the solvers see; dd: each subdomain's interior rows first,
            the interface rows last, see docs/ilu.md).
        boost: None (off), a tolerance ``tol`` or ``(tol, value)``: pivots
            with ``|u_ii| <= tol`` become ``value`` (default 1.0).
        factors_f32: apply with the factors rounded to float32 (vectors and
            arithmetic stay float64).
        ctx: the context when ``A`` is a scipy matrix (default: the default context).
        dd_blocks: subdomains of the dd orderings: 0 = one per rank, k > 0 =
            the nonzero-balanced k-way split of the rows (the same
            preconditioner for any rank count).

    Returns:
        An :class:`ILU0`, factored.

    Raises:
        ringrt.errors.Singular: on every rank for a row without a diagonal
            entry or a zero pivot, naming the global row.
    """
    return ILU0(_as_matrix(A, ctx), ordering, boost, factors_f32, dd_blocks, levels)


def krylov_solve(A: Any, b: Any, M: Optional[ILU0] = None, method: str = "gmres",
                 rtol: float = 1e-8, maxit: int = 1000, restart: int = 30, x0: Any = None,
                 ctx: Optional[Context] = None, atol: float = 0.0, dtol: float = 1e4,
                 side: str = "right",
                 monitor: Optional[Callable[[int, float], None]] = None
                 ) -> Tuple[np.ndarray, KrylovResult]:
    """Solve A x = b (collective) by GMRES(restart), FGMRES(restart),
    BiCGSTAB or CG, preconditioned by M, stopping as PETSc's KSP does.

    Args:
        A: a :class:`SparseMatrix` or a scipy matrix (made into one on M's
            context, with M's row blocks, when M is given).
        b: the right-hand side in A's layout (whole vector or this rank's rows).
        M: an :class:`ILU0` or None (no preconditioner).
        method: ``"gmres"``, ``"fgmres"``, ``"bicgstab"`` or ``"cg"``.
        rtol, atol: converged when the monitored residual norm is at most
            ``max(rtol * rnorm0, atol)``, rnorm0 = ``||b||`` (right side) or
            ``||M^-1 b||`` (left).
        dtol: diverged when the monitored norm reaches ``dtol * rnorm0``
            (PETSc's default 1e4; ``inf``: off).
        maxit: iteration cap; restart: the GMRES restart length.
        x0: the initial guess (default zeros), in A's layout.
        ctx: the context when A is a scipy matrix and M is None.
        side: ``"right"`` (monitored norm ``||b - A x||``) or ``"left"``
            (``||M^-1 (b - A x)||``, PETSc's default); fgmres is right only.
        monitor: ``monitor(it, rnorm)`` called on every rank each iteration
            (``result.history`` holds the same norms); an exception it raises
            is printed by ctypes and does not stop the solve.

    Returns:
        ``(x, result)``: x in A's layout and a :class:`KrylovResult`. On a
        DIVERGED reason x is the iterate with the smallest true residual
        seen (at worst x0).
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
    code, problem = _parse(L.rrt_krylov_method_parse, method, "method",
                           "'gmres', 'fgmres', 'bicgstab', 'cg'")
    if problem is None and M is not None:
        mm = M.matrix
        if mm.ctx is not A.ctx or (mm.n, mm.row_begin, mm.nrows) != (A.n, A.row_begin, A.nrows):
            problem = (f"M's matrix has n = {mm.n}, rows [{mm.row_begin}, "
                       f"{mm.row_begin + mm.nrows}) but A has n = {A.n}, rows "
                       f"[{A.row_begin}, {A.row_begin + A.nrows})")
    if problem is None and not (rtol >= 0 and maxit >= 0 and restart >= 1 and atol >= 0
                                and dtol > 0):
        problem = (f"need rtol >= 0, atol >= 0, dtol > 0, maxit >= 0, restart >= 1 (got {rtol}, "
                   f"{atol}, {dtol}, {maxit}, {restart})")
    if problem is None and side not in _SIDES:
        problem = f"side must be 'right' or 'left', got {side!r}"
    if problem is None and method == "fgmres" and side == "left":
        problem = "fgmres is right preconditioned only"
    A.ctx.agree(problem, op)
    bl = A._local_vector(b, "b", op)
    x = np.zeros(A.nrows) if x0 is None else A._local_vector(x0, "x0", op).copy()
    opts = _KrylovOptions(ctypes.sizeof(_KrylovOptions), code, float(rtol), int(maxit),
                          int(restart), 0, float(atol), float(dtol), _SIDES[side], 0)
    if monitor is not None:  # kept alive by `opts` for the call
        opts.monitor = _MONITOR(lambda it, rnorm, _user: monitor(int(it), float(rnorm)))
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
                          history, L.rrt_krylov_reason_name(res.reason).decode(),
                          res.true_rnorm)
    return A._global_vector(x), result


__all__ = ["ILU0", "KrylovResult", "ilu0", "krylov_solve"]


class _CallableModule(types.ModuleType):
    """``ringrt.ilu`` is this module (importing it binds the name on the
    package) and calls :func:`ilu`: ``ringrt.ilu(A, levels=k)``."""

    def __call__(self, *args: Any, **kw: Any) -> ILU0:
        return ilu(*args, **kw)


sys.modules[__name__].__class__ = _CallableModule

"""ringrt.ilu(A, levels=k) (ILU(k)) and the transpose apply at any rank
count: the pattern and the factors against a naive serial ILU(k) in Python
(k = 0-3; a nonsymmetric grid, a random nonsymmetric pattern, a file
matrix), bitwise against a one-rank cpu run (factors, apply, transpose
apply), the transpose apply against scipy's spsolve of the transposed
factors and as the adjoint of the apply, re-factoring, a zero pivot named
on every rank and a boosted one, bad levels.
Arguments: the backend (default cpu), the matrices folder."""
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp
from mpi4py import MPI
from scipy.sparse.linalg import spsolve

import rrt_testing
import ringrt
from ilu_problems import apply_lu, convdiff2d, naive_iluk, random_dominant, rel
from ringrt import errors

EPS = np.finfo(float).eps


def file_matrix(folder: str) -> sp.csr_array:
    """cage5 (37 x 37, nonsymmetric, SuiteSparse)."""
    return sp.csr_array(scipy.io.mmread(f"{folder}/ss_cage5.mtx"))


def transpose_reference(LU: sp.csr_array, r: np.ndarray) -> "tuple[np.ndarray, float]":
    """(L^-T U^-T r by spsolve, the tolerance its comparison gets): the
    transposed solves' relative error is bounded by about n eps cond(L)
    cond(U) (each triangular solve: n eps times its condition number;
    ringrt's L' = U^T D^-1 and U' = D L^T add one rounding per entry)."""
    n = LU.shape[0]
    L = sp.tril(LU, -1, format="csc") + sp.eye(n, format="csc")
    U = sp.triu(LU, 0, format="csc")
    z = spsolve(sp.csc_matrix(L.T), spsolve(sp.csc_matrix(U.T), r))
    cond = np.linalg.cond(L.toarray()) * np.linalg.cond(U.toarray())
    return z, 4 * n * EPS * cond


def check_exact(ctx: ringrt.Context, self_ctx: ringrt.Context, folder: str) -> None:
    """k = 0-3: the naive ILU(k) to 1e-12, a one-rank run bitwise."""
    fill = {}
    for name, A in (("convdiff", convdiff2d(9)), ("random", random_dominant(120, 0.03, seed=5)),
                    ("cage5", file_matrix(folder))):
        n = A.shape[0]
        r, s = np.cos(np.arange(n, dtype=float)), np.sin(np.arange(n, dtype=float) + 1.0)
        for k in range(4):
            M, M1 = ringrt.ilu(A, levels=k, ctx=ctx), ringrt.ilu(A, levels=k, ctx=self_ctx)
            assert M.fill_levels == k
            LU, ref = M.factors(), naive_iluk(A, k)
            assert (LU.indptr == ref.indptr).all() and (LU.indices == ref.indices).all(), (name, k)
            # the same IKJ updates on diagonally dominant / M-matrices: entries
            # O(1), rounding differences ~1e-15 (division vs reciprocal)
            assert np.abs(LU.data - ref.data).max() <= 1e-12 * np.abs(ref.data).max(), (name, k)
            z, zt = M.apply(r), M.apply(r, transpose=True)
            assert rel(z, apply_lu(ref, r)) < 1e-12, (name, k, rel(z, apply_lu(ref, r)))
            zref, tol = transpose_reference(ref, r)
            assert rel(zt, zref) <= tol, (name, k, rel(zt, zref), tol)
            # the adjoint: <M^-T r, s> = <r, M^-1 s>
            lhs, rhs = zt @ s, r @ M.apply(s)
            assert abs(lhs - rhs) <= tol * np.linalg.norm(zt) * np.linalg.norm(s), (lhs, rhs)
            assert np.array_equal(LU.data, M1.factors().data), (name, k, "factors")
            assert np.array_equal(z, M1.apply(r)), (name, k, "apply")
            assert np.array_equal(zt, M1.apply(r, transpose=True)), (name, k, "transpose")
            fill[name, k] = LU.nnz
            M.close(), M1.close()
    assert fill["convdiff", 0] == convdiff2d(9).nnz
    assert fill["convdiff", 0] < fill["convdiff", 1] < fill["convdiff", 2] < fill["convdiff", 3]


def check_orderings(ctx: ringrt.Context, self_ctx: ringrt.Context) -> None:
    """The transpose apply of ILU(0) in every ordering (its handle keeps the
    elimination order): the adjoint of the apply, <M^-T r, s> = <r, M^-1 s>
    (to 1e-12 of |M^-T r| |s|: both sides round the same well-conditioned
    factors), and bitwise a one-rank run's."""
    A = convdiff2d(10)
    n = A.shape[0]
    r, s = np.cos(np.arange(n, dtype=float)), np.sin(np.arange(n, dtype=float) + 1.0)
    for ordering in ("rcm", "multicolor", "dd", "dd-color"):
        M, M1 = (ringrt.ilu(A, ordering=ordering, dd_blocks=3, ctx=c) for c in (ctx, self_ctx))
        zt = M.apply(r, transpose=True)
        lhs, rhs = zt @ s, r @ M.apply(s)
        bound = 1e-12 * np.linalg.norm(zt) * np.linalg.norm(s)
        assert abs(lhs - rhs) <= bound, (ordering, lhs, rhs)
        assert np.array_equal(zt, M1.apply(r, transpose=True)), (ordering, "transpose")
        assert rel(zt, M.apply(r)) > 1e-3, ordering  # nonsymmetric: not the apply itself
        M.close(), M1.close()


def check_refactor(ctx: ringrt.Context) -> None:
    """New values, same pattern: the factors and the transpose apply follow."""
    A = convdiff2d(8)
    M = ringrt.ilu(A, levels=2, ctx=ctx)
    r = np.linspace(-1.0, 1.0, A.shape[0])
    z0 = M.apply(r, transpose=True)
    B = sp.csr_array(A * 2.0 + sp.diags(np.linspace(1.0, 3.0, A.shape[0])))
    M.matrix.set_values(B)
    M.refactor()
    ref = naive_iluk(B, 2)
    assert np.abs(M.factors().data - ref.data).max() <= 1e-12 * np.abs(ref.data).max()
    zt = M.apply(r, transpose=True)
    zref, tol = transpose_reference(ref, r)
    assert rel(zt, zref) <= tol and rel(zt, z0) > 0.1, (rel(zt, zref), rel(zt, z0))
    M.close()


def singular_block(m: int) -> sp.csr_array:
    """convdiff2d(6) with rows and columns m, m + 1 decoupled from the rest
    and [[1, 1], [1, 1]] there: the pivot of row m + 1 is exactly 0 for any
    k (its only update is 1 - 1 * 1)."""
    A = sp.lil_array(convdiff2d(6))
    for i in (m, m + 1):
        A[i, :] = 0.0
        A[:, i] = 0.0
    for i in (m, m + 1):
        for j in (m, m + 1):
            A[i, j] = 1.0
    return sp.csr_array(A)


def check_pivots(ctx: ringrt.Context) -> None:
    Z = singular_block(17)
    for k in (0, 2):
        rrt_testing.raises(errors.Singular, lambda: ringrt.ilu(Z, levels=k, ctx=ctx),
                           match="zero pivot at global row 18")
        M = ringrt.ilu(Z, levels=k, boost=(1e-12, 1.0), ctx=ctx)
        ref = naive_iluk(Z, k, boost=(1e-12, 1.0))
        assert np.abs(M.factors().data - ref.data).max() <= 1e-12 * np.abs(ref.data).max()
        M.close()
    no_diag = sp.csr_array(sp.diags([np.ones(35), np.ones(35)], [-1, 1]) + sp.eye(36)
                           - sp.diags([np.eye(36)[:, 20]], [0]))
    no_diag.eliminate_zeros()
    rrt_testing.raises(errors.Singular, lambda: ringrt.ilu(no_diag, levels=1, ctx=ctx),
                       match="global row 20 (0-based) has no diagonal entry")


def check_errors(ctx: ringrt.Context) -> None:
    A = convdiff2d(5)
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.ilu(A, levels=-1, ctx=ctx),
                       match="levels must be an integer")


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    folder = sys.argv[2] if len(sys.argv) > 2 else "/work/shared/data/matrices"
    with ringrt.Context(backend=backend) as ctx, \
            ringrt.Context(MPI.COMM_SELF, backend="cpu") as self_ctx:
        assert ctx.backend == backend
        check_exact(ctx, self_ctx, folder)
        check_orderings(ctx, self_ctx)
        check_refactor(ctx)
        check_pivots(ctx)
        check_errors(ctx)


rrt_testing.run(main)

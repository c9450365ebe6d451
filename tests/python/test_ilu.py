"""ringrt.ilu0 / krylov_solve over scipy.sparse at any rank count: solutions
against scipy's spsolve, factors and apply against a naive float64 ILU(0)
and bitwise against a one-rank cpu run, both layouts, errors on every rank.
Argument: the backend (default cpu; emu runs the vectors' staging path)."""
import sys

import rrt_testing
import ringrt

# the SciPy and PETSc fronts load on first use, not with the package
assert "scipy" not in sys.modules and "petsc4py" not in sys.modules, "import ringrt imports them"
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from mpi4py import MPI  # noqa: E402
from scipy.sparse.linalg import gmres, spsolve  # noqa: E402

from ilu_problems import apply_lu, convdiff2d, naive_ilu0, random_dominant, rel  # noqa: E402
from ringrt import errors  # noqa: E402

N = 20  # 400 unknowns: a few rows per rank still cross blocks at 3 ranks


def check_solve(ctx: ringrt.Context) -> None:
    A = convdiff2d(N)
    b = A @ np.linspace(1.0, 2.0, N * N)
    ref = spsolve(A.tocsc(), b)
    M = ringrt.ilu0(A, ctx=ctx)
    assert M.levels == (2 * N - 1, 2 * N - 1), M.levels  # natural 5-point grid
    lf, la = M.launches  # cpu: host loops; emu: sync-free sweeps, one per run of levels
    if ctx.backend == "cpu":
        assert (lf, la) == (0, 0), (lf, la)
    elif ctx.size == 1:
        assert (lf, la) == (1, 2), (lf, la)
    else:
        assert 1 <= lf <= 2 * N - 1 and 2 <= la <= 4 * N - 2, (lf, la)
    # ||r|| <= 1e-10 ||b|| and cond(A) ~ 1e2 here: the error is far below 1e-7
    x = M.solve(b, rtol=1e-10)
    assert M.result.converged and M.result.iterations > 1, M.result
    assert M.result.relative_residual <= 1e-10 and len(M.result.history) >= 2
    assert rel(x, ref) < 1e-7, rel(x, ref)
    for method in ("bicgstab", "gmres"):
        x, res = ringrt.krylov_solve(A, b, M=M, method=method, rtol=1e-10, x0=np.ones(N * N))
        assert res.converged and res.method == method and rel(x, ref) < 1e-7, (method, res)
    x, res = ringrt.krylov_solve(A.copy(), b, M=M, rtol=1e-10)  # another object: wrapped
    assert res.converged and rel(x, ref) < 1e-7, res
    x, res = ringrt.krylov_solve(A, b, rtol=1e-10, maxit=5000, ctx=ctx)  # no preconditioner
    assert res.converged and res.iterations > M.result.iterations and rel(x, ref) < 1e-7, res
    x, res = ringrt.krylov_solve(A, b, M=M, maxit=2)  # not converging is not an error
    assert not res.converged and res.iterations == 2, res
    # scipy's own GMRES with ringrt's M^-1 (every rank runs it on whole vectors)
    x, info = gmres(A, b, M=M.as_linear_operator(), rtol=1e-10, restart=30, maxiter=50)
    assert info == 0 and rel(x, ref) < 1e-7, (info, rel(x, ref))
    assert np.allclose(M.matrix.matvec(b), A @ b, rtol=1e-14, atol=0)
    for ordering, f32 in (("multicolor", False), ("rcm", True)):
        Mo = ringrt.ilu0(A, ordering=ordering, factors_f32=f32, ctx=ctx)
        x = Mo.solve(b, rtol=1e-10)
        assert Mo.result.converged and rel(x, ref) < 1e-7, (ordering, Mo.result)
        if ordering == "multicolor":
            assert Mo.levels == (2, 2), Mo.levels
        Mo.close()


def check_exact(ctx: ringrt.Context, self_ctx: ringrt.Context) -> None:
    """Factors and apply: a naive ILU(0) to 1e-12, a one-rank run bitwise."""
    for A in (random_dominant(150, 0.04, seed=3), convdiff2d(9)):
        r = np.cos(np.arange(A.shape[0], dtype=float))
        M, M1 = ringrt.ilu0(A, ctx=ctx), ringrt.ilu0(A, ctx=self_ctx)
        LU, ref = M.factors(), naive_ilu0(A)
        assert (LU.indptr == ref.indptr).all() and (LU.indices == ref.indices).all()
        # entries are O(1) and the updates few: rounding differences ~1e-15
        assert np.abs(LU.data - ref.data).max() <= 1e-12 * np.abs(ref.data).max()
        z = M.apply(r)
        assert rel(z, apply_lu(ref, r)) < 1e-12, rel(z, apply_lu(ref, r))
        assert np.array_equal(LU.data, M1.factors().data), "factors differ from one rank's"
        assert np.array_equal(z, M1.apply(r)), "apply differs from one rank's"
        M.close(), M1.close()


def check_dd(ctx: ringrt.Context, self_ctx: ringrt.Context) -> None:
    """The dd orderings: a solve converges; with dd_blocks = 3 the factors and
    the apply are bitwise a one-rank run's (the subdomains do not follow the
    ranks); a bad dd_blocks is an error on every rank."""
    A = convdiff2d(N)
    b = A @ np.linspace(1.0, 2.0, N * N)
    ref = spsolve(A.tocsc(), b)
    for ordering in ("dd", "dd-color"):
        M, M1 = (ringrt.ilu0(A, ordering=ordering, dd_blocks=3, ctx=c) for c in (ctx, self_ctx))
        assert M.ordering == ordering
        assert np.array_equal(M.factors().data, M1.factors().data), "factors differ from one rank's"
        assert np.array_equal(M.apply(b), M1.apply(b)), "apply differs from one rank's"
        x = M.solve(b, rtol=1e-10)
        assert M.result.converged and rel(x, ref) < 1e-7, (ordering, M.result)
        M.close(), M1.close()
    Md = ringrt.ilu0(A, ordering="dd", ctx=ctx)  # one subdomain per rank
    x = Md.solve(b, rtol=1e-10)
    assert Md.result.converged and rel(x, ref) < 1e-7, Md.result
    Md.close()
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.ilu0(
        A, ordering="dd", dd_blocks=-1, ctx=ctx), match="dd_blocks")


def check_rows_layout(ctx: ringrt.Context) -> None:
    """Each rank passes its own rows (an uneven split): local vectors."""
    A = convdiff2d(N)
    n, size, rank = N * N, ctx.size, ctx.rank
    ends = [0] + [(n * (k + 1) * (k + 2)) // (size * (size + 1)) for k in range(size)]
    lo, hi = ends[rank], ends[rank + 1]
    b = A @ np.sin(np.arange(n, dtype=float))
    ref = spsolve(A.tocsc(), b)
    for kwargs in ({"layout": "rows"}, {"row_begin": lo}):  # np = 1: square, so say "rows"
        S = ringrt.SparseMatrix(A[lo:hi], ctx, **kwargs)
        assert (S.layout, S.row_begin, S.nrows, S.shape) == ("rows", lo, hi - lo, (n, n))
        M = ringrt.ilu0(S)
        x = M.solve(b[lo:hi], rtol=1e-10)
        assert x.shape == (hi - lo,) and M.result.converged
        assert rel(np.concatenate(ctx.comm.allgather(x)), ref) < 1e-7
        assert np.allclose(S.matvec(b[lo:hi]), (A @ b)[lo:hi], rtol=1e-14, atol=0)
        if size > 1:  # scipy's solvers on local blocks would diverge between ranks
            rrt_testing.raises(errors.InvalidArgument, M.as_linear_operator, match="whole layout")
        # new values, same pattern: refactor gives the new matrix's solution
        S.set_values(2.0 * A[lo:hi])
        M.refactor()
        x = M.solve(b[lo:hi], rtol=1e-10)
        assert rel(np.concatenate(ctx.comm.allgather(x)), ref / 2) < 1e-7
        M.close(), S.close()


def check_input_not_modified(ctx: ringrt.Context) -> None:
    """Unsorted columns and duplicates are fixed on a copy."""
    A = convdiff2d(6)
    order = np.concatenate([np.arange(A.indptr[i + 1] - 1, A.indptr[i] - 1, -1)
                            for i in range(A.shape[0])])
    data = A.data[order].copy()
    data[::2] *= 0.5  # split every other entry into two duplicates
    dup = np.flatnonzero(np.arange(len(order)) % 2 == 0)
    indices = np.insert(A.indices[order], dup, A.indices[order][dup])
    values = np.insert(data, dup, data[dup])
    counts = np.diff(A.indptr) + np.bincount(np.searchsorted(A.indptr, dup, side="right") - 1,
                                             minlength=A.shape[0])
    U = sp.csr_matrix((values, indices, np.concatenate([[0], np.cumsum(counts)])), shape=A.shape)
    saved = (U.indices.copy(), U.data.copy())
    M = ringrt.ilu0(U, ctx=ctx)
    assert np.array_equal(U.indices, saved[0]) and np.array_equal(U.data, saved[1])
    assert abs(M.factors() - naive_ilu0(A)).max() <= 1e-12


def check_errors(ctx: ringrt.Context) -> None:
    """Bad input raises on every rank (the others: RemoteError naming the rank)."""
    rank, size, last = ctx.rank, ctx.size, ctx.size - 1
    A = convdiff2d(2 * size)
    m = A.shape[0]
    k = m - 2  # on the last rank
    nodiag = sp.lil_array(A)
    nodiag[k, k] = 0
    nodiag = sp.csr_array(nodiag)
    nodiag.eliminate_zeros()
    rrt_testing.raises(errors.Singular, lambda: ringrt.ilu0(nodiag, ctx=ctx),
                       match=f"global row {k}")
    zero = sp.csr_array(A, copy=True)
    zero.data[zero.indptr[k]:zero.indptr[k + 1]] = 0.0  # row k: stored zeros only
    rrt_testing.raises(errors.Singular, lambda: ringrt.ilu0(zero, ctx=ctx),
                       match=f"zero pivot at global row {k}")
    bad = sp.csr_array(A, copy=True)
    bad.data[bad.indptr[k]] = np.nan
    rrt_testing.raises(errors.NumericError, lambda: ringrt.ilu0(bad, ctx=ctx),
                       match=f"NaN or Inf in global row {k}")
    # rows layout: a NaN on the last rank only; everyone raises, naming it
    lo, hi = rank * m // size, (rank + 1) * m // size
    block = sp.csr_array(A[lo:hi], copy=True)
    if rank == last:
        block.data[-1] = np.inf
    rrt_testing.raises(errors.NumericError if rank == last else errors.RemoteError,
                       lambda: ringrt.SparseMatrix(block, ctx), match=f"global row {m - 1}")
    # not square: the whole layout, and row blocks that do not add up to n
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.SparseMatrix(
        sp.random(5, 6, density=0.5, random_state=1), ctx, layout="whole"), match="square")
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.SparseMatrix(
        sp.eye(2, 2 * size + 1, format="csr"), ctx), match="cover")
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.ilu0(A, ordering="amd", ctx=ctx),
                       match="ordering")
    M = ringrt.ilu0(A, ctx=ctx)
    rrt_testing.raises(errors.InvalidArgument, lambda: M.solve(np.ones(m), method="minres"),
                       match="method")
    rrt_testing.raises(errors.NumericError, lambda: M.apply(np.full(m, np.nan)), match="NaN")
    rrt_testing.raises(errors.InvalidArgument, lambda: ringrt.krylov_solve(
        convdiff2d(2 * size + 1), np.ones((2 * size + 1) ** 2), M=M), match="M's matrix has n")
    # one rank's vector has the wrong length
    bad_len = m + 1 if rank == last else m
    rrt_testing.raises(errors.InvalidArgument if rank == last else errors.RemoteError,
                       lambda: M.solve(np.ones(bad_len)), match=f"expected ({m},)")
    if size > 1:  # whole layout: matrices or vectors that differ between ranks
        other = A * (2.0 if rank == last else 1.0)
        rrt_testing.raises(errors.InvalidArgument if rank == last else errors.RemoteError,
                           lambda: ringrt.SparseMatrix(other, ctx), match="differs from rank 0")
        v = np.full(m, float(rank == last))
        rrt_testing.raises(errors.InvalidArgument if rank == last else errors.RemoteError,
                           lambda: M.apply(v), match="differs from rank 0")
    M.close()


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "cpu"  # the one-rank reference: cpu
    with ringrt.Context(backend=backend) as ctx, \
            ringrt.Context(MPI.COMM_SELF, backend="cpu") as self_ctx:
        assert ctx.backend == backend
        check_solve(ctx)
        check_exact(ctx, self_ctx)
        check_dd(ctx, self_ctx)
        check_rows_layout(ctx)
        check_input_not_modified(ctx)
        check_errors(ctx)


rrt_testing.run(main)

"""Test matrices and float64 references for the ILU tests (independent of
ringrt: scipy and a naive ILU(0) in Python)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def convdiff2d(N: int, wind: float = 20.0) -> sp.csr_array:
    """-Laplace(u) + wind * (du/dx + du/dy) on an N x N grid, 5-point,
    first-order upwind convection: nonsymmetric, an M-matrix."""
    h = 1.0 / (N + 1)
    main = np.full(N * N, 4.0 + 2 * wind * h)
    west = np.full(N * N - 1, -1.0 - wind * h)
    east = np.full(N * N - 1, -1.0)
    west[N - 1::N] = east[N - 1::N] = 0.0  # no coupling across grid rows
    south = np.full(N * N - N, -1.0 - wind * h)
    north = np.full(N * N - N, -1.0)
    return sp.csr_array(sp.diags([south, west, main, east, north], [-N, -1, 0, 1, N], format="csr"))


def random_dominant(n: int, density: float, seed: int) -> sp.csr_array:
    """A random nonsymmetric pattern plus a dominant diagonal (irregular
    couplings between row blocks)."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=density, random_state=rng, format="csr")
    R.data -= 0.5
    diag = np.abs(R).sum(axis=1) + 1.0
    return sp.csr_array(R + sp.diags(np.asarray(diag).ravel()))


def naive_ilu0(A: sp.csr_array) -> sp.csr_array:
    """The serial IKJ ILU(0) in natural order, combined LU in A's pattern."""
    A = sp.csr_array(A, copy=True)
    A.sort_indices()
    rows = [dict(zip(A.indices[A.indptr[i]:A.indptr[i + 1]],
                     A.data[A.indptr[i]:A.indptr[i + 1]])) for i in range(A.shape[0])]
    for i, row in enumerate(rows):
        for k in sorted(c for c in row if c < i):
            row[k] /= rows[k][k]
            for j, u in rows[k].items():
                if j > k and j in row:
                    row[j] -= row[k] * u
    out = A.copy()
    out.data = np.array([rows[i][j] for i in range(A.shape[0])
                         for j in A.indices[A.indptr[i]:A.indptr[i + 1]]])
    return out


def naive_iluk_pattern(A: sp.csr_array, k: int) -> "list[dict[int, int]]":
    """Per row, the columns of the ILU(k) pattern with their levels, by the
    definition: lev = 0 on A's pattern; eliminating row i with each earlier
    row m of its pattern (fill included, in increasing m) proposes
    lev(i,m) + lev(m,j) + 1 for every j > m of row m; kept when <= k."""
    A = sp.csr_array(A, copy=True)
    A.sort_indices()
    lev: "list[dict[int, int]]" = []
    for i in range(A.shape[0]):
        row = {int(j): 0 for j in A.indices[A.indptr[i]:A.indptr[i + 1]]}
        done: "set[int]" = set()
        while True:
            todo = [m for m in row if m < i and m not in done]
            if not todo:
                break
            m = min(todo)
            done.add(m)
            for j, lmj in lev[m].items():
                proposal = row[m] + lmj + 1
                if j > m and proposal <= k:
                    row[j] = min(row.get(j, proposal), proposal)
        lev.append(row)
    return lev


def naive_iluk(A: sp.csr_array, k: int, boost: "tuple[float, float] | None" = None
               ) -> sp.csr_array:
    """The serial ILU(k) in natural order: the level-of-fill pattern, then
    IKJ elimination on it (combined LU, fill entries included); boost =
    (tol, value): a pivot with |u_ii| <= tol becomes value."""
    A = sp.csr_array(A, copy=True)
    A.sort_indices()
    n = A.shape[0]
    rows: "list[dict[int, float]]" = []
    for i, pattern in enumerate(naive_iluk_pattern(A, k)):
        row = {j: 0.0 for j in pattern}
        lo, hi = A.indptr[i], A.indptr[i + 1]
        for j, a in zip(A.indices[lo:hi], A.data[lo:hi]):
            row[int(j)] = float(a)
        for m in sorted(c for c in row if c < i):
            row[m] /= rows[m][m]
            for j, u in rows[m].items():
                if j > m and j in row:
                    row[j] -= row[m] * u
        if boost is not None and abs(row[i]) <= boost[0]:
            row[i] = boost[1]
        rows.append(row)
    ri = [i for i in range(n) for _ in rows[i]]
    ci = [j for i in range(n) for j in sorted(rows[i])]
    vals = [rows[i][j] for i in range(n) for j in sorted(rows[i])]
    return sp.csr_array((vals, (ri, ci)), shape=(n, n))


def apply_lu(LU: sp.csr_array, r: np.ndarray) -> np.ndarray:
    """z = U^-1 L^-1 r for combined factors (unit lower L)."""
    from scipy.sparse.linalg import spsolve_triangular
    L = sp.tril(LU, -1, format="csr") + sp.eye(LU.shape[0], format="csr")
    U = sp.triu(LU, 0, format="csr")
    y = spsolve_triangular(L, r, lower=True, unit_diagonal=True)
    return spsolve_triangular(U, y, lower=False)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b||."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))

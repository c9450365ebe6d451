"""ringrt's exact distributed ILU(0) from SciPy.

    python ilu_scipy.py [N | matrix.mtx]               # one process
    mpirun -np 3 python ilu_scipy.py [N | matrix.mtx]  # the same answer

Every rank passes the whole matrix (ringrt keeps a block of rows on each
rank); vectors are whole vectors. Default: a 2D convection-diffusion problem
on an N x N grid (N = 100). Needs `pip install ./python` (or PYTHONPATH) and
libringrt.so (RINGRT_PREFIX or RINGRT_LIBRARY).
"""
import sys

import numpy as np
from scipy.sparse.linalg import gmres, spsolve

import ringrt
from problems import load


def main() -> int:
    arg = sys.argv[1] if len(sys.argv) > 1 else "100"
    A = load(arg)
    n = A.shape[0]
    b = A @ np.ones(n)

    M = ringrt.ilu0(A)                        # analysis + factorisation, collective
    x = M.solve(b, method="gmres", rtol=1e-8)  # GMRES(30) preconditioned by M
    res = M.result

    # ringrt's M^-1 inside SciPy's own GMRES (every rank runs it alike)
    x2, info = gmres(A, b, M=M.as_linear_operator(), rtol=1e-8, restart=30, maxiter=100)

    if ringrt.default_context().rank == 0:
        ref = spsolve(A.tocsc(), b)
        print(f"n {n}, ranks {ringrt.default_context().size}, levels {M.levels}")
        err = np.linalg.norm(x - ref) / np.linalg.norm(ref)
        print(f"ringrt GMRES(30)+ILU(0): {res.iterations} iterations, converged {res.converged}, "
              f"||x - spsolve|| / ||spsolve|| = {err:.1e}")
        print(f"scipy gmres with M = ringrt ILU(0): info {info}, "
              f"error {np.linalg.norm(x2 - ref) / np.linalg.norm(ref):.1e}")
    return 0 if res.converged and info == 0 else 1


sys.exit(main())

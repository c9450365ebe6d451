"""The examples' test problem: a matrix file, or a generated 2D convection-diffusion matrix."""
import numpy as np
import scipy.io
import scipy.sparse as sp


def convdiff2d(N: int, wind: float = 20.0) -> sp.csr_array:
    """-Laplace(u) + wind * grad(u) on an N x N grid (5-point, upwind): nonsymmetric."""
    h = 1.0 / (N + 1)
    west = np.full(N * N - 1, -1.0 - wind * h)
    east = np.full(N * N - 1, -1.0)
    west[N - 1::N] = east[N - 1::N] = 0.0  # no coupling across grid rows
    return sp.csr_array(sp.diags([np.full(N * N - N, -1.0 - wind * h), west,
                                  np.full(N * N, 4.0 + 2 * wind * h), east,
                                  np.full(N * N - N, -1.0)], [-N, -1, 0, 1, N], format="csr"))


def load(arg: str) -> sp.csr_array:
    """A Matrix Market file (*.mtx), or convdiff2d(N) for a number N."""
    return sp.csr_array(scipy.io.mmread(arg)) if arg.endswith(".mtx") else convdiff2d(int(arg))

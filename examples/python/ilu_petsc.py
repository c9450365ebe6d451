"""ringrt's exact distributed ILU(0) as the preconditioner of a petsc4py KSP.

    mpirun -np 3 python ilu_petsc.py [N | matrix.mtx] \
        -ksp_type gmres -pc_type python -pc_python_type ringrt.petsc.ILU0 \
        [-pc_ringrt_ordering natural|rcm|multicolor] [-ksp_view]
    mpirun -np 3 python ilu_petsc.py [N | matrix.mtx] -pc_type bjacobi   # PETSc's own

The matrix is an MPIAIJ matrix with PETSc's row distribution; ringrt reads
each rank's rows as they are. Default: a 2D convection-diffusion problem on
an N x N grid (N = 100). Prints the iteration count: with ringrt it does not
change with the number of ranks; with bjacobi (ILU(0) of each rank's block)
it does. Needs PETSC_DIR for Debian's petsc4py.
"""
import sys

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
from petsc4py import PETSc  # noqa: E402

from problems import load  # noqa: E402


def main() -> int:
    arg = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else "100"
    A = load(arg)
    n = A.shape[0]
    comm = PETSc.COMM_WORLD
    size, rank = comm.getSize(), comm.getRank()
    nloc = n // size + (rank < n % size)  # PETSc's default split
    lo = comm.tompi4py().exscan(nloc) or 0
    block = A[lo:lo + nloc]
    P = PETSc.Mat().createAIJ(((nloc, n), (nloc, n)), comm=comm,
                              csr=(block.indptr.astype(PETSc.IntType),
                                   block.indices.astype(PETSc.IntType), block.data))
    P.assemble()

    ksp = PETSc.KSP().create(comm)
    ksp.setOperators(P)
    ksp.setType("gmres")
    ksp.setPCSide(PETSc.PC.Side.RIGHT)  # converge on the true residual
    ksp.setTolerances(rtol=1e-8, max_it=5000)
    ksp.setFromOptions()  # -pc_type python -pc_python_type ringrt.petsc.ILU0, -pc_ringrt_*

    b, x = P.createVecs()
    b.setArray((A @ np.ones(n))[lo:lo + nloc])
    try:
        ksp.solve(b, x)  # a zero pivot raises ringrt.errors.Singular here, on every rank
    except BaseException:
        # petsc4py 3.18 crashes at exit if a python PC is still alive then
        ksp.destroy()
        raise
    err = x.copy()
    err.shift(-1.0)
    pc = ksp.getPC()
    name = pc.getPythonType() if pc.getType() == "python" else pc.getType()
    PETSc.Sys.Print(f"n {n}, ranks {size}, pc {name}: {ksp.getIterationNumber()} iterations, "
                    f"reason {ksp.getConvergedReason()}, ||x - 1|| / ||1|| = "
                    f"{err.norm() / np.sqrt(n):.1e}")
    return 0 if ksp.getConvergedReason() > 0 else 1


sys.exit(main())

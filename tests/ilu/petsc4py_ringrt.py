"""petsc4py with the ringrt PC plugin: -dll_append, then PETSc.Options() as
a petsc4py user sets a PC type. usage: petsc4py_ringrt.py LIBRINGRT_PETSC.so
Prints "petsc4py: pc=ringrt iterations=K reason=R" on rank 0 (laplace2d:30,
b = A ones, GMRES to 1e-8)."""
import sys

import petsc4py

petsc4py.init(["-dll_append", sys.argv[1]])
from petsc4py import PETSc  # noqa: E402

N = 30
A = PETSc.Mat().createAIJ([N * N, N * N], nnz=5)
rs, re_ = A.getOwnershipRange()
for g in range(rs, re_):
    y, x = divmod(g, N)
    for c, v in ((g - N, y > 0), (g - 1, x > 0), (g + 1, x < N - 1), (g + N, y < N - 1)):
        if v:
            A.setValue(g, c, -1.0)
    A.setValue(g, g, 4.0)
A.assemble()
x, b = A.createVecs()
x.set(1.0)
A.mult(x, b)
x.set(0.0)
opts = PETSc.Options()
opts["pc_type"] = "ringrt"
opts["ksp_type"] = "gmres"
opts["ksp_rtol"] = 1e-8
ksp = PETSc.KSP().create()
ksp.setOperators(A)
ksp.setFromOptions()
ksp.solve(b, x)
PETSc.Sys.Print(f"petsc4py: pc={ksp.getPC().getType()} iterations={ksp.getIterationNumber()} "
                f"reason={ksp.getConvergedReason()}")

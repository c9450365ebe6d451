"""ringrt's Krylov reporting against PETSc 3.18's KSP (petsc4py) on the same
problems, method, side and tolerances: the iteration count and the reason
(ringrt names its reasons as PETSc does) where the algorithm is the same,
and the monitor's norms against PETSc's monitor. ringrt runs on the whole
job (whole layout: the same matrix and vectors on every rank), PETSc on
COMM_SELF of every rank (sequential ILU(0) is the same preconditioner as
ringrt's natural-order ILU(0) for any rank count). The counts that
tests/ilu/test_krylov_reasons.c checks are measured here."""
import sys

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from petsc4py import PETSc  # noqa: E402

import ringrt  # noqa: E402
import rrt_testing  # noqa: E402

DATA = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/matrices"
PETSC_KSP = {"gmres": "gmres", "fgmres": "fgmres", "bicgstab": "bcgs", "cg": "cg"}
REASONS = {v: k.replace("DIVERGED_MAX_IT", "DIVERGED_ITS")
           for k, v in vars(PETSc.KSP.ConvergedReason).items() if k.startswith(("CONV", "DIV"))}


def laplace2d(n: int, shift: float = 0.0) -> sp.csr_array:
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(n, n))
    i = sp.eye_array(n)
    return sp.csr_array(sp.kron(i, t) + sp.kron(t, i) - shift * sp.eye_array(n * n))


def rhs(A: sp.csr_array) -> np.ndarray:
    """b = A (1 + sin(i) / 2), as test_krylov_reasons.c."""
    return A @ (1.0 + 0.5 * np.sin(np.arange(A.shape[0])))


def petsc_solve(A, b, method, pc, side, rtol=1e-8, atol=0.0, dtol=1e4, maxit=1000, restart=30):
    """(iterations, reason name, monitor norms) of PETSc's KSP on COMM_SELF."""
    M = PETSc.Mat().createAIJ(A.shape, csr=(A.indptr.astype(PETSc.IntType),
                                            A.indices.astype(PETSc.IntType), A.data),
                              comm=PETSc.COMM_SELF)
    ksp = PETSc.KSP().create(PETSc.COMM_SELF)
    ksp.setOperators(M)
    ksp.setType(PETSC_KSP[method])
    ksp.getPC().setType("ilu" if pc else "none")
    ksp.setTolerances(rtol=rtol, atol=atol if atol > 0 else 1e-50, divtol=dtol, max_it=maxit)
    if method in ("gmres", "fgmres"):
        ksp.setGMRESRestart(restart)
    if method == "cg":  # PETSc's CG is left-sided; the side picks the norm, as in ringrt
        ksp.setPCSide(PETSc.PC.Side.LEFT)
        ksp.setNormType(PETSc.KSP.NormType.PRECONDITIONED if side == "left"
                        else PETSc.KSP.NormType.UNPRECONDITIONED)
    else:
        ksp.setPCSide(PETSc.PC.Side.LEFT if side == "left" else PETSc.PC.Side.RIGHT)
    norms = []
    ksp.setMonitor(lambda _k, _it, rnorm: norms.append(rnorm))
    bv = PETSc.Vec().createWithArray(b.copy(), comm=PETSc.COMM_SELF)
    x = bv.duplicate()
    ksp.solve(bv, x)
    return ksp.getIterationNumber(), REASONS[ksp.getConvergedReason()], np.array(norms)


def ringrt_solve(A, b, method, pc, side, **kw):
    M = ringrt.ilu0(A) if pc else None
    norms = []
    x, res = ringrt.krylov_solve(A, b, M=M, method=method, side=side,
                                 monitor=lambda it, rnorm: norms.append(rnorm), **kw)
    assert np.array_equal(np.array(norms), res.history), "monitor != history"
    tr = np.linalg.norm(b - A @ x)
    assert abs(tr - res.true_rnorm) <= 1e-10 * (tr + np.linalg.norm(b)), (tr, res.true_rnorm)
    return res.iterations, res.reason, res.history, tr


def compare(name, A, b, method, pc=True, side="right", monitor_rtol=None, same_its=True, **kw):
    pi, pr, pn = petsc_solve(A, b, method, pc, side, **kw)
    ri, rr, rn, tr = ringrt_solve(A, b, method, pc, side, **kw)
    if same_its:
        assert (ri, rr) == (pi, pr), f"{name}: ringrt {ri} {rr}, PETSc {pi} {pr}"
    assert rr == pr, f"{name}: ringrt {ri} {rr}, PETSc {pi} {pr}"
    if monitor_rtol is not None:  # the same iteration: the same norms up to rounding
        assert len(rn) == len(pn), (len(rn), len(pn))
        err = np.max(np.abs(rn - pn) / pn[0])
        assert err <= monitor_rtol, f"{name}: monitor differs from PETSc's by {err:.3e}"
    if MPIrank == 0:
        print(f"{name:34s} {method:8s} {side:5s}  {ri:4d} {rr}")
    return tr


def main():
    lap = laplace2d(16)
    b = rhs(lap)
    bn = np.linalg.norm(b)
    # the same algorithm: the same iterations and reason, and (GMRES,
    # FGMRES, CG) the same monitored norms to rounding (1e-9 of the first:
    # the dot products are summed in a different order)
    for method, side in [("gmres", "right"), ("gmres", "left"), ("fgmres", "right"),
                         ("cg", "right"), ("cg", "left")]:
        compare("laplace2d:16", lap, b, method, side=side, monitor_rtol=1e-9)
    # BiCGSTAB: ringrt also tests the half step s; counts agree here
    for side in ("right", "left"):
        compare("laplace2d:16", lap, b, "bicgstab", side=side)
    compare("laplace2d:16 restart 5", lap, b, "gmres", restart=5, monitor_rtol=1e-9)
    compare("maxit 3", lap, b, "gmres", maxit=3)
    compare("dtol 0.5", lap, b, "gmres", dtol=0.5)
    compare("atol 1e-3 ||b||", lap, b, "gmres", atol=1e-3 * bn)
    compare("b = 0", lap, 0 * b, "gmres")
    # CG stopping on p^T A p < 0 (ringrt stops at the first non-positive
    # value, PETSc at a change of sign: the same iteration where it was
    # positive before)
    compare("cg indefinite, shift 0.2", laplace2d(16, 0.2), rhs(laplace2d(16, 0.2)), "cg", pc=False)
    compare("cg indefinite, shift 0.5", laplace2d(16, 0.5), rhs(laplace2d(16, 0.5)), "cg", pc=False)
    compare("cg+ilu indefinite, shift 0.2", laplace2d(16, 0.2), rhs(laplace2d(16, 0.2)), "cg")
    # BiCGSTAB breakdown: (A b)^T b = 0
    swap = sp.csr_array(sp.kron(sp.eye_array(12), sp.csr_array([[0.0, 1.0], [1.0, 0.0]])))
    compare("bicgstab breakdown", swap, np.tile([1.0, 0.0], 12), "bicgstab", pc=False)
    # gk_isai_a: ILU(0) numerically singular (cond(A M^-1) ~ 1e38). Right:
    # GMRES's restart check sees the estimate far from the true residual
    # (PETSc: breakdown at 30; which restart sees it first is decided by
    # rounding, so only the reason is compared); ringrt hands back the best
    # iterate (here x0 = 0). Left: both call it converged on the
    # preconditioned norm while ||b - A x|| is ~||b||.
    isai = sp.csr_array(scipy.io.mmread(f"{DATA}/gk_isai_a.mtx"))
    bi = isai @ np.ones(isai.shape[0])
    tr = compare("gk_isai_a", isai, bi, "gmres", same_its=False)
    assert tr <= np.linalg.norm(bi) * (1 + 1e-12), tr
    compare("gk_isai_a", isai, bi, "gmres", side="left")


MPIrank = PETSc.COMM_WORLD.getRank()
rrt_testing.run(main)

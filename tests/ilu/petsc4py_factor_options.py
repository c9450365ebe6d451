"""PETSc's factor options on the ringrt PC, against PETSc's own ILU (np 1).

usage: petsc4py_factor_options.py LIBRINGRT_PETSC.so

For each case, the same matrix and the same options go to a KSP preonly
with -pc_type ilu (PETSc's sequential ILU: the reference) and to one with
-pc_type ringrt; z = M^-1 b must agree to 1e-10 relative (the factors are
the same up to rounding: PETSc multiplies by the inverted pivot where
ringrt divides), or both must fail with KSP_DIVERGED_PC_FAILED. Options
ringrt refuses must be errors naming them. Prints one "ok"/"FAIL" line per
check and "N failure(s)"; exits 1 on any failure.
"""
import sys

import petsc4py

petsc4py.init(["-dll_append", sys.argv[1]])
from petsc4py import PETSc  # noqa: E402
import numpy as np  # noqa: E402

FAILURES = []
N = 20
PC_FAILED = -11  # KSP_DIVERGED_PC_FAILED


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def laplace(edit=None, kind="aij"):
    """laplace2d:N as AIJ on COMM_SELF; edit(row, cols, vals) may change a row."""
    n = N * N
    A = PETSc.Mat().create(comm=PETSc.COMM_SELF)
    A.setSizes([n, n])
    A.setType(kind)
    A.setPreallocationNNZ(5)
    A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, False)
    for g in range(n):
        y, x = divmod(g, N)
        cols = [c for c, ok in ((g - N, y > 0), (g - 1, x > 0), (g, True), (g + 1, x < N - 1),
                                (g + N, y < N - 1)) if ok]
        vals = [4.0 if c == g else -1.0 for c in cols]
        if edit:
            vals = edit(g, cols, vals)
        A.setValues([g], cols, vals)
    A.assemble()
    return A


def solve(A, prefix, opts, transpose=False):
    """z = M^-1 b (transpose: M^-T b) with a preonly KSP of options prefix
    `prefix` (b fixed): (reason, z)."""
    db = PETSc.Options()
    for k, v in opts.items():
        db[prefix + k] = v
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOptionsPrefix(prefix)
    ksp.setOperators(A)
    ksp.setType("preonly")
    ksp.setFromOptions()
    x, b = A.createVecs()
    b.setArray(np.sin(np.arange(A.getSize()[0]) + 1.0))
    (ksp.solveTranspose if transpose else ksp.solve)(b, x)
    reason, z = ksp.getConvergedReason(), x.getArray().copy()
    for k in opts:
        db.delValue(prefix + k)
    ksp.destroy()
    return reason, z


def compare(name, A, opts, expect_fail=False, transpose=False):
    ref = solve(A, "ref_", dict(opts, pc_type="ilu"), transpose)
    got = solve(A, "rrt_", dict(opts, pc_type="ringrt"), transpose)
    if expect_fail:
        check(ref[0] == PC_FAILED and got[0] == PC_FAILED,
              f"{name}: both fail with DIVERGED_PC_FAILED (PETSc {ref[0]}, ringrt {got[0]})")
        return
    err = np.linalg.norm(got[1] - ref[1]) / np.linalg.norm(ref[1])
    check(ref[0] > 0 and got[0] > 0 and err < 1e-10,
          f"{name}: M^-1 b as PETSc's ILU (reasons {ref[0]} {got[0]}, rel. diff {err:.2e})")


def refused(name, A, opts, pattern):
    try:
        solve(A, "bad_", dict(opts, pc_type="ringrt"))
        check(False, f"{name}: refused (it ran)")
    except PETSc.Error:
        # PETSc prints the message on stderr; the error class is what reaches Python
        check(True, f"{name}: refused with a PETSc error")


def zero_row(r):
    return lambda g, cols, vals: [0.0] * len(vals) if g == r else vals


def tiny_pivot(r, value):
    return lambda g, cols, vals: [value if c == g else 0.0 for c in cols] if g == r else vals


def convection(c):
    """a nonsymmetric 5-point operator: -1 - c left/below, -1 + c right/above"""
    return lambda g, cols, vals: [v if c_ == g else v + (c if c_ > g else -c)
                                  for c_, v in zip(cols, vals)]


def negative_diagonal(r):
    return lambda g, cols, vals: [-4.0 if c == g else v for c, v in zip(cols, vals)] if g == r \
        else vals


def main():
    plain = laplace()
    compare("default", plain, {})
    A = laplace(zero_row(150))
    compare("zero row, shift none", A, {}, expect_fail=True)
    compare("zero row, -pc_factor_shift_type nonzero", A, {"pc_factor_shift_type": "nonzero"})
    compare("zero row, nonzero, -pc_factor_shift_amount 1e-3", A,
            {"pc_factor_shift_type": "NONZERO", "pc_factor_shift_amount": "1e-3"})
    compare("zero row, positive_definite", A, {"pc_factor_shift_type": "positive_definite"})
    T = laplace(tiny_pivot(150, 1e-15))
    compare("pivot 1e-15 <= zeropivot (default 2.2e-14)", T, {}, expect_fail=True)
    compare("pivot 1e-15, -pc_factor_zeropivot 1e-16", T, {"pc_factor_zeropivot": "1e-16"})
    compare("pivot 1e-15, nonzero", T, {"pc_factor_shift_type": "nonzero"})
    # INBLOCKS: a pivot |u_ii| <= zeropivot gets shift_amount added, no retry
    compare("zero row, -pc_factor_shift_type inblocks", A, {"pc_factor_shift_type": "inblocks"})
    compare("zero row, inblocks, -pc_factor_shift_amount 1e-3", A,
            {"pc_factor_shift_type": "INBLOCKS", "pc_factor_shift_amount": "1e-3"})
    compare("pivot 1e-15, inblocks", T, {"pc_factor_shift_type": "inblocks"})
    compare("zero row, inblocks, amount 0.5, ILU(1)", laplace(zero_row(150)),
            {"pc_factor_levels": "1", "pc_factor_shift_type": "inblocks",
             "pc_factor_shift_amount": "0.5"})
    Nd = laplace(negative_diagonal(77))
    compare("negative pivot, positive_definite", Nd, {"pc_factor_shift_type": "positive_definite"})
    compare("negative pivot, shift none", Nd, {})
    # the shift changed the preconditioner there (the comparisons are not vacuous)
    pd = solve(Nd, "s_", {"pc_type": "ringrt", "pc_factor_shift_type": "positive_definite"})[1]
    none = solve(Nd, "s_", {"pc_type": "ringrt"})[1]
    check(np.linalg.norm(pd - none) > 1e-3 * np.linalg.norm(none),
          "positive_definite shifted the negative pivot's factors")
    # rcm is ringrt's RCM (PETSc's SPARSEPACK RCM starts elsewhere: another
    # permutation, another preconditioner; docs/ilu.md)
    rcm = solve(plain, "o_", {"pc_type": "ringrt", "pc_factor_mat_ordering_type": "rcm"})
    own = solve(plain, "o_", {"pc_type": "ringrt", "pc_ringrt_ordering": "rcm"})
    check(rcm[0] > 0 and np.array_equal(rcm[1], own[1])
          and not np.array_equal(rcm[1], solve(plain, "o_", {"pc_type": "ringrt"})[1]),
          "-pc_factor_mat_ordering_type rcm is -pc_ringrt_ordering rcm")
    compare("-pc_factor_mat_ordering_type natural", plain,
            {"pc_factor_mat_ordering_type": "natural"})
    compare("-pc_factor_levels 0", plain, {"pc_factor_levels": "0"})
    cd = laplace(convection(0.3))
    for k in (1, 2, 3):
        compare(f"convection, -pc_factor_levels {k}", cd, {"pc_factor_levels": str(k)})
    compare("convection, -pc_ringrt_levels 2", cd, {"pc_ringrt_levels": "2",
                                                    "pc_factor_levels": "2"})
    compare("convection, M^-T b (KSPSolveTranspose)", cd, {}, transpose=True)
    fwd, bwd = (solve(cd, "c_", {"pc_type": "ringrt"}, t)[1] for t in (False, True))
    check(np.linalg.norm(fwd - bwd) > 1e-3 * np.linalg.norm(fwd),
          "convection: M^-T b is not M^-1 b (the transpose comparison is not vacuous)")
    compare("convection, ILU(2), M^-T b", cd, {"pc_factor_levels": "2"}, transpose=True)
    compare("convection, zero row, nonzero shift, ILU(1)", laplace(zero_row(150)),
            {"pc_factor_levels": "1", "pc_factor_shift_type": "nonzero"})
    # the PCFactorSet... API (petsc4py's setFactorShift) reaches the ringrt PC
    ref, got = [], []
    for pc_type, out in (("ilu", ref), ("ringrt", got)):
        ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
        ksp.setOperators(A)
        ksp.setType("preonly")
        ksp.getPC().setType(pc_type)
        ksp.getPC().setFactorShift(PETSc.Mat.FactorShiftType.NONZERO, 1e-2)
        x, b = A.createVecs()
        b.set(1.0)
        ksp.solve(b, x)
        out += [ksp.getConvergedReason(), x.getArray().copy()]
        ksp.destroy()
    err = np.linalg.norm(got[1] - ref[1]) / np.linalg.norm(ref[1])
    check(ref[0] > 0 and got[0] > 0 and err < 1e-10,
          f"PCFactorSetShiftType/Amount through petsc4py: as PETSc's (rel. diff {err:.2e})")
    # every AIJ type this PETSc has reads the same rows; baij/sbaij convert
    base = solve(plain, "t_", {"pc_type": "ringrt"})[1]
    for kind in ("seqaijperm", "seqaijsell", "seqaijcrl", "seqaijmkl", "seqbaij", "seqsbaij"):
        try:
            M = laplace(kind=kind)
        except PETSc.Error:
            print(f"skip {kind}: not in this PETSc", flush=True)
            continue
        reason, z = solve(M, "t_", {"pc_type": "ringrt"})
        check(reason > 0 and np.array_equal(z, base), f"matrix type {M.getType()}: the same M^-1 b")
    refused("-pc_factor_fill 2", plain, {"pc_factor_fill": "2"}, "pc_factor_fill")
    refused("-pc_factor_mat_ordering_type nd", plain, {"pc_factor_mat_ordering_type": "nd"}, "nd")
    refused("-pc_ringrt_bogus 1", plain, {"pc_ringrt_bogus": "1"}, "pc_ringrt_bogus")
    refused("-pc_ringrt_boost 1e-3,x", plain, {"pc_ringrt_boost": "1e-3,x"}, "boost")
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

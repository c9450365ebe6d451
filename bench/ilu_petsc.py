#!/usr/bin/env python3
"""ringrt ILU(0) side by side with PETSc's sequential ILU(0) (petsc4py).

Run by bench/ilu-petsc.sh (which sets PETSC_DIR and uses the system python
that Debian's python3-petsc4py installs into). In one run:

  1. The same matrices in both: the stencil problems are built here with
     scipy and checked entry for entry against `ringrt ilu --matrix-out` on
     small grids of the same family (so the large ones are the same too).
  2. One rank: ILU(0) factorisation (first and repeated numeric factor) and
     one apply (L and U triangular solves), ringrt vs PETSc PCILU with
     levels 0 (--levels k: ILU(k) in both, ringrt ilu --levels k against
     -pc_factor_levels k) and natural ordering; medians of several runs,
     ratio printed.
  3. Two ranks: ringrt with natural and multicolour orderings (levels,
     factor, apply, speedup over one rank of the same ordering).
  4. GMRES(30)+ILU(0) on gk_isai_a.mtx in both, plus the size of the
     factors' entries, to say whether non-convergence is expected.

Every timing is a median over --runs separate measurements (PETSc and
ringrt's 1-rank runs alternate, so machine load hits both alike), each in
a fresh process (so both pay the first-touch page faults; PETSc's
symbolic time in a process that already ran one is kept as
symbolic_warm_s); nothing
here is estimated or extrapolated. Results go to a JSON file;
`ilu_petsc.py --render FILE` prints it as the tables of docs/results.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import petsc4py

petsc4py.init([])
from petsc4py import PETSc  # noqa: E402

PETSc.Log.begin()  # event times: PETSc's own split of PCSetUp
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def stencil(problem):
    """scipy CSR of laplace2d:N / laplace3d:N / convdiff2d:N,PE exactly as
    src/io/sparse_gen.c builds it."""
    kind, spec = problem.split(":")
    n, pe = (spec.split(",") + ["0"])[:2]
    n, pe = int(n), float(pe)
    one = sp.identity(n, format="csr")
    off = sp.diags([-1.0, -1.0], [-1, 1], shape=(n, n), format="csr")
    if kind == "convdiff2d":
        # convection moves c = Pe h / 2 (h = 1 / (N + 1)) from downwind to upwind
        c = pe / (2.0 * (n + 1))
        t = sp.diags([-1.0 - c, 4.0, -1.0 + c], [-1, 0, 1], shape=(n, n), format="csr")
        offc = sp.diags([-1.0 - c, -1.0 + c], [-1, 1], shape=(n, n), format="csr")
        a = sp.kron(one, t) + sp.kron(offc, one)
    elif kind == "laplace2d":
        t = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
        a = sp.kron(one, t) + sp.kron(off, one)
    elif kind == "laplace3d":
        t = sp.diags([-1.0, 6.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
        a = sp.kron(one, sp.kron(one, t)) + sp.kron(one, sp.kron(off, one)) + sp.kron(
            off, sp.kron(one, one))
    else:
        raise ValueError(problem)
    a = sp.csr_matrix(a)
    a.sort_indices()
    return a


def petsc_mat(a):
    m = PETSc.Mat().createAIJ(size=a.shape, csr=(a.indptr.astype(PETSc.IntType),
                                                 a.indices.astype(PETSc.IntType), a.data))
    m.assemble()
    return m


def ringrt_json(args, ringrt, np_=1, threads=1, timeout=600):
    """Run `ringrt ilu ... --json -` and return the JSON line."""
    # RINGRT_BIND=0: the thread count is OMP_NUM_THREADS (binding would give
    # each rank all the cores of its share); one thread per rank here
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), RINGRT_BIND="0", **MPI_ENV)
    cmd = [ringrt, "ilu", "--backend", "cpu", "--quiet", "--json", "-"] + args
    if np_ > 1:
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "core", "-np", str(np_)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("ringrt failed (%d): %s\n%s" % (out.returncode, " ".join(cmd),
                                                       out.stderr[-2000:]))


def check_same_matrix(ringrt, family, tmp):
    """The scipy generator against ringrt's own, entry for entry (small grid)."""
    problem = family + {"laplace2d": ":7", "laplace3d": ":5", "convdiff2d": ":6,40"}[family]
    path = os.path.join(tmp, "check.mtx")
    ringrt_json(["--generate", problem, "--solver", "none", "--repeat", "1", "--matrix-out",
                 path], ringrt)
    r = sp.csr_matrix(scipy.io.mmread(path))
    a = stencil(problem)
    same = r.shape == a.shape and (r != a).nnz == 0 and r.nnz == a.nnz
    if not same:
        raise RuntimeError("scipy %s differs from ringrt --matrix-out" % problem)
    return problem


def petsc_ilu(a, runs, reps, levels=0):
    """Symbolic and first numeric factorisation (PETSc's log events), median
    numeric refactorisation and median apply (wall clock)."""
    m = petsc_mat(a)
    pc = PETSc.PC().create(comm=PETSc.COMM_SELF)
    pc.setType("ilu")
    pc.setFactorLevels(levels)
    pc.setFactorOrdering("natural")
    pc.setOperators(m)
    ev_num, ev_sym = PETSc.Log.Event("MatLUFactorNum"), PETSc.Log.Event("MatILUFactorSym")
    num0, sym0 = ev_num.getPerfInfo()["time"], ev_sym.getPerfInfo()["time"]
    t = time.perf_counter()
    pc.setUp()
    setup = time.perf_counter() - t
    first = ev_num.getPerfInfo()["time"] - num0
    symbolic = ev_sym.getPerfInfo()["time"] - sym0
    # numeric-only refactorisations: scaling bumps the matrix state with the
    # same pattern, so PCSetUp redoes MatLUFactorNumeric only (x2 and x0.5
    # are exact, the values return to A)
    refac = []
    for k in range(runs * reps):
        m.scale(2.0 if k % 2 == 0 else 0.5)
        pc.setOperators(m)
        t = time.perf_counter()
        pc.setUp()
        refac.append(time.perf_counter() - t)
    if (runs * reps) % 2:
        m.scale(0.5)
        pc.setOperators(m)
        pc.setUp()
    b = m.createVecLeft()
    m.mult(_ones(m), b)
    z = b.duplicate()
    pc.apply(b, z)  # first touch outside the timing, as ringrt's repeat loop
    app = []
    for _ in range(runs * reps):
        t = time.perf_counter()
        pc.apply(b, z)
        app.append(time.perf_counter() - t)
    pc.destroy()
    m.destroy()
    return {"setup_s": setup, "symbolic_s": symbolic, "first_factor_s": first,
            "refactor_s": statistics.median(refac), "apply_s": statistics.median(app)}


def petsc_sample(problem, reps, levels=0):
    """One PETSc sample in a fresh process, as every ringrt sample is: the
    first PCSetUp of a process pays for first-touch page faults (about 21,000
    on laplace3d:100), a later one in the same process reuses freed memory
    and faults none (symbolic 10 ms instead of 50 ms there). The numbers
    compared are the fresh process's; the warm symbolic time is kept too."""
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--petsc-sample", problem,
                          str(reps), str(levels)],
                         env=env, capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError("PETSc sample failed: %s" % out.stderr[-2000:])
    return json.loads(out.stdout.splitlines()[-1])


def petsc_sample_main(problem, reps, levels):
    a = stencil(problem)
    cold = petsc_ilu(a, 1, reps, levels)
    cold["symbolic_warm_s"] = petsc_ilu(a, 1, 1, levels)["symbolic_s"]
    print(json.dumps(cold))


def _ones(m):
    v = m.createVecRight()
    v.set(1.0)
    return v


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def ringrt_runs(args, ringrt, runs, np_=1, threads=1, rs=None):
    rs = rs or [ringrt_json(args, ringrt, np_, threads) for _ in range(runs)]
    keys = ["analysis_s", "factor_s", "refactor_s", "trisolve_s", "spmv_s"]
    out = {k: median_of(rs, k) for k in keys}
    out.update(levels_l=rs[0]["levels_l"], levels_u=rs[0]["levels_u"], ranks=np_,
               ordering=rs[0]["ordering"], n=rs[0]["n"], nnz=rs[0]["nnz"],
               samples={k: [r[k] for r in rs] for k in keys})
    return out


def gmres_compare(ringrt, mtx, tmp):
    """GMRES(30)+ILU(0), natural order, rtol 1e-8, 1000 iterations, b = A ones."""
    a = sp.csr_matrix(scipy.io.mmread(mtx))
    a.sum_duplicates()
    a.sort_indices()
    m = petsc_mat(a)
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(m)
    ksp.setType("gmres")
    ksp.setGMRESRestart(30)
    ksp.setPCSide(PETSc.PC.Side.RIGHT)
    ksp.setTolerances(rtol=1e-8, atol=0.0, max_it=1000)
    ksp.getPC().setType("ilu")
    ksp.getPC().setFactorLevels(0)
    ksp.getPC().setFactorOrdering("natural")
    ones = _ones(m)
    b = m.createVecLeft()
    m.mult(ones, b)
    x = b.duplicate()
    x.set(0.0)
    ksp.solve(b, x)
    r = b.duplicate()
    m.mult(x, r)
    r.aypx(-1.0, b)
    petsc = {"iterations": ksp.getIterationNumber(), "reason": int(ksp.getConvergedReason()),
             "converged": ksp.getConvergedReason() > 0,
             "true_residual": r.norm() / b.norm()}
    # unpreconditioned GMRES for scale
    ksp.getPC().setType("none")
    x.set(0.0)
    ksp.solve(b, x)
    m.mult(x, r)
    r.aypx(-1.0, b)
    petsc_nopc = {"iterations": ksp.getIterationNumber(),
                  "converged": ksp.getConvergedReason() > 0,
                  "true_residual": r.norm() / b.norm()}
    fpath = os.path.join(tmp, "lu.mtx")
    # the app exits 1 when the solve does not converge: run it directly
    env = dict(os.environ, OMP_NUM_THREADS="1", RINGRT_BIND="0", **MPI_ENV)
    out = subprocess.run([ringrt, "ilu", "--backend", "cpu", "--quiet", "--json", "-", "--matrix",
                          mtx, "--solver", "gmres", "--maxit", "1000", "--restart", "30",
                          "--repeat", "1", "--factors-out", fpath], env=env,
                         capture_output=True, text=True, timeout=300)
    rr = next(json.loads(s) for s in out.stdout.splitlines() if s.startswith("{"))
    lu = sp.csr_matrix(scipy.io.mmread(fpath))
    low = sp.tril(lu, -1)
    up = sp.triu(lu)
    d = np.abs(lu.diagonal())
    # growth of the factors: how far (LU)^-1 is from a mild operator
    lu_dense = None
    cond = None
    if a.shape[0] <= 2000:
        lmat = (low + sp.identity(a.shape[0])).toarray()
        umat = up.toarray()
        lu_dense = lmat @ umat
        cond = {"cond_L": float(np.linalg.cond(lmat)), "cond_U": float(np.linalg.cond(umat)),
                "cond_A": float(np.linalg.cond(a.toarray())),
                "cond_A_Minv": float(np.linalg.cond(a.toarray() @ np.linalg.inv(lu_dense)))}
    return {"matrix": os.path.basename(mtx), "n": a.shape[0], "nnz": a.nnz,
            "petsc_gmres_ilu0": petsc, "petsc_gmres_nopc": petsc_nopc,
            "ringrt_gmres_ilu0": {k: rr.get(k) for k in ("iterations", "converged",
                                                         "true_residual")},
            "max_abs_L": float(abs(low).max()), "max_abs_U": float(abs(up).max()),
            "min_abs_pivot": float(d.min()), "max_abs_pivot": float(d.max()),
            "conditioning": cond}


def render(path):
    """A results file as the markdown tables of docs/results.md."""
    r = json.load(open(path))
    print("Run %s (commit %s), PETSc %s, %d cores; load before: `%s`; after: `%s`.\n" % (
        os.path.basename(path), r.get("commit", "?"), r["petsc_version"], r.get("nproc", 0),
        r.get("uptime_before", "?"), r.get("uptime_after", "?")))
    print("| problem | who | ranks | ordering | levels | analysis ms | factor1 ms | refactor ms "
          "| apply ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in r["problems"]:
        p = e["petsc"]
        warm = ("; %.1f warm" % (1e3 * p["symbolic_warm_s"])) if "symbolic_warm_s" in p else ""
        print(("| %s | PETSc PCILU(" + str(e.get("levels", 0)) + ") | 1 | natural | - | %.1f "
               "(symbolic%s) | %.1f | %.1f | %.2f |") % (
            e["problem"], 1e3 * p["symbolic_s"], warm, 1e3 * p["first_factor_s"],
            1e3 * p["refactor_s"], 1e3 * p["apply_s"]))
        for k in ("ringrt_np1", "ringrt_np1_multicolor", "ringrt_np2", "ringrt_np2_multicolor"):
            q = e[k]
            print("| %s | ringrt | %d | %s | %d | %.1f | %.1f | %.1f | %.2f |" % (
                e["problem"], q["ranks"], q["ordering"], q["levels_l"], 1e3 * q["analysis_s"],
                1e3 * q["factor_s"], 1e3 * q["refactor_s"], 1e3 * q["trisolve_s"]))
    print("\n| problem | ringrt/PETSc analysis (symbolic) | ringrt/PETSc analysis+factor1 | "
          "ringrt/PETSc refactor | ringrt/PETSc apply | np2 speedup natural "
          "(refactor, apply) | np2 speedup multicolour (refactor, apply) | np2 speedup of SpMV "
          "(control: no dependencies) |")
    print("|---|---|---|---|---|---|---|---|")
    for e in r["problems"]:
        p, q = e["petsc"], e["ringrt_np1"]
        setup = (q["analysis_s"] + q["factor_s"]) / (p["symbolic_s"] + p["first_factor_s"])
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f, %.2f | %.2f, %.2f | %.2f |" % (
            e["problem"], q["analysis_s"] / p["symbolic_s"], setup,
            e["ratio_refactor_ringrt_over_petsc"], e["ratio_apply_ringrt_over_petsc"],
            e["speedup_np2"]["refactor"], e["speedup_np2"]["apply"],
            e["speedup_np2_multicolor"]["refactor"], e["speedup_np2_multicolor"]["apply"],
            e["ringrt_np1"]["spmv_s"] / e["ringrt_np2"]["spmv_s"]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--render":
        return render(sys.argv[2])
    if len(sys.argv) == 5 and sys.argv[1] == "--petsc-sample":
        return petsc_sample_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ringrt", required=True, help="path of the ringrt executable")
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--reps", type=int, default=10, help="repetitions inside one run")
    ap.add_argument("--problems", default="laplace2d:1000,laplace3d:100")
    ap.add_argument("--isai", default="", help="gk_isai_a.mtx for the GMRES comparison")
    ap.add_argument("--out", required=True, help="JSON results file")
    ap.add_argument("--levels", type=int, default=0,
                    help="ILU(k) in both: -pc_factor_levels k and ringrt ilu --levels k")
    a = ap.parse_args()
    res = {"petsc_version": ".".join(map(str, PETSc.Sys.getVersion())), "runs": a.runs,
           "reps": a.reps, "levels": a.levels, "problems": []}
    with tempfile.TemporaryDirectory() as tmp:
        checked = [check_same_matrix(a.ringrt, f, tmp) for f in ("laplace2d", "laplace3d")]
        res["matrix_check"] = "scipy == ringrt --matrix-out on " + ", ".join(checked)
        for prob in a.problems.split(","):
            A = stencil(prob)
            entry = {"problem": prob, "n": A.shape[0], "nnz": A.nnz, "levels": a.levels}
            base = ["--generate", prob, "--solver", "none", "--repeat", str(a.reps),
                    "--levels", str(a.levels)]
            # PETSc and ringrt (1 rank, natural) alternate, run by run, so a
            # busy machine slows both alike; medians over the runs; each
            # sample of either in a fresh process (petsc_sample)
            ps, rs = [], []
            for _ in range(a.runs):
                ps.append(petsc_sample(prob, a.reps, a.levels))
                rs.append(ringrt_json(base, a.ringrt))
            del A
            entry["petsc"] = {k: statistics.median(p[k] for p in ps) for k in ps[0]}
            entry["petsc"]["samples"] = {k: [p[k] for p in ps] for k in ps[0]}
            entry["ringrt_np1"] = ringrt_runs(base, a.ringrt, a.runs, rs=rs)
            entry["ringrt_np1_multicolor"] = ringrt_runs(base + ["--reorder", "multicolor"],
                                                         a.ringrt, a.runs)
            entry["ringrt_np2"] = ringrt_runs(base, a.ringrt, a.runs, np_=2)
            entry["ringrt_np2_multicolor"] = ringrt_runs(base + ["--reorder", "multicolor"],
                                                         a.ringrt, a.runs, np_=2)
            p, r = entry["petsc"], entry["ringrt_np1"]
            entry["ratio_refactor_ringrt_over_petsc"] = r["refactor_s"] / p["refactor_s"]
            entry["ratio_apply_ringrt_over_petsc"] = r["trisolve_s"] / p["apply_s"]
            for o in ("", "_multicolor"):
                one, two = entry["ringrt_np1" + o], entry["ringrt_np2" + o]
                entry["speedup_np2" + o] = {"refactor": one["refactor_s"] / two["refactor_s"],
                                            "apply": one["trisolve_s"] / two["trisolve_s"]}
            res["problems"].append(entry)
            print_problem(entry)
        if a.isai:
            res["gmres_isai"] = gmres_compare(a.ringrt, a.isai, tmp)
            print(json.dumps(res["gmres_isai"], indent=1))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print("results:", a.out)


def print_problem(e):
    p = e["petsc"]
    print("%s  n %d  nnz %d" % (e["problem"], e["n"], e["nnz"]))
    print("  %-28s %10s %10s %10s %10s %8s" % ("", "analysis ms", "factor1 ms", "refac. ms",
                                                "apply ms", "levels"))
    print("  %-28s %10.2f %10.2f %10.2f %10.2f %8s" % (
        "PETSc 1 rank (PCILU(%d))" % e.get("levels", 0), 1e3 * p["symbolic_s"],
        1e3 * p["first_factor_s"],
        1e3 * p["refactor_s"], 1e3 * p["apply_s"], "-"))
    for k, name in (("ringrt_np1", "ringrt 1 rank natural"),
                    ("ringrt_np1_multicolor", "ringrt 1 rank multicolor"),
                    ("ringrt_np2", "ringrt 2 ranks natural"),
                    ("ringrt_np2_multicolor", "ringrt 2 ranks multicolor")):
        r = e[k]
        print("  %-28s %10.2f %10.2f %10.2f %10.2f %8d" % (
            name, 1e3 * r["analysis_s"], 1e3 * r["factor_s"], 1e3 * r["refactor_s"],
            1e3 * r["trisolve_s"], r["levels_l"]))
    print("  ringrt/PETSc (1 rank, natural): refactor %.2f  apply %.2f" % (
        e["ratio_refactor_ringrt_over_petsc"], e["ratio_apply_ringrt_over_petsc"]))
    print("  np2 speedup: natural refactor %.2f apply %.2f; multicolor refactor %.2f apply %.2f" % (
        e["speedup_np2"]["refactor"], e["speedup_np2"]["apply"],
        e["speedup_np2_multicolor"]["refactor"], e["speedup_np2_multicolor"]["apply"]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

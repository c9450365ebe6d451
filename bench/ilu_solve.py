#!/usr/bin/env python3
"""Time to solution, ringrt against PETSc: analysis + factor + GMRES(30) to 1e-8.

Run by bench/ilu-solve.sh. Both solve the same matrix (the stencils are built
here with scipy and checked entry for entry against `ringrt ilu --matrix-out`
on small grids of the same generators), b = A ones, x0 = 0, GMRES restart
30, right preconditioning, relative tolerance 1e-8 on ||b||, no absolute
tolerance. PETSc: petsc4py, MPIAIJ rows split as PETSc splits them, PC
bjacobi with ILU(0) blocks (natural ordering), which on one rank is plain
ILU(0); timed from KSPSetUp (symbolic and numeric factorisation) through
KSPSolve, the slowest rank's wall clock. ringrt: `ringrt ilu --generate`,
time = analysis_s + factor_s + solve_s of its JSON report. One rank per core
(mpirun --bind-to core), one thread per rank. Each configuration runs in its
own process RUNS times, PETSc and ringrt alternating so machine load hits
both alike; the tables give medians. `ilu_solve.py --render FILE` prints a
results file as the tables of docs/results.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# ilu_petsc initialises petsc4py
from ilu_petsc import PETSc, MPI_ENV, stencil, check_same_matrix  # noqa: E402

RTOL, RESTART, MAXIT = 1e-8, 30, 20000


def petsc_worker(problem):
    """One solve under mpirun: rank 0 prints a JSON line."""
    comm = PETSc.COMM_WORLD
    a = stencil(problem)
    n = a.shape[0]
    size, rank = comm.getSize(), comm.getRank()
    r0 = rank * (n // size) + min(rank, n % size)  # PETSc's default split
    r1 = r0 + n // size + (1 if rank < n % size else 0)
    loc = a[r0:r1]
    m = PETSc.Mat().createAIJ(size=((r1 - r0, n), (r1 - r0, n)), comm=comm,
                              csr=(loc.indptr.astype(PETSc.IntType),
                                   loc.indices.astype(PETSc.IntType), loc.data))
    m.assemble()
    ones = m.createVecRight()
    ones.set(1.0)
    b = m.createVecLeft()
    m.mult(ones, b)
    x = b.duplicate()
    x.set(0.0)
    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(m)
    ksp.setType("gmres")
    ksp.setGMRESRestart(RESTART)
    ksp.setPCSide(PETSc.PC.Side.RIGHT)
    ksp.setTolerances(rtol=RTOL, atol=0.0, max_it=MAXIT)
    pc = ksp.getPC()
    pc.setType("bjacobi")
    opts = PETSc.Options()
    opts["sub_pc_type"] = "ilu"
    opts["sub_pc_factor_levels"] = 0
    opts["sub_pc_factor_mat_ordering_type"] = "natural"
    ksp.setFromOptions()
    from mpi4py import MPI
    mc = comm.tompi4py()
    mc.Barrier()
    t = time.perf_counter()
    ksp.setUp()
    t_setup = time.perf_counter() - t
    ksp.solve(b, x)
    t_total = time.perf_counter() - t
    res = b.duplicate()
    m.mult(x, res)
    res.aypx(-1.0, b)
    t_total = mc.allreduce(t_total, op=MPI.MAX)
    t_setup = mc.allreduce(t_setup, op=MPI.MAX)
    out = {"n": n, "nnz": a.nnz, "ranks": size, "iterations": ksp.getIterationNumber(),
           "reason": int(ksp.getConvergedReason()), "setup_s": t_setup, "time_s": t_total,
           "true_residual": res.norm() / b.norm()}
    if rank == 0:
        print(json.dumps(out), flush=True)


def run_json(cmd, env, timeout=1800):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("failed (%d): %s\n%s" % (out.returncode, " ".join(cmd), out.stderr[-2000:]))


def mpirun(np_):
    return ["mpirun", "--oversubscribe", "--bind-to", "core", "-np", str(np_)]


def petsc_run(problem, np_):
    env = dict(os.environ, OMP_NUM_THREADS="1", **MPI_ENV)
    return run_json(mpirun(np_) + [sys.executable, os.path.abspath(__file__), "--petsc-worker",
                                   problem], env)


def ringrt_run(ringrt, problem, np_, ordering):
    """ordering: a --reorder value, "+f32" appended for f32 factors (not a
    PETSc setting: a ringrt option, reported on its own rows)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", RINGRT_BIND="0", **MPI_ENV)
    reorder, _, precision = ordering.partition("+")
    r = run_json(mpirun(np_) + [ringrt, "ilu", "--backend", "cpu", "--quiet", "--json", "-",
                                "--generate", problem, "--solver", "gmres", "--restart",
                                str(RESTART), "--tol", str(RTOL), "--maxit", str(MAXIT),
                                "--repeat", "1", "--reorder", reorder] +
                 (["--factor-precision", precision] if precision else []), env)
    r["time_s"] = r["analysis_s"] + r["factor_s"] + r["solve_s"]
    r["ordering"] = ordering
    return r


def summary(rs):
    keys = [k for k in ("time_s", "setup_s", "analysis_s", "factor_s", "solve_s") if k in rs[0]]
    out = {k: statistics.median(r[k] for r in rs) for k in keys}
    out["samples"] = [r["time_s"] for r in rs]
    for k in ("iterations", "n", "nnz", "ranks", "reason", "converged", "true_residual",
              "ordering", "levels_l"):
        if k in rs[0]:
            out[k] = rs[0][k]
    if len({r["iterations"] for r in rs}) != 1:
        raise RuntimeError("iteration counts differ between runs: %s" % rs)
    return out


def render(path):
    r = json.load(open(path))
    print("Run %s (commit %s), PETSc %s, %d cores; load before: `%s`; after: `%s`.\n" % (
        os.path.basename(path), r.get("commit", "?"), r["petsc_version"], r.get("nproc", 0),
        r.get("uptime_before", "?"), r.get("uptime_after", "?")))
    print("| problem | ranks | PETSc bjacobi+ILU(0): its, s | ringrt ordering | its | analysis s "
          "| factor s | solve s | time s | ringrt/PETSc time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for e in r["results"]:
        p = e["petsc"]
        for q in e["ringrt"]:
            print("| %s | %d | %d, %.3f | %s | %d | %.3f | %.3f | %.3f | %.3f | %.2f |" % (
                e["problem"], e["ranks"], p["iterations"], p["time_s"], q["ordering"],
                q["iterations"], q["analysis_s"], q["factor_s"], q["solve_s"], q["time_s"],
                q["time_s"] / p["time_s"]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--petsc-worker":
        return petsc_worker(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "--render":
        return render(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ringrt", required=True, help="path of the ringrt executable")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    ap.add_argument("--problems", nargs="+", default=["laplace3d:60", "laplace3d:80",
                                                      "laplace3d:100", "convdiff2d:500,50"])
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--orderings", default="natural", help="ringrt orderings, comma separated")
    ap.add_argument("--out", required=True, help="JSON results file")
    a = ap.parse_args()
    problems = a.problems
    res = {"petsc_version": ".".join(map(str, PETSc.Sys.getVersion())), "runs": a.runs,
           "rtol": RTOL, "restart": RESTART, "results": []}
    with tempfile.TemporaryDirectory() as tmp:
        res["checked"] = [check_same_matrix(a.ringrt, f, tmp)
                          for f in sorted({p.split(":")[0] for p in problems})]
    for problem in problems:
        for np_ in [int(k) for k in a.ranks.split(",")]:
            pr, rr = [], {o: [] for o in a.orderings.split(",")}
            for _ in range(a.runs):
                pr.append(petsc_run(problem, np_))
                for o in rr:
                    rr[o].append(ringrt_run(a.ringrt, problem, np_, o))
            e = {"problem": problem, "ranks": np_, "petsc": summary(pr),
                 "ringrt": [summary(v) for v in rr.values()]}
            for q in e["ringrt"]:
                print("%-18s np %d  PETSc %5d its %8.3f s   ringrt %-10s %5d its %8.3f s  "
                      "(%.2fx)" % (problem, np_, e["petsc"]["iterations"], e["petsc"]["time_s"],
                                   q["ordering"], q["iterations"], q["time_s"],
                                   q["time_s"] / e["petsc"]["time_s"]), flush=True)
            res["results"].append(e)
            json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()

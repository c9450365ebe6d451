#!/usr/bin/env python3
"""The PETSc plugin (-pc_type ringrt) against PETSc's own ILU(0), as a PETSc
user runs them: tests/ilu/petsc_ksp (a plain PETSc program) with -log_view.

    bench/ilu_petsc_plugin.py --build BUILD [--runs 5] [--np 1,2]
                              [--problems laplace3d:100,convdiff2d:1000] [--out FILE.json]

For each problem and rank count, --runs separate processes of each (ringrt
at np 1 and 2, PETSc's sequential ILU at np 1 only: its parallel ILU is
block Jacobi, another preconditioner), GMRES(30) to 1e-8, then a second
solve with 2 A (-resolve: the re-factor on the same pattern). From each
-log_view (max over ranks, seconds):
  first setup  ringrt: the first PCSetUp (PCSetUp time - RingrtFactor's
               second call, i.e. the PCSetUp total minus one re-factor);
               PETSc: MatILUFactorSym + one MatLUFactorNum
  re-factor    ringrt: RingrtFactor / 2 calls (each PCSetUp factors once);
               PETSc: MatLUFactorNum / 2
  apply        ringrt: RingrtApply / count; PETSc: MatSolve / count
  iterations   of the first solve
  ringrt's first setup split (-info :pc, rank 0): reading PETSc's rows,
               rrt_sparse_create (the distributed CSR), rrt_ilu0_create
Medians over the runs; ratios ringrt / PETSc against issue 36's targets
(first setup <= 1.5x, re-factor <= 0.5x, apply <= 0.8x, iterations equal).
Timings mean little on a busy machine: run it on a quiet one.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def problem_args(spec):
    kind, rest = spec.split(":")
    grid = rest.split(",")[0]
    args = ["-problem", kind, "-grid", grid]
    if kind == "convdiff2d":
        args += ["-pe", rest.split(",")[1] if "," in rest else "100"]
    return args


def events(out):
    """-log_view rows: name -> (count, max time)."""
    rows = {}
    for m in re.finditer(r"^(\w+)\s+(\d+) \S+ (\S+) ", out, re.M):
        rows[m[1]] = (int(m[2]), float(m[3]))
    return rows


def run_once(build, np, prob, pc):
    cmd = ["mpiexec", "-n", str(np), "--oversubscribe", "--bind-to", "core",
           f"{build}/tests/ilu/petsc_ksp"] + prob + \
        ["-ksp_type", "gmres", "-ksp_gmres_restart", "30", "-ksp_rtol", "1e-8", "-resolve",
         "-log_view", "-info", ":pc"] + pc
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=True).stdout
    its = [int(x) for x in re.findall(r"^result: np=\d+ iterations=(\d+)", out, re.M)]
    ev = events(out)
    split = re.search(r"ringrt setup on rank 0: read the rows (\S+) s, distributed CSR "
                      r"\(rrt_sparse_create\) (\S+) s, ILU analysis \(rrt_ilu0_create\) (\S+) s",
                      out)
    extra = {"read_rows_s": float(split[1]), "sparse_create_s": float(split[2]),
             "ilu0_create_s": float(split[3])} if split else {}
    if "RingrtFactor" in ev:
        refactor = ev["RingrtFactor"][1] / ev["RingrtFactor"][0]
        first = ev["PCSetUp"][1] - ev["RingrtFactor"][1] / ev["RingrtFactor"][0]
        apply_ = ev["RingrtApply"][1] / ev["RingrtApply"][0]
    else:
        refactor = ev["MatLUFactorNum"][1] / ev["MatLUFactorNum"][0]
        first = ev["MatILUFactorSym"][1] + refactor
        apply_ = ev["MatSolve"][1] / ev["MatSolve"][0]
    return dict({"first_setup_s": first, "refactor_s": refactor, "apply_s": apply_,
                 "iterations": its[0]}, **extra)


def median_of(runs):
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--np", default="1,2")
    ap.add_argument("--problems", default="laplace3d:100,convdiff2d:1000,100")
    ap.add_argument("--out")
    a = ap.parse_args()
    plugin = f"{a.build}/plugins/petsc/libringrt_petsc.so"
    problems = re.findall(r"[a-z0-9]+:[0-9]+(?:,[0-9.]+)?", a.problems)
    results = []
    for spec in problems:
        prob = problem_args(spec)
        petsc = median_of([run_once(a.build, 1, prob, ["-pc_type", "ilu"])
                           for _ in range(a.runs)])
        for np in (int(x) for x in a.np.split(",")):
            ours = median_of([run_once(a.build, np, prob,
                                       ["-dll_append", plugin, "-pc_type", "ringrt"])
                              for _ in range(a.runs)])
            row = {"problem": spec, "np": np, "ringrt": ours, "petsc_np1": petsc,
                   "ratio": {k: ours[k] / petsc[k] for k in petsc if petsc[k]}}
            results.append(row)
            r = row["ratio"]
            print(f"{spec:22s} np {np}: first setup {ours['first_setup_s']:.3f} s "
                  f"({r['first_setup_s']:.2f}x PETSc {petsc['first_setup_s']:.3f}; target 1.5), "
                  f"re-factor {ours['refactor_s']:.4f} s ({r['refactor_s']:.2f}x; 0.5), "
                  f"apply {ours['apply_s'] * 1e3:.2f} ms ({r['apply_s']:.2f}x; 0.8), "
                  f"iterations {ours['iterations']:.0f} vs {petsc['iterations']:.0f}", flush=True)
            if "read_rows_s" in ours:
                print(f"{'':22s}       first setup split: read rows {ours['read_rows_s']:.3f} s, "
                      f"rrt_sparse_create {ours['sparse_create_s']:.3f} s, rrt_ilu0_create "
                      f"{ours['ilu0_create_s']:.3f} s, factor {ours['refactor_s']:.3f} s",
                      flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"runs": a.runs, "results": results,
                       "uptime": os.getloadavg()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

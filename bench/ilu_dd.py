#!/usr/bin/env python3
"""The domain-decomposition orderings (dd, dd-color) against natural order,
multicolour and PETSc's block Jacobi (docs/ilu.md, "Domain-decomposition
ordering"). In one run:

  1. Iterations: GMRES(30) to rtol 1e-8, b = A ones, x0 = 0, right
     preconditioned, for ringrt natural, multicolour, dd with 1..4
     subdomains (--dd-blocks k, one rank: the preconditioner does not depend
     on the rank count, the factors are the same bits), dd-color with 2..4,
     and PETSc's block Jacobi + ILU(0) with 1..4 blocks (one process,
     -pc_bjacobi_blocks k: PETSc's own equal-row split), on the generated
     PDE problems and the matrices of ../shared/data/matrices where ILU(0)
     is a sensible preconditioner. A check row runs dd at np = k (one
     subdomain per rank) to show the same iterations.
  2. Parallel time: `ringrt ilu --solver none --repeat 10` at np 1 and 2
     (one thread per rank), natural / dd / dd-color (2 subdomains at both
     rank counts) / multicolour: refactorisation and apply medians, levels.

Usage: ilu_dd.py BUILD_DIR [--out FILE] [--quick] [--only iterations|timings]
                 [--problems P...];  ilu_dd.py --render FILE...  (several runs' tables merged).
The machine's load (uptime) is recorded before and after: on a shared
machine the times are not a scaling measurement, the iterations are exact.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

import scipy.io
import scipy.sparse as sp

import petsc4py

petsc4py.init([])
from petsc4py import PETSc  # noqa: E402

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
DATA = os.path.join(os.environ.get("RINGRT_SHARED_DATA", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")), "matrices")
GENERATED = ["laplace2d:300", "laplace3d:60", "laplace3d:80", "laplace3d:100",
             "convdiff2d:300,100", "convdiff2d:300,1000"]
# Where ILU(0)+GMRES(30) converges in natural order (the others: 1138_bus and
# 494_bus reach the 1000-iteration cap in natural order, can24 and m0505
# have a zero pivot, mahindas a missing diagonal, isai_a a numerically
# singular ILU(0): see docs/ilu.md)
MATRICES = ["gk_ani1.mtx", "gk_ani1_nonsymm.mtx", "gk_nos6.mtx", "gk_trefethen20b.mtx",
            "ss_cage5.mtx", "ss_LFAT5.mtx"]
TIMED = ["laplace2d:1000", "laplace3d:60", "laplace3d:100", "convdiff2d:1000,100"]
TIMED_ORDERS = ["natural", "dd", "dd-color", "multicolor"]


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def ringrt_json(ringrt, args, np_=1, timeout=1800):
    """`ringrt ilu ... --json -` (cpu, one thread per rank) -> its JSON."""
    env = dict(os.environ, OMP_NUM_THREADS="1", RINGRT_BIND="0", **MPI_ENV)
    cmd = [ringrt, "ilu", "--backend", "cpu", "--quiet", "--json", "-"] + args
    if np_ > 1:
        bind = "core" if np_ <= (os.cpu_count() or 1) else "none"
        cmd = ["mpirun", "--oversubscribe", "--bind-to", bind, "-np", str(np_)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("ringrt failed (%d): %s\n%s" % (out.returncode, " ".join(cmd),
                                                       out.stderr[-2000:]))


def stencil(problem):
    """scipy CSR of a generated problem exactly as src/io/sparse_gen.c builds it."""
    kind, rest = problem.split(":")
    parts = rest.split(",")
    n = int(parts[0])
    one = sp.identity(n, format="csr")
    if kind == "laplace3d":
        t = sp.diags([-1.0, 6.0, -1.0], [-1, 0, 1], shape=(n, n))
        off = sp.diags([-1.0, -1.0], [-1, 1], shape=(n, n))
        a = sp.kron(one, sp.kron(one, t)) + sp.kron(one, sp.kron(off, one)) + sp.kron(
            off, sp.kron(one, one))
    else:
        c = float(parts[1]) / (2.0 * (n + 1)) if kind == "convdiff2d" else 0.0
        t = sp.diags([-1.0 - c, 4.0, -1.0 + c], [-1, 0, 1], shape=(n, n))
        off = sp.diags([-1.0 - c, -1.0 + c], [-1, 1], shape=(n, n))
        a = sp.kron(one, t) + sp.kron(off, one)
    a = sp.csr_matrix(a)
    a.sort_indices()
    return a


def check_same_matrix(ringrt, problem, tmp):
    """The scipy generator against `ringrt ilu --matrix-out` on a small grid."""
    kind, rest = problem.split(":")
    small = kind + ":6" + ("," + rest.split(",")[1] if "," in rest else "")
    path = os.path.join(tmp, "check.mtx")
    ringrt_json(ringrt, ["--generate", small, "--solver", "none", "--repeat", "1",
                         "--matrix-out", path])
    r, a = sp.csr_matrix(scipy.io.mmread(path)), stencil(small)
    if r.shape != a.shape or abs(r - a).max() > 1e-15 * abs(a).max():
        raise RuntimeError("scipy %s differs from ringrt --matrix-out" % small)


def petsc_bjacobi(a, blocks):
    """PETSc GMRES(30) + block Jacobi (blocks ILU(0) blocks) iterations, one process."""
    m = PETSc.Mat().createAIJ(size=a.shape, csr=(a.indptr.astype(PETSc.IntType),
                                                 a.indices.astype(PETSc.IntType), a.data),
                              comm=PETSc.COMM_SELF)
    m.assemble()
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    prefix = "dd%d_" % blocks
    ksp.setOptionsPrefix(prefix)
    opts = PETSc.Options()
    opts[prefix + "pc_bjacobi_blocks"] = blocks
    opts[prefix + "sub_ksp_type"] = "preonly"
    opts[prefix + "sub_pc_type"] = "ilu"
    ksp.setOperators(m)
    ksp.setType("gmres")
    ksp.setGMRESRestart(30)
    ksp.setPCSide(PETSc.PC.Side.RIGHT)
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
    ksp.setTolerances(rtol=1e-8, atol=0.0, max_it=1000)
    ksp.getPC().setType("bjacobi")
    ksp.setFromOptions()
    x, b = m.createVecs()
    x.set(1.0)
    m.mult(x, b)
    x.set(0.0)
    try:
        ksp.solve(b, x)
        its, reason = ksp.getIterationNumber(), int(ksp.getConvergedReason())
    except PETSc.Error:
        its, reason = None, "error"
    ksp.destroy(), m.destroy()
    return {"iterations": its, "converged": isinstance(reason, int) and reason > 0,
            "reason": reason}


def iterations(ringrt, name, source, a):
    """Every variant of one problem: {label: {iterations, converged, levels}}."""
    row = {}

    def run(label, args, np_=1):
        j = ringrt_json(ringrt, source + ["--repeat", "1", "--solver", "gmres"] + args, np_)
        row[label] = {"iterations": j["iterations"], "converged": j["converged"],
                      "levels": j["levels_l"]}
        print(name, label, row[label], flush=True)

    run("natural", [])
    run("multicolor", ["--reorder", "multicolor"])
    for k in (2, 3, 4):
        run("dd%d" % k, ["--reorder", "dd", "--dd-blocks", str(k)])
        run("dd-color%d" % k, ["--reorder", "dd-color", "--dd-blocks", str(k)])
    for k in (1, 2, 3, 4):
        row["bjacobi%d" % k] = petsc_bjacobi(a, k)
        print(name, "bjacobi%d" % k, row["bjacobi%d" % k], flush=True)
    return row


def timings(ringrt, problem, np_):
    """Factor / apply medians of --repeat 10 for each timed ordering. dd runs
    with --dd-blocks 2 at np 1 and 2: the same preconditioner (at np 2 the
    subdomains are the ranks' row blocks), so the speedup compares like
    with like."""
    out = {}
    for order in TIMED_ORDERS:
        dd = ["--dd-blocks", "2"] if order.startswith("dd") else []
        j = ringrt_json(ringrt, ["--generate", problem, "--solver", "none", "--repeat", "10",
                                 "--reorder", order] + dd, np_)
        out[order] = {k: j[k] for k in ("levels_l", "analysis_s", "refactor_s", "trisolve_s",
                                        "spmv_s")}
        print(problem, "np", np_, order, out[order], flush=True)
    return out


def measure(build, out_path, quick, only, problems):
    ringrt = os.path.join(build, "apps", "ringrt")
    res = {"command": " ".join(sys.argv), "uptime_before": uptime(),
           "date": datetime.datetime.utcnow().isoformat() + "Z", "iterations": {},
           "check_np": {}, "timings": {}}
    tmp = os.path.join(build, "ilu_dd_tmp")
    os.makedirs(tmp, exist_ok=True)
    for fam in ("laplace2d:6", "laplace3d:6", "convdiff2d:6,100"):
        check_same_matrix(ringrt, fam, tmp)
    gen = problems or (GENERATED[:2] if quick else GENERATED)
    for p in gen if only != "timings" else []:
        res["iterations"][p] = iterations(ringrt, p, ["--generate", p], stencil(p))
    for f in MATRICES if only != "timings" and not problems else []:
        path = os.path.join(DATA, f)
        a = sp.csr_matrix(scipy.io.mmread(path))
        a.sort_indices()
        res["iterations"][f] = iterations(ringrt, f, ["--matrix", path], a)
    # one subdomain per rank at np = k: the same preconditioner as --dd-blocks k
    for k in (2, 4) if only != "timings" and not problems else []:
        j = ringrt_json(ringrt, ["--generate", "laplace3d:60", "--repeat", "1", "--reorder", "dd"],
                        k)
        res["check_np"]["laplace3d:60 dd np%d" % k] = j["iterations"]
    for p in [] if only == "iterations" else problems or (TIMED[:1] if quick else TIMED):
        res["timings"][p] = {str(n): timings(ringrt, p, n) for n in (1, 2)}
    res["uptime_after"] = uptime()
    with open(out_path, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", out_path)


def cell(v):
    if v.get("iterations") is None:
        return "error"
    return "%d%s" % (v["iterations"], "" if v["converged"] else " (no)")


def render(paths):
    r = {"iterations": {}, "check_np": {}, "timings": {}}
    for path in paths:
        one = json.load(open(path))
        print("Run %s: `%s`; load before: `%s`; after: `%s`.\n" % (
            os.path.basename(path), one["command"], one["uptime_before"], one["uptime_after"]))
        for key in r:
            r[key].update(one[key])
    print("| problem | natural | dd 2 / 3 / 4 | dd / natural (worst) | dd-color 2 / 3 / 4 | "
          "multicolour | PETSc bjacobi 1 / 2 / 3 / 4 |")
    print("|---|---|---|---|---|---|---|")
    for name, row in r["iterations"].items() if r["iterations"] else []:
        nat = row["natural"]["iterations"]
        dd = [row["dd%d" % k]["iterations"] for k in (2, 3, 4)]
        print("| %s | %s | %s | %.2f | %s | %s | %s |" % (
            name, cell(row["natural"]), " / ".join(cell(row["dd%d" % k]) for k in (2, 3, 4)),
            max(dd) / nat if nat else float("nan"),
            " / ".join(cell(row["dd-color%d" % k]) for k in (2, 3, 4)),
            cell(row["multicolor"]),
            " / ".join(cell(row["bjacobi%d" % k]) for k in (1, 2, 3, 4))))
    if r["check_np"]:
        print("\nnp check:", r["check_np"], "\n")
    print("| problem | ordering | levels | np1 refactor / apply ms | np2 refactor / apply ms | "
          "np2 speedup (refactor, apply) |")
    print("|---|---|---|---|---|---|")
    for p, t in r["timings"].items() if r["timings"] else []:
        for o in TIMED_ORDERS:
            a, b = t["1"][o], t["2"][o]
            print("| %s | %s | %d | %.1f / %.1f | %.1f / %.1f | %.2f, %.2f |" % (
                p, o, a["levels_l"], 1e3 * a["refactor_s"], 1e3 * a["trisolve_s"],
                1e3 * b["refactor_s"], 1e3 * b["trisolve_s"], a["refactor_s"] / b["refactor_s"],
                a["trisolve_s"] / b["trisolve_s"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="two problems, one timed")
    ap.add_argument("--only", choices=["iterations", "timings"])
    ap.add_argument("--problems", nargs="+", help="these generated problems only")
    ap.add_argument("--render", nargs="+")
    a = ap.parse_args()
    if a.render:
        return render(a.render)
    stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                "ilu-dd-%s.json" % stamp)
    measure(a.build, out, a.quick, a.only, a.problems)


if __name__ == "__main__":
    main()

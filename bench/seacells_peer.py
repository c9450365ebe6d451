#!/usr/bin/env python3
"""ringrt seacells side by side with the reference SEACells (dpeerlab), both of
its CPU paths.

Modes:
  prep COUNTS OUT.h5ad         preprocess a cells x genes count matrix (.csv, .csv.gz with
                               genes as columns, or .h5ad) as the SEACells tutorial does:
                               normalise per cell, log1p, 1500 highly variable genes, PCA
                               with 50 components; writes obs names and obsm/X_pca
  ref PATH INPUT ARCH M OUT.json [--neighbors K] [--max-iter N] [--min-iter N]
                               run the reference's PATH (sparse: use_sparse=True, dense: its
                               dense CPU path) on INPUT (.h5ad with obsm/X_pca, or a CSV of
                               coordinates) from the archetypes in ARCH (one cell index per
                               line), M metacells; prints one JSON line per phase and per
                               iteration as it goes (a run that is cut off still says how far
                               it got) and writes the whole record to OUT.json
  compare ASSIGN_A ASSIGN_B    adjusted Rand index of two hard assignments (ringrt's --out
                               CSV or a ref OUT.json, either side)
  summary WORK CASE PATH..     one JSON line for a case that bench/seacells-peer.sh ran in
                               WORK: ringrt's phases (its --json) and peak memory, each
                               reference path's timings, memory, RSS, ARI against ringrt
                               (or how far it got), and the ratios

The reference is imported from SEACELLS_SRC when set (a checkout of the
GitHub source, whose `SEACells.core.SEACells(..., use_sparse=)` has both
paths; pip `seacells` 0.3.3 has only the dense one, as a class), else from
the interpreter's site-packages. Timed separately: the imports, the kernel
construction (kNN, bandwidths, M, K = M M^T) and the fit (initialisation
from the given archetypes, the random initial A, the iterations). The fit's
peak memory is the largest resident set sampled every 20 ms during the
fit (the process's own peak, kernel included, is /usr/bin/time's, taken by
bench/seacells-peer.sh).
"""
import argparse
import json
import os
import sys
import threading
import time

T_START = time.time()
import numpy as np  # noqa: E402


def log(**fields):
    print(json.dumps(fields), flush=True)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakSampler:
    """The largest resident set seen while the `with` block runs."""

    def __enter__(self):
        self.peak, self._stop = rss_mb(), threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


def load(path):
    import anndata

    if path.endswith(".h5ad"):
        ad = anndata.read_h5ad(path)
        return anndata.AnnData(obs=ad.obs[[]].copy(),
                               obsm={"X_pca": np.asarray(ad.obsm["X_pca"], dtype=np.float64)})
    x = np.loadtxt(path, delimiter=",", dtype=np.float64)
    ad = anndata.AnnData(obsm={"X_pca": x})
    ad.obs_names = [str(i) for i in range(x.shape[0])]
    return ad


def prep(counts, out):
    import anndata
    import pandas as pd
    import scanpy as sc

    if counts.endswith(".h5ad"):
        ad = anndata.read_h5ad(counts)
    else:
        df = pd.read_csv(counts, index_col=0)
        ad = anndata.AnnData(X=df.to_numpy(dtype=np.float32), obs=pd.DataFrame(index=df.index),
                             var=pd.DataFrame(index=df.columns))
    sc.pp.filter_genes(ad, min_cells=1)
    sc.pp.normalize_total(ad)
    sc.pp.log1p(ad)
    sc.pp.highly_variable_genes(ad, n_top_genes=1500)
    sc.tl.pca(ad, n_comps=50, mask_var="highly_variable")
    small = anndata.AnnData(obs=pd.DataFrame(index=ad.obs_names.astype(str)),
                            obsm={"X_pca": np.asarray(ad.obsm["X_pca"], dtype=np.float32)})
    tmp = out + ".tmp.h5ad"
    small.write_h5ad(tmp)
    os.replace(tmp, out)
    log(cells=int(small.n_obs), genes=int(ad.n_vars), out=out)


def reference_model(path, ad, m, neighbors):
    """The reference model of the given path."""
    import SEACells

    kw = dict(build_kernel_on="X_pca", n_SEACells=m, n_waypoint_eigs=10, n_neighbors=neighbors,
              convergence_epsilon=1e-3, verbose=False)
    if callable(getattr(SEACells.core, "SEACells", None)) and \
            not isinstance(SEACells.core.SEACells, type):
        return SEACells.core.SEACells(ad, use_sparse=(path == "sparse"), **kw)
    if path == "sparse":
        sys.exit(f"{SEACells.__file__}: this SEACells has no use_sparse (pip seacells 0.3.3); "
                 "set SEACELLS_SRC to a checkout of the GitHub source")
    return SEACells.core.SEACells(ad, **kw)


def ref(args):
    if os.environ.get("SEACELLS_SRC"):
        sys.path.insert(0, os.environ["SEACELLS_SRC"])
    import tqdm
    import tqdm.notebook

    tqdm.notebook.tqdm = tqdm.tqdm  # the reference's progress bars need Jupyter widgets otherwise
    import scipy.sparse as sp

    for cls in (sp.csr_array, sp.csc_array):  # scanpy calls getnnz, gone from scipy >= 1.14 arrays
        if not hasattr(cls, "getnnz"):
            cls.getnnz = lambda self, axis=None: self._getnnz(axis=axis)
    import SEACells

    ad = load(args.input)
    arch = np.loadtxt(args.arch, dtype=np.int64).reshape(-1)
    assert len(arch) == args.m, f"{len(arch)} archetypes for {args.m} metacells"
    t0, c0 = time.time(), time.process_time()
    log(import_s=round(t0 - T_START, 2), seacells=SEACells.__file__, path=args.path)
    model = reference_model(args.path, ad, args.m, args.neighbors)
    model.construct_kernel_matrix()
    t1, c1 = time.time(), time.process_time()
    nnz = np.diff(model.kernel_matrix.tocsr().indptr)
    dist = ad.obsp["distances"].tocsr()  # scanpy's kNN: the neighbours other than the cell
    knn = np.add.reduceat((dist.data > 0).astype(np.int64), dist.indptr[:-1]) if dist.nnz else [0]
    log(kernel_s=round(t1 - t0, 2), rss_mb=round(rss_mb()), knn_per_cell=float(np.mean(knn)),
        m_nnz_per_cell=float(nnz.mean()))
    step, last = model.step, [t1]

    def logged_step():  # progress on stdout: how far a run that is cut off got
        step()
        now = time.time()
        log(iteration=len(model.RSS_iters) - 1, fit_s=round(now - t1, 2),
            iteration_s=round(now - last[0], 2), rss=float(model.RSS_iters[-1]))
        last[0] = now

    model.step = logged_step
    converged = True
    np.random.seed(0)  # the reference draws its initial A at random
    before = rss_mb()
    with PeakSampler() as peak:
        try:
            model.fit(min_iter=args.min_iter, max_iter=args.max_iter, initial_archetypes=arch)
        except RuntimeWarning:  # the reference raises when it does not converge
            converged = False
    t2, c2 = time.time(), time.process_time()
    a = model.A_
    assign = np.asarray(a.argmax(0)).reshape(-1).tolist()
    record = {"path": args.path, "import_s": t0 - T_START, "kernel_s": t1 - t0, "fit_s": t2 - t1,
              "kernel_cpu_s": c1 - c0, "fit_cpu_s": c2 - c1,
              "fit_peak_mb": peak.peak, "rss_before_fit_mb": before,
              "iterations": len(model.RSS_iters) - 1,
              "converged": converged, "rss": [float(r) for r in model.RSS_iters],
              "assign": assign}
    with open(args.out + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(args.out + ".tmp", args.out)
    log(done=True, fit_s=round(t2 - t1, 2), fit_cpu_s=round(c2 - c1, 2),
        fit_peak_mb=round(peak.peak))


def ari(a, b):
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    c = np.zeros((a.max() + 1, b.max() + 1), dtype=np.int64)
    np.add.at(c, (a, b), 1)

    def comb(v):
        return (v * (v - 1) / 2.0).sum()
    s, sa, sb, n = comb(c), comb(c.sum(1)), comb(c.sum(0)), comb(np.array([len(a)]))
    exp = sa * sb / n
    return float((s - exp) / (0.5 * (sa + sb) - exp))


def assignments(path):
    if path.endswith(".json"):
        return json.load(open(path))["assign"]
    with open(path) as f:
        next(f)
        return [int(line.rsplit(",", 11)[1]) for line in f]  # the cell name may hold commas


def compare(a, b):
    x, y = assignments(a), assignments(b)
    assert len(x) == len(y), f"{a}: {len(x)} cells, {b}: {len(y)}"
    log(ari=ari(x, y))


def time_v(path):
    """Wall seconds, peak resident MB and CPU seconds (user + system, all
    threads) of a /usr/bin/time -v record (None if absent)."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None, None, None
    wall = peak = cpu = None
    for line in lines:
        if "Elapsed (wall clock)" in line:
            wall = 0.0
            for part in line.rsplit(": ", 1)[1].split(":"):
                wall = wall * 60 + float(part)
        elif "Maximum resident set size" in line:
            peak = int(line.rsplit(": ", 1)[1]) / 1024
        elif "User time" in line or "System time" in line:
            cpu = (cpu or 0.0) + float(line.rsplit(": ", 1)[1])
    return wall, peak, cpu


def progress(path):
    """The JSON lines a ref run printed."""
    out = []
    try:
        for line in open(path, errors="replace"):
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def ringrt_side(work, case):
    rep = json.load(open(f"{work}/{case}.json"))
    sec = rep["seconds"]
    wall, peak, cpu = time_v(f"{work}/{case}.time")
    fit = sum(sec[k] for k in ("init", "update_a", "update_b", "rss"))
    per_iteration = (sec["update_a"] + sec["update_b"] + sec["rss"]) / max(rep["iterations"], 1)
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "graph_s": sec["knn"] + sec["kernel"],
            "fit_s": fit, "iteration_s": per_iteration,
            "seconds": sec, "metacells": rep["metacells"], "iterations": rep["iterations"],
            "converged": rep["converged"], "rss_final": rep["rss"][-1]}


def reference_side(work, case, path, mine):
    base = f"{work}/{case}.{path}"
    wall, peak, cpu = time_v(base + ".time")
    rc = open(base + ".rc").read().strip() if os.path.exists(base + ".rc") else None
    lines = progress(base + ".log")
    its = [x for x in lines if "iteration" in x]
    kernel = next((x for x in lines if "kernel_s" in x), {})
    out = {"rc": rc, "wall_s": wall, "cpu_s": cpu, "peak_mb": peak,
           "import_s": next((x["import_s"] for x in lines if "import_s" in x), None),
           "kernel_s": kernel.get("kernel_s"), "knn_per_cell": kernel.get("knn_per_cell"),
           "iterations_done": len(its),
           "iteration_s_median": float(np.median([x["iteration_s"] for x in its])) if its else None,
           "rss_after_iterations": [x["rss"] for x in its]}
    if os.path.exists(base + ".out.json"):
        rec = json.load(open(base + ".out.json"))
        out.update(finished=True, fit_s=rec["fit_s"], fit_peak_mb=rec["fit_peak_mb"],
                   rss_before_fit_mb=rec["rss_before_fit_mb"],
                   iterations=rec["iterations"], converged=rec["converged"],
                   rss_final=rec["rss"][-1],
                   ari_vs_ringrt=ari(rec["assign"], assignments(f"{work}/{case}.assign.csv")))
        out["fit_speedup_of_ringrt"] = rec["fit_s"] / mine["fit_s"]
        if "fit_cpu_s" in rec:  # the reference's fit against ringrt's whole process, graph included
            out["fit_cpu_s"] = rec["fit_cpu_s"]
            out["fit_cpu_ratio_to_ringrt_process"] = rec["fit_cpu_s"] / mine["cpu_s"]
    else:
        out.update(finished=False, fit_s_so_far=its[-1]["fit_s"] if its else None)
    if out["iteration_s_median"]:
        out["iteration_speedup_of_ringrt"] = out["iteration_s_median"] / mine["iteration_s"]
    if peak:
        out["memory_ratio_to_ringrt"] = peak / mine["peak_mb"]
    return out


def summary(work, case, paths):
    mine = ringrt_side(work, case)
    rec = {"case": case, "ringrt": mine}
    for p in paths:
        rec[p] = reference_side(work, case, p, mine)
    done = [p for p in paths if rec[p].get("finished")]
    if len(done) == 2:
        a, b = (json.load(open(f"{work}/{case}.{p}.out.json"))["assign"] for p in done)
        rec["ari_sparse_vs_dense"] = ari(a, b)
    log(**rec)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    q = sub.add_parser("prep")
    q.add_argument("counts")
    q.add_argument("out")
    r = sub.add_parser("ref")
    r.add_argument("path", choices=("sparse", "dense"))
    r.add_argument("input")
    r.add_argument("arch")
    r.add_argument("m", type=int)
    r.add_argument("out")
    r.add_argument("--neighbors", type=int, default=15)
    r.add_argument("--max-iter", type=int, default=100)
    r.add_argument("--min-iter", type=int, default=10)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    m = sub.add_parser("summary")
    m.add_argument("work")
    m.add_argument("case")
    m.add_argument("paths", nargs="+")
    args = p.parse_args()
    if args.mode == "prep":
        prep(args.counts, args.out)
    elif args.mode == "ref":
        ref(args)
    elif args.mode == "compare":
        compare(args.a, args.b)
    else:
        summary(args.work, args.case, args.paths)


if __name__ == "__main__":
    main()

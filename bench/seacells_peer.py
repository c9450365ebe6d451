#!/usr/bin/env python3
"""ringrt seacells side by side with the reference Python SEACells (pip `seacells`).

Modes:
  ref INPUT ARCH M OUT.json    run the reference on INPUT (.h5ad with obsm/X_pca, or a CSV)
                               from the archetypes in ARCH (one cell index per line), M metacells;
                               writes its assignments, RSS trace and timings; prints its
                               progress (one JSON line per iteration) on stdout
  compare RINGRT_CSV REF_JSON  adjusted Rand index of the two hard assignments

The driver script bench/seacells-peer.sh runs each side under /usr/bin/time -v
(peak memory) and collects the numbers. Nothing here is timed but the fit.
"""
import json
import sys
import time

import numpy as np


def load(path):
    import anndata

    if path.endswith(".h5ad"):
        ad = anndata.read_h5ad(path)
        ad = anndata.AnnData(obs=ad.obs[[]].copy(), obsm={"X_pca": np.asarray(ad.obsm["X_pca"], dtype=np.float64)})
    else:
        x = np.loadtxt(path, delimiter=",", dtype=np.float64)
        ad = anndata.AnnData(obsm={"X_pca": x})
        ad.obs_names = [str(i) for i in range(x.shape[0])]
    return ad


def ref(path, arch_path, m, out):
    import tqdm
    import tqdm.notebook

    tqdm.notebook.tqdm = tqdm.tqdm  # the reference's progress bars need Jupyter widgets otherwise
    import scipy.sparse as sp

    for cls in (sp.csr_array, sp.csc_array):  # scanpy calls getnnz, gone from scipy >= 1.14 arrays
        if not hasattr(cls, "getnnz"):
            cls.getnnz = lambda self, axis=None: self._getnnz(axis=axis)
    import SEACells

    ad = load(path)
    arch = np.loadtxt(arch_path, dtype=np.int64).reshape(-1)
    assert len(arch) == m, f"{len(arch)} archetypes for {m} metacells"
    np.random.seed(0)  # the reference draws its initial A at random
    t0 = time.time()
    model = SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=m, n_waypoint_eigs=10,
                                   convergence_epsilon=1e-3, verbose=False)
    model.construct_kernel_matrix()
    t1 = time.time()
    print(json.dumps({"kernel_s": round(t1 - t0, 2)}), flush=True)
    step = model.step

    def logged_step():  # progress on stdout: how far a run that is cut off got
        step()
        print(json.dumps({"iteration": len(model.RSS_iters) - 1, "fit_s": round(time.time() - t1, 2),
                          "rss": float(model.RSS_iters[-1])}), flush=True)

    model.step = logged_step
    converged = True
    try:
        model.fit(min_iter=10, max_iter=100, initial_archetypes=arch)
    except RuntimeWarning:  # the reference raises when it does not converge
        converged = False
    t2 = time.time()
    assign = np.asarray(model.A_).argmax(0).tolist()
    json.dump({"kernel_s": t1 - t0, "fit_s": t2 - t1, "total_s": t2 - t0,
               "iterations": len(model.RSS_iters) - 1, "converged": converged,
               "rss": [float(r) for r in model.RSS_iters], "assign": assign}, open(out, "w"))


def ari(a, b):
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    c = np.zeros((a.max() + 1, b.max() + 1), dtype=np.int64)
    np.add.at(c, (a, b), 1)
    comb = lambda v: (v * (v - 1) / 2.0).sum()
    s, sa, sb, n = comb(c), comb(c.sum(1)), comb(c.sum(0)), comb(np.array([len(a)]))
    exp = sa * sb / n
    return float((s - exp) / (0.5 * (sa + sb) - exp))


def compare(csv, ref_json):
    mine = []
    with open(csv) as f:
        next(f)
        for line in f:
            mine.append(int(line.split(",")[1]))
    theirs = json.load(open(ref_json))["assign"]
    assert len(mine) == len(theirs)
    print(json.dumps({"ari": ari(mine, theirs)}))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "ref":
        ref(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

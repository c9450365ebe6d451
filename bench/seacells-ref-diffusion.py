#!/usr/bin/env python3
"""The reference's diffusion components, waypoints, default initial
archetypes and SEACells.evaluate metrics, for ringrt's tests and docs.

Runs with the reference's Python (SEACELLS_PYTHON, e.g. /work/sc-peer/venv):

  python bench/seacells-ref-diffusion.py H5AD M [--assign CSV] [--fixture PREFIX]

prints one JSON line: palantir's eigenvalues (run_diffusion_maps with
n_components = 15 as SEACells' waypoint step calls it), the waypoints of
_get_waypoint_centers(M) (before the reference's unseeded shuffle), the
default archetype set (initialize_archetypes with np.random.seed(0)) and,
with --assign (ringrt's --out CSV: cell,metacell,...), the reference's
compactness and separation of those hard assignments. --fixture writes
PREFIX_{eigvals,waypoints,archetypes,assign,compactness,separation}.npy.
"""
import argparse
import json

import numpy as np
import pandas as pd
import scipy.sparse as sp


def patch():
    import tqdm
    import tqdm.notebook

    tqdm.notebook.tqdm = tqdm.tqdm  # the reference's progress bars need Jupyter widgets otherwise
    for cls in (sp.csr_array, sp.csc_array):  # scanpy calls getnnz, gone from scipy >= 1.14 arrays
        if not hasattr(cls, "getnnz"):
            cls.getnnz = lambda self, axis=None: self._getnnz(axis=axis)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("h5ad")
    ap.add_argument("m", type=int)
    ap.add_argument("--assign")
    ap.add_argument("--fixture")
    a = ap.parse_args()
    patch()
    import anndata
    import palantir
    import SEACells

    src = anndata.read_h5ad(a.h5ad)
    ad = anndata.AnnData(np.zeros((src.n_obs, 1), dtype=np.float32), obs=src.obs[[]].copy())
    ad.obsm["X_pca"] = np.asarray(src.obsm["X_pca"], dtype=np.float64)  # as ringrt reads it
    model = SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=a.m, n_waypoint_eigs=10,
                                   convergence_epsilon=1e-3)
    model.construct_kernel_matrix()
    comps = pd.DataFrame(ad.obsm["X_pca"]).set_index(ad.obs_names)
    dm = palantir.utils.run_diffusion_maps(comps, n_components=15)
    out = {"n": int(ad.n_obs), "m": a.m, "eigvals": [float(v) for v in dm["EigenValues"]]}
    wp = model._get_waypoint_centers(a.m)
    np.random.seed(0)
    model.initialize_archetypes()
    out["waypoints"] = [int(v) for v in wp]
    out["archetypes"] = [int(v) for v in model.archetypes]
    res = {"eigvals": np.array(out["eigvals"][:10]), "waypoints": np.array(wp, dtype=np.int32),
           "archetypes": np.array(model.archetypes, dtype=np.int32)}
    if a.assign:
        lab = pd.read_csv(a.assign)["metacell"].to_numpy()
        ad.obs["SEACell"] = pd.Categorical(lab.astype(str))
        comp = SEACells.evaluate.compactness(ad, "X_pca")
        sep = SEACells.evaluate.separation(ad, "X_pca", nth_nbr=1)
        ids = np.unique(lab)
        c = comp.loc[ids.astype(str)].iloc[:, 0].to_numpy()
        s = sep.loc[ids.astype(str)].iloc[:, 0].to_numpy()
        out["compactness"], out["separation"] = [float(v) for v in c], [float(v) for v in s]
        res.update(assign=lab.astype(np.int32), compactness=c.astype(np.float64),
                   separation=s.astype(np.float64), metacells=ids.astype(np.int32))
    print(json.dumps(out))
    if a.fixture:
        for k, v in res.items():
            np.save(f"{a.fixture}_{k}.npy", v)


if __name__ == "__main__":
    main()

"""Metacell quality of ringrt's starts beside the reference SEACells' runs.

For each data set: ringrt (the `ringrt seacells` tool) with its default
start (`waypoint`, the reference's) and with `cssp`, and the reference
SEACells (its default start) at NumPy seeds 0 and 1, all with n_metacells =
n // 75, n_neighbors 15, min_iter 10, max_iter 100, convergence 1e-3 (both
sides' defaults but max_iter, which the reference's fit() sets to 50). Per
run: the largest metacell, the cell-weighted purity of the clusters (the
share of cells in their metacell's majority cluster) and the mean purity
over metacells, the reference's SEACells.evaluate compactness and
separation (means over metacells, on its diffusion components), and the
adjusted Rand index against the reference's seed 0 and 1.

Data (nothing downloaded at run time):
- pbmc68k_reduced: scanpy's bundled 700 cells (obsm X_pca, obs louvain);
- celltypist's sample: the 559-cell cells x genes CSV that PyPI's
  celltypist wheel carries (celltypist/data/samples/sample_cell_by_gene.csv),
  prepared as the SEACells tutorial does (normalise, log1p, 1,500 highly
  variable genes, 50 PCs) and clustered with scanpy's leiden (igraph).

Usage (a python with the reference SEACells 0.3.3, palantir, scanpy, igraph):
  python bench/seacells_quality.py RINGRT_TOOL PBMC_H5AD [CELLTYPIST_CSV] > out.jsonl
Prints one JSON line per run and a markdown table on stderr.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd


def prep_celltypist(csv_path, out):
    import anndata
    import scanpy as sc
    counts = pd.read_csv(csv_path, index_col=0)
    ad = anndata.AnnData(counts.to_numpy(dtype=np.float32), obs=pd.DataFrame(index=counts.index),
                         var=pd.DataFrame(index=counts.columns))
    ad.var_names_make_unique()
    sc.pp.filter_genes(ad, min_cells=3)
    sc.pp.normalize_total(ad)
    sc.pp.log1p(ad)
    sc.pp.highly_variable_genes(ad, n_top_genes=1500)
    sc.tl.pca(ad, n_comps=50, mask_var="highly_variable")
    sc.pp.neighbors(ad, n_neighbors=15)
    sc.tl.leiden(ad, flavor="igraph", n_iterations=2, random_state=0, key_added="leiden")
    small = anndata.AnnData(np.zeros((ad.n_obs, 1), np.float32), obs=ad.obs[["leiden"]])
    small.obsm["X_pca"] = ad.obsm["X_pca"]
    small.write_h5ad(out)
    return out


def run_ringrt(tool, path, m, init, tmp):
    out = os.path.join(tmp, f"rrt_{init}.csv")
    t0 = time.perf_counter()
    subprocess.run([tool, "seacells", path, "--n-metacells", str(m), "--init", init, "--out", out,
                    "--quiet"], check=True)
    wall = time.perf_counter() - t0
    return pd.read_csv(out, index_col=0)["metacell"].to_numpy(), wall


def run_reference(path, m, seed):
    import anndata
    import tqdm
    import tqdm.notebook
    tqdm.notebook.tqdm = tqdm.tqdm  # the reference's progress bars need Jupyter widgets otherwise
    import SEACells
    ad = anndata.read_h5ad(path)
    np.random.seed(seed)
    t0 = time.perf_counter()
    model = SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=m, n_waypoint_eigs=10,
                                   convergence_epsilon=1e-3, verbose=False)
    model.construct_kernel_matrix()
    model.initialize_archetypes()
    model.fit(min_iter=10, max_iter=100)
    wall = time.perf_counter() - t0
    labels = ad.obs["SEACell"].astype(str).to_numpy()
    return pd.factorize(labels)[0], wall


def quality(path, labels_key, assign, refs):
    import anndata
    import SEACells
    from sklearn.metrics import adjusted_rand_score
    ad = anndata.read_h5ad(path)
    lab = ad.obs[labels_key].astype(str).to_numpy()
    t = pd.crosstab(assign, lab)
    sizes = t.sum(1)
    ad.obs["SEACell"] = pd.Categorical([f"mc{a}" for a in assign])
    comp = SEACells.evaluate.compactness(ad, "X_pca")
    sep = SEACells.evaluate.separation(ad, "X_pca", nth_nbr=1)
    return {"metacells": int(len(sizes)), "largest": int(sizes.max()),
            "purity_cell_weighted": float(t.max(1).sum() / len(assign)),
            "purity_mean": float((t.max(1) / sizes).mean()),
            "compactness": float(comp["compactness"].mean()),
            "separation": float(sep["separation"].mean()),
            "ari_ref": [float(adjusted_rand_score(r, assign)) for r in refs]}


def main():
    tool, pbmc = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sc_quality_")
    sets = [("pbmc68k_reduced", pbmc, "louvain")]
    if len(sys.argv) > 3:
        sets.append(("celltypist_sample", prep_celltypist(sys.argv[3], os.path.join(tmp, "ct.h5ad")),
                     "leiden"))
    rows = []
    for name, path, key in sets:
        import anndata
        n = anndata.read_h5ad(path).n_obs
        m = max(1, n // 75)
        refs, runs = [], []
        for seed in (0, 1):
            a, wall = run_reference(path, m, seed)
            refs.append(a)
            runs.append((f"reference seed {seed}", a, wall))
        for init in ("waypoint", "cssp"):
            a, wall = run_ringrt(tool, path, m, init, tmp)
            runs.append((f"ringrt {init}" + (" (default)" if init == "waypoint" else ""), a, wall))
        for who, a, wall in runs:
            q = dict(data=name, cells=int(n), labels=key, run=who, seconds=round(wall, 2),
                     **quality(path, key, a, refs))
            rows.append(q)
            print(json.dumps(q), flush=True)
    print("| data | run | largest | purity (cell-weighted) | purity (mean) | compactness | "
          "separation | ARI vs ref 0 / 1 |", file=sys.stderr)
    print("|---|---|---|---|---|---|---|---|", file=sys.stderr)
    for q in rows:
        print(f"| {q['data']} ({q['cells']}, {q['metacells']} mc) | {q['run']} | {q['largest']} | "
              f"{q['purity_cell_weighted']:.3f} | {q['purity_mean']:.3f} | {q['compactness']:.4f} | "
              f"{q['separation']:.3f} | {q['ari_ref'][0]:.2f} / {q['ari_ref'][1]:.2f} |",
              file=sys.stderr)


if __name__ == "__main__":
    main()

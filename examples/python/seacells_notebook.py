"""The reference SEACells tutorial's steps, with ringrt in the reference
package's place: the one changed line is the import
(``import SEACells`` -> ``import ringrt as SEACells``).

    python examples/python/seacells_notebook.py pbmc68k_reduced.h5ad [--out DIR] [--check]
    launch/ringrt-run -n 2 -- python examples/python/seacells_notebook.py pbmc68k_reduced.h5ad --check

The AnnData needs ``obsm["X_pca"]`` (and ``X_umap`` for the 2-D plots) and a
cell-type column (``--celltype``, default ``bulk_labels``, as in scanpy's
pbmc68k_reduced). Figures go to ``--out`` (default: a temporary folder).
With ``--check`` the script exits 1 unless the outputs are as the tutorial
expects (one label per cell, metacell summaries with one row per
metacell, per-metacell metrics); under mpirun every rank runs the same
steps (the library splits the cells) and rank 0 draws and prints.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings

import matplotlib

matplotlib.use("Agg")  # a script: figures go to files (a notebook shows them)

import anndata  # noqa: E402
import numpy as np  # noqa: E402

import ringrt as SEACells  # noqa: E402,N812 - the tutorial's `import SEACells`


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("h5ad")
    p.add_argument("--out", default=None)
    p.add_argument("--celltype", default="bulk_labels")
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    if a.out is None and a.check:  # a test: the figures are checked, then removed
        with tempfile.TemporaryDirectory(prefix="seacells_notebook_") as tmp:
            return run(a, tmp)
    out = a.out or tempfile.mkdtemp(prefix="seacells_notebook_")
    if SEACells.default_context().rank == 0:
        print(f"figures in {out}")
    return run(a, out)


def run(a: argparse.Namespace, out: str) -> int:
    """The tutorial's steps, the figures into out; with a.check, 1 when an
    output is not what the tutorial shows."""
    rank0 = SEACells.default_context().rank == 0

    ad = anndata.read_h5ad(a.h5ad)
    ad.obs_names_make_unique()
    n_SEACells = max(1, ad.n_obs // 75)  # the tutorial: one metacell per ~75 cells

    # -- the tutorial's cells, as written for the reference package --------------
    model = SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=n_SEACells,
                                   n_waypoint_eigs=10, convergence_epsilon=1e-5, verbose=False)
    model.construct_kernel_matrix()
    M = model.kernel_matrix
    model.initialize_archetypes()
    if rank0:
        SEACells.plot.plot_initialization(ad, model, save_as=os.path.join(out, "init.png"),
                                          show=False)
    with warnings.catch_warnings():  # as in a notebook, a short run may warn
        warnings.simplefilter("ignore", RuntimeWarning)
        model.fit(min_iter=10, max_iter=50)
    if rank0:
        model.plot_convergence(save_as=os.path.join(out, "convergence.png"), show=False)
    labels, weights = model.get_soft_assignments()
    SEACell_ad = SEACells.core.summarize_by_SEACell(ad, SEACells_label="SEACell",
                                                    summarize_layer="raw")
    SEACell_soft_ad = SEACells.core.summarize_by_soft_SEACell(ad, model.A_,
                                                              celltype_label=a.celltype,
                                                              summarize_layer="raw",
                                                              minimum_weight=0.05)
    if rank0:
        SEACells.plot.plot_2D(ad, key="X_umap", colour_metacells=False,
                              save_as=os.path.join(out, "umap_archetypes.png"), show=False)
        SEACells.plot.plot_2D(ad, key="X_umap", colour_metacells=True,
                              save_as=os.path.join(out, "umap_metacells.png"), show=False)
        SEACells.plot.plot_SEACell_sizes(ad, bins=5, save_as=os.path.join(out, "sizes.png"),
                                         show=False)
    purity = SEACells.evaluate.compute_celltype_purity(ad, a.celltype)
    compactness = SEACells.evaluate.compactness(ad, "X_pca")
    separation = SEACells.evaluate.separation(ad, "X_pca", nth_nbr=1)
    # ------------------------------------------------------------------------------

    if rank0:
        print(f"{ad.n_obs} cells -> {n_SEACells} metacells; kernel {M.shape}, {M.nnz} nonzeros; "
              f"{len(model.RSS_iters) - 1} iterations, RSS {model.RSS_iters[0]:.4g} -> "
              f"{model.RSS_iters[-1]:.4g}")
        print(f"summaries: hard {SEACell_ad.shape}, soft {SEACell_soft_ad.shape}")
        print(f"purity (mean) {purity[a.celltype + '_purity'].mean():.3f}, compactness (mean) "
              f"{compactness['compactness'].mean():.4g}, separation (mean) "
              f"{separation['separation'].mean():.4g}")
        print(f"figures in {out}")
    if not a.check:
        return 0
    problems = []
    k = n_SEACells
    if ad.obs["SEACell"].isna().any():
        problems.append("a cell without a metacell in ad.obs['SEACell']")
    present = ad.obs["SEACell"].astype(str).nunique()
    if SEACell_ad.n_obs != present:
        problems.append(f"hard summary has {SEACell_ad.n_obs} rows, {present} metacells are used")
    if SEACell_ad.n_vars != ad.raw.n_vars:
        problems.append(f"hard summary has {SEACell_ad.n_vars} genes, raw has {ad.raw.n_vars}")
    if not 1 <= SEACell_soft_ad.n_obs <= k:
        problems.append(f"soft summary has {SEACell_soft_ad.n_obs} rows for {k} metacells")
    if labels.shape != (ad.n_obs, 5) or weights.shape != (ad.n_obs, 5):
        problems.append(f"soft assignments {labels.shape} / {weights.shape}")
    if not (np.diff(weights, axis=1) <= 0).all():
        problems.append("soft weights are not heaviest first")
    if not model.RSS_iters[-1] < model.RSS_iters[0]:
        problems.append(f"RSS did not fall: {model.RSS_iters[0]} -> {model.RSS_iters[-1]}")
    for name, table in (("purity", purity), ("compactness", compactness),
                        ("separation", separation)):
        if len(table) != present:
            problems.append(f"{name} has {len(table)} rows for {present} metacells")
    if rank0:
        for f in ("init.png", "convergence.png", "umap_metacells.png", "sizes.png"):
            if not os.path.getsize(os.path.join(out, f)) > 1000:
                problems.append(f"{f} is empty")
    for msg in problems:
        print(f"check failed: {msg}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

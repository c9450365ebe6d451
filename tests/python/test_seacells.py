"""ringrt.seacells on an AnnData written by the anndata package and read back.

Usage: test_seacells.py RINGRT_CLI   (the `ringrt` tool of the same build);
RINGRT_BACKEND picks the backend of the default context.

In one process (no mpirun, as in a notebook): the default context uses all
the cores; the labels equal those of the C tool `ringrt seacells` on the
same .h5ad (an independent front over the same library); the result file
opens with scanpy.read_h5ad. Under mpirun (np = 3 in CTest; any np >= 2,
any backend): the labels equal those of a one-rank cpu run over
MPI.COMM_SELF, bit for bit. Both: the labels are
archetype cell names, the soft weights are consistent with them, the
metrics equal a float64 numpy computation, metacells are pure on separated
clusters, and bad inputs raise on every rank (including an AnnData that
differs between ranks under mpirun).
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from typing import List, Tuple

import anndata
import numpy as np
import pandas as pd
from mpi4py import MPI

import ringrt
import rrt_testing
from ringrt import errors
from ringrt import SEACellsModel

N_CELLS, N_PCS, N_CLUSTERS, N_METACELLS = 300, 5, 6, 12
world = MPI.COMM_WORLD


def make_input(path: str) -> None:
    """Well separated Gaussian clusters in N_PCS dims, as float32 X_pca."""
    rng = np.random.default_rng(11)
    centers = rng.normal(size=(N_CLUSTERS, N_PCS)) * 8.0
    cluster = rng.integers(0, N_CLUSTERS, N_CELLS)
    x = (centers[cluster] + rng.normal(size=(N_CELLS, N_PCS))).astype(np.float32)
    obs = pd.DataFrame({"cluster": pd.Categorical([f"c{c}" for c in cluster])},
                       index=[f"AAAC{i:04d}-1" for i in range(N_CELLS)])
    a = anndata.AnnData(X=np.zeros((N_CELLS, 3), dtype=np.float32), obs=obs)
    a.obsm["X_pca"] = x
    a.write_h5ad(path)


def check_metrics(model: SEACellsModel, x: np.ndarray) -> None:
    """compactness / separation against a float64 numpy computation."""
    m = model.n_metacells
    cent = np.full((m, x.shape[1]), np.nan)
    comp = np.full(m, np.nan)
    for j in range(m):
        cells = x[model.assignments == j]
        if len(cells):
            cent[j] = cells.mean(axis=0)
        if len(cells) >= 2:
            comp[j] = cells.var(axis=0, ddof=1).mean()
    dist = np.linalg.norm(cent[:, None, :] - cent[None, :, :], axis=2)
    np.fill_diagonal(dist, np.inf)
    sep = np.nanmin(dist, axis=1)
    # Sums of a few dozen O(10) terms in another order: 1e-9 relative is ample.
    np.testing.assert_allclose(model.compactness, comp, rtol=1e-9)
    np.testing.assert_allclose(model.separation, sep, rtol=1e-9)


def check_result(adata: anndata.AnnData, model: SEACellsModel) -> None:
    """What ringrt.seacells wrote into adata, and its model."""
    names = adata.obs_names
    m = model.n_metacells
    assert m == N_METACELLS and len(model.archetypes) == m
    assert model.archetype_names == list(names[model.archetypes])
    lab = adata.obs["SEACell"]
    assert isinstance(lab.dtype, pd.CategoricalDtype)
    assert list(lab.cat.categories) == model.archetype_names
    assert lab.notna().all(), "a cell without a metacell"
    assert set(lab.astype(str)) <= set(names[model.archetypes])  # labels are archetype cells' names
    np.testing.assert_array_equal(lab.cat.codes.to_numpy(), model.assignments)
    assert (model.get_hard_assignments()["SEACell"].to_numpy() == lab.astype(str).to_numpy()).all()

    w = adata.obsm["SEACell_soft_weights"]
    idx = adata.obsm["SEACell_soft_index"]
    soft = adata.obsm["SEACell_soft_labels"]
    assert w.shape == idx.shape == soft.shape == (N_CELLS, 5)
    assert list(soft.columns) == [f"SEACell_{t}" for t in range(5)]
    assert (w >= 0).all() and (w.sum(axis=1) <= 1 + 1e-12).all(), "soft weights sum above 1"
    assert (np.diff(w, axis=1) <= 0).all(), "soft weights not in decreasing order"
    assert (idx[:, 0] == model.assignments).all() and (w[:, 0] > 0).all()
    assert (soft["SEACell_0"].astype(str).to_numpy() == lab.astype(str).to_numpy()).all()
    assert ((idx == -1) == (w == 0)).all(), "padding must be (-1, 0)"
    ref_labels, ref_w = model.get_soft_assignments()
    assert list(ref_labels.columns) == list(range(5)) and (ref_labels.index == names).all()
    assert (ref_labels[0].to_numpy() == lab.astype(str).to_numpy()).all()
    np.testing.assert_array_equal(ref_w, w)

    assert len(model.rss) == model.iterations + 1 == len(model.RSS_iters)
    assert model.rss[-1] < model.rss[0] and model.converged
    assert model.ranks == world.Get_size() and set(model.seconds) >= {"knn", "update_b", "run"}
    check_metrics(model, np.asarray(adata.obsm["X_pca"], dtype=np.float64))
    # Separated clusters, two metacells each on average: every metacell pure.
    pure = pd.crosstab(lab, adata.obs["cluster"]).max(axis=1) / lab.value_counts()
    assert (pure == 1.0).all(), f"impure metacells on separated clusters:\n{pure}"
    uns = adata.uns["SEACell"]
    assert uns["params"]["n_metacells"] == m and list(uns["archetypes"]) == list(model.archetypes)


def check_errors(adata: anndata.AnnData) -> None:
    """Bad inputs raise on every rank, before anything is written."""
    rank, size = world.Get_rank(), world.Get_size()
    bad = adata.copy()
    raises = rrt_testing.raises
    raises(errors.InvalidArgument, lambda: ringrt.seacells(bad, obsm="X_umap"),
           match="adata.obsm has no 'X_umap' (it has: 'X_pca')")
    bad.obsm["cube"] = np.zeros((N_CELLS, 2, 2))
    raises(ValueError, lambda: ringrt.seacells(bad, obsm="cube"), match="has shape (300, 2, 2)")
    raises(ValueError, lambda: ringrt.seacells(bad, n_components=6), match="out of range 1..5")
    raises(ValueError, lambda: ringrt.seacells(bad, n_metacells=N_CELLS + 1),
           match=f"n_metacells = {N_CELLS + 1} is out of range 1..{N_CELLS}")
    raises(ValueError, lambda: ringrt.seacells(bad, n_metacells=0), match="out of range")
    raises(ValueError, lambda: ringrt.seacells(bad, n_metacells=12.5), match="n_metacells = 12.5")
    raises(ValueError, lambda: ringrt.seacells(bad[:0].copy()), match="adata has no cells")
    raises(ValueError, lambda: ringrt.seacells(bad, init="random"), match="init = 'random'")
    raises(ValueError, lambda: ringrt.seacells(bad, init=["nope"]), match="'nope' is not in")
    raises(ValueError, lambda: ringrt.seacells(bad, max_iter=5), match="min_iter = 10 is above")
    nan = adata.copy()
    nan.obsm["X_pca"][123, 2] = np.nan
    raises(errors.InvalidArgument, lambda: ringrt.seacells(nan),
           match="adata.obsm['X_pca'] row 123 (cell 'AAAC0123-1') has nan in column 2")
    assert "SEACell" not in bad.obs and "SEACell" not in nan.obs
    if size == 1:
        return
    # A problem on the last rank only: it raises InvalidArgument, the others
    # RemoteError, all naming that rank and the row.
    mine = nan if rank == size - 1 else adata.copy()
    e = raises(errors.InvalidArgument if rank == size - 1 else errors.RemoteError,
               lambda: ringrt.seacells(mine), match="row 123")
    assert f"rank {size - 1}" in str(e), str(e)
    # AnnData or arguments that differ between ranks.
    moved = adata.copy()
    if rank == 1:
        moved.obsm["X_pca"][7, 0] += 1e-3
    raises(errors.InvalidArgument, lambda: ringrt.seacells(moved),
           match="the coordinates adata.obsm['X_pca'] differ between rank 0 and rank 1")
    last = size - 1
    fewer = adata[: N_CELLS - 1].copy() if rank == last else adata.copy()
    raises(errors.InvalidArgument, lambda: ringrt.seacells(fewer),
           match=f"rank 0 has 300 cells x 5 dims in adata.obsm['X_pca'], rank {last} has 299 x 5")
    raises(errors.InvalidArgument, lambda: ringrt.seacells(adata.copy(), knn=15 - (rank == 1)),
           match="the arguments (n_metacells, knn")
    renamed = adata.copy()
    if rank == last:
        renamed.obs_names = [f"cell{i}" for i in range(N_CELLS)]
    raises(errors.InvalidArgument, lambda: ringrt.seacells(renamed),
           match=f"adata.obs_names differ between rank 0 and rank {last}")


def read_cli_csv(path: str) -> Tuple[List[str], np.ndarray, np.ndarray, np.ndarray]:
    """The tool's --out CSV: cell names, metacells, top-5 metacells and weights."""
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    cells = [r[0] for r in rows]
    assign = np.array([int(r[1]) for r in rows])
    top_i = np.array([[int(r[2 + 2 * t]) for t in range(5)] for r in rows])
    top_w = np.array([[float(r[3 + 2 * t]) for t in range(5)] for r in rows])
    return cells, assign, top_i, top_w


def compare_with_cli(cli: str, path: str, tmp: str, model: SEACellsModel,
                     init: str = "waypoint") -> None:
    """`ringrt seacells` (the C tool, one process) on the same .h5ad."""
    out, arch = os.path.join(tmp, f"mc_{init}.csv"), os.path.join(tmp, f"arch_{init}.txt")
    # This process is an MPI singleton: the tool must not inherit its MPI state.
    prefixes = ("OMPI_COMM", "PMIX", "OMPI_MCA_orte", "OMPI_FILE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    cmd = [cli, "seacells", path, "--n-metacells", str(N_METACELLS), "--out", out,
           "--archetypes-out", arch, "--quiet", "--init", init]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{cmd}: {res.returncode}\n{res.stdout}\n{res.stderr}"
    cells, assign, top_i, top_w = read_cli_csv(out)
    assert cells == model.obs_names
    np.testing.assert_array_equal(assign, model.assignments)
    np.testing.assert_array_equal(top_i, model.soft_index)
    np.testing.assert_allclose(top_w, model.soft_weights, rtol=1e-5, atol=0)  # CSV has %.6g
    with open(arch) as f:
        np.testing.assert_array_equal([int(v) for v in f.read().split()], model.archetypes)


def main() -> None:
    rank, size = world.Get_rank(), world.Get_size()
    cores = len(os.sched_getaffinity(0))
    tmp = world.bcast(tempfile.mkdtemp(prefix="rrt_seacells_") if rank == 0 else None)
    path = os.path.join(tmp, "cells.h5ad")
    if rank == 0:
        make_input(path)
    world.Barrier()
    adata = anndata.read_h5ad(path)
    ctx = ringrt.default_context()
    if size == 1:  # the notebook case: one process on all the cores
        assert ctx.info()["threads"] == cores, (ctx.info(), cores)
    check_errors(adata)

    model = ringrt.seacells(adata, n_metacells=N_METACELLS)
    assert model.backend == os.environ.get("RINGRT_BACKEND", "cpu"), model.backend
    check_result(adata, model)
    # the default is the reference's initialisation (waypoints, then greedy);
    # greedy CSSP alone is the other deterministic start; an integral float
    # is taken as its int (the reference's int())
    wp_data = adata.copy()
    wp = ringrt.seacells(wp_data, n_metacells=float(N_METACELLS), init="cssp")
    check_result(wp_data, wp)
    if size == 1:
        compare_with_cli(sys.argv[1], path, tmp, model)
        compare_with_cli(sys.argv[1], path, tmp, wp, init="cssp")
        lazy = subprocess.run([sys.executable, "-c", "import sys, ringrt; f = ringrt.seacells; "
                               "assert callable(f) and 'anndata' not in sys.modules and "
                               "'pandas' not in sys.modules"], capture_output=True, text=True)
        assert lazy.returncode == 0, f"import ringrt pulls in anndata/pandas:\n{lazy.stderr}"
        import scanpy
        out = os.path.join(tmp, "out.h5ad")
        adata.write_h5ad(out)
        back = scanpy.read_h5ad(out)
        assert back.obs["SEACell"].equals(adata.obs["SEACell"])
        for key in ("SEACell_soft_weights", "SEACell_soft_index"):
            np.testing.assert_array_equal(back.obsm[key], adata.obsm[key])
        assert back.obsm["SEACell_soft_labels"].equals(adata.obsm["SEACell_soft_labels"])
        np.testing.assert_array_equal(back.uns["SEACell"]["rss"], model.rss)
        # Archetypes given by obs name or index (reference-style starts), and
        # the warning of a run that stops before converging.
        start = list(model.archetype_names[::2])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            by_name = ringrt.seacells(adata.copy(), init=start, min_iter=2, max_iter=2,
                                      key_added="mc")
        assert not by_name.converged and by_name.n_metacells == len(start)
        assert any("did not converge" in str(w.message) for w in caught), caught
        by_index = ringrt.seacells(adata.copy(), init=list(adata.obs_names.get_indexer(start)),
                                   min_iter=2, max_iter=2, key_added="mc")
        np.testing.assert_array_equal(by_name.soft_weights, by_index.soft_weights)
    else:
        serial = adata.copy()
        with ringrt.Context(MPI.COMM_SELF, backend="cpu") as one:
            ref = ringrt.seacells(serial, n_metacells=N_METACELLS, ctx=one)
        assert ref.ranks == 1
        assert serial.obs["SEACell"].equals(adata.obs["SEACell"])
        np.testing.assert_array_equal(ref.archetypes, model.archetypes)
        np.testing.assert_array_equal(ref.soft_index, model.soft_index)
        np.testing.assert_array_equal(ref.soft_weights, model.soft_weights)  # bit for bit
        np.testing.assert_array_equal(ref.rss, model.rss)
        with ringrt.Context(MPI.COMM_SELF, backend="cpu") as one:
            ref_wp = ringrt.seacells(adata.copy(), n_metacells=N_METACELLS, init="cssp",
                                     ctx=one)
        np.testing.assert_array_equal(ref_wp.archetypes, wp.archetypes)
        np.testing.assert_array_equal(ref_wp.soft_weights, wp.soft_weights)  # bit for bit
    world.Barrier()
    if rank == 0:
        shutil.rmtree(tmp)


rrt_testing.run(main)

"""ringrt.seacells_plot: the plots of SEACells metacells, from the Python front
and from the files of the `ringrt seacells` tool.

Usage: test_seacells_plot.py RINGRT_CLI   (the `ringrt` tool of the same build).

One process. After ringrt.seacells on well separated clusters: the PNG is a
valid PNG of figsize x dpi pixels; what the panels draw equals a naive
computation here (each cell's position and colour in the embedding, the
archetype marks, the histogram counts of the sizes and of the purity of a
naive pandas groupby, compactness / separation from the model and, without
it, against a numpy computation); the tool's CSV / JSON / archetypes read
back into the same metacells as the front's; `python -m
ringrt.seacells_plot` writes the PNG, and refuses, naming the file, a CSV of
another cell count or other cells, a report of another run, a missing
embedding and an unwritable path, leaving no partial file.
"""
import contextlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import anndata
import matplotlib
import numpy as np
import pandas as pd

import ringrt
import rrt_testing
from ringrt import errors
from ringrt import seacells_plot as sp
from ringrt._seacells_files import load_for_plot, parse_args

N_CELLS, N_PCS, N_CLUSTERS, N_METACELLS = 300, 5, 6, 12


def make_input(path: str) -> anndata.AnnData:
    """Gaussian clusters in N_PCS dims (X_pca) and a 2-D X_umap of them."""
    rng = np.random.default_rng(5)
    centers = rng.normal(size=(N_CLUSTERS, N_PCS)) * 8.0
    cluster = rng.integers(0, N_CLUSTERS, N_CELLS)
    x = centers[cluster] + rng.normal(size=(N_CELLS, N_PCS))
    obs = pd.DataFrame({"cluster": pd.Categorical([f"c{c}" for c in cluster])},
                       index=[f"cell-{i}" for i in range(N_CELLS)])
    a = anndata.AnnData(X=np.zeros((N_CELLS, 2), dtype=np.float32), obs=obs)
    a.obsm["X_pca"] = x
    a.obsm["X_umap"] = x[:, :2] @ np.array([[1.0, 0.5], [-0.5, 1.0]])
    a.write_h5ad(path)
    return a


def png_size(path: str) -> tuple:
    """(width, height) of a PNG, checking its signature, the IHDR CRC and IEND."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    crc = struct.unpack(">I", data[16 + length:20 + length])[0]
    assert crc == zlib.crc32(data[12:16 + length]), "IHDR CRC"
    assert data[-12:-8] == b"\0\0\0\0" and data[-8:-4] == b"IEND", "no IEND: truncated"
    return struct.unpack(">II", data[16:24])


def naive_colours(codes: np.ndarray) -> np.ndarray:
    tab20 = matplotlib.colormaps["tab20"]
    return np.asarray([tab20(c % 20) for c in codes])


def hist_counts(ax) -> np.ndarray:
    return np.asarray([p.get_height() for p in ax.patches])


def check_figure(adata: anndata.AnnData, model: ringrt.SEACellsModel, fig) -> None:
    """The panels against naive computations."""
    axes = {a.get_label(): a for a in fig.axes}
    assert set(axes) == {"embedding", "sizes", "purity", "compactness", "separation"}, axes
    cells, marks = axes["embedding"].collections[:2]
    np.testing.assert_array_equal(cells.get_offsets(), adata.obsm["X_umap"])
    np.testing.assert_array_equal(cells.get_facecolors(), naive_colours(model.assignments))
    np.testing.assert_array_equal(marks.get_offsets(), adata.obsm["X_umap"][model.archetypes])
    np.testing.assert_array_equal(marks.get_facecolors(), naive_colours(np.arange(N_METACELLS)))
    assert "X_umap" in axes["embedding"].get_xlabel()

    obs = pd.DataFrame({"mc": model.assignments, "cluster": adata.obs["cluster"].to_numpy()})
    sizes = obs["mc"].value_counts().reindex(range(N_METACELLS), fill_value=0).to_numpy()
    np.testing.assert_array_equal(hist_counts(axes["sizes"]), np.histogram(sizes, "auto")[0])
    pur = obs.groupby("mc")["cluster"].agg(lambda s: s.value_counts().iloc[0] / len(s))
    pur = pur.reindex(range(N_METACELLS)).to_numpy()
    table = sp.metacell_table(adata, labels="cluster")
    np.testing.assert_allclose(table["purity"].to_numpy(), pur, rtol=1e-15)
    ok = np.isfinite(pur)
    np.testing.assert_array_equal(hist_counts(axes["purity"]), np.histogram(pur[ok], "auto")[0])
    np.testing.assert_array_equal(table["size"].to_numpy(), sizes)
    assert list(table["archetype"]) == model.archetype_names
    for name, want in (("compactness", model.compactness), ("separation", model.separation)):
        np.testing.assert_array_equal(table[name].to_numpy(), want)  # taken from the run
        w = want[np.isfinite(want)]
        np.testing.assert_array_equal(hist_counts(axes[name]), np.histogram(w, "auto")[0])


def check_computed_metrics(adata: anndata.AnnData, model: ringrt.SEACellsModel) -> None:
    """Without the run's metrics (a reference-style AnnData: obs column only):
    computed on X_pca, against numpy as test_seacells.py computes them."""
    bare = anndata.AnnData(obs=adata.obs[["SEACell"]].astype(str),
                           obsm={"X_pca": adata.obsm["X_pca"]})
    table = sp.metacell_table(bare)
    assert table.attrs["metrics_source"] == "computed on X_pca"
    x, order = adata.obsm["X_pca"], [model.archetype_names.index(n) for n in table.index]
    cent = np.array([x[model.assignments == j].mean(axis=0) for j in order])
    comp = np.array([x[model.assignments == j].var(axis=0, ddof=1).mean() for j in order])
    dist = np.linalg.norm(cent[:, None] - cent[None], axis=2)
    np.fill_diagonal(dist, np.inf)
    np.testing.assert_allclose(table["compactness"].to_numpy(), comp, rtol=1e-12)
    np.testing.assert_allclose(table["separation"].to_numpy(), dist.min(axis=1), rtol=1e-12)
    # Metacells named by their archetype cell (the reference's convention).
    assert list(table["archetype"]) == list(table.index)


def check_atomic_save(adata: anndata.AnnData, tmp: str) -> None:
    """A failing write leaves the old file and no temporary; a bad folder is named."""
    out = os.path.join(tmp, "keep.png")
    with open(out, "wb") as f:
        f.write(b"old")
    fig = sp.plot_seacells(adata)

    def broken(f, **kw):
        f.write(b"partial")
        raise OSError(28, "No space left on device")
    fig.savefig = broken
    e = rrt_testing.raises(errors.IOFailure, lambda: sp.save(fig, out), match=out)
    assert "No space left" in str(e)
    with open(out, "rb") as f:
        assert f.read() == b"old"
    assert not [n for n in os.listdir(tmp) if n.endswith(".tmp")], os.listdir(tmp)
    missing = os.path.join(tmp, "no-such-dir", "a.png")
    rrt_testing.raises(errors.IOFailure, lambda: sp.save(fig, missing), match=missing)
    rrt_testing.raises(errors.InvalidArgument, lambda: sp.save(fig, out[:-3] + "xyz"),
                       match="unknown image format")


def check_errors(adata: anndata.AnnData) -> None:
    no_embedding = anndata.AnnData(obs=adata.obs[["SEACell"]].copy())
    rrt_testing.raises(errors.InvalidArgument, lambda: sp.plot_seacells(no_embedding),
                       match="no 2-D embedding to plot: adata.obsm has none of X_umap")
    rrt_testing.raises(errors.InvalidArgument, lambda: sp.plot_2D(adata, "X_tsne"),
                       match="adata.obsm has no 'X_tsne'")
    rrt_testing.raises(errors.InvalidArgument, lambda: sp.plot_seacells(adata, key="mc"),
                       match="adata.obs has no 'mc' column")
    rrt_testing.raises(errors.InvalidArgument, lambda: sp.metacell_table(adata, labels="nope"),
                       match="adata.obs has no 'nope' column")


def run_cli(tool: str, h5ad: str, tmp: str) -> dict:
    """The `ringrt seacells` tool's files of the same run as the front's."""
    f = {k: os.path.join(tmp, f"mc.{k}") for k in ("csv", "json", "arch")}
    cmd = [tool, "seacells", h5ad, "--n-metacells", str(N_METACELLS), "--labels", "cluster",
           "--quiet", "--out", f["csv"], "--json", f["json"], "--archetypes-out", f["arch"]]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{cmd}: {res.returncode}\n{res.stderr}"
    return f


def plot_command(*args: str) -> tuple:
    """The command in this process (its main): (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = sp.main(list(args))
    return rc, err.getvalue()


def check_command(adata: anndata.AnnData, h5ad: str, f: dict, tmp: str) -> None:
    # The files read back into the front's metacells (same names, same order).
    back, labels = load_for_plot(parse_args([h5ad, "--assign", f["csv"], "--json", f["json"],
                                             "--archetypes", f["arch"], "--plot", "x.png"]))
    assert labels == "cluster"  # from the report
    assert back.obs["SEACell"].equals(adata.obs["SEACell"]), "CLI files != the front's result"
    np.testing.assert_array_equal(back.uns["SEACell"]["compactness"],
                                  adata.uns["SEACell"]["compactness"])
    png = os.path.join(tmp, "cli.png")
    res = subprocess.run([sys.executable, "-m", "ringrt.seacells_plot", h5ad, "--assign", f["csv"],
                          "--json", f["json"], "--archetypes", f["arch"], "--plot", png, "--dpi",
                          "50"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert png_size(png) == (800, 400), png_size(png)

    # A CSV of another cell count, and of other cells: exit 1, the file named, no PNG.
    with open(f["csv"]) as src:
        lines = src.read().splitlines(True)
    short, other = os.path.join(tmp, "short.csv"), os.path.join(tmp, "other.csv")
    with open(short, "w") as o:
        o.writelines(lines[:-1])
    with open(other, "w") as o:
        o.writelines(lines[:5] + [lines[5].replace("cell-4,", "cell-x,", 1)] + lines[6:])
    bad = os.path.join(tmp, "bad.png")
    for args, match in (
            (["--assign", short], f"{short}: has {N_CELLS - 1} cells; {h5ad} has {N_CELLS}"),
            (["--assign", other], f"{other}: line 6 is cell 'cell-x', but cell 4 of"),
            (["--assign", f["csv"], "--json", os.path.join(tmp, "nope.json")], "nope.json: cannot"),
            (["--json", f["json"]], "give --assign too")):
        rc, err = plot_command(h5ad, *args, "--plot", bad)
        assert rc == 1 and match in err, (args, rc, err)
        assert not os.path.exists(bad)
    rc, err = plot_command(h5ad, "--assign", f["csv"], "--plot", os.path.join(tmp, "none", "a.png"))
    assert rc == 1 and "none/a.png: No such file" in err, err

    # An AnnData written after ringrt.seacells plots without the tool's files.
    written = os.path.join(tmp, "with_mc.h5ad")
    adata.write_h5ad(written)
    again, _ = load_for_plot(parse_args([written, "--plot", "x.png"]))
    table = sp.metacell_table(again)
    np.testing.assert_array_equal(table["compactness"], adata.uns["SEACell"]["compactness"])
    np.testing.assert_array_equal(again.obs_names.get_indexer(table["archetype"]),
                                  adata.uns["SEACell"]["archetypes"])


def main() -> None:
    lazy = subprocess.run([sys.executable, "-c", "import sys, ringrt, ringrt.seacells_plot; "
                           "f = ringrt.plot_seacells; assert callable(f); "
                           "assert 'matplotlib' not in sys.modules, 'matplotlib'; "
                           "assert 'anndata' not in sys.modules, 'anndata'"],
                          capture_output=True, text=True)
    assert lazy.returncode == 0, f"importing the plots pulls in matplotlib/anndata:\n{lazy.stderr}"
    tmp = tempfile.mkdtemp(prefix="rrt_seacells_plot_")
    h5ad = os.path.join(tmp, "cells.h5ad")
    adata = make_input(h5ad)
    model = ringrt.seacells(adata, n_metacells=N_METACELLS)
    png = os.path.join(tmp, "front.png")
    fig = ringrt.plot_seacells(adata, labels="cluster", save_as=png)
    assert png_size(png) == (1600, 800), png_size(png)
    mask = os.umask(0o022)
    os.umask(mask)
    assert os.stat(png).st_mode & 0o777 == 0o666 & ~mask, oct(os.stat(png).st_mode)  # not 0600
    check_figure(adata, model, fig)
    sizes = sp.plot_SEACell_sizes(adata)  # the reference's return value
    np.testing.assert_array_equal(sizes["size"].to_numpy(),
                                  np.bincount(model.assignments, minlength=N_METACELLS))
    ax = sp.plot_initialization(adata, model)
    np.testing.assert_array_equal(ax.collections[1].get_offsets(),
                                  adata.obsm["X_umap"][model.archetypes])
    check_computed_metrics(adata, model)
    check_errors(adata)
    check_atomic_save(adata, tmp)
    check_command(adata, h5ad, run_cli(sys.argv[1], h5ad, tmp), tmp)
    shutil.rmtree(tmp)


rrt_testing.run(main)

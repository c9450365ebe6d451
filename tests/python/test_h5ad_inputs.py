"""`ringrt seacells` on .h5ad files as h5py and anndata write them
(argv[1]: the ringrt executable), one process:

- gzip-compressed obsm: read, and the run's CSV is byte for byte the run
  on the same values stored uncompressed (the reference);
- lzf-compressed obsm (h5py's own filter, which the HDF5 C library lacks):
  exit 1 with a message naming the filter and how to rewrite the file;
- a zarr store: exit 1 saying it is zarr and how to convert it;
- a file anndata wrote (obs names): the names come back in the CSV;
- a legacy (anndata < 0.7) file, written here with h5py as old anndata
  wrote it (compound obs/var/obsm, categories in uns/COL_categories):
  --h5ad-out writes a new file in the current layout that anndata reads,
  with the input's X, obs (strings, categorical, int, float, bool columns
  in their types), var and obsm, plus the result; the input is unchanged;
- a 10x Genomics .h5 (matrix/barcodes): exit 1 naming it and what to give.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

import rrt_testing

RINGRT = sys.argv[1]


def ringrt(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([RINGRT, "seacells", *args, "--quiet"], capture_output=True, text=True,
                          env=env, timeout=120)


def write(path: str, x: np.ndarray, **kw: object) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("obsm/X_pca", data=x, chunks=(50, x.shape[1]), **kw)


def write_legacy(path: str, x: np.ndarray) -> dict:
    """An anndata < 0.7 file: 1-D compound tables, fixed-length strings."""
    n, genes = x.shape[0], 3
    obs = np.zeros(n, dtype=[("index", "S12"), ("labels", "i1"), ("n_genes", "<i8"),
                             ("score", "<f4"), ("flag", "?")])
    obs["index"] = [f"cell-{i}".encode() for i in range(n)]
    obs["labels"] = np.arange(n) % 4
    obs["n_genes"] = np.arange(n) * 7
    obs["score"] = np.linspace(0, 1, n, dtype=np.float32)
    obs["flag"] = np.arange(n) % 3 == 0
    var = np.zeros(genes, dtype=[("index", "S8")])
    var["index"] = [b"g0", b"g1", b"g2"]
    obsm = np.zeros(n, dtype=[("X_pca", "<f4", (x.shape[1],))])
    obsm["X_pca"] = x
    X = np.arange(n * genes, dtype=np.float32).reshape(n, genes)
    with h5py.File(path, "w") as f:
        f["X"] = X
        f["obs"], f["var"], f["obsm"] = obs, var, obsm
        f["uns/labels_categories"] = np.array([b"T", b"B", b"NK", b"Mono"])
    return dict(obs=obs, X=X)


def check_legacy(tmp: str, x: np.ndarray) -> None:
    import anndata
    src, out = os.path.join(tmp, "legacy.h5ad"), os.path.join(tmp, "legacy_out.h5ad")
    want = write_legacy(src, x)
    before = open(src, "rb").read()
    r = ringrt(src, "--n-metacells", "8", "--labels", "labels", "--h5ad-out", out)
    assert r.returncode in (0, 3), (r.returncode, r.stderr)
    assert open(src, "rb").read() == before, "the legacy input was modified"
    a = anndata.read_h5ad(out)
    obs = want["obs"]
    assert list(a.obs_names) == [s.decode() for s in obs["index"]]
    assert list(a.obs["labels"].astype(str)) == [["T", "B", "NK", "Mono"][c] for c in obs["labels"]]
    assert a.obs["n_genes"].dtype == np.int64 and np.array_equal(a.obs["n_genes"], obs["n_genes"])
    assert a.obs["score"].dtype == np.float32 and np.array_equal(a.obs["score"], obs["score"])
    assert a.obs["flag"].dtype == bool and np.array_equal(a.obs["flag"], obs["flag"])
    assert list(a.var_names) == ["g0", "g1", "g2"]
    assert np.array_equal(a.X, want["X"]) and np.array_equal(a.obsm["X_pca"], x)
    assert a.obs["SEACell"].dtype == "category" and a.obs["SEACell"].notna().all()
    assert set(a.obs["SEACell"].astype(str)) <= set(a.obs_names)
    assert len(a.uns["SEACell"]["archetypes"]) == 8


def main() -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(scale=6.0, size=(4, 6))
    x = (centres[np.arange(240) % 4] + rng.normal(size=(240, 6))).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        p = {k: os.path.join(tmp, k) for k in ("plain.h5ad", "gz.h5ad", "lzf.h5ad", "c.zarr",
                                               "ad.h5ad", "plain.csv", "gz.csv", "ad.csv")}
        write(p["plain.h5ad"], x)
        write(p["gz.h5ad"], x, compression="gzip", compression_opts=6)
        base = ["--n-metacells", "8", "--max-iter", "5", "--min-iter", "1"]
        for k in ("plain", "gz"):
            r = ringrt(p[k + ".h5ad"], *base, "--out", p[k + ".csv"])
            assert r.returncode in (0, 3), (k, r.returncode, r.stderr)
        with open(p["plain.csv"], "rb") as a, open(p["gz.csv"], "rb") as b:
            assert a.read() == b.read(), "gzip-compressed input gave another result"

        # lzf: compressible values, so the chunks really are compressed
        write(p["lzf.h5ad"], np.repeat(np.arange(240, dtype=np.float32)[:, None], 6, axis=1),
              compression="lzf")
        r = ringrt(p["lzf.h5ad"], "--n-metacells", "8")
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "filter 32000 (lzf)" in r.stderr and "compression='gzip'" in r.stderr, r.stderr

        os.mkdir(p["c.zarr"])
        r = ringrt(p["c.zarr"])
        assert r.returncode == 1 and "a zarr store" in r.stderr and "read_zarr" in r.stderr, \
            r.stderr

        import anndata
        names = [f"cell-{i}" for i in range(240)]
        import pandas as pd
        ad = anndata.AnnData(obs=pd.DataFrame(index=names), obsm={"X_pca": x})
        ad.write_h5ad(p["ad.h5ad"], compression="gzip")
        r = ringrt(p["ad.h5ad"], *base, "--out", p["ad.csv"])
        assert r.returncode in (0, 3), r.stderr
        got = [line.split(",")[0] for line in open(p["ad.csv"]).read().splitlines()[1:]]
        assert got == names, got[:3]
        body = [line.split(",", 1)[1] for line in open(p["ad.csv"]).read().splitlines()]
        want = [line.split(",", 1)[1] for line in open(p["plain.csv"]).read().splitlines()]
        assert body == want, "anndata's file gave another result than the same values"

        check_legacy(tmp, x)
        tenx = os.path.join(tmp, "filtered_feature_bc_matrix.h5")
        with h5py.File(tenx, "w") as f:
            f["matrix/barcodes"] = np.array([b"AAAC-1", b"AAAG-1"])
            f["matrix/data"] = np.array([1, 2], dtype=np.int32)
        r = ringrt(tenx)
        assert r.returncode == 1 and "a 10x Genomics count matrix" in r.stderr and \
            "sc.read_10x_h5" in r.stderr, r.stderr


rrt_testing.run(main)

"""`ringrt seacells` on .h5ad files as h5py and anndata write them
(argv[1]: the ringrt executable), one process:

- gzip-compressed obsm: read, and the run's CSV is byte for byte the run
  on the same values stored uncompressed (the reference);
- lzf-compressed obsm (h5py's own filter, which the HDF5 C library lacks):
  exit 1 with a message naming the filter and how to rewrite the file;
- a zarr store: exit 1 saying it is zarr and how to convert it;
- a file anndata wrote (obs names): the names come back in the CSV.
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


rrt_testing.run(main)

"""`ringrt seacells --h5ad-out / --summary-out` read back with anndata and
scanpy (argv: the ringrt executable, the mpiexec command words, the pbmc
file).

- --h5ad-out: the input's obs, X, var, obsm come back unchanged; obs
  SEACell is the --out CSV's metacell named by its archetype; the soft
  weights are the CSV's top 5; the input file is not modified;
- --summary-out, hard: raw (CSR, the default where adata.raw exists), a
  dense layer and a sparse X (an anndata-made copy without raw, the
  default there) are the naive numpy sums over the CSV's assignments, rows
  in order of first appearance (the reference's unique()); obs size and
  purity as the reference's compute_celltype_purity counts them;
- --summary soft: the reference's summarize_by_soft_SEACell rule written
  here (sparsify_assignments with numpy's percentile, weighted means) on
  the CSV's weights (--n-metacells 5, so the top 5 are every weight);
- np 3 gives the same datasets, bit for bit, as np 1 (compactness and
  separation to 1e-12: rrt_seacells_metrics sums across ranks);
- errors: a missing folder, a missing layer (an existing output stays as
  it was), a CSC layer: exit 1, the message names the file, no file left.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import pandas as pd

import rrt_testing

RINGRT, PBMC = sys.argv[1], sys.argv[-1]
MPIEXEC = sys.argv[2:-1]


def ringrt(*args: str, np_: int = 1) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    pre = [*MPIEXEC[:1], "-n", str(np_), *MPIEXEC[1:]] if np_ > 1 else []
    return subprocess.run([*pre, RINGRT, "seacells", *args, "--quiet"], capture_output=True,
                          text=True, env=env, timeout=120)


def ok(r: subprocess.CompletedProcess) -> None:
    assert r.returncode in (0, 3), (r.returncode, r.stderr)


def datasets(path: str) -> dict:
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, v: out.__setitem__(k, v[()]) if isinstance(v, h5py.Dataset)
                     else None)
    return out


def same_files(a: str, b: str) -> None:
    da, db = datasets(a), datasets(b)
    assert sorted(da) == sorted(db), (a, sorted(set(da) ^ set(db)))
    for k in da:
        if k.endswith(("compactness", "separation")):
            assert np.allclose(da[k], db[k], rtol=1e-12, equal_nan=True), k
        else:
            nan = np.asarray(da[k]).dtype.kind == "f"
            assert np.array_equal(da[k], db[k], equal_nan=nan), (a, b, k)


def csv_assign(path: str) -> tuple:
    t = pd.read_csv(path, index_col=0)
    w = t[[f"w{k}" for k in range(1, 6)]].to_numpy()
    j = t[[f"mc{k}" for k in range(1, 6)]].to_numpy()
    return t, t["metacell"].to_numpy(), j, w


def dense(m) -> np.ndarray:
    return np.asarray(m.todense() if hasattr(m, "todense") else m, dtype=np.float64)


def hard_sums(data, assign: np.ndarray, m: int) -> tuple:
    """The used metacells in order of first appearance (the reference's
    obs[label].unique()) and their row sums."""
    used = list(pd.unique(assign[assign >= 0]))
    return used, np.array([dense(data[assign == j]).sum(0) for j in used])


def check_h5ad_out(tmp: str, ad, sc) -> None:
    src = ad.read_h5ad(PBMC)
    o = sc.read_h5ad(os.path.join(tmp, "o1.h5ad"))
    t, assign, top_j, top_w = csv_assign(os.path.join(tmp, "a1.csv"))
    names = o.uns["SEACell"]["archetype_names"]
    assert list(o.obs_names) == list(src.obs_names) == list(t.index)
    assert o.obs.drop(columns="SEACell").equals(src.obs)
    assert np.array_equal(o.X, src.X) and o.var.equals(src.var)
    assert np.array_equal(o.obsm["X_pca"], src.obsm["X_pca"])
    assert o.obs["SEACell"].dtype == "category"
    assert list(o.obs["SEACell"].astype(str)) == [names[j] for j in assign]
    assert list(o.obs_names[o.uns["SEACell"]["archetypes"]]) == list(names)
    assert np.allclose(o.obsm["SEACell_soft_weights"], top_w, rtol=1e-5, atol=1e-6)
    assert np.array_equal(o.obsm["SEACell_soft_index"], top_j)
    lab = o.obsm["SEACell_soft_labels"]
    assert list(lab["SEACell_0"].astype(str)) == list(o.obs["SEACell"].astype(str))
    rss = o.uns["SEACell"]["rss"]
    assert len(rss) == o.uns["SEACell"]["iterations"] + 1 and rss[-1] < rss[0]


def check_hard(path: str, data, assign: np.ndarray, arch_names, labels=None) -> None:
    import anndata as ad
    s = ad.read_h5ad(path)
    used, want = hard_sums(data, assign, len(arch_names))
    assert list(s.obs_names) == [arch_names[j] for j in used]
    assert (hasattr(s.X, "tocsr")) == hasattr(data, "tocsr"), type(s.X)
    # float32 inputs summed in float64 here and there: only the order differs
    assert np.allclose(dense(s.X), want, rtol=1e-12, atol=1e-9), np.abs(dense(s.X) - want).max()
    assert list(s.obs["size"]) == [int((assign == j).sum()) for j in used]
    if labels is not None:
        for r, j in enumerate(used):
            vc = labels[assign == j].value_counts()
            assert s.obs["bulk_labels"].iloc[r] == vc.index[0]
            assert np.isclose(s.obs["bulk_labels_purity"].iloc[r], vc.iloc[0] / vc.sum())


def ref_soft(data, top_j: np.ndarray, top_w: np.ndarray, m: int, thresh: float = 0.05):
    """summarize_by_soft_SEACell: sparsify_assignments, then weighted means."""
    A = np.zeros((len(top_j), m))
    for i in range(len(top_j)):
        for j, w in zip(top_j[i], top_w[i]):
            if j >= 0:
                A[i, j] = w
    A[A == 0] = np.nan
    mins = np.nanpercentile(A, 95, axis=1).reshape(-1, 1)
    A = np.nan_to_num(A)
    mins[mins > thresh] = thresh
    A[A < mins] = 0
    A = A / A.sum(1, keepdims=True)
    d = dense(data)
    return A.sum(0), np.array([(d * A[:, j:j + 1]).sum(0) / A[:, j].sum() for j in range(m)])


def check_errors(tmp: str) -> None:
    out = os.path.join(tmp, "s1.h5ad")
    before = hashlib.sha256(open(out, "rb").read()).hexdigest()
    # a run that fails leaves an existing output as it was (outputs are
    # replaced only by a complete write)
    r = ringrt(PBMC, "--summary-out", out, "--summary-layer", "nope")
    assert r.returncode == 1 and "layers/nope: no such matrix" in r.stderr, r.stderr
    assert hashlib.sha256(open(out, "rb").read()).hexdigest() == before
    r = ringrt(PBMC, "--h5ad-out", os.path.join(tmp, "no", "o.h5ad"))
    assert r.returncode == 1 and "cannot create a file in" in r.stderr, r.stderr
    r = ringrt(PBMC, "--summary-out", os.path.join(tmp, "x.h5ad"), "--summary-layer", "nope")
    assert r.returncode == 1 and "layers/nope: no such matrix" in r.stderr, r.stderr
    assert PBMC in r.stderr
    r = ringrt(os.path.join(tmp, "csc.h5ad"), "--summary-out", os.path.join(tmp, "x.h5ad"),
               "--summary-layer", "csc")
    assert r.returncode == 1 and "layers/csc: a CSC" in r.stderr, r.stderr
    left = [f for f in os.listdir(tmp) if f.startswith(".") or f == "x.h5ad"]
    assert not left, left


def main() -> None:
    import anndata as ad
    import scanpy as sc
    digest = hashlib.sha256(open(PBMC, "rb").read()).hexdigest()
    src = ad.read_h5ad(PBMC)
    with tempfile.TemporaryDirectory() as tmp:
        p = lambda k: os.path.join(tmp, k)  # noqa: E731
        # a copy with X sparse (the raw counts), a dense layer and a CSC layer
        cp = ad.AnnData(X=src.raw.X.tocsr(), obs=src.obs, var=src.raw.var,
                        obsm={"X_pca": src.obsm["X_pca"]},
                        layers={"lognorm": np.asarray(src.X), "csc": src.raw.X.tocsc()})
        cp.write_h5ad(p("csc.h5ad"))
        del cp.layers["csc"]
        cp.write_h5ad(p("copy.h5ad"))

        lab = ["--labels", "bulk_labels"]
        ok(ringrt(PBMC, *lab, "--out", p("a1.csv"), "--h5ad-out", p("o1.h5ad"),
                  "--summary-out", p("s1.h5ad")))
        ok(ringrt(PBMC, *lab, "--out", p("a3.csv"), "--h5ad-out", p("o3.h5ad"),
                  "--summary-out", p("s3.h5ad"), np_=3))
        soft = ["--n-metacells", "5", "--summary", "soft", "--summary-layer", "raw"]
        ok(ringrt(PBMC, *soft, "--out", p("c1.csv"), "--summary-out", p("c1.h5ad")))
        ok(ringrt(PBMC, *soft, "--summary-out", p("c3.h5ad"), np_=3))
        ok(ringrt(p("copy.h5ad"), "--summary-out", p("e1.h5ad")))
        ok(ringrt(p("copy.h5ad"), "--summary-out", p("f1.h5ad"), "--summary-layer", "lognorm"))
        assert hashlib.sha256(open(PBMC, "rb").read()).hexdigest() == digest, "input modified"

        check_h5ad_out(tmp, ad, sc)
        for a, b in (("o1", "o3"), ("s1", "s3"), ("c1", "c3")):
            same_files(p(a + ".h5ad"), p(b + ".h5ad"))
        _, assign, _, _ = csv_assign(p("a1.csv"))
        names = ad.read_h5ad(p("o1.h5ad")).uns["SEACell"]["archetype_names"]
        # the default matrix: adata.raw (the reference sums raw counts)
        check_hard(p("s1.h5ad"), src.raw.X.tocsr(), assign, names, src.obs["bulk_labels"])
        check_hard(p("e1.h5ad"), src.raw.X.tocsr(), assign, names)
        check_hard(p("f1.h5ad"), np.asarray(src.X), assign, names)

        _, _, cj, cw = csv_assign(p("c1.csv"))
        size, want = ref_soft(src.raw.X, cj, cw, 5)
        s = ad.read_h5ad(p("c1.h5ad"))
        keep = size > 0
        assert s.n_obs == keep.sum() and hasattr(s.X, "tocsr")
        # the CSV's weights have 6 digits: the rule's thresholds are far from them here
        assert np.allclose(s.obs["Pseudo-sizes"], size[keep], rtol=1e-4)
        assert np.allclose(dense(s.X), want[keep], rtol=1e-4, atol=1e-6)
        check_errors(tmp)


rrt_testing.run(main)

"""ringrt.summarize_by_SEACell / summarize_by_soft_SEACell against a naive
numpy/scipy computation written here (the reference's recipe: sums over each
metacell's cells; soft: sparsify_assignments, then weighted means).

Run in one process and under mpirun (np 2 in CTest): every rank passes the
same whole AnnData; under mpirun the result also equals a one-rank run over
MPI.COMM_SELF bit for bit. Hard sums of integer counts are exact, so they
are compared exactly; soft means to 1e-12 relative. Bad inputs raise on
every rank.
"""
import warnings

import anndata
import numpy as np
import pandas as pd
import scipy.sparse as sp
from mpi4py import MPI

import ringrt
import rrt_testing
from ringrt import errors

N, G, M = 240, 30, 9
rng = np.random.default_rng(5)


def make() -> anndata.AnnData:
    """Counts (CSR X, a dense layer, a raw with more genes), metacell labels
    (a few cells without), cell types, soft weights in obsm."""
    counts = rng.poisson(0.7, size=(N, G)).astype(np.float32)
    obs = pd.DataFrame(index=[f"cell{i}" for i in range(N)])
    names = [f"mc{j}" for j in rng.permutation(M)]
    lab = np.array(names, dtype=object)[rng.integers(0, M, N)]
    lab[[3, 77, 150]] = None
    obs["SEACell"] = pd.Categorical(lab)
    obs["ct"] = pd.Categorical(rng.choice(["T", "B", "NK", "Mono"], N))
    a = anndata.AnnData(X=sp.csr_matrix(counts), obs=obs,
                        var=pd.DataFrame(index=[f"g{k}" for k in range(G)]))
    a.layers["dense"] = counts * 2.0
    raw = anndata.AnnData(X=sp.csr_matrix(rng.poisson(1.0, size=(N, G + 5)).astype(np.float64)),
                          obs=obs[[]], var=pd.DataFrame(index=[f"r{k}" for k in range(G + 5)]))
    a.raw = raw
    top = 4
    idx = np.stack([rng.choice(M, top, replace=False) for _ in range(N)]).astype(np.int64)
    w = rng.dirichlet(np.ones(top) * 0.6, size=N)
    idx[::7, 3], w[::7, 3] = -1, 0.0
    w /= w.sum(axis=1, keepdims=True)
    a.obsm["SEACell_soft_index"], a.obsm["SEACell_soft_weights"] = idx, w
    a.uns["SEACell"] = {"archetype_names": np.array([f"a{j}" for j in range(M)], dtype=object)}
    return a


def dense(x):
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def naive_hard(a, layer, celltype):
    mat = a.X if layer == "X" else a.raw.X if layer == "raw" else a.layers[layer]
    mat = dense(mat).astype(np.float64)
    col = a.obs["SEACell"]
    ms = [m for m in col.unique() if isinstance(m, str)]
    rows = np.array([mat[np.asarray(col == m)].sum(axis=0) for m in ms])
    maj, pur = [], []
    for m in ms:
        vc = a.obs.loc[np.asarray(col == m), celltype].value_counts(normalize=True, sort=False)
        best = vc.max()
        maj.append([c for c in vc.index if vc[c] == best][0])  # category order on ties
        pur.append(best)
    return ms, rows, maj, pur


def sparsify(A, thresh):
    """The reference's sparsify_assignments (A: cells x metacells)."""
    A = A.copy()
    A[A == 0] = np.nan
    mins = np.nanpercentile(A, 95, axis=1).reshape(-1, 1)
    A = np.nan_to_num(A)
    mins[mins > thresh] = thresh
    A[A < mins] = 0
    return A / A.sum(1, keepdims=True)


def naive_soft(a, A, layer, celltype, thresh=0.05):
    mat = dense(a.X if layer == "X" else a.raw.X if layer == "raw" else a.layers[layer])
    W = sparsify(np.asarray(A, dtype=np.float64).T, thresh)  # cells x metacells
    rows = (W.T @ mat.astype(np.float64)) / W.sum(0)[:, None]
    cats = list(a.obs[celltype].cat.categories)
    hist = np.array([[W[np.asarray(a.obs[celltype] == c), j].sum() for c in cats]
                     for j in range(W.shape[1])])
    maj = [cats[int(np.argmax(h))] for h in hist]
    return rows, W.sum(0), maj, hist.max(1) / hist.sum(1)


def a_from_obsm(a):
    A = np.zeros((M, N))
    idx, w = a.obsm["SEACell_soft_index"], a.obsm["SEACell_soft_weights"]
    for i in range(N):
        for t in range(idx.shape[1]):
            if idx[i, t] >= 0:
                A[idx[i, t], i] = w[i, t]
    return A


def same(x, y):
    """Bit for bit: type, shape and values."""
    assert type(x.X) is type(y.X) and x.shape == y.shape
    assert np.array_equal(dense(x.X), dense(y.X))
    assert x.obs.equals(y.obs) and list(x.obs_names) == list(y.obs_names)


def check(ctx):
    a = make()
    # hard, CSR raw (the default layer), with cell types
    h = ringrt.summarize_by_SEACell(a, celltype_label="ct", ctx=ctx)
    ms, rows, maj, pur = naive_hard(a, "raw", "ct")
    assert list(h.obs_names) == ms, (list(h.obs_names), ms)
    assert sp.isspmatrix_csr(h.X) and h.X.dtype == np.float64
    assert np.array_equal(h.X.toarray(), rows)  # integer counts: exact
    assert list(h.var_names) == list(a.raw.var_names)
    assert np.array_equal(h.layers["raw"].toarray(), rows)
    assert list(h.obs["ct"]) == maj and np.allclose(h.obs["ct_purity"], pur, rtol=0, atol=1e-15)
    # hard on X (CSR float32) and a dense layer
    hx = ringrt.summarize_by_SEACell(a, summarize_layer="X", ctx=ctx)
    assert np.array_equal(hx.X.toarray(), naive_hard(a, "X", "ct")[1])
    hd = ringrt.summarize_by_SEACell(a, summarize_layer="dense", ctx=ctx)
    assert isinstance(hd.X, np.ndarray) and np.array_equal(hd.X, naive_hard(a, "dense", "ct")[1])
    # soft from a dense A (the reference's model.A_), with cell types
    A = a_from_obsm(a)
    s = ringrt.summarize_by_soft_SEACell(a, A, celltype_label="ct", ctx=ctx)
    rows, psz, maj, pur = naive_soft(a, A, "raw", "ct")
    assert list(s.obs_names) == [str(j) for j in range(M)]
    assert sp.isspmatrix_csr(s.X)
    np.testing.assert_allclose(s.X.toarray(), rows, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(s.obs["Pseudo-sizes"], psz, rtol=1e-12)
    assert list(s.obs["celltype"]) == maj
    np.testing.assert_allclose(s.obs["celltype_purity"], pur, rtol=1e-12)
    # a sparse A, a dense layer and another threshold; A=None reads obsm
    s2 = ringrt.summarize_by_soft_SEACell(a, sp.csr_matrix(A), summarize_layer="dense",
                                          minimum_weight=0.2, ctx=ctx)
    assert isinstance(s2.X, np.ndarray)
    np.testing.assert_allclose(s2.X, naive_soft(a, A, "dense", "ct", 0.2)[0], rtol=1e-12,
                               atol=1e-14)
    s3 = ringrt.summarize_by_soft_SEACell(a, summarize_layer="X", ctx=ctx)
    assert list(s3.obs_names) == [f"a{j}" for j in range(M)]
    np.testing.assert_allclose(s3.X.toarray(), naive_soft(a, A, "X", "ct")[0], rtol=1e-12,
                               atol=1e-14)
    # errors on every rank
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: ringrt.summarize_by_SEACell(a, "nope", ctx=ctx), match="nope")
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: ringrt.summarize_by_SEACell(a, summarize_layer="zz", ctx=ctx),
                       match="zz")
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: ringrt.summarize_by_soft_SEACell(a, -A, ctx=ctx), match="weights")
    return h, hd, s, s2, s3


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ctx = ringrt.default_context()
        got = check(ctx)
        if MPI.COMM_WORLD.Get_size() > 1:
            with ringrt.Context(MPI.COMM_SELF, backend="cpu") as one:
                ref = check_one(one)
            for x, y in zip(got, ref):
                same(x, y)


def check_one(one):
    """The same inputs (a fresh generator with the same seed) on one rank."""
    global rng
    rng = np.random.default_rng(5)
    return check(one)


if __name__ == "__main__":
    rrt_testing.run(main)

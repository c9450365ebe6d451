#!/usr/bin/env python3
"""The reference SEACells' kernel matrix M against the graph convention ringrt
implements (docs/seacells.md, "The graph: `--knn`"; the table in docs/results.md), computed here with an
exact kNN in numpy, independent of ringrt and of the reference's code:

  n_neighbors = K (default 15); below 8,192 cells the K - 1 nearest other
  cells, at 8,192 and above the K nearest (scanpy's exact and pynndescent
  paths differ by the self column); bandwidth = distance to the (K // 2)-th
  nearest other cell; union symmetrisation; M_ij = exp(-|xi-xj|^2/(si sj)).

Runs with the reference's Python (SEACELLS_PYTHON, e.g. /work/sc-peer/venv);
reports the edges that differ (the reference's neighbour search is
approximate at 8,192 cells and above) and the largest entry difference on
the common edges, as one JSON line. --fixture PREFIX writes the reference's
rows (all rows for pbmc, --rows R evenly spaced rows that the exact
convention reproduces for a synthetic case) as PREFIX_{ptr,col,val,row}.npy
for tests/seacells/test_seacells_refgraph.c.

  python bench/seacells-ref-graph.py pbmc FILE.h5ad [--fixture P]
  python bench/seacells-ref-graph.py synth N [--fixture P --rows 64]
  python bench/seacells-ref-graph.py synth N --neighbours-only   (large N)
"""
import argparse
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

MASK = (1 << 64) - 1


def splitmix(z):
    """splitmix64 over a uint64 array (the C test's generator, bit for bit)."""
    with np.errstate(over="ignore"):
        z = (z + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(MASK)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def unit(z):
    return (splitmix(z) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def synth(n, d=10, blobs=30):
    """Blob b = i % blobs; centres in [0, 20)^d, noise in [-1, 1): exact doubles."""
    b = np.arange(n, dtype=np.uint64) % np.uint64(blobs)
    c = np.arange(d, dtype=np.uint64)
    centre = unit(b[:, None] * np.uint64(16) + c[None, :]) * 20.0
    i = np.arange(n, dtype=np.uint64)
    noise = unit(np.uint64(1000003) + i[:, None] * np.uint64(16) + c[None, :]) * 2.0 - 1.0
    return centre + noise


def exact_m(x, k):
    n = x.shape[0]
    cnt = k - 1 if n < 8192 else k
    x = x.astype(np.float64)
    nbr = np.empty((n, cnt), dtype=np.int64)
    nd = np.empty((n, cnt))
    sq = (x * x).sum(1)
    for a in range(0, n, 2048):
        blk = x[a:a + 2048]
        d2 = np.maximum(sq[a:a + 2048, None] + sq[None, :] - 2.0 * blk @ x.T, 0)
        d2[np.arange(len(blk)), np.arange(a, a + len(blk))] = np.inf
        idx = np.argpartition(d2, cnt, axis=1)[:, :cnt + 1]
        for r in range(len(blk)):  # exact distances and (d2, index) order
            cand = idx[r]
            dd = ((x[cand] - blk[r]) ** 2).sum(1)
            o = np.lexsort((cand, dd))[:cnt]
            nbr[a + r], nd[a + r] = cand[o], dd[o]
    sig = np.sqrt(nd[:, k // 2 - 1])
    rows = np.repeat(np.arange(n), cnt)
    g = sp.csr_matrix((np.ones(n * cnt), (rows, nbr.ravel())), shape=(n, n))
    g = ((g + g.T + sp.eye(n)) > 0).tocoo()
    d2 = ((x[g.row] - x[g.col]) ** 2).sum(1)
    return sp.csr_matrix((np.exp(-d2 / (sig[g.row] * sig[g.col])), (g.row, g.col)), shape=(n, n))


def patch():
    import tqdm
    import tqdm.notebook

    tqdm.notebook.tqdm = tqdm.tqdm  # the reference's progress bars need Jupyter widgets otherwise
    for cls in (sp.csr_array, sp.csc_array):  # scanpy calls getnnz, gone from scipy >= 1.14 arrays
        if not hasattr(cls, "getnnz"):
            cls.getnnz = lambda self, axis=None: self._getnnz(axis=axis)


def reference_m(x, k):
    patch()
    import anndata
    from SEACells.build_graph import SEACellGraph
    ad = anndata.AnnData(np.zeros((x.shape[0], 1), dtype=np.float32))
    ad.obsm["X_pca"] = x
    g = SEACellGraph(ad, "X_pca", n_cores=1)
    return sp.csr_matrix(g.rbf(k)), ad.obsp["distances"]


def neighbours_only(x, k):
    """Only scanpy's neighbour search (fast at any n): the union graphs'
    edges, the reference's against the exact convention's."""
    patch()
    import anndata
    import scanpy as sc
    ad = anndata.AnnData(np.zeros((x.shape[0], 1), dtype=np.float32))
    ad.obsm["X_pca"] = x
    t0 = time.time()
    sc.pp.neighbors(ad, use_rep="X_pca", n_neighbors=k, knn=True)
    dist = ad.obsp["distances"]
    t1 = time.time()
    n = x.shape[0]
    g = (dist != 0).astype(np.int8)
    g = ((g + g.T + sp.eye(n)) > 0).astype(np.int8)
    e = (exact_m(x, k) != 0).astype(np.int8)
    nn = np.diff(dist.indptr)
    return {"n": n, "n_neighbors": k, "ref_distances_per_row": [int(nn.min()), int(nn.max())],
            "edges_ref": int(g.sum()), "edges_only_ref": int((g - e > 0).sum()),
            "edges_only_exact": int((e - g > 0).sum()),
            "rows_edges_differing": int((np.asarray(abs(g - e).sum(1)).ravel() > 0).sum()),
            "ref_neighbors_s": round(t1 - t0, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["pbmc", "synth"])
    ap.add_argument("arg")
    ap.add_argument("--knn", type=int, default=15)
    ap.add_argument("--fixture")
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--neighbours-only", action="store_true",
                    help="only scanpy's kNN against the exact one (no kernel, no fixture)")
    a = ap.parse_args()
    if a.kind == "pbmc":
        import anndata
        # float64, as ringrt reads it (the reference then computes in float64 too)
        x = np.asarray(anndata.read_h5ad(a.arg).obsm["X_pca"], dtype=np.float64)
    else:
        x = synth(int(a.arg))
    if a.neighbours_only:
        print(json.dumps({"case": a.kind, **neighbours_only(x, a.knn)}))
        return 0
    t0 = time.time()
    ref, dist = reference_m(x, a.knn)
    t1 = time.time()
    ex = exact_m(x, a.knn)
    ref.sort_indices(), ex.sort_indices()
    rp, ep = (ref != 0).astype(np.int8), (ex != 0).astype(np.int8)
    only_ref, only_ex = int((rp - ep > 0).sum()), int((ep - rp > 0).sum())
    common = rp.multiply(ep).tocoo()
    diff = np.abs(np.asarray(ref[common.row, common.col]).ravel() -
                  np.asarray(ex[common.row, common.col]).ravel())
    # rows the exact convention reproduces: the same edges and values (a
    # wrong neighbour moves its cell's bandwidth and so its neighbours' rows)
    dev = abs(ref - ex).max(axis=1).toarray().ravel()
    same_rows = np.flatnonzero((np.asarray((abs(rp - ep)).sum(1)).ravel() == 0) & (dev <= 1e-6))
    nn = np.diff(dist.indptr)
    out = {"case": a.kind, "n": int(x.shape[0]), "n_neighbors": a.knn,
           "ref_distances_per_row": [int(nn.min()), int(nn.max())],
           "edges_ref": int(rp.sum()), "edges_only_ref": only_ref, "edges_only_exact": only_ex,
           "rows_differing": int(x.shape[0] - len(same_rows)),
           "rows_edges_differing": int((np.asarray((abs(rp - ep)).sum(1)).ravel() > 0).sum()),
           "max_abs_diff_common": float(diff.max()), "ref_graph_s": round(t1 - t0, 2)}
    print(json.dumps(out))
    if a.fixture:
        rows = np.arange(x.shape[0]) if a.kind == "pbmc" else \
            same_rows[np.linspace(0, len(same_rows) - 1, a.rows).astype(int)]
        sub = ref[rows]
        np.save(a.fixture + "_row.npy", rows.astype(np.int32))
        np.save(a.fixture + "_ptr.npy", sub.indptr.astype(np.int32))
        np.save(a.fixture + "_col.npy", sub.indices.astype(np.int32))
        np.save(a.fixture + "_val.npy", sub.data.astype(np.float64))


if __name__ == "__main__":
    sys.exit(main())

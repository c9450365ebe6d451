"""The reference SEACells' Python surface on ringrt (python/ringrt/core.py,
evaluate.py, plot.py) against the reference's definitions, re-derived here
with numpy/scipy (the reference package is not installed in CI): the
kernel M, A_ and B_ on the simplex, RSS_iters = |M - M B A|_F, step(),
get_archetype_matrix() = B^T M M^T, hard and soft assignments, saved files,
and compactness / separation / get_density on palantir's diffusion
components computed independently here. Under mpirun (np 2) every result
must also be the same bits as a one-rank model (MPI.COMM_SELF) on each rank.

argv: the pbmc68k_reduced .h5ad.
"""
from __future__ import annotations

import os
import sys
import tempfile
import warnings

import matplotlib

matplotlib.use("Agg")

import anndata  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from mpi4py import MPI  # noqa: E402

import ringrt  # noqa: E402
import ringrt as SEACells  # noqa: E402,N812 - the notebooks' spelling
from rrt_testing import raises, run  # noqa: E402

K = 9  # pbmc68k_reduced: 700 cells, about 75 per metacell as the tutorial picks


def dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def reference_kernel(x, n_neighbors=15, graph="union"):
    """build_graph.rbf: scanpy's exact kNN (n_neighbors - 1 other cells),
    bandwidth s_i = distance to the (n_neighbors // 2)-th nearest other
    cell, the self-including 0/1 graph symmetrised, M_ij = exp(-d2 / (s_i s_j))."""
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    n = len(x)
    np.fill_diagonal(d2, np.inf)
    nbr = np.argsort(d2, axis=1, kind="stable")[:, :n_neighbors - 1]
    sig = np.sqrt(np.take_along_axis(d2, nbr, 1)[:, n_neighbors // 2 - 1])
    g = np.zeros((n, n), dtype=bool)
    g[np.repeat(np.arange(n), n_neighbors - 1), nbr.ravel()] = True
    g |= np.eye(n, dtype=bool)
    g = (g | g.T) if graph == "union" else (g & g.T)
    np.fill_diagonal(d2, 0.0)
    return np.where(g, np.exp(-d2 / np.outer(sig, sig)), 0.0)


def palantir_dc(x, n_eigs):
    """palantir.utils.run_diffusion_maps(knn=30) + determine_multiscale_space:
    29 nearest other cells (scanpy's exact convention), adaptive width = the
    10th of them, W_ij = exp(-d_ij / w_i), kernel W + W^T, eigenvectors of the
    row-normalised kernel (here exactly, by a dense symmetric eigensolve of
    D^-1/2 K D^-1/2), unit norm, components 1..n_eigs-1 times l / (1 - l)."""
    n = len(x)
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    nbr = np.argsort(d, axis=1, kind="stable")[:, :29]
    dn = np.take_along_axis(d, nbr, 1)
    width = np.sort(dn, axis=1)[:, 9]
    w = np.zeros((n, n))
    w[np.repeat(np.arange(n), 29), nbr.ravel()] = np.exp(-(dn / width[:, None])).ravel()
    kern = w + w.T
    deg = kern.sum(1)
    s = kern / np.sqrt(np.outer(deg, deg))
    vals, u = np.linalg.eigh(s)
    order = np.argsort(vals)[::-1][:n_eigs]
    vals, v = vals[order], u[:, order] / np.sqrt(deg)[:, None]
    v /= np.linalg.norm(v, axis=0)
    return v[:, 1:] * (vals[1:] / (1 - vals[1:]))


def check_kernel(model, x):
    m = model.kernel_matrix
    assert sp.issparse(m) and m.shape == (700, 700)
    # exact distances both ways: the same formula, to rounding
    np.testing.assert_allclose(m.toarray(), reference_kernel(x), rtol=1e-12, atol=1e-15)
    assert (m != m.T).nnz == 0, "M must be symmetric bit for bit"
    kk = model.K
    np.testing.assert_allclose(dense(kk), m.toarray() @ m.toarray().T, rtol=1e-12, atol=1e-14)


def rss_of(model, a, b):
    m = model.kernel_matrix.toarray()
    return float(np.linalg.norm(m - m @ dense(b) @ dense(a)))


def check_state(model, ad):
    a, b = model.A_, model.B_
    assert isinstance(a, np.ndarray) and a.shape == (K, 700), (type(a), a.shape)
    assert isinstance(b, np.ndarray) and b.shape == (700, K)
    assert (a >= 0).all() and (b >= 0).all()
    np.testing.assert_allclose(a.sum(0), 1.0, atol=1e-12)  # columns on the simplex
    np.testing.assert_allclose(b.sum(0), 1.0, atol=1e-12)
    # RSS_iters[-1] is |M - M B A|_F of the current A and B (trace form in C: rounding)
    np.testing.assert_allclose(rss_of(model, a, b), model.RSS_iters[-1], rtol=1e-10)
    hard = model.get_hard_assignments()
    assert list(hard.columns) == ["SEACell"] and hard.index.equals(ad.obs_names)
    want = [f"SEACell-{j}" for j in a.argmax(0)]
    assert list(hard["SEACell"].astype(str)) == want
    assert list(ad.obs["SEACell"].astype(str)) == want
    # the reference's loop: 5 x (argmax, take, set to -1), named by B's argmax cells
    labels, weights = model.get_soft_assignments()
    names = np.asarray(ad.obs_names[b.argmax(0)])
    at = a.T.copy()
    for t in range(5):
        j = at.argmax(1)
        assert (labels[t].to_numpy() == names[j]).all(), f"soft label {t}"
        assert np.array_equal(weights[:, t], at[np.arange(700), j]), f"soft weight {t}"
        at[np.arange(700), j] = -1
    z = model.get_archetype_matrix()  # Z = B^T K, K = M M^T
    m = model.kernel_matrix.toarray()
    np.testing.assert_allclose(dense(z), b.T @ m @ m.T, rtol=1e-10, atol=1e-13)


def check_step(model, ad):
    before = model.RSS_iters
    model.step()
    after = model.RSS_iters
    assert len(after) == len(before) + 1 and after[:-1] == before, "step adds one RSS value"
    check_state(model, ad)


def check_phases_equal_run(model, ad):
    """fit(T, T) = ringrt.seacells(init='waypoint', T iterations): the phased
    C API (create, initialize, step x T) gives rrt_seacells_run's bits."""
    t = len(model.RSS_iters) - 1
    copy = ad.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = ringrt.seacells(copy, K, init="waypoint", min_iter=t, max_iter=t, eps=0.0,
                            ctx=model.ctx)
    assert list(r.rss) == model.RSS_iters, (list(r.rss), model.RSS_iters)
    assert np.array_equal(r.archetypes, model.archetypes)
    assert np.array_equal(r.assignments, dense(model.A_).argmax(0))


def check_evaluate(ad, x):
    dc = palantir_dc(x, 10)
    lab = ad.obs["SEACell"].astype(str).to_numpy()
    groups = sorted(set(lab))
    comp = SEACells.evaluate.compactness(ad, "X_pca")
    assert list(comp.columns) == ["compactness"] and list(comp.index) == groups
    want = [dc[lab == g].var(axis=0, ddof=1).mean() for g in groups]
    # the library's eigenvectors are converged to residual 1e-9, the dense
    # eigh here to ~1e-15; with eigengaps of ~1e-2 the components agree to
    # ~1e-7 relative: 1e-5 leaves room and still fails on any other formula
    np.testing.assert_allclose(comp["compactness"].to_numpy(), want, rtol=1e-5)
    cen = np.array([dc[lab == g].mean(0) for g in groups])
    d = np.sqrt(((cen[:, None] - cen[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    for nth in (1, 2):
        sep = SEACells.evaluate.separation(ad, "X_pca", nth_nbr=nth)
        assert list(sep.columns) == ["separation"] and list(sep.index) == groups
        np.testing.assert_allclose(sep["separation"].to_numpy(), np.sort(d, 1)[:, nth - 1],
                                   rtol=1e-5)
    # cluster=: only metacells whose nth neighbour has the same majority label
    sep = SEACells.evaluate.separation(ad, "X_pca", nth_nbr=1, cluster="bulk_labels")
    major = ad.obs.groupby(lab, observed=True)["bulk_labels"].agg(
        lambda v: v.value_counts().index[0])
    nn = np.argsort(d, 1, kind="stable")[:, 0]
    keep = [g for i, g in enumerate(groups) if major[g] == major[groups[nn[i]]]]
    assert list(sep.index) == keep, (list(sep.index), keep)
    dens = SEACells.evaluate.get_density(ad, "X_pca", nth_neighbor=150)
    dc8 = palantir_dc(x, 8)
    dd = np.sqrt(((dc8[:, None] - dc8[None]) ** 2).sum(-1))
    np.fill_diagonal(dd, np.inf)
    np.testing.assert_allclose(dens["density"].to_numpy(), 1 / np.sort(dd, 1)[:, 149], rtol=1e-5)
    assert dens.index.equals(ad.obs_names)
    pur = SEACells.evaluate.compute_celltype_purity(ad, "bulk_labels")
    for g in groups:
        vc = ad.obs["bulk_labels"][lab == g].value_counts()
        assert pur.loc[g, "bulk_labels"] == vc.index[0]
        assert pur.loc[g, "bulk_labels_purity"] == vc.iloc[0] / vc.sum()
    return comp, sep


def check_files_and_plots(model, ad):
    with tempfile.TemporaryDirectory() as tmp:
        out = MPI.COMM_WORLD.bcast(tmp if MPI.COMM_WORLD.rank == 0 else None)
        model.save_assignments(out)
        model.plot_convergence(save_as=os.path.join(out, "rss.png"), show=False)
        import scipy.stats
        ad.obs["Metacell_Entropy"] = scipy.stats.entropy(model.A_)
        if MPI.COMM_WORLD.rank == 0:
            assert (sp.load_npz(os.path.join(out, "kernel_matrix.npz")) != model.kernel_matrix).nnz == 0
            assert np.array_equal(sp.load_npz(os.path.join(out, "A.npz")).toarray(), model.A_.T)
            assert np.array_equal(sp.load_npz(os.path.join(out, "B.npz")).toarray(), model.B_)
            csv = pd.read_csv(os.path.join(out, "SEACells.csv"), index_col=0)
            assert list(csv["SEACell"]) == list(model.get_hard_assignments()["SEACell"])
            assert os.path.getsize(os.path.join(out, "rss.png")) > 1000
            ax = SEACells.plot.plot_assignment_entropy(ad, save_as=os.path.join(out, "e.png"),
                                                       show=False, bins=20)
            assert len(ax.patches) == 20 and os.path.getsize(os.path.join(out, "e.png")) > 1000
            ax = SEACells.plot.plot_2D(ad, key="X_umap", show=False, model=model)
            assert len(ax.collections) == 2
            SEACells.plot.plot_initialization(ad, model, show=False)
        MPI.COMM_WORLD.Barrier()
    bare = ad.copy()
    del bare.obs["Metacell_Entropy"]
    raises(ringrt.errors.InvalidArgument,
           lambda: SEACells.plot.plot_assignment_entropy(bare, show=False), match="Metacell_Entropy")


def check_errors(ad):
    raises(NotImplementedError, lambda: SEACells.core.SEACells(ad, "X_pca", K, l2_penalty=0.1))
    raises(NotImplementedError, lambda: SEACells.core.SEACells(ad, "X_pca", K, n_waypoint_eigs=5))
    m = SEACells.core.SEACells(ad, "X_pca", K, verbose=False)
    raises(RuntimeError, m.step, match="construct_kernel_matrix")
    raises(ringrt.errors.InvalidArgument, lambda: m.add_precomputed_kernel_matrix(np.eye(7)),
           match="(700,700)")
    raises(ValueError, lambda: m.construct_kernel_matrix(graph_construction="both"),
           match="union")
    raises(ValueError, lambda: m.fit(max_iter=5, min_iter=10), match="maximum")
    raises(ringrt.errors.InvalidArgument,
           lambda: SEACells.core.SEACells(ad, "X_nope", K).construct_kernel_matrix(),
           match="X_nope")
    m.construct_kernel_matrix()
    raises(RuntimeError, m.step, match="initialize")
    raises(RuntimeError, lambda: m.A_, match="initialize")
    m.initialize_archetypes()
    raises(ringrt.errors.InvalidArgument, lambda: m.initialize(initial_archetypes=[0, 1]),
           match="n_SEACells")


def check_sparse(ad, dense_model):
    """use_sparse=True and a dense A_ past DENSE_LIMIT: the same values as CSR."""
    m = SEACells.core.SEACells(ad, "X_pca", K, use_sparse=True, verbose=False)
    m.fit(min_iter=3, max_iter=3, initial_archetypes=dense_model.archetypes)
    assert sp.issparse(m.A_) and sp.issparse(m.B_) and sp.issparse(m.get_archetype_matrix())
    assert m.A_.shape == (K, 700) and m.B_.shape == (700, K)
    limit = SEACells.core.DENSE_LIMIT
    try:
        SEACells.core.DENSE_LIMIT = 100  # the module attribute decides for every model
        assert sp.issparse(dense_model.A_)
    finally:
        SEACells.core.DENSE_LIMIT = limit
    assert isinstance(dense_model.A_, np.ndarray)
    # a restart from the same archetypes repeats the first 3 steps' bits
    again = SEACells.core.SEACells(ad, "X_pca", K, verbose=False)
    again.fit(min_iter=3, max_iter=3, initial_archetypes=dense_model.archetypes)
    assert again.RSS_iters == m.RSS_iters
    np.testing.assert_array_equal(dense(m.A_), again.A_)
    # fit again on the same handle: initialize restarts the state from the
    # kept archetypes (RSS history of one value, then the same steps)
    again.fit(min_iter=3, max_iter=3)
    assert again.RSS_iters == m.RSS_iters
    np.testing.assert_array_equal(dense(m.A_), again.A_)
    # intersection: the reference's graph, and a run on it
    m.construct_kernel_matrix(graph_construction="intersection")
    x = np.asarray(ad.obsm["X_pca"], dtype=np.float64)
    np.testing.assert_allclose(m.kernel_matrix.toarray(), reference_kernel(x, graph="inter"),
                               rtol=1e-12, atol=1e-15)
    m.fit(min_iter=2, max_iter=2)
    np.testing.assert_allclose(rss_of(m, m.A_, m.B_), m.RSS_iters[-1], rtol=1e-10)


def check_given_kernel(ad, model):
    """add_precomputed_kernel_matrix: the built M given back repeats the
    model's bits; a kernel without its diagonal gives RSS_iters =
    |M - M B A|_F of that kernel; an asymmetric one is refused."""
    given = SEACells.core.SEACells(ad, "X_pca", K, verbose=False)
    given.add_precomputed_kernel_matrix(model.kernel_matrix)
    t = len(model.RSS_iters) - 1
    given.fit(min_iter=t, max_iter=t)
    assert given.RSS_iters == model.RSS_iters and np.array_equal(given.A_, model.A_)
    m = model.kernel_matrix.toarray()
    np.fill_diagonal(m, 0.0)
    given.add_precomputed_kernel_matrix(m)
    assert (given.kernel_matrix != sp.csr_matrix(m)).nnz == 0
    given.fit(min_iter=3, max_iter=3, initial_archetypes=model.archetypes)
    np.testing.assert_allclose(np.linalg.norm(m - m @ given.B_ @ given.A_), given.RSS_iters[-1],
                               rtol=1e-10)
    m[0, 5] += 0.25
    raises(ringrt.RingrtError, lambda: given.add_precomputed_kernel_matrix(m),  # rank 0's entry:
           match="not symmetric")  # InvalidArgument there, RemoteError on the other ranks


def same_as_one_rank(model, ad, comp, sep):
    """np > 1: a one-rank model on each rank gives the same bits."""
    solo = ringrt.Context(MPI.COMM_SELF)
    one = SEACells.core.SEACells(ad.copy(), "X_pca", K, convergence_epsilon=1e-5, verbose=False,
                                 ctx=solo)
    one.fit(min_iter=10, max_iter=50)
    assert one.RSS_iters == model.RSS_iters
    assert np.array_equal(one.A_, model.A_) and np.array_equal(one.B_, model.B_)
    assert (one.kernel_matrix != model.kernel_matrix).nnz == 0
    ad1 = ad.copy()
    ad1.obs["SEACell"] = one.get_hard_assignments()["SEACell"]
    c1 = SEACells.evaluate.compactness(ad1, "X_pca", ctx=solo)
    assert c1.equals(comp), (c1, comp, ad1.obs["SEACell"].dtype)
    assert SEACells.evaluate.separation(ad1, "X_pca", nth_nbr=1, cluster="bulk_labels",
                                        ctx=solo).equals(sep)
    solo.close()


def main() -> None:
    warnings.simplefilter("ignore", RuntimeWarning)  # short fits on purpose: not converged
    ad = anndata.read_h5ad(sys.argv[1])
    x = np.asarray(ad.obsm["X_pca"], dtype=np.float64)
    # the tutorial's steps
    model = SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=K, n_waypoint_eigs=10,
                                   convergence_epsilon=1e-5, verbose=False)
    model.construct_kernel_matrix()
    check_kernel(model, x)
    model.initialize_archetypes()
    assert model.archetypes.shape == (K,) and len(set(model.archetypes)) == K
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model.fit(min_iter=10, max_iter=50)
    assert len(model.RSS_iters) >= 11
    check_state(model, ad)
    check_phases_equal_run(model, ad)
    check_given_kernel(ad.copy(), model)  # its fits write their own obs["SEACell"]
    comp, sep = check_evaluate(ad, x)
    if MPI.COMM_WORLD.size > 1:
        same_as_one_rank(model, ad, comp, sep)
    check_step(model, ad)
    check_files_and_plots(model, ad)
    check_sparse(ad, model)
    check_errors(ad)


if __name__ == "__main__":
    run(main)

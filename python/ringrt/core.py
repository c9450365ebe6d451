"""The reference SEACells' Python surface (``SEACells.core``), computed by
ringrt: ``import ringrt as SEACells`` and a notebook's
``SEACells.core.SEACells(ad, build_kernel_on="X_pca", n_SEACells=90)``,
``model.construct_kernel_matrix()``, ``model.fit()``, ``model.A_`` .. run as
they do with the reference package (dpeerlab/SEACells 0.3.3), on the C
library's distributed state (docs/seacells.md, "The reference's model").

The phases map onto the C API: ``construct_kernel_matrix`` is
``rrt_seacells_create`` (kNN graph, kernel M), ``initialize_archetypes`` /
``initialize`` are ``rrt_seacells_initialize`` (archetypes, A0, RSS_0),
``step`` is ``rrt_seacells_step(1)``. Matrices (``A_``, ``B_``,
``kernel_matrix``) are read out of the handle and assembled on every rank.

Under mpirun every rank builds the same model from the same whole AnnData,
and calls the same methods in the same order: the methods and the matrix
attributes (``A_``, ``kernel_matrix``, ..) are collective.
"""
from __future__ import annotations

import ctypes
import warnings
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import numpy as np

from . import errors
from ._coll import allgather_ints, allgather_rows
from ._lib import P, c_int, c_int64, c_void_p, declare, lib
from .context import Context, default_context
from .metacells import (_FINGERPRINT, _INITS, _OPTIONS_MAGIC, _Options, _agree_same_input,
                        _digest, _integral, _is_int, _validate)
from .summary import _Matrix
from .summary import summarize_by_SEACell, summarize_by_soft_SEACell  # noqa: F401 - SEACells.core's

if TYPE_CHECKING:
    import anndata
    import pandas
    import scipy.sparse

_OP = "ringrt.core.SEACells"

#: A_, B_ and get_archetype_matrix() are numpy arrays up to this many entries
#: (128 MiB of float64; the reference's default dense model), scipy CSR above
#: it (the reference's use_sparse=True model), and always with use_sparse=True.
DENSE_LIMIT = 1 << 24

declare({
    "rrt_seacells_create": (c_int, [c_void_p, c_int64, c_int, c_void_p, P(_Options), P(c_void_p)]),
    "rrt_seacells_create_with_kernel": (c_int, [c_void_p, c_int64, c_int, c_void_p, P(_Matrix),
                                                P(_Options), P(c_void_p)]),
    "rrt_seacells_initialize": (c_int, [c_void_p, c_void_p]),
    "rrt_seacells_step": (c_int, [c_void_p, c_int]),
    "rrt_seacells_local_cells": (c_int, [c_void_p, P(c_int64), P(c_int64)]),
    "rrt_seacells_local_a": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p]),
    "rrt_seacells_b": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p]),
    "rrt_seacells_local_kernel": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p]),
})


def _read_csr(h: int, fn: str, rows: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ptr, index, value) of one of the handle's sparse read-outs: a first
    call sizes it, a second fills it."""
    f = getattr(lib(), fn)
    ptr = np.zeros(rows + 1, dtype=np.int64)
    if f(h, ptr.ctypes.data, None, None) != errors.SUCCESS:
        raise errors.error_for(errors.INVALID_ARG, f"{fn} failed")
    idx = np.zeros(int(ptr[-1]), dtype=np.int32)
    val = np.zeros(int(ptr[-1]), dtype=np.float64)
    f(h, ptr.ctypes.data, idx.ctypes.data, val.ctypes.data)
    return ptr, idx, val


def _gather_csr(ctx: Context, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray,
                row_counts: np.ndarray, op: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every rank's block of sparse rows (the blocks in rank order), on every rank."""
    nnz = np.asarray([v[0] for v in allgather_ints(ctx, [len(idx)])], dtype=np.int64)
    ent = np.empty((len(idx), 2), dtype=np.int64)
    ent[:, 0], ent[:, 1] = idx, val.view(np.int64)
    every = allgather_rows(ctx, ent, nnz, op)
    lens = allgather_rows(ctx, np.diff(ptr).reshape(-1, 1), row_counts, op)[:, 0]
    gptr = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=gptr[1:])
    return gptr, every[:, 0].astype(np.int32), every[:, 1].copy().view(np.float64)


class SEACells:
    """The reference's SEACells model (``SEACells.core.SEACells``) on ringrt.

    Args (the reference's, in its order):
        ad: the AnnData (every rank passes the same whole one).
        build_kernel_on: the ``ad.obsm`` key of the coordinates (``"X_pca"``).
        n_SEACells: the number of metacells, 1..n_obs.
        use_gpu: accepted for drop-in use; the backend is the context's
            (``RINGRT_BACKEND``), not this flag.
        verbose: progress lines (the library's, on rank 0's stderr).
        n_waypoint_eigs: 10 (the only value ringrt's waypoint init takes;
            others raise NotImplementedError).
        n_neighbors: the kNN graph's n_neighbors (scanpy's convention), >= 2.
        convergence_epsilon: ``fit`` stops once the RSS changes by less than
            this times the initial RSS (after ``min_iter``).
        l2_penalty: 0 only (the reference's default; others raise
            NotImplementedError).
        max_franke_wolfe_iters: Frank-Wolfe steps per A and B update.
        use_sparse: True: ``A_``, ``B_`` and the archetype matrix are always
            scipy CSR (the reference's sparse model); False: numpy arrays up
            to :data:`DENSE_LIMIT` entries, CSR above.
        ctx: the ringrt context (default :func:`ringrt.default_context`).

    Raises:
        ringrt.errors.InvalidArgument: a bad AnnData or argument (on every rank).
        NotImplementedError: an option ringrt does not have.
    """

    def __init__(self, ad: "anndata.AnnData", build_kernel_on: str, n_SEACells: int,  # noqa: N803
                 use_gpu: bool = False, verbose: bool = True, n_waypoint_eigs: int = 10,
                 n_neighbors: int = 15, convergence_epsilon: float = 1e-3,
                 l2_penalty: float = 0, max_franke_wolfe_iters: int = 50,
                 use_sparse: bool = False, *, ctx: Optional[Context] = None):
        if n_waypoint_eigs != 10:
            raise NotImplementedError(f"n_waypoint_eigs = {n_waypoint_eigs!r}: ringrt's waypoint "
                                      "initialisation uses palantir's 10 eigenvectors only")
        if l2_penalty != 0:
            raise NotImplementedError(f"l2_penalty = {l2_penalty!r}: ringrt's Frank-Wolfe "
                                      "updates have no L2 penalty (only 0, the default)")
        self.ctx = ctx or default_context()
        if not isinstance(self.ctx, Context):
            raise TypeError(f"ctx must be a ringrt.Context, got {type(self.ctx).__name__}")
        # an integral float (n_SEACells=14.0) is taken as its int, as the reference does
        n_SEACells, n_neighbors = _integral(n_SEACells), _integral(n_neighbors)
        self.ad, self.build_kernel_on, self.k = ad, build_kernel_on, n_SEACells
        self.n_cells = int(getattr(ad, "n_obs", 0))
        self.use_gpu, self.verbose, self.use_sparse = use_gpu, verbose, use_sparse
        self.n_waypoint_eigs, self.n_neighbors = n_waypoint_eigs, n_neighbors
        self.waypoint_proportion = 1
        self.convergence_epsilon, self.l2_penalty = convergence_epsilon, l2_penalty
        self.max_FW_iter = max_franke_wolfe_iters
        self.convergence_threshold: Optional[float] = None
        self.kernel_matrix: Optional["scipy.sparse.csr_matrix"] = None
        self.archetypes: Optional[np.ndarray] = None
        self._h: Optional[int] = None
        self._fresh = False  # initialized and not stepped since
        self._cache: dict = {}
        self._initialized = False

    def __del__(self) -> None:
        self._release()

    def _release(self) -> None:
        """Free the handle (local: host memory only, no communication)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            try:
                lib().rrt_seacells_destroy(h)
            except Exception:  # noqa: BLE001 - at interpreter exit the library may be gone
                pass

    # ---- the kernel ---------------------------------------------------------------

    def add_precomputed_kernel_matrix(self, K: Any) -> None:  # noqa: N803 - the reference's name
        """Use the given kernel M (n x n, dense or scipy sparse) in place of
        the one built from ``build_kernel_on`` (collective; every rank passes
        the same K). M must be symmetric bit for bit: ringrt takes K = M M^T
        as M M (an error otherwise, naming an entry). The coordinates
        ``ad.obsm[build_kernel_on]`` are still read: the waypoint
        initialisation uses them, as the reference's does."""
        import scipy.sparse as sp
        n = self.n_cells
        shape = getattr(K, "shape", None)
        if shape != (n, n):
            raise errors.error_for(errors.INVALID_ARG,
                                   f"{_OP}: Dimension of kernel matrix must be n_cells = ({n},{n}), "
                                   f"not {shape}")
        m = sp.csr_matrix(K, dtype=np.float64, copy=True)
        m.sum_duplicates()
        m.sort_indices()
        self._create(self.n_neighbors, 0, m)

    def construct_kernel_matrix(self, n_neighbors: Optional[int] = None,
                                graph_construction: str = "union") -> None:
        """The kNN graph and the adaptive Gaussian kernel M (collective):
        ``kernel_matrix`` (scipy CSR, n x n, symmetric, unit diagonal).
        ``graph_construction``: "union" (an edge where either cell lists the
        other) or "intersection"/"intersect" (where both do)."""
        graphs = {"union": 0, "intersection": 1, "intersect": 1}  # rrt_seacells_graph
        if graph_construction not in graphs:
            raise ValueError(f"Parameter graph_construction = {graph_construction} is not valid. "
                             "Please select `union` or `intersection`")
        knn = self.n_neighbors if n_neighbors is None else n_neighbors
        self._create(knn, graphs[graph_construction], None)

    def _create(self, knn: Any, graph: int, given: Any) -> None:
        """rrt_seacells_create (given None) or _create_with_kernel (collective)."""
        x, _, _, problem = _validate(self.ad, self.build_kernel_on, None, "waypoint", self.k,
                                     (knn, 0, 0, 0, self.convergence_epsilon, self.max_FW_iter,
                                      1, "SEACell"))
        L, ctx = lib(), self.ctx
        n = self.n_cells if x is not None else 0
        first, count = c_int64(), c_int64()
        if not problem and L.rrt_seacells_partition(ctx.handle, n, ctypes.byref(first),
                                                    ctypes.byref(count)) != errors.SUCCESS:
            problem = (L.rrt_ctx_last_error(ctx.handle) or b"partition failed").decode()
        ctx.agree(problem or None, _OP)
        names = self.ad.obs_names
        kern = () if given is None else (given.indptr.astype(np.int64), given.indices, given.data)
        args = repr((self.build_kernel_on, self.k, knn, graph, self.convergence_epsilon,
                     self.max_FW_iter, None if given is None else _digest(*kern)))
        table = _agree_same_input(ctx, [n, x.shape[1], _digest(x.dtype.str.encode(), x),
                                        _digest("\0".join(map(str, names)).encode()),
                                        _digest(args.encode()), first.value, count.value],
                                  self.build_kernel_on)
        self._counts = table[:, _FINGERPRINT.index("count")]
        f, c = first.value, count.value
        x_local = np.ascontiguousarray(x[f:f + c], dtype=np.float64)
        # min_iter = max_iter = 0: fit() runs the reference's loop, one step at a time
        opt = _Options(ctypes.sizeof(_Options), _OPTIONS_MAGIC, self.k, knn, 0, _INITS["waypoint"],
                       None, 0, 0, self.convergence_epsilon, self.max_FW_iter,
                       int(bool(self.verbose)), graph)
        h = c_void_p()
        if given is None:
            ctx.check(L.rrt_seacells_create(ctx.handle, n, x.shape[1], x_local.ctypes.data,
                                            ctypes.byref(opt), ctypes.byref(h)),
                      "rrt_seacells_create")
        else:
            rows = given[f:f + c]
            ptr = np.ascontiguousarray(rows.indptr, dtype=np.int64)
            col = np.ascontiguousarray(rows.indices, dtype=np.int32)
            val = np.ascontiguousarray(rows.data, dtype=np.float64)
            mat = _Matrix(c, n, ptr.ctypes.data, col.ctypes.data, val.ctypes.data)
            ctx.check(L.rrt_seacells_create_with_kernel(ctx.handle, n, x.shape[1],
                                                        x_local.ctypes.data, ctypes.byref(mat),
                                                        ctypes.byref(opt), ctypes.byref(h)),
                      "rrt_seacells_create_with_kernel")
        self._release()
        self._h, self.n_neighbors = h.value, knn
        self.archetypes, self._initialized, self._fresh, self._cache = None, False, False, {}
        self.convergence_threshold = None
        import scipy.sparse as sp
        ptr, col, val = _gather_csr(ctx, *_read_csr(self._h, "rrt_seacells_local_kernel", c),
                                    self._counts, f"{_OP}: kernel")
        self.kernel_matrix = sp.csr_matrix((val, col, ptr), shape=(n, n))

    @property
    def K(self) -> "scipy.sparse.csr_matrix":  # noqa: N802 - the reference's attribute
        """M M^T (the reference precomputes it; ringrt never forms it, this
        is a scipy product on request)."""
        self._need_kernel("K")
        return (self.kernel_matrix @ self.kernel_matrix.T).tocsr()

    def _need_kernel(self, what: str) -> None:
        if self._h is None:
            raise RuntimeError(f"{what}: construct the kernel first: model.construct_kernel_matrix()")

    def _need_state(self, what: str) -> None:
        self._need_kernel(what)
        if not self._initialized:
            raise RuntimeError(f"{what}: no A and B yet: call model.initialize() or model.fit()")

    # ---- initialisation and iterations -------------------------------------------

    def initialize_archetypes(self) -> None:
        """The reference's waypoint-then-greedy archetypes (collective):
        sets ``archetypes`` (cell indices, n_SEACells values)."""
        self._need_kernel("initialize_archetypes")
        self._start(None)

    def _start(self, given: Optional[np.ndarray]) -> None:
        """rrt_seacells_initialize (collective)."""
        L = lib()
        self.ctx.check(L.rrt_seacells_initialize(self._h, None if given is None else
                                                 given.ctypes.data), "rrt_seacells_initialize")
        self.archetypes = np.array(L.rrt_seacells_archetypes(self._h)[:self.k], dtype=np.int64)
        self._initialized, self._fresh, self._cache = True, True, {}
        self.convergence_threshold = self.convergence_epsilon * self.RSS_iters[0]

    def initialize(self, initial_archetypes: Any = None, initial_assignments: Any = None) -> None:
        """B = the archetype cells, A0 and RSS_0 (collective): the given
        archetypes (n_SEACells cell indices), else ``archetypes`` when they
        are chosen, else :meth:`initialize_archetypes`'. A0 is one A update
        from A = 0 (deterministic; the reference starts from random weights),
        so ``initial_assignments`` is not taken (NotImplementedError)."""
        self._need_kernel("initialize")
        if initial_assignments is not None:
            raise NotImplementedError("initial_assignments: ringrt's A0 is the first A update "
                                      "from the archetypes (no given or random A0)")
        if initial_archetypes is not None:
            given = np.asarray(initial_archetypes).reshape(-1)
            problem = ""
            if given.dtype.kind not in "iu":
                problem = f"initial_archetypes: expected cell indices, got dtype {given.dtype}"
            elif len(given) != self.k:
                problem = (f"initial_archetypes has {len(given)} cells; this model has "
                           f"n_SEACells = {self.k}")
            self.ctx.agree(problem or None, _OP)
            given = np.ascontiguousarray(given, dtype=np.int64)
            sums = {v[0] for v in allgather_ints(self.ctx, [_digest(given)])}
            self.ctx.agree(None if len(sums) == 1 else "initial_archetypes differ between ranks "
                           "(every rank must pass the same cells)", _OP)
            self._start(np.ascontiguousarray(given, dtype=np.int64))
        elif self.archetypes is None:
            self._start(None)
        elif not self._fresh:
            self._start(np.ascontiguousarray(self.archetypes))

    def step(self) -> None:
        """One outer iteration (A update, B update, RSS) on the distributed
        state (collective); appends to ``RSS_iters`` and writes
        ``ad.obs['SEACell']``."""
        self._need_state("step")
        self.ctx.check(lib().rrt_seacells_step(self._h, 1), "rrt_seacells_step")
        self._fresh, self._cache = False, {}
        self.ad.obs["SEACell"] = self._hard_labels()

    def fit(self, max_iter: int = 100, min_iter: int = 10, initial_archetypes: Any = None,
            initial_assignments: Any = None) -> None:
        """The reference's fit (collective): the kernel if not built,
        :meth:`initialize`, then :meth:`step` until the RSS changes by less
        than ``convergence_threshold`` (at least ``min_iter``, at most
        ``max_iter`` steps; once met the test stays met, as the reference's
        loop has it). Writes ``ad.obs['SEACell']``; warns (RuntimeWarning)
        when not converged, where the reference raises it."""
        if not (_is_int(max_iter) and _is_int(min_iter) and 0 <= min_iter):
            raise errors.error_for(errors.INVALID_ARG, f"{_OP}: min_iter = {min_iter!r}, max_iter = "
                                         f"{max_iter!r}: need non-negative integers")
        if max_iter < min_iter:
            raise ValueError("The maximum number of iterations specified is lower than the "
                             "minimum number of iterations specified.")
        if self._h is None:
            self.construct_kernel_matrix()
        self.initialize(initial_archetypes, initial_assignments)
        converged, t = False, 0
        while (not converged and t < max_iter) or t < min_iter:
            t += 1
            self.step()
            rss = self.RSS_iters
            if abs(rss[-2] - rss[-1]) < self.convergence_threshold:
                converged = True
        self.ad.obs["SEACell"] = self._hard_labels()
        if not converged and self.ctx.rank == 0:
            warnings.warn("Warning: Algorithm has not converged - you may need to increase the "
                          "maximum number of iterations", RuntimeWarning, stacklevel=2)

    @property
    def RSS_iters(self) -> List[float]:  # noqa: N802 - the reference's attribute
        """|M - M B A|_F after initialisation and after each step since."""
        if self._h is None or not self._initialized:
            return []
        nr = c_int()
        p = lib().rrt_seacells_rss(self._h, ctypes.byref(nr))
        return [float(v) for v in p[:nr.value]]

    def plot_convergence(self, save_as: Optional[str] = None, show: bool = True) -> None:
        """RSS_iters over the iterations (rank 0 draws; the reference's plot)."""
        rss = self.RSS_iters
        if self.ctx.rank != 0:
            return
        import matplotlib.pyplot as plt
        plt.figure()
        plt.plot(rss)
        plt.title("Reconstruction Error over Iterations")
        plt.xlabel("Iterations")
        plt.ylabel("Squared Error")
        if save_as is not None:
            plt.savefig(save_as, dpi=150)
        if show:
            plt.show()
        plt.close()

    # ---- the matrices --------------------------------------------------------------

    def _a_csc(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All of A as CSC (column i = cell i), on every rank (collective)."""
        if "a" not in self._cache:
            self._need_state("A_")
            first, count = c_int64(), c_int64()
            lib().rrt_seacells_local_cells(self._h, ctypes.byref(first), ctypes.byref(count))
            self._cache["a"] = _gather_csr(self.ctx, *_read_csr(self._h, "rrt_seacells_local_a",
                                                                count.value),
                                           self._counts, f"{_OP}: A")
        return self._cache["a"]

    def _shape(self, m: "scipy.sparse.spmatrix") -> Any:
        """Dense or CSR, by use_sparse and DENSE_LIMIT."""
        dense = not self.use_sparse and m.shape[0] * m.shape[1] <= DENSE_LIMIT
        return m.toarray() if dense else m.tocsr()

    @property
    def A_(self) -> Any:  # noqa: N802 - the reference's attribute
        """The assignments, k x n: column i is cell i's weights over the
        metacells (on the simplex). numpy or scipy CSR (see use_sparse)."""
        import scipy.sparse as sp
        ptr, idx, w = self._a_csc()
        return self._shape(sp.csc_matrix((w, idx, ptr), shape=(self.k, self.n_cells)))

    @property
    def B_(self) -> Any:  # noqa: N802 - the reference's attribute
        """The archetypes as cell weights, n x k: column j is metacell j's
        convex combination of cells. numpy or scipy CSR (see use_sparse)."""
        import scipy.sparse as sp
        self._need_state("B_")
        ptr, cell, w = _read_csr(self._h, "rrt_seacells_b", self.k)
        return self._shape(sp.csc_matrix((w, cell, ptr), shape=(self.n_cells, self.k)))

    def get_archetype_matrix(self) -> Any:
        """Z = B^T K = (M B)^T M^T, k x n (the reference's ``Z_``), from the
        current B. numpy or scipy CSR (see use_sparse)."""
        import scipy.sparse as sp
        self._need_state("get_archetype_matrix")
        b = sp.csc_matrix(self.B_)
        m = self.kernel_matrix
        return self._shape(sp.csr_matrix((m @ b).T @ m.T))

    @property
    def Z_(self) -> Any:  # noqa: N802 - the reference's attribute
        return self.get_archetype_matrix()

    def _hard_codes(self) -> np.ndarray:
        """argmax of each A column, lowest metacell on ties (numpy's argmax,
        implicit zeros included, as scipy's)."""
        import scipy.sparse as sp
        ptr, idx, w = self._a_csc()
        a = sp.csc_matrix((w, idx, ptr), shape=(self.k, self.n_cells))
        return np.asarray(a.argmax(axis=0), dtype=np.int64).reshape(-1)

    def _hard_labels(self) -> "pandas.Categorical":
        import pandas as pd
        cats = [f"SEACell-{j}" for j in range(self.k)]
        return pd.Categorical.from_codes(self._hard_codes(), categories=cats)

    def get_hard_assignments(self) -> "pandas.DataFrame":
        """Cells x column ``SEACell``: ``"SEACell-<j>"``, j the argmax of the
        cell's A column (the reference's names; categories in metacell order)."""
        import pandas as pd
        df = pd.DataFrame({"SEACell": self._hard_labels()}, index=self.ad.obs_names.copy())
        df.index.name = "index"
        return df

    def get_hard_archetypes(self) -> "pandas.Index":
        """The obs name of each metacell's largest B weight (first on ties)."""
        import scipy.sparse as sp
        b = sp.csc_matrix(self.B_)
        return self.ad.obs_names[np.asarray(b.argmax(axis=0)).reshape(-1)]

    def get_soft_assignments(self) -> Tuple["pandas.DataFrame", np.ndarray]:
        """The reference's (labels, weights): per cell the 5 largest A weights
        (numpy argmax order: heaviest first, lowest metacell on ties; past a
        cell's nonzero weights, the lowest unused metacells with weight 0),
        labelled by :meth:`get_hard_archetypes`."""
        import pandas as pd
        import scipy.sparse as sp
        names = np.asarray(self.get_hard_archetypes(), dtype=object)
        ptr, idx, w = self._a_csc()
        at = sp.csr_matrix(sp.csc_matrix((w, idx, ptr), shape=(self.k, self.n_cells)).T)
        top = 5
        lab = np.zeros((self.n_cells, top), dtype=np.int64)
        wt = np.zeros((self.n_cells, top))
        step = max(1, (1 << 20) // max(self.k, 1))
        for c0 in range(0, self.n_cells, step):  # dense blocks of rows, as the reference's loop
            a = at[c0:c0 + step].toarray()
            rows = np.arange(a.shape[0])
            for t in range(top):
                j = a.argmax(1)
                lab[c0:c0 + len(rows), t], wt[c0:c0 + len(rows), t] = j, a[rows, j]
                a[rows, j] = -1
        labels = pd.DataFrame(names[lab])
        labels.index = self.ad.obs_names
        return labels, wt

    def save_assignments(self, outdir: str) -> None:
        """The reference's files in ``outdir`` (rank 0 writes; collective):
        ``kernel_matrix.npz`` (M), ``A.npz`` (A_ transposed, n x k), ``B.npz``
        (B_), all scipy sparse, and ``SEACells.csv`` (get_hard_assignments)."""
        import os
        import scipy.sparse as sp
        self._need_state("save_assignments")
        a, b, labels = sp.csr_matrix(self.A_).T.tocsr(), sp.csr_matrix(self.B_), \
            self.get_hard_assignments()
        if self.ctx.rank == 0:
            os.makedirs(outdir, exist_ok=True)
            sp.save_npz(os.path.join(outdir, "kernel_matrix.npz"), self.kernel_matrix)
            sp.save_npz(os.path.join(outdir, "A.npz"), a)
            sp.save_npz(os.path.join(outdir, "B.npz"), b)
            labels.to_csv(os.path.join(outdir, "SEACells.csv"))
        self.ctx.barrier()


__all__ = ["SEACells", "summarize_by_SEACell", "summarize_by_soft_SEACell", "DENSE_LIMIT"]

"""SEACells metacells of an AnnData object: ``ringrt.seacells`` (this module is
``ringrt.metacells`` so that the function keeps the name ``seacells``).

The computation is the C library's (``rrt_seacells_run``, docs/seacells.md):
this module validates the AnnData and the arguments on every rank, agrees on
the outcome, hands each rank's block of cells to the library as float64 and
writes the results back into the AnnData the scanpy way (``adata.obs``,
``adata.obsm``, ``adata.uns``).

Under mpirun every rank passes the same whole AnnData (as scanpy scripts
load the same file on every rank); each rank copies only its own block of
rows of ``adata.obsm[obsm]`` (``rrt_seacells_partition``) for the library,
and every rank gets the complete result.
"""
from __future__ import annotations

import ctypes
import hashlib
import numbers
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import errors
from ._lib import P, c_char_p, c_double, c_int, c_int64, c_size_t, c_void_p, declare, lib
from ._coll import allgather_rows
from .context import Context, default_context

if TYPE_CHECKING:  # anndata and pandas are imported on use, not by `import ringrt`
    import anndata
    import pandas

_OP = "ringrt.seacells"
_PHASES = ("knn", "kernel", "init", "update_a", "update_b", "rss")
_INITS = {"cssp": 0, "maxmin": 1, "waypoint": 3}  # rrt_seacells_init; 2 = given archetypes
_INIT_GIVEN = 2
_OPTIONS_MAGIC = 0x53454131


class _Options(ctypes.Structure):
    """rrt_seacells_options (include/ringrt/seacells.h)."""
    _fields_ = [("size", c_size_t), ("magic", ctypes.c_uint), ("n_metacells", c_int64),
                ("knn", c_int), ("seed", ctypes.c_uint64), ("init", c_int),
                ("archetypes", c_void_p), ("min_iter", c_int), ("max_iter", c_int),
                ("eps", c_double), ("fw_iter", c_int), ("verbose", c_int), ("graph", c_int)]


declare({
    "rrt_seacells_partition": (c_int, [c_void_p, c_int64, P(c_int64), P(c_int64)]),
    "rrt_seacells_run": (c_int, [c_void_p, c_int64, c_int, c_void_p, P(_Options), P(c_void_p)]),
    "rrt_seacells_destroy": (None, [c_void_p]),
    "rrt_seacells_n_metacells": (c_int64, [c_void_p]),
    "rrt_seacells_iterations": (c_int, [c_void_p]),
    "rrt_seacells_converged": (c_int, [c_void_p]),
    "rrt_seacells_rss": (P(c_double), [c_void_p, P(c_int)]),
    "rrt_seacells_archetypes": (P(c_int64), [c_void_p]),
    "rrt_seacells_local_assignments": (c_int, [c_void_p, c_int, c_void_p, c_void_p, c_void_p]),
    "rrt_seacells_metrics": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "rrt_seacells_seconds": (c_double, [c_void_p, c_char_p]),
})


@dataclass
class SEACellsModel:
    """The outcome of :func:`seacells`, the same on every rank.

    Metacell ``j`` is the archetype cell ``archetypes[j]``, named
    ``archetype_names[j]`` (its obs name, as the reference SEACells labels
    metacells). ``assignments[i]`` is cell ``i``'s metacell (argmax of its
    weights, lowest metacell on ties; -1 only for a cell with no weight),
    ``soft_index`` / ``soft_weights`` its ``n_top`` largest weights in
    decreasing order (padded with -1 / 0). ``rss`` is the residual
    ``|M - M B A|_F`` after initialisation and after each iteration
    (``iterations + 1`` values). ``compactness`` / ``separation`` are per
    metacell on the input coordinates (NaN where undefined, see
    docs/seacells.md). ``seconds`` holds this rank's time per phase
    (``knn``, ``kernel``, ``init``, ``update_a``, ``update_b``, ``rss``)
    and ``run``, the wall time of the library call.
    """
    n_metacells: int
    archetypes: np.ndarray
    archetype_names: List[str]
    assignments: np.ndarray
    soft_index: np.ndarray
    soft_weights: np.ndarray
    rss: np.ndarray
    iterations: int
    converged: bool
    compactness: np.ndarray
    separation: np.ndarray
    seconds: Dict[str, float]
    obs_names: List[str] = field(repr=False)
    key_added: str = "SEACell"
    ranks: int = 1
    backend: str = "cpu"

    @property
    def RSS_iters(self) -> List[float]:  # noqa: N802 - the reference's attribute name
        """The RSS trace as a list (the reference's ``model.RSS_iters``)."""
        return [float(v) for v in self.rss]

    def _names(self, index: np.ndarray) -> np.ndarray:
        """Metacell names of metacell indices (an object array; None for -1)."""
        return np.asarray(self.archetype_names + [None], dtype=object)[index]

    def labels(self) -> np.ndarray:
        """Each cell's metacell name (an object array; None for no metacell)."""
        return self._names(self.assignments)

    def get_hard_assignments(self) -> "pandas.DataFrame":
        """Cells x one column ``key_added``: the metacell name of each cell
        (the reference's ``model.get_hard_assignments()``)."""
        import pandas as pd
        return pd.DataFrame({self.key_added: self.labels()}, index=pd.Index(self.obs_names))

    def get_soft_assignments(self) -> Tuple["pandas.DataFrame", np.ndarray]:
        """The reference's ``model.get_soft_assignments()``: ``(labels, weights)``,
        a cells x ``n_top`` DataFrame (columns 0, 1, ..) of metacell names,
        heaviest first (None past a cell's last weight), and the matching
        cells x ``n_top`` array of weights."""
        import pandas as pd
        return (pd.DataFrame(self._names(self.soft_index), index=pd.Index(self.obs_names)),
                self.soft_weights.copy())


# ---- validation (local to each rank) ---------------------------------------------

def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _integral(v: Any) -> Any:
    """A float that holds an integer (14.0, np.float64(14)) as that int, as
    the reference's int() takes it; anything else unchanged (and checked
    later)."""
    if isinstance(v, numbers.Real) and not isinstance(v, (numbers.Integral, bool)) \
            and np.isfinite(v) and float(v).is_integer():
        return int(v)
    return v


def _coordinates(adata: Any, obsm: str, n_components: Optional[int]) -> Tuple[Any, str]:
    """adata.obsm[obsm] as a 2-D real array (leading n_components columns),
    or (None, problem)."""
    if not all(hasattr(adata, a) for a in ("obsm", "obs", "obs_names", "n_obs")):
        return None, f"expected an AnnData object, got {type(adata).__name__}"
    if not isinstance(obsm, str) or obsm not in adata.obsm:
        keys = ", ".join(repr(k) for k in adata.obsm.keys()) or "none"
        return None, (f"adata.obsm has no {obsm!r} (it has: {keys}); compute it, e.g. "
                      "sc.pp.pca(adata) for 'X_pca', or name another key with obsm=")
    x = adata.obsm[obsm]
    if hasattr(x, "toarray") and hasattr(x, "nnz"):
        return None, f"adata.obsm[{obsm!r}] is a sparse matrix; SEACells needs dense coordinates"
    x = x.to_numpy() if hasattr(x, "to_numpy") else np.asarray(x)
    if x.ndim != 2 or x.shape[0] != adata.n_obs:
        return None, (f"adata.obsm[{obsm!r}] has shape {x.shape}, expected "
                      f"({adata.n_obs}, dims): one row per cell")
    if x.dtype.kind not in "fiu":
        return None, f"adata.obsm[{obsm!r}] has dtype {x.dtype}; expected real numbers"
    dims = x.shape[1]
    if n_components is not None:
        if not _is_int(n_components) or not 1 <= n_components <= dims:
            return None, (f"n_components = {n_components!r} is out of range 1..{dims} "
                          f"(adata.obsm[{obsm!r}] has {dims} columns)")
        x = x[:, :n_components]
    if x.shape[1] < 1:
        return None, f"adata.obsm[{obsm!r}] has no columns"
    return x, ""


def _first_nonfinite(x: np.ndarray, obsm: str, names: Sequence[str]) -> str:
    """A problem naming the first row with NaN or Inf, or ''."""
    finite = np.isfinite(x)
    if finite.all():
        return ""
    row = int(np.flatnonzero(~finite.all(axis=1))[0])
    col = int(np.flatnonzero(~finite[row])[0])
    return (f"adata.obsm[{obsm!r}] row {row} (cell {names[row]!r}) has {x[row, col]} in "
            f"column {col}; remove or impute such cells first")


def _given_archetypes(init: Any, names: "pandas.Index", n_metacells: Optional[int]
                      ) -> Tuple[Optional[np.ndarray], str]:
    """init= as a list of cells (indices or obs names) -> global indices."""
    if not hasattr(init, "__iter__"):
        return None, f"init = {init!r}: expected 'cssp', 'maxmin', 'waypoint' or a list of archetype cells"
    cells = list(init)
    if not cells:
        return None, "init= is an empty list of archetype cells"
    if all(_is_int(c) for c in cells):
        idx = np.asarray(cells, dtype=np.int64)
        bad = np.flatnonzero((idx < 0) | (idx >= len(names)))
        if bad.size:
            return None, (f"init: archetype {int(bad[0])} is cell {int(idx[bad[0]])}, outside "
                          f"0..{len(names) - 1}")
    else:
        idx = names.get_indexer([str(c) for c in cells]).astype(np.int64)
        if (idx < 0).any():
            missing = cells[int(np.flatnonzero(idx < 0)[0])]
            return None, f"init: {missing!r} is not in adata.obs_names"
    if len(np.unique(idx)) != len(idx):
        return None, "init: the same cell is given twice as an archetype"
    if n_metacells is not None and n_metacells != len(idx):
        return None, f"n_metacells = {n_metacells} but init= gives {len(idx)} archetype cells"
    return idx, ""


def _check_options(n: int, n_metacells: Optional[int], knn: Any, seed: Any, min_iter: Any,
                   max_iter: Any, eps: Any, fw_iter: Any, n_top: Any, key_added: Any) -> str:
    """The first problem with the numeric arguments, or ''."""
    if n == 0:
        return "adata has no cells (n_obs = 0): nothing to group into metacells"
    if n_metacells is not None and (not _is_int(n_metacells) or not 1 <= n_metacells <= n):
        return f"n_metacells = {n_metacells!r} is out of range 1..{n} (adata has {n} cells)"
    others = (knn - 1 if n < 8192 else knn) if _is_int(knn) else 0  # as the library counts
    if not _is_int(knn) or knn < 2 or others + 1 > n:
        top = n if n < 8192 else n - 1
        return f"knn = {knn!r}: need an integer 2 <= knn <= {top} (n_obs = {n})"
    if not _is_int(seed) or not 0 <= seed < 2**64:
        return f"seed = {seed!r}: need an integer in 0..2^64-1"
    for name, v in (("min_iter", min_iter), ("max_iter", max_iter)):
        if not _is_int(v) or not 0 <= v < 2**31:
            return f"{name} = {v!r}: need a non-negative integer"
    if min_iter > max_iter:  # as the reference's fit() refuses it
        return f"min_iter = {min_iter} is above max_iter = {max_iter}"
    if not _is_int(fw_iter) or not 1 <= fw_iter < 2**31:
        return f"fw_iter = {fw_iter!r}: need a positive integer"
    if not isinstance(eps, numbers.Real) or not np.isfinite(eps) or eps < 0:
        return f"eps = {eps!r}: need a finite number >= 0"
    if not _is_int(n_top) or not 1 <= n_top <= n:  # past the metacells: padded (-1, 0)
        return f"n_top = {n_top!r} is out of range 1..{n} (adata has {n} cells)"
    if not isinstance(key_added, str) or not key_added:
        return f"key_added = {key_added!r}: need a non-empty string"
    return ""


def _validate(adata: Any, obsm: str, n_components: Optional[int], init: Any,
              n_metacells: Optional[int], options: tuple
              ) -> Tuple[Any, Optional[np.ndarray], Optional[int], str]:
    """This rank's inputs: (coordinates, given archetypes or None, n_metacells,
    problem or ''). The coordinates are C-contiguous in their own dtype."""
    x, problem = _coordinates(adata, obsm, n_components)
    if problem:
        return None, None, n_metacells, problem
    names, given = adata.obs_names, None
    if not names.is_unique:
        return None, None, n_metacells, ("adata.obs_names are not unique; call "
                                         "adata.obs_names_make_unique() first")
    if not isinstance(init, str):
        given, problem = _given_archetypes(init, names, n_metacells)
        n_metacells = len(given) if given is not None else n_metacells
    elif init not in _INITS:
        problem = f"init = {init!r}: expected 'cssp', 'maxmin', 'waypoint' or a list of archetype cells"
    problem = problem or _check_options(int(adata.n_obs), n_metacells, *options)
    if problem:
        return None, None, n_metacells, problem
    x = np.ascontiguousarray(x)  # a copy only for n_components (for the checksum)
    return x, given, n_metacells, _first_nonfinite(x, obsm, names)


# ---- agreement between ranks --------------------------------------------------------

def _digest(*parts: Any) -> int:
    """A 64-bit checksum of bytes-like parts (C-contiguous arrays are hashed in place)."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p)
    return int.from_bytes(h.digest(), "little", signed=True)


_FINGERPRINT = ("cells", "dims", "coordinates", "obs_names", "arguments", "first", "count")


def _mismatch(table: np.ndarray, obsm: str) -> str:
    """What differs between the ranks' fingerprints (rows), or ''."""
    for r in range(1, table.shape[0]):
        a, b = table[0], table[r]
        if a[0] != b[0] or a[1] != b[1]:
            return (f"adata differs between ranks: rank 0 has {a[0]} cells x {a[1]} dims in "
                    f"adata.obsm[{obsm!r}], rank {r} has {b[0]} x {b[1]}; every rank must pass "
                    "the same whole AnnData")
        for k, what in ((2, f"the coordinates adata.obsm[{obsm!r}]"), (3, "adata.obs_names"),
                        (4, "the arguments (n_metacells, knn, init, seed, iterations, eps, "
                            "fw_iter, n_top, key_added)")):
            if a[k] != b[k]:
                return (f"{what} differ between rank 0 and rank {r} (checksums {a[k]:#x}, "
                        f"{b[k]:#x}); every rank must pass the same whole AnnData and arguments")
    return ""


def _agree_same_input(ctx: Context, fingerprint: List[int], obsm: str) -> np.ndarray:
    """Gather every rank's fingerprint; every rank raises if they differ.
    Returns the table (ranks x fields)."""
    ones = np.ones(ctx.size, dtype=np.int64)
    table = allgather_rows(ctx, np.asarray([fingerprint], dtype=np.int64), ones, f"{_OP}: checking")
    ctx.agree(_mismatch(table, obsm) or None, _OP)
    return table


# ---- the run ------------------------------------------------------------------------

def _results(ctx: Context, h: int, x_local: np.ndarray, counts: np.ndarray, n_top: int
             ) -> Dict[str, Any]:
    """Everything of a finished run, complete on every rank."""
    L = lib()
    m = int(L.rrt_seacells_n_metacells(h))
    iters = int(L.rrt_seacells_iterations(h))
    nr = c_int()
    rss_p = L.rrt_seacells_rss(h, ctypes.byref(nr))
    rss = np.array(rss_p[:nr.value], dtype=np.float64)
    archetypes = np.array(L.rrt_seacells_archetypes(h)[:m], dtype=np.int64)
    comp, sep = np.empty(m), np.empty(m)
    ctx.check(L.rrt_seacells_metrics(ctx.handle, h, x_local.ctypes.data, comp.ctypes.data,
                                     sep.ctypes.data), "rrt_seacells_metrics")
    count = x_local.shape[0]
    # One record per cell: assignment, n_top metacells, n_top weights (as int64 bits).
    rec = np.zeros((count, 1 + 2 * n_top), dtype=np.int64)
    assign = np.zeros(count, dtype=np.int64)
    top_i = np.zeros((count, n_top), dtype=np.int64)
    top_w = np.zeros((count, n_top), dtype=np.float64)
    ctx.check(L.rrt_seacells_local_assignments(h, n_top, assign.ctypes.data, top_i.ctypes.data,
                                               top_w.ctypes.data), "rrt_seacells_local_assignments")
    rec[:, 0], rec[:, 1:1 + n_top], rec[:, 1 + n_top:] = assign, top_i, top_w.view(np.int64)
    every = allgather_rows(ctx, rec, counts, f"{_OP}: gathering the results")
    return dict(n_metacells=m, iterations=iters, converged=bool(L.rrt_seacells_converged(h)),
                rss=rss, archetypes=archetypes, compactness=comp, separation=sep,
                assignments=every[:, 0].copy(), soft_index=every[:, 1:1 + n_top].copy(),
                soft_weights=every[:, 1 + n_top:].copy().view(np.float64),
                seconds={p: float(L.rrt_seacells_seconds(h, p.encode())) for p in _PHASES})


def _write(adata: "anndata.AnnData", model: SEACellsModel, params: Dict[str, Any]) -> None:
    """The results into adata: obs[key] (categorical of metacell names), obsm
    (soft assignments), uns[key] (parameters, archetypes, RSS trace)."""
    import pandas as pd
    key = model.key_added
    cats = pd.Index(model.archetype_names)
    adata.obs[key] = pd.Categorical.from_codes(model.assignments, categories=cats)
    adata.obsm[f"{key}_soft_labels"] = pd.DataFrame(
        {f"{key}_{t}": pd.Categorical.from_codes(model.soft_index[:, t], categories=cats)
         for t in range(model.soft_index.shape[1])}, index=adata.obs_names)
    adata.obsm[f"{key}_soft_index"] = model.soft_index
    adata.obsm[f"{key}_soft_weights"] = model.soft_weights
    adata.uns[key] = {
        "params": params,
        "archetypes": model.archetypes,
        "archetype_names": np.asarray(model.archetype_names, dtype=object),
        "rss": model.rss,
        "iterations": model.iterations,
        "converged": model.converged,
        "compactness": model.compactness,
        "separation": model.separation,
    }


def seacells(adata: "anndata.AnnData", n_metacells: Optional[int] = None, obsm: str = "X_pca", *,
             knn: int = 15, init: Union[str, Sequence[Union[int, str]]] = "waypoint", seed: int = 0,
             min_iter: int = 10, max_iter: int = 100, eps: float = 1e-3, fw_iter: int = 50,
             n_top: int = 5, key_added: str = "SEACell", n_components: Optional[int] = None,
             ctx: Optional[Context] = None, verbose: bool = False) -> SEACellsModel:
    """SEACells metacells of the cells of ``adata``, computed by ringrt.

    Collective over ``ctx``: under mpirun every rank passes the same whole
    AnnData and the same arguments (checked: the number of cells and dims,
    a checksum of the coordinates, of the obs names and of the arguments);
    each rank hands the library only its own block of cells. In a single
    process (a notebook) the default context uses all the cores.

    Args:
        adata: the AnnData, in memory; its obs names must be unique
            (``adata.obs_names_make_unique()``).
        n_metacells: number of metacells (the reference's ``n_SEACells``);
            default ``max(1, n_obs // 75)``; at most ``n_obs``.
        obsm: the coordinates, ``adata.obsm[obsm]`` (the reference's
            ``build_kernel_on``), cells x dims, dense and finite.
        knn: the reference's (scanpy's) ``n_neighbors``; the same graph at
            every size: below 8,192 cells each cell's list holds the
            ``knn - 1`` nearest other cells, from 8,192 on the ``knn``
            nearest (as scanpy's exact and pynndescent paths do); bandwidth =
            distance to the ``knn // 2``-th nearest other cell.
        init: ``"waypoint"`` (the default, as the reference's: max-min
            waypoints on diffusion components, then greedy CSSP for the
            rest; needs at least 30 cells), ``"cssp"`` (deterministic
            greedy column subset selection on the kernel), ``"maxmin"``
            (seeded farthest-point sampling), or the archetype cells
            themselves (obs names or indices).
        seed: the seed of ``init="maxmin"``.
        min_iter: at least this many iterations.
        max_iter: at most this many iterations.
        eps: converged when the RSS changes by less than ``eps`` times the
            initial RSS (the reference's ``convergence_epsilon``).
        fw_iter: Frank-Wolfe steps per A and B update.
        n_top: soft assignments kept per cell (the reference keeps 5), 1..n_obs.
        key_added: the name of what is written into adata (see below).
        n_components: use only the leading columns of ``adata.obsm[obsm]``
            (scanpy's ``n_pcs``); default all.
        ctx: the ringrt context (default :func:`ringrt.default_context`,
            over ``MPI.COMM_WORLD``).
        verbose: a progress line per iteration on rank 0 (the library's stderr).

    Returns:
        The :class:`SEACellsModel`, complete on every rank.

    Writes into ``adata`` (on every rank):
        ``obs[key_added]``: each cell's metacell, a categorical whose
        categories are the archetype cells' obs names in metacell order;
        ``obsm[key_added + "_soft_labels"]``: a DataFrame with columns
        ``key_added + "_0"``.. (the ``n_top`` heaviest metacells' names, largest
        first; missing where a cell has fewer); ``obsm[key_added +
        "_soft_weights"]`` and ``obsm[key_added + "_soft_index"]``: their
        weights and metacell indices (padded with 0 and -1);
        ``uns[key_added]``: the parameters, archetypes, RSS trace,
        iterations, convergence, compactness and separation.

    Raises:
        ringrt.errors.InvalidArgument: a missing or malformed ``obsm`` key,
            a NaN/Inf coordinate (the message names the row and cell), an
            argument out of range, or an AnnData or arguments that differ
            between ranks; raised on every rank, before any computation.
        ringrt.errors.RingrtError: the library failed (the message says
            where and why), also on every rank.
    """
    ctx = ctx or default_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a ringrt.Context, got {type(ctx).__name__}")
    n_metacells, knn, seed, min_iter, max_iter, fw_iter, n_top, n_components = map(
        _integral, (n_metacells, knn, seed, min_iter, max_iter, fw_iter, n_top, n_components))
    x, given, n_metacells, problem = _validate(adata, obsm, n_components, init, n_metacells,
                                               (knn, seed, min_iter, max_iter, eps, fw_iter,
                                                n_top, key_added))
    n = int(adata.n_obs) if x is not None else 0
    names = adata.obs_names if x is not None else None
    L = lib()
    first, count = c_int64(), c_int64()
    if not problem and L.rrt_seacells_partition(ctx.handle, n, ctypes.byref(first),
                                                ctypes.byref(count)) != errors.SUCCESS:
        problem = (L.rrt_ctx_last_error(ctx.handle) or b"rrt_seacells_partition failed").decode()
    ctx.agree(problem or None, _OP)

    params = dict(obsm=obsm, n_metacells=int(n_metacells or max(1, n // 75)), knn=int(knn),
                  init=init if isinstance(init, str) else "given", seed=int(seed),
                  min_iter=int(min_iter), max_iter=int(max_iter), eps=float(eps),
                  fw_iter=int(fw_iter), n_top=int(n_top), n_components=int(x.shape[1]))
    args = repr((sorted(params.items()), key_added, None if given is None else given.tolist()))
    table = _agree_same_input(ctx, [n, x.shape[1], _digest(x.dtype.str.encode(), x),
                                    _digest("\0".join(map(str, names)).encode()),
                                    _digest(args.encode()), first.value, count.value], obsm)

    # Only this rank's block is converted to float64 for the library.
    x_local = np.ascontiguousarray(x[first.value:first.value + count.value], dtype=np.float64)
    opt = _Options(ctypes.sizeof(_Options), _OPTIONS_MAGIC, params["n_metacells"], knn, seed,
                   _INIT_GIVEN if given is not None else _INITS[init],
                   given.ctypes.data if given is not None else None, min_iter, max_iter,
                   eps, fw_iter, int(bool(verbose)))
    handle = c_void_p()
    t0 = time.perf_counter()
    ctx.check(L.rrt_seacells_run(ctx.handle, n, x.shape[1], x_local.ctypes.data,
                                 ctypes.byref(opt), ctypes.byref(handle)), "rrt_seacells_run")
    wall = time.perf_counter() - t0
    try:
        r = _results(ctx, handle.value, x_local, table[:, _FINGERPRINT.index("count")], n_top)
    finally:
        L.rrt_seacells_destroy(handle)
    r["seconds"]["run"] = wall
    model = SEACellsModel(archetype_names=[str(names[i]) for i in r["archetypes"]],
                          obs_names=list(map(str, names)), key_added=key_added, ranks=ctx.size,
                          backend=ctx.backend, **r)
    _write(adata, model, params)
    if not model.converged and ctx.rank == 0:
        warnings.warn(f"{_OP}: the RSS did not converge in max_iter = {max_iter} iterations "
                      f"(last change above eps = {eps} times the initial RSS); raise max_iter",
                      RuntimeWarning, stacklevel=2)
    return model

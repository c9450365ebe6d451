"""Metacell x gene summaries of an AnnData: ``ringrt.summarize_by_SEACell``
and ``ringrt.summarize_by_soft_SEACell``, with the reference SEACells'
names, arguments and return type (an AnnData of metacells x genes).

The computation is the C library's (``rrt_seacells_summarize``,
docs/seacells.md): this module picks the matrix (``summarize_layer``), the
metacells and the labels out of the AnnData, validates them on every rank
and agrees on the outcome, hands each rank's block of cells
(``rrt_seacells_partition``) to the library, and gathers the rows the
ranks summed so every rank returns the whole summary. Under mpirun every
rank passes the same whole AnnData, as with :func:`ringrt.seacells`.
"""
from __future__ import annotations

import ctypes
import numbers
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import numpy as np

from ._coll import allgather_ints, allgather_rows
from ._lib import P, c_double, c_int, c_int64, c_size_t, c_void_p, declare, lib
from .context import Context, default_context

if TYPE_CHECKING:
    import anndata

_OPTIONS_MAGIC = 0x53454153


class _Options(ctypes.Structure):
    """rrt_seacells_summary_options (include/ringrt/seacells.h)."""
    _fields_ = [("size", c_size_t), ("magic", ctypes.c_uint), ("soft", c_int),
                ("min_weight", c_double), ("n_labels", ctypes.c_int32),
                ("rows_done", c_void_p), ("rows_done_arg", c_void_p)]


class _Matrix(ctypes.Structure):
    """rrt_seacells_matrix."""
    _fields_ = [("rows", c_int64), ("cols", c_int64), ("ptr", c_void_p), ("col", c_void_p),
                ("val", c_void_p)]


class _Rows(ctypes.Structure):
    """rrt_seacells_summary_rows."""
    _fields_ = [("sparse", c_int), ("first", c_int64), ("last", c_int64), ("rows", c_int64),
                ("cols", c_int64), ("nnz", c_int64), ("metacell", P(c_int64)),
                ("ptr", P(c_int64)), ("col", P(ctypes.c_int32)), ("val", P(c_double))]


declare({
    "rrt_seacells_partition": (c_int, [c_void_p, c_int64, P(c_int64), P(c_int64)]),
    "rrt_seacells_summarize": (c_int, [c_void_p, c_int64, P(_Matrix), c_int, c_void_p, c_void_p,
                                       c_void_p, P(_Options), P(c_void_p)]),
    "rrt_seacells_summary_destroy": (None, [c_void_p]),
    "rrt_seacells_summary_metacells": (c_int, [c_void_p, P(P(c_double)),
                                               P(P(ctypes.c_int32)), P(P(c_double))]),
    "rrt_seacells_summary_local_rows": (c_int, [c_void_p, P(_Rows)]),
})


# ---- the inputs (local to each rank) ------------------------------------------------

def _source(adata: Any, layer: Any) -> Tuple[Any, Any, str]:
    """The reference's choice of matrix: (matrix, var, problem or '')."""
    if not all(hasattr(adata, a) for a in ("obs", "obs_names", "n_obs", "var", "layers")):
        return None, None, f"expected an AnnData object, got {type(adata).__name__}"
    if layer == "X":
        return adata.X, adata.var, "" if adata.X is not None else "adata.X is None"
    if layer == "raw" and adata.raw is not None:
        return adata.raw.X, adata.raw.var, ""
    if not isinstance(layer, str) or layer not in adata.layers:
        keys = ", ".join(repr(k) for k in adata.layers.keys()) or "none"
        what = "adata.raw is None and adata.layers" if layer == "raw" else "adata.layers"
        return None, None, (f"summarize_layer = {layer!r}: {what} has no {layer!r} (layers: "
                            f"{keys}); use 'X', 'raw' or a layer name")
    return adata.layers[layer], adata.var, ""


def _block(x: Any, first: int, count: int) -> Tuple[Any, str]:
    """Rows [first, first + count) as float64: a scipy CSR (int32 indices,
    int64 indptr from 0) or a C-contiguous dense array."""
    if hasattr(x, "tocsr") and hasattr(x, "nnz"):
        b = x[first:first + count].tocsr()
        b.sum_duplicates()
        if b.shape[1] > np.iinfo(np.int32).max:
            return None, f"the matrix has {b.shape[1]} columns (at most 2^31 - 1 supported)"
        data = np.ascontiguousarray(b.data, dtype=np.float64)
        if not np.isfinite(data).all():
            return None, "the matrix has NaN or Inf entries"
        return (np.ascontiguousarray(b.indptr, dtype=np.int64),
                np.ascontiguousarray(b.indices, dtype=np.int32), data), ""
    a = np.asarray(x[first:first + count] if count else x[:0])
    if a.ndim != 2 or a.dtype.kind not in "fiub":
        return None, f"the matrix has shape {a.shape} and dtype {a.dtype}; expected 2-D numbers"
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.isfinite(a).all():
        return None, "the matrix has NaN or Inf entries"
    return a, ""


def _celltypes(adata: Any, celltype_label: Any) -> Tuple[Optional[np.ndarray], List[Any], str]:
    """Label codes of every cell (-1: missing) and the categories."""
    if celltype_label is None:
        return None, [], ""
    if not isinstance(celltype_label, str) or celltype_label not in adata.obs.columns:
        return None, [], f"celltype_label {celltype_label!r} not present in adata.obs"
    import pandas as pd
    col = adata.obs[celltype_label]
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes, dtype=np.int32), list(col.cat.categories), ""
    codes, cats = pd.factorize(col, sort=True)
    return codes.astype(np.int32), list(cats), ""


def _hard(adata: Any, label: Any) -> Tuple[Optional[np.ndarray], List[str], str]:
    """Each cell's metacell (order of first appearance, as the reference's
    ``obs[label].unique()``; -1 for a missing label) and the names."""
    if not isinstance(label, str) or label not in adata.obs.columns:
        return None, [], (f"SEACells_label {label!r} not present in adata.obs (run "
                          "ringrt.seacells(adata) first, or name the column)")
    import pandas as pd
    codes, uniques = pd.factorize(adata.obs[label], sort=False)
    if len(uniques) == 0:
        return None, [], f"adata.obs[{label!r}] has no metacell"
    return codes.astype(np.int64).reshape(-1, 1), [str(u) for u in uniques], ""


def _soft(adata: Any, A: Any, label: str, first: int, count: int
          ) -> Tuple[Any, Any, int, List[str], str]:
    """This rank's cells' (metacell, weight) slots: (index, weights, m,
    names, problem). A: n_SEACells x n_cells (the reference's model.A_),
    dense or sparse; None: adata.obsm[label + '_soft_index' / '_soft_weights']
    as ringrt.seacells writes them."""
    n = int(adata.n_obs)
    if A is None:
        ki, kw = f"{label}_soft_index", f"{label}_soft_weights"
        if ki not in adata.obsm or kw not in adata.obsm:
            return None, None, 0, [], (f"A is None and adata.obsm has no {ki!r} / {kw!r} (run "
                                       "ringrt.seacells(adata) first, or pass A)")
        idx = np.asarray(adata.obsm[ki])
        w = np.asarray(adata.obsm[kw])
        if idx.shape != w.shape or idx.ndim != 2 or idx.shape[0] != n:
            return None, None, 0, [], f"adata.obsm[{ki!r}] and [{kw!r}] do not match the cells"
        uns = adata.uns.get(label, {}) if hasattr(adata, "uns") else {}
        names = [str(v) for v in uns.get("archetype_names", [])] if isinstance(uns, dict) else []
        m = len(names) or int(idx.max(initial=-1)) + 1
        names = names or [str(j) for j in range(m)]
        idx = np.ascontiguousarray(idx[first:first + count], dtype=np.int64)
        w = np.ascontiguousarray(w[first:first + count], dtype=np.float64)
    else:
        if getattr(A, "ndim", 2) != 2 or A.shape[1] != n:
            return None, None, 0, [], (f"A has shape {getattr(A, 'shape', None)}; expected "
                                       f"(n_SEACells, {n}) as the reference's model.A_")
        m = int(A.shape[0])
        names = [str(j) for j in range(m)]  # the reference's soft summary has a default index
        if hasattr(A, "tocsc") and hasattr(A, "nnz"):
            cols = A.tocsc()[:, first:first + count].T.tocsr()
            cols.eliminate_zeros()
            top = max(1, int(np.diff(cols.indptr).max(initial=0)))
            idx = np.full((count, top), -1, dtype=np.int64)
            w = np.zeros((count, top), dtype=np.float64)
            for i in range(count):
                s, e = cols.indptr[i], cols.indptr[i + 1]
                idx[i, :e - s], w[i, :e - s] = cols.indices[s:e], cols.data[s:e]
        else:
            a = np.asarray(A)[:, first:first + count].T.astype(np.float64)
            idx = np.where(a != 0, np.arange(m, dtype=np.int64)[None, :], -1)
            w = np.ascontiguousarray(a)
            idx = np.ascontiguousarray(idx)
    if m < 1:
        return None, None, 0, [], "no metacell in the soft assignments"
    if w.size and (not np.isfinite(w).all() or (w < 0).any()):
        return None, None, 0, [], "the assignment weights must be finite and >= 0"
    if idx.size and ((idx < -1) | (idx >= m)).any():
        return None, None, 0, [], f"a metacell index is outside -1..{m - 1}"
    if idx.shape[1] == 0:
        idx, w = np.full((count, 1), -1, dtype=np.int64), np.zeros((count, 1))
    return idx, w, m, names, ""


# ---- the library call and the gather --------------------------------------------------

def _local(ptr: Any, n: int, dtype: Any) -> np.ndarray:
    return np.ctypeslib.as_array(ptr, shape=(n,)).astype(dtype, copy=True) if n else \
        np.zeros(0, dtype=dtype)


def _summarize(ctx: Context, op: str, x: Any, cols: int, m: int, idx: np.ndarray,
               w: Optional[np.ndarray], codes: Optional[np.ndarray], ncat: int, soft: bool,
               min_weight: float) -> Tuple[np.ndarray, Any, np.ndarray, np.ndarray, np.ndarray]:
    """Collective: (row metacells, matrix rows (CSR or dense, all ranks'),
    sizes, majority codes, purities)."""
    L = lib()
    sparse = isinstance(x, tuple)
    count = idx.shape[0]
    if sparse:
        mat = _Matrix(count, cols, x[0].ctypes.data, x[1].ctypes.data, x[2].ctypes.data)
    else:
        mat = _Matrix(count, cols, None, None, x.ctypes.data)
    opt = _Options(ctypes.sizeof(_Options), _OPTIONS_MAGIC, int(soft),
                   float(min_weight) if soft else 0.05, ncat)
    h = c_void_p()
    ctx.check(L.rrt_seacells_summarize(ctx.handle, m, ctypes.byref(mat), idx.shape[1],
                                       idx.ctypes.data, None if w is None else w.ctypes.data,
                                       None if codes is None else codes.ctypes.data,
                                       ctypes.byref(opt), ctypes.byref(h)), op)
    try:
        r = _Rows()
        ctx.check(L.rrt_seacells_summary_local_rows(h, ctypes.byref(r)), op)
        size, major, purity = P(c_double)(), P(ctypes.c_int32)(), P(c_double)()
        ctx.check(L.rrt_seacells_summary_metacells(h, ctypes.byref(size), ctypes.byref(major),
                                                   ctypes.byref(purity)), op)
        sizes, majors = _local(size, m, np.float64), _local(major, m, np.int32)
        purities = _local(purity, m, np.float64)
        mc = _local(r.metacell, r.rows, np.int64)
        lens = np.diff(_local(r.ptr, r.rows + 1, np.int64)) if sparse else None
        col = _local(r.col, r.nnz, np.int32) if sparse else None
        val = _local(r.val, r.nnz, np.float64)
    finally:
        L.rrt_seacells_summary_destroy(h)
    counts = allgather_ints(ctx, [len(mc), len(val)])
    rows_of, nnz_of = [c[0] for c in counts], [c[1] for c in counts]
    mc_all = allgather_rows(ctx, mc.reshape(-1, 1), rows_of, op)[:, 0]
    if not sparse:
        return mc_all, allgather_rows(ctx, val.reshape(-1, cols) if cols else
                                      val.reshape(len(mc), 0), rows_of, op), sizes, majors, purities
    lens_all = allgather_rows(ctx, lens.reshape(-1, 1), rows_of, op)[:, 0]
    col_all = allgather_rows(ctx, col.reshape(-1, 1), nnz_of, op)[:, 0]
    val_all = allgather_rows(ctx, val.reshape(-1, 1), nnz_of, op)[:, 0]
    ptr = np.concatenate([[0], np.cumsum(lens_all)]).astype(np.int64)
    return mc_all, (val_all, col_all, ptr), sizes, majors, purities


def _run(adata: Any, op: str, ctx: Optional[Context], summarize_layer: Any, celltype_label: Any,
         soft: bool, label: Any, A: Any, minimum_weight: Any) -> "anndata.AnnData":
    ctx = ctx or default_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a ringrt.Context, got {type(ctx).__name__}")
    L = lib()
    mat, var, problem = _source(adata, summarize_layer)
    n = int(adata.n_obs) if not problem else 0
    if not problem and (len(mat.shape) != 2 or mat.shape[0] != n):
        problem = f"the matrix has shape {mat.shape}; expected {n} rows (one per cell)"
    first, count = c_int64(), c_int64()
    if not problem and L.rrt_seacells_partition(ctx.handle, n, ctypes.byref(first),
                                                ctypes.byref(count)) != 0:
        problem = (L.rrt_ctx_last_error(ctx.handle) or b"rrt_seacells_partition failed").decode()
    f, c = first.value, count.value
    codes, cats, names, idx, w, m, x = None, [], [], None, None, 0, None
    if not problem:
        codes, cats, problem = _celltypes(adata, celltype_label)
    if not problem and soft:
        if (not isinstance(minimum_weight, numbers.Real) or isinstance(minimum_weight, bool)
                or not np.isfinite(minimum_weight)):
            problem = f"minimum_weight = {minimum_weight!r}: need a finite number"
        else:
            idx, w, m, names, problem = _soft(adata, A, label, f, c)
    elif not problem:
        idx, names, problem = _hard(adata, label)
        m = len(names)
        idx = None if problem else np.ascontiguousarray(idx[f:f + c])
    if not problem:
        x, problem = _block(mat, f, c)
    ctx.agree(problem or None, op)
    cols = int(mat.shape[1])
    local_codes = None if codes is None else np.ascontiguousarray(codes[f:f + c])
    mc, rows, sizes, majors, purities = _summarize(ctx, op, x, cols, m, idx, w, local_codes,
                                                   len(cats), soft, minimum_weight)
    return _anndata(mc, rows, cols, sizes, majors, purities, names, var, cats, celltype_label,
                    soft)


def _anndata(mc: np.ndarray, rows: Any, cols: int, sizes: np.ndarray, majors: np.ndarray,
             purities: np.ndarray, names: List[str], var: Any, cats: List[Any],
             celltype_label: Optional[str], soft: bool) -> "anndata.AnnData":
    import anndata
    import pandas as pd
    import scipy.sparse as sp
    if isinstance(rows, tuple):
        X = sp.csr_matrix(rows, shape=(len(mc), cols))
    else:
        X = np.asarray(rows, dtype=np.float64).reshape(len(mc), cols)
    obs = pd.DataFrame(index=pd.Index([names[j] for j in mc]))
    if soft:
        obs["Pseudo-sizes"] = sizes[mc]
    if celltype_label is not None:
        lab = np.asarray(cats + [None], dtype=object)[majors[mc]]
        key, pkey = ("celltype", "celltype_purity") if soft else (celltype_label,
                                                                   f"{celltype_label}_purity")
        obs[key], obs[pkey] = lab, purities[mc]
    out = anndata.AnnData(X=X, obs=obs, var=var.copy())
    if not soft:  # as the reference: the aggregated counts also in layers["raw"]
        out.layers["raw"] = X.copy()
    return out


def summarize_by_SEACell(adata: "anndata.AnnData",  # noqa: N802 - the reference's names
                         SEACells_label: str = "SEACell",  # noqa: N803
                         celltype_label: Optional[str] = None, summarize_layer: str = "raw", *,
                         ctx: Optional[Context] = None) -> "anndata.AnnData":
    """The reference's ``SEACells.core.summarize_by_SEACell``, computed by
    ringrt: each metacell's row is the sum of its cells' rows.

    Args:
        adata: the AnnData (every rank passes the same whole one).
        SEACells_label: the obs column naming each cell's metacell (as
            :func:`ringrt.seacells` writes it); a missing value is no metacell.
        celltype_label: an obs column; adds the majority label per metacell
            and its share (``LABEL``, ``LABEL_purity``, as the reference's
            ``compute_celltype_purity``; lowest category on ties).
        summarize_layer: ``"X"``, ``"raw"`` (``adata.raw.X``, else
            ``adata.layers["raw"]``) or a layer name, as the reference.
        ctx: the ringrt context (default :func:`ringrt.default_context`).

    Returns:
        An AnnData of metacells x genes, one row per metacell in order of
        first appearance in ``obs[SEACells_label]`` (the reference's
        ``unique()``), named by the label; CSR float64 where the matrix is
        sparse, dense float64 where it is dense; ``layers["raw"]`` a copy
        of X (as the reference); var copied from the matrix's var. The
        same bits for any number of ranks.

    Raises:
        ringrt.errors.InvalidArgument: a missing column or layer, a matrix
            that is not cells x genes or has NaN/Inf, on every rank.
    """
    return _run(adata, "ringrt.summarize_by_SEACell", ctx, summarize_layer, celltype_label,
                False, SEACells_label, None, None)


def summarize_by_soft_SEACell(adata: "anndata.AnnData", A: Any = None,  # noqa: N802,N803 - ref.
                              celltype_label: Optional[str] = None,
                              summarize_layer: str = "raw", minimum_weight: float = 0.05, *,
                              SEACells_label: str = "SEACell",
                              ctx: Optional[Context] = None) -> "anndata.AnnData":
    """The reference's ``SEACells.core.summarize_by_soft_SEACell``, computed
    by ringrt: row j is ``sum_i w_ij x_i / sum_i w_ij`` after the
    reference's ``sparsify_assignments`` (per cell, the weights below
    min(``minimum_weight``, the 95th percentile of its nonzero weights)
    dropped and the rest renormalised to 1).

    Args:
        adata: the AnnData (every rank passes the same whole one).
        A: n_SEACells x n_cells weights (the reference's ``model.A_``,
            dense or scipy sparse); None: the soft assignments
            :func:`ringrt.seacells` wrote (``obsm[SEACells_label +
            "_soft_index"]`` / ``"_soft_weights"``, its ``n_top`` heaviest
            weights per cell; the percentile is then over those).
        celltype_label: an obs column; adds ``celltype`` (the weighted
            majority label) and ``celltype_purity``, as the reference.
        summarize_layer: as :func:`summarize_by_SEACell`.
        minimum_weight: the reference's threshold (0.05).
        SEACells_label: the key ringrt.seacells used (for ``A=None``).
        ctx: the ringrt context.

    Returns:
        An AnnData of metacells x genes with ``obs["Pseudo-sizes"]`` (the
        sum of the kept weights); rows in metacell order, named ``"0"``,
        ``"1"``.. for a given A (the reference's default index) or by the
        archetype names for ``A=None``; a metacell without any kept weight
        has no row (the reference gives it a NaN row). CSR where the
        matrix is sparse, dense where dense; the same bits for any number
        of ranks.
    """
    return _run(adata, "ringrt.summarize_by_soft_SEACell", ctx, summarize_layer, celltype_label,
                True, SEACells_label, A, minimum_weight)

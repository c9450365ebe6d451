"""The reference SEACells' evaluation (``SEACells.evaluate``), computed by
ringrt: compactness and separation of metacells on palantir's diffusion
components (as the reference computes them, not on the PCA coordinates),
cell density and cell-type purity.

The diffusion components come from the C library
(``rrt_seacells_diffusion_components``: palantir's run_diffusion_maps with
its defaults and determine_multiscale_space, distributed, the same bits for
any number of ranks); the per-metacell statistics are pandas/numpy on the
gathered components. Every function here is collective under mpirun (every
rank passes the same whole AnnData) except compute_celltype_purity.
"""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import errors
from ._coll import allgather_rows
from ._lib import c_int, c_int64, c_void_p, declare, lib
from .context import Context, default_context
from .metacells import _FINGERPRINT, _agree_same_input, _coordinates, _digest, _first_nonfinite

if TYPE_CHECKING:
    import anndata
    import pandas

_OP = "ringrt.evaluate"

declare({"rrt_seacells_diffusion_components": (c_int, [c_void_p, c_int64, c_int, c_void_p, c_int,
                                                       c_void_p])})


def diffusion_components(ad: "anndata.AnnData", low_dim_embedding: str = "X_pca", n_eigs: int = 10,
                         ctx: Optional[Context] = None) -> "pandas.DataFrame":
    """palantir's ``determine_multiscale_space(run_diffusion_maps(X), n_eigs)``
    of ``ad.obsm[low_dim_embedding]``: cells x (n_eigs - 1), eigenvector c
    (1..n_eigs-1) at unit norm times l_c / (1 - l_c), each signed so that its
    entry of largest magnitude is positive (palantir's signs are the
    eigensolver's: the statistics here do not depend on them). Collective."""
    import pandas as pd
    ctx = ctx or default_context()
    x, problem = _coordinates(ad, low_dim_embedding, None)
    if not problem:
        x = np.ascontiguousarray(x)
        problem = _first_nonfinite(x, low_dim_embedding, ad.obs_names)
    if not problem and not (isinstance(n_eigs, int) and 2 <= n_eigs <= 1000):
        problem = f"n_eigs = {n_eigs!r}: need an integer in 2..1000"
    if not problem and ad.n_obs < 30:
        problem = f"{ad.n_obs} cells: palantir's diffusion map needs at least 30"
    L, n = lib(), int(ad.n_obs) if not problem else 0
    first, count = c_int64(), c_int64()
    if not problem and L.rrt_seacells_partition(ctx.handle, n, ctypes.byref(first),
                                                ctypes.byref(count)) != errors.SUCCESS:
        problem = "rrt_seacells_partition failed"
    ctx.agree(problem or None, _OP)
    table = _agree_same_input(ctx, [n, x.shape[1], _digest(x.dtype.str.encode(), x),
                                    _digest("\0".join(map(str, ad.obs_names)).encode()),
                                    _digest(repr((low_dim_embedding, n_eigs)).encode()),
                                    first.value, count.value], low_dim_embedding)
    x_local = np.ascontiguousarray(x[first.value:first.value + count.value], dtype=np.float64)
    dc = np.zeros((count.value, n_eigs - 1))
    ctx.check(L.rrt_seacells_diffusion_components(ctx.handle, n, x.shape[1], x_local.ctypes.data,
                                                  n_eigs, dc.ctypes.data),
              "rrt_seacells_diffusion_components")
    every = allgather_rows(ctx, dc, table[:, _FINGERPRINT.index("count")], _OP)
    return pd.DataFrame(every, index=ad.obs_names.copy())


def _labels(ad: "anndata.AnnData", label: str) -> "pandas.Series":
    if label not in ad.obs:
        raise errors.error_for(errors.INVALID_ARG, f"{_OP}: ad.obs has no {label!r} column: fit a model first "
                                     "(it writes ad.obs['SEACell']) or name it with SEACells_label=")
    return ad.obs[label]


def compactness(ad: "anndata.AnnData", low_dim_embedding: str = "X_pca",
                SEACells_label: str = "SEACell", *,  # noqa: N803 - the reference's name
                ctx: Optional[Context] = None) -> "pandas.DataFrame":
    """Per metacell, the mean over the 9 diffusion components (n_eigs = 10)
    of the variance (n - 1 denominator) of its cells' values; NaN for a
    metacell of one cell. A DataFrame indexed by the metacells present in
    ``ad.obs[SEACells_label]`` (sorted, as pandas groups), column
    ``compactness``. Collective."""
    import pandas as pd
    labels = _labels(ad, SEACells_label)
    dc = diffusion_components(ad, low_dim_embedding, 10, ctx)
    var = dc.groupby(labels.to_numpy(), sort=True).var(ddof=1).mean(axis=1)
    var.index.name = SEACells_label
    return pd.DataFrame({"compactness": var})


def _majority(values: "pandas.Series") -> Any:
    return values.value_counts().index[0]


def separation(ad: "anndata.AnnData", low_dim_embedding: str = "X_pca", nth_nbr: int = 1,
               cluster: Optional[str] = None,
               SEACells_label: str = "SEACell", *,  # noqa: N803 - the reference's name
               ctx: Optional[Context] = None) -> "pandas.DataFrame":
    """Per metacell, the Euclidean distance from its centroid on the 9
    diffusion components to the ``nth_nbr``-th nearest other metacell's
    centroid. With ``cluster`` (an obs column), only the metacells whose
    ``nth_nbr``-th neighbour has the same majority ``cluster`` value. A
    DataFrame indexed by metacell, column ``separation`` (the reference
    names it ``nth_nbr`` when nth_nbr > 1, a quirk not kept). Collective."""
    import pandas as pd
    labels = _labels(ad, SEACells_label)
    dc = diffusion_components(ad, low_dim_embedding, 10, ctx)
    cen = dc.groupby(labels.to_numpy(), sort=True).mean()
    m = len(cen)
    if not (isinstance(nth_nbr, int) and 1 <= nth_nbr < m):
        raise errors.error_for(errors.INVALID_ARG, f"{_OP}: nth_nbr = {nth_nbr!r}: need 1..{m - 1} "
                                     f"({m} metacells)")
    c = cen.to_numpy()
    d2 = ((c[:, None, :] - c[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)  # the metacell itself is not its neighbour
    order = np.argsort(d2, axis=1, kind="stable")[:, nth_nbr - 1]
    dist = np.sqrt(d2[np.arange(m), order])
    out = pd.DataFrame({"separation": dist}, index=cen.index.rename(SEACells_label))
    if cluster is None:
        return out
    if cluster not in ad.obs:
        raise errors.error_for(errors.INVALID_ARG, f"{_OP}: ad.obs has no {cluster!r} column (cluster=)")
    major = ad.obs[cluster].groupby(labels.to_numpy(), sort=True).agg(_majority).reindex(cen.index)
    same = major.to_numpy()[order] == major.to_numpy()
    return out[same]


def get_density(ad: "anndata.AnnData", key: str, nth_neighbor: int = 150, *,
                ctx: Optional[Context] = None) -> "pandas.DataFrame":
    """Per cell, 1 / the distance to its ``nth_neighbor``-th nearest other
    cell on the diffusion components of ``ad.obsm[key]`` with n_eigs = 8
    (7 components). A DataFrame indexed by obs name, column ``density``.
    (The reference checks for a key named literally "key" and always uses
    X_pca; ringrt uses ``key``.) Collective."""
    import pandas as pd
    from scipy.spatial import cKDTree
    if not isinstance(key, str) or key not in getattr(ad, "obsm", {}):
        raise ValueError(f"Key {key} not present in ad.obsm.")
    if not (isinstance(nth_neighbor, int) and 1 <= nth_neighbor < ad.n_obs):
        raise errors.error_for(errors.INVALID_ARG, f"{_OP}: nth_neighbor = {nth_neighbor!r}: need 1.."
                                     f"{ad.n_obs - 1}")
    dc = diffusion_components(ad, key, 8, ctx).to_numpy()
    # k + 1 sorted distances with the cell's own 0 among them: entry k is the
    # k-th nearest other cell (duplicates of the cell count as others)
    dist, _ = cKDTree(dc).query(dc, k=nth_neighbor + 1)
    return pd.DataFrame({"density": 1.0 / dist[:, nth_neighbor]}, index=ad.obs_names.copy())


def compute_celltype_purity(ad: "anndata.AnnData", col_name: str,
                            SEACells_label: str = "SEACell"  # noqa: N803
                            ) -> "pandas.DataFrame":
    """Per metacell, its most frequent ``ad.obs[col_name]`` value (pandas
    value_counts' first) and that value's share of its cells: columns
    ``col_name`` and ``col_name + "_purity"``, indexed by metacell. Local."""
    import pandas as pd
    labels = _labels(ad, SEACells_label)
    if col_name not in ad.obs:
        raise errors.error_for(errors.INVALID_ARG, f"{_OP}: ad.obs has no {col_name!r} column")
    groups = ad.obs[col_name].groupby(labels.to_numpy(), sort=True)
    top = groups.agg(_majority)
    share = groups.agg(lambda v: v.value_counts().iloc[0] / v.value_counts().sum())
    out = pd.DataFrame({col_name: top, f"{col_name}_purity": share})
    out.index.name = SEACells_label
    return out


__all__ = ["compactness", "separation", "get_density", "compute_celltype_purity",
           "diffusion_components"]

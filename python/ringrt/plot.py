"""The reference SEACells' plots (``SEACells.plot``) under its names and
argument order, drawn by ``ringrt.seacells_plot`` (matplotlib, local to a
rank): ``import ringrt as SEACells`` and ``SEACells.plot.plot_2D(ad, ...)``.

As in the reference, ``show=True`` shows the figure and closes it; with
``show=False`` it stays open. Each function returns what ringrt's
underlying plot returns (the Axes; plot_SEACell_sizes the sizes table).
The model's convergence plot is ``model.plot_convergence()``
(:class:`ringrt.core.SEACells`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

import numpy as np

from . import errors, seacells_plot
from .seacells_plot import plot_compactness, plot_purity, plot_separation  # noqa: F401

if TYPE_CHECKING:
    import anndata


def _shown(ax: Any, show: bool) -> Any:
    """The reference's ending: show, then close the figure."""
    if show:
        import matplotlib.pyplot as plt
        plt.show()
        plt.close(ax.figure)
    return ax


def plot_2D(ad: "anndata.AnnData", key: Optional[str] = None,  # noqa: N802 - the reference's name
            colour_metacells: bool = True, title: str = "Metacell Assignments",
            save_as: Optional[str] = None, show: bool = True, cmap: str = "tab20",
            figsize: Tuple[float, float] = (5, 5), SEACell_size: float = 90,  # noqa: N803
            cell_size: Optional[float] = None, **kwargs: Any) -> Any:
    """:func:`ringrt.seacells_plot.plot_2D` in the reference's argument order
    (``show`` after ``save_as``); ``key`` None: X_umap, else X_tsne, else
    the first two PCA columns. Keywords (``SEACell_key``, ``model``, ``ax``)
    pass through."""
    ax = seacells_plot.plot_2D(ad, key, colour_metacells, title, save_as, cmap, figsize,
                               SEACell_size, cell_size, **kwargs)
    return _shown(ax, show)


def plot_initialization(ad: "anndata.AnnData", model: Any, plot_basis: Optional[str] = None,
                        save_as: Optional[str] = None, show: bool = True, **kwargs: Any) -> Any:
    """The archetypes of ``model`` (``model.archetypes``) over the cells."""
    return _shown(seacells_plot.plot_initialization(ad, model, plot_basis, save_as, **kwargs), show)


def plot_SEACell_sizes(ad: "anndata.AnnData", save_as: Optional[str] = None,  # noqa: N802
                       show: bool = True, title: str = "Distribution of Metacell Sizes",
                       bins: Any = None, figsize: Tuple[float, float] = (5, 5),
                       **kwargs: Any) -> Any:
    """A histogram of the cells per metacell; returns the sizes table."""
    import matplotlib.pyplot as plt
    sizes = seacells_plot.plot_SEACell_sizes(ad, save_as, title, bins, figsize, **kwargs)
    if show:
        plt.show()
        plt.close(plt.gcf())
    return sizes


def plot_assignment_entropy(ad: "anndata.AnnData", title: str = "Entropy of Metacell Assignment",
                            save_as: Optional[str] = None, show: bool = True, bins: Any = None,
                            figsize: Tuple[float, float] = (5, 5), *,
                            ax: Any = None) -> Any:
    """A histogram over the cells of ``ad.obs["Metacell_Entropy"]`` (the
    reference's column; e.g. ``scipy.stats.entropy(model.A_)``, the entropy
    of each cell's assignment weights: lower is a surer assignment), with a
    Gaussian kernel density estimate over it (as the reference's seaborn
    distplot). Returns the Axes."""
    col = "Metacell_Entropy"
    if col not in ad.obs:
        raise errors.error_for(errors.INVALID_ARG, 
            f"ringrt.plot.plot_assignment_entropy: ad.obs has no {col!r} column; set it, e.g. "
            f"ad.obs[{col!r}] = scipy.stats.entropy(model.A_) (dense A_) for a fitted model")
    import matplotlib.pyplot as plt
    v = np.asarray(ad.obs[col], dtype=np.float64)
    v = v[np.isfinite(v)]
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    ax.hist(v, bins="auto" if bins is None else bins, density=True, color="tab:blue",
            alpha=0.5, edgecolor="white", label="cells")
    if v.size > 1 and np.ptp(v) > 0:
        from scipy.stats import gaussian_kde
        grid = np.linspace(v.min(), v.max(), 200)
        ax.plot(grid, gaussian_kde(v)(grid), color="tab:blue", label="density")
    ax.set_xlabel(col), ax.set_ylabel("density")
    ax.set_title(title)
    for side in ("top", "right"):  # sns.despine
        ax.spines[side].set_visible(False)
    if save_as is not None:
        seacells_plot.save(ax.figure, save_as, dpi=150)
    return _shown(ax, show)


__all__ = ["plot_2D", "plot_initialization", "plot_SEACell_sizes", "plot_assignment_entropy",
           "plot_compactness", "plot_separation", "plot_purity"]

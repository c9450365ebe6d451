"""Plots of SEACells metacells, as the reference SEACells' ``SEACells.plot``
helpers show them, headless (matplotlib's Agg canvas; pyplot is never
imported, so no window opens and no global figure state is touched).

From Python, after :func:`ringrt.seacells` ran on ``adata`` (it wrote
``obs["SEACell"]`` and ``uns["SEACell"]``; nothing is run again)::

    import ringrt
    ringrt.seacells(adata)
    ringrt.plot_seacells(adata, labels="bulk_labels", save_as="metacells.png")

The single panels mirror the reference's names and arguments:
:func:`plot_2D`, :func:`plot_SEACell_sizes`, :func:`plot_initialization`,
and :func:`plot_purity`, :func:`plot_compactness`, :func:`plot_separation`
(the reference's ``SEACells.evaluate`` numbers, drawn as histograms over
the metacells). Each draws into ``ax=`` when given and returns it;
:func:`metacell_table` gives the numbers they draw.

From the shell, on the files of ``ringrt seacells`` (its ``--out`` CSV, and
optionally its ``--json`` report and ``--archetypes-out``), or on an
AnnData that has an ``obs["SEACell"]`` column already::

    python -m ringrt.seacells_plot IN.h5ad --assign mc.csv --json mc.json \\
        --archetypes mc.arch --labels bulk_labels --plot metacells.png

matplotlib, pandas and anndata are imported on first use, never by
``import ringrt``.
"""
from __future__ import annotations

import os
import secrets
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np

from . import errors

if TYPE_CHECKING:
    import anndata
    import matplotlib.axes
    import matplotlib.figure
    import pandas

_OP = "ringrt.seacells_plot"
_BASES = ("X_umap", "X_tsne")  # the 2-D embeddings looked for, in this order


def _invalid(msg: str) -> errors.RingrtError:
    return errors.error_for(errors.INVALID_ARG, f"{_OP}: {msg}")


# ---- what is plotted ------------------------------------------------------------

class Metacells:
    """The metacells of an AnnData as every panel reads them.

    ``codes[i]`` is cell ``i``'s metacell (0..m-1, -1 for none), ``names[j]``
    metacell ``j``'s name and ``archetypes[j]`` its archetype cell's index
    (-1 where it is not known). Metacells are ordered as the categories of
    ``obs[key]`` (ringrt's metacell order), or by name for a plain column.
    """

    def __init__(self, adata: "anndata.AnnData", key: str = "SEACell", model: Any = None):
        import pandas as pd
        if key not in adata.obs:
            raise _invalid(f"adata.obs has no {key!r} column: run ringrt.seacells(adata) first "
                           f"(or the reference's model), or name the column with key=")
        col = adata.obs[key]
        cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
        self.key = key
        self.names: List[str] = [str(c) for c in cat.cat.categories]
        self.codes = np.asarray(cat.cat.codes, dtype=np.int64)
        self.archetypes = self._find_archetypes(adata, model)

    @property
    def m(self) -> int:
        return len(self.names)

    def _find_archetypes(self, adata: "anndata.AnnData", model: Any) -> np.ndarray:
        """The model's archetypes, else uns[key]["archetypes"] (ringrt.seacells
        writes it), else the cells named as the metacells (the reference names
        a metacell after its archetype cell)."""
        given = getattr(model, "archetypes", None)
        if given is None:
            given = (adata.uns.get(self.key) or {}).get("archetypes")
        if given is not None and len(given) == self.m:
            idx = np.asarray(given, dtype=np.int64)
            if ((idx >= 0) & (idx < adata.n_obs)).all():
                return idx
        return np.asarray(adata.obs_names.get_indexer(self.names), dtype=np.int64)

    def sizes(self) -> np.ndarray:
        """Cells per metacell (0 for an empty one)."""
        return np.bincount(self.codes[self.codes >= 0], minlength=self.m)

    def centroids(self, x: np.ndarray) -> np.ndarray:
        """Mean row of x per metacell (NaN for an empty one)."""
        sums = np.zeros((self.m, x.shape[1]))
        np.add.at(sums, self.codes[self.codes >= 0], x[self.codes >= 0])
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / self.sizes()[:, None]


def embedding(adata: "anndata.AnnData", basis: Optional[str] = None, obsm: str = "X_pca"
              ) -> Tuple[np.ndarray, str]:
    """The 2-D coordinates plotted and what they are: ``adata.obsm[basis]``,
    else the first of X_umap, X_tsne present, else the first two columns of
    ``adata.obsm[obsm]`` (the coordinates SEACells ran on)."""
    keys = list(adata.obsm.keys())
    if basis is not None and basis not in adata.obsm:
        raise _invalid(f"adata.obsm has no {basis!r} (it has: {', '.join(keys) or 'none'})")
    found = basis or next((b for b in _BASES if b in adata.obsm), None)
    what = found
    if found is None:
        if obsm not in adata.obsm:
            raise _invalid(f"no 2-D embedding to plot: adata.obsm has none of "
                           f"{', '.join(_BASES + (obsm,))} (it has: {', '.join(keys) or 'none'}); "
                           "compute one (sc.tl.umap) or name one with basis=")
        found, what = obsm, f"{obsm}[:, 0:2] (no {' or '.join(_BASES)})"
    x = np.asarray(adata.obsm[found])
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] != adata.n_obs:
        raise _invalid(f"adata.obsm[{found!r}] has shape {x.shape}; need ({adata.n_obs}, >= 2)")
    return np.asarray(x[:, :2], dtype=np.float64), what


def purity(adata: "anndata.AnnData", labels: str, mc: Metacells) -> Tuple[np.ndarray, List[Any]]:
    """Per metacell: the share of its most common label (cells without a
    label count in the size only, as ``ringrt seacells --labels`` counts
    them; NaN for an empty metacell), and that label."""
    if labels not in adata.obs:
        raise _invalid(f"adata.obs has no {labels!r} column for the purity")
    import pandas as pd
    lab = pd.Categorical(adata.obs[labels])
    ncat, ok = len(lab.categories), mc.codes >= 0
    counts = np.zeros((mc.m, ncat + 1), dtype=np.int64)  # the last column: no label (code -1)
    np.add.at(counts, (mc.codes[ok], np.asarray(lab.codes)[ok]), 1)
    best = counts[:, :ncat].argmax(axis=1) if ncat else np.zeros(mc.m, dtype=np.int64)
    sizes = mc.sizes()
    share = np.where(sizes > 0, counts[np.arange(mc.m), best] * (ncat > 0) / np.maximum(sizes, 1),
                     np.nan)
    top = [lab.categories[b] if ncat and sizes[j] else None for j, b in enumerate(best)]
    return share.astype(np.float64), top


def _coordinate_metrics(x: np.ndarray, mc: Metacells) -> Tuple[np.ndarray, np.ndarray]:
    """Compactness and separation on x as ringrt defines them (docs/seacells.md):
    mean over components of the variance (n - 1) of a metacell's cells, and
    the distance from its centroid to the nearest other centroid."""
    sizes, cent = mc.sizes(), mc.centroids(x)
    ok = mc.codes >= 0
    sq = np.zeros((mc.m, x.shape[1]))
    np.add.at(sq, mc.codes[ok], (x[ok] - cent[mc.codes[ok]]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        comp = np.where(sizes >= 2, (sq / (sizes - 1)[:, None]).mean(axis=1), np.nan)
    sep = np.full(mc.m, np.nan)
    for j in np.flatnonzero(sizes > 0):  # m rows at a time: no m x m matrix for large m
        d = np.linalg.norm(cent - cent[j], axis=1)
        d[j] = np.nan
        if np.isfinite(d).any():
            sep[j] = np.nanmin(d)
    return comp, sep


def _metrics(adata: "anndata.AnnData", mc: Metacells, model: Any, obsm: str
             ) -> Tuple[np.ndarray, np.ndarray, str]:
    """Compactness and separation per metacell and where they come from: the
    model, else uns[key] (ringrt.seacells and the --json report put them
    there), else computed here on adata.obsm[obsm]."""
    for src in (model, adata.uns.get(mc.key)):
        get = src.get if isinstance(src, dict) else (lambda k, s=src: getattr(s, k, None))
        comp, sep = get("compactness"), get("separation")
        if comp is not None and sep is not None and np.shape(comp) == np.shape(sep) == (mc.m,):
            return (np.asarray(comp, dtype=np.float64), np.asarray(sep, dtype=np.float64),
                    "from the run, on its input coordinates")
    if obsm not in adata.obsm:
        return np.full(mc.m, np.nan), np.full(mc.m, np.nan), f"no adata.obsm[{obsm!r}]"
    comp, sep = _coordinate_metrics(np.asarray(adata.obsm[obsm], dtype=np.float64), mc)
    return comp, sep, f"computed on {obsm}"


def metacell_table(adata: "anndata.AnnData", key: str = "SEACell", labels: Optional[str] = None,
                   model: Any = None, obsm: str = "X_pca") -> "pandas.DataFrame":
    """One row per metacell (index: its name): ``size``, ``archetype`` (the
    archetype cell's obs name, or None), with ``labels`` the most common
    label and ``purity``, and ``compactness`` / ``separation`` (from the
    model or ``uns[key]`` when present, else computed on ``adata.obsm[obsm]``
    as ringrt defines them). ``attrs["metrics_source"]`` says which."""
    import pandas as pd
    mc = Metacells(adata, key, model)
    names = np.asarray(list(adata.obs_names) + [None], dtype=object)
    df = pd.DataFrame({"size": mc.sizes(), "archetype": names[mc.archetypes]},
                      index=pd.Index(mc.names, name=key))
    if labels is not None:
        share, top = purity(adata, labels, mc)
        df[labels], df["purity"] = top, share
    df["compactness"], df["separation"], df.attrs["metrics_source"] = _metrics(adata, mc, model,
                                                                               obsm)
    return df


def metacell_colours(m: int, cmap: str = "tab20") -> np.ndarray:
    """RGBA per metacell (m x 4): a qualitative map's colours in turn, or a
    continuous map sampled evenly."""
    import matplotlib
    cm = matplotlib.colormaps[cmap]
    n = getattr(cm, "N", 256)
    if hasattr(cm, "colors") and n <= 64:  # a ListedColormap of a few distinct colours
        return np.asarray(cm(np.arange(m) % n))
    return np.asarray(cm(np.linspace(0.0, 1.0, max(m, 1))))


# ---- panels ---------------------------------------------------------------------

def _axes(ax: Optional["matplotlib.axes.Axes"], figsize: Tuple[float, float]
          ) -> "matplotlib.axes.Axes":
    if ax is not None:
        return ax
    from matplotlib.figure import Figure
    return Figure(figsize=figsize).add_subplot()


def plot_2D(ad: "anndata.AnnData", key: Optional[str] = None,  # noqa: N802 - the reference's name
            colour_metacells: bool = True,
            title: str = "Metacell Assignments", save_as: Optional[str] = None, cmap: str = "tab20",
            figsize: Tuple[float, float] = (5, 5), SEACell_size: float = 90,  # noqa: N803
            cell_size: Optional[float] = None, *, SEACell_key: str = "SEACell",  # noqa: N803
            model: Any = None, obsm: str = "X_pca",
            ax: Optional["matplotlib.axes.Axes"] = None) -> "matplotlib.axes.Axes":
    """The cells on a 2-D embedding coloured by metacell, the archetype cells
    marked (stars with a black edge, in their metacell's colour); where no
    archetype is known, the metacell centroids (as the reference's plot_2D).

    ``key`` is the embedding (the reference's argument; default X_umap, else
    X_tsne, else the first two columns of ``obsm``, named in the axis labels);
    ``SEACell_key`` the obs column of the metacells. ``colour_metacells=False``
    draws the cells grey and the archetypes red. Returns the Axes; the cells
    are its first collection (label "cells"), the archetypes the second.
    """
    mc = Metacells(ad, SEACell_key, model)
    xy, what = embedding(ad, key, obsm)
    ax = _axes(ax, figsize)
    colours = metacell_colours(mc.m, cmap)
    grey = np.array([0.8, 0.8, 0.8, 1.0])
    cell_c = np.where((mc.codes >= 0)[:, None], colours[np.maximum(mc.codes, 0)], grey) \
        if colour_metacells else np.tile(grey, (len(mc.codes), 1))
    size = cell_size if cell_size is not None else float(np.clip(30000 / max(len(xy), 1), 1, 10))
    ax.scatter(xy[:, 0], xy[:, 1], s=size, c=cell_c, linewidths=0, rasterized=True, label="cells")
    known = mc.archetypes >= 0
    if known.any():
        pts, j, marks = xy[mc.archetypes[known]], np.flatnonzero(known), "archetypes"
    else:
        cent = mc.centroids(xy)
        j = np.flatnonzero(np.isfinite(cent[:, 0]))
        pts, marks = cent[j], "metacell centroids (archetypes not known)"
    ax.scatter(pts[:, 0], pts[:, 1], s=SEACell_size, marker="*" if known.any() else "o",
               c=colours[j] if colour_metacells else "red", edgecolors="black", linewidths=0.8,
               label=marks, zorder=3)
    ax.set_xlabel(f"{what} 1"), ax.set_ylabel(f"{what} 2")
    ax.set_xticks([]), ax.set_yticks([])
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small", markerscale=1.0, frameon=False)
    _maybe_save(ax, save_as)
    return ax


def plot_initialization(ad: "anndata.AnnData", model: Any, plot_basis: Optional[str] = None,
                        save_as: Optional[str] = None, *, obsm: str = "X_pca",
                        ax: Optional["matplotlib.axes.Axes"] = None) -> "matplotlib.axes.Axes":
    """The initial (or any) archetypes of ``model`` (``model.archetypes``, cell
    indices: ringrt's :class:`SEACellsModel` or the reference's model) over the
    cells in grey, as the reference's plot_initialization."""
    arch = np.asarray(getattr(model, "archetypes", model), dtype=np.int64).reshape(-1)
    if arch.size and (arch.min() < 0 or arch.max() >= ad.n_obs):
        raise _invalid(f"archetype cell {int(arch[(arch < 0) | (arch >= ad.n_obs)][0])} is "
                       f"outside 0..{ad.n_obs - 1}")
    xy, what = embedding(ad, plot_basis, obsm)
    ax = _axes(ax, (5, 5))
    ax.scatter(xy[:, 0], xy[:, 1], s=1, color="lightgrey", rasterized=True, label="cells")
    ax.scatter(xy[arch, 0], xy[arch, 1], s=20, color="tab:blue", label="archetypes")
    ax.set_xlabel(f"{what} 1"), ax.set_ylabel(f"{what} 2")
    ax.set_xticks([]), ax.set_yticks([])
    ax.set_title(f"{len(arch)} archetypes")
    _maybe_save(ax, save_as)
    return ax


def _histogram(ax: "matplotlib.axes.Axes", values: np.ndarray, bins: Any, xlabel: str,
               title: str, colour: str) -> None:
    """A histogram of the finite values, their mean as a dashed line."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        ax.text(0.5, 0.5, f"{xlabel}: no values", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_title(title)
        return
    ax.hist(v, bins="auto" if bins is None else bins, color=colour, edgecolor="white")
    ax.axvline(float(v.mean()), color="black", linestyle="--", linewidth=1)
    ax.set_xlabel(xlabel), ax.set_ylabel("metacells")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(f"{title}: mean {v.mean():.3g}", fontsize="medium")


def plot_SEACell_sizes(ad: "anndata.AnnData", save_as: Optional[str] = None,  # noqa: N802
                       title: str = "Metacell sizes", bins: Any = None,
                       figsize: Tuple[float, float] = (5, 5), *,
                       SEACell_key: str = "SEACell",  # noqa: N803 - the reference's spelling
                       ax: Optional["matplotlib.axes.Axes"] = None) -> "pandas.DataFrame":
    """A histogram of the number of cells per metacell (empty metacells count
    as 0). Returns the sizes, one row per metacell (column ``size``), as the
    reference's plot_SEACell_sizes; draws into ``ax`` when given."""
    import pandas as pd
    mc = Metacells(ad, SEACell_key)
    ax = _axes(ax, figsize)
    _histogram(ax, mc.sizes().astype(np.float64), bins, "cells per metacell", title, "tab:gray")
    _maybe_save(ax, save_as)
    return pd.DataFrame({"size": mc.sizes()}, index=pd.Index(mc.names, name=SEACell_key))


def _metric_panel(column: str, xlabel: str, title: str, colour: str):
    def plot(ad: "anndata.AnnData", *args: Any, save_as: Optional[str] = None, bins: Any = None,
             SEACell_key: str = "SEACell", model: Any = None, obsm: str = "X_pca",  # noqa: N803
             ax: Optional["matplotlib.axes.Axes"] = None) -> "matplotlib.axes.Axes":
        labels = args[0] if args else None
        table = metacell_table(ad, SEACell_key, labels, model, obsm)
        ax = _axes(ax, (5, 5))
        label = xlabel if column == "purity" else f"{xlabel}\n({table.attrs['metrics_source']})"
        _histogram(ax, table[column].to_numpy(np.float64), bins, label,
                   title.format(labels=labels), colour)
        _maybe_save(ax, save_as)
        return ax
    return plot


plot_purity = _metric_panel("purity", "share of the most common label", "Purity of {labels}",
                            "tab:green")
plot_purity.__doc__ = """plot_purity(ad, labels, ...): a histogram over the metacells of
    the share of their most common ``obs[labels]`` value (the reference's
    ``SEACells.evaluate.compute_celltype_purity``). Returns the Axes."""
plot_compactness = _metric_panel("compactness", "compactness: mean variance within a metacell",
                                 "Compactness", "tab:blue")
plot_compactness.__doc__ = """plot_compactness(ad, ...): a histogram over the metacells of
    their compactness (lower is tighter), from the model / ``uns`` when
    present, else computed on ``obsm``. Returns the Axes."""
plot_separation = _metric_panel("separation", "separation: distance to the nearest metacell",
                                "Separation", "tab:orange")
plot_separation.__doc__ = """plot_separation(ad, ...): a histogram over the metacells of
    the distance from their centroid to the nearest other one, from the model
    / ``uns`` when present, else computed on ``obsm``. Returns the Axes."""


# ---- the whole figure -----------------------------------------------------------

def plot_seacells(adata: "anndata.AnnData", *, key: str = "SEACell", basis: Optional[str] = None,
                  labels: Optional[str] = None, model: Any = None, obsm: str = "X_pca",
                  title: Optional[str] = None, save_as: Optional[str] = None,
                  figsize: Tuple[float, float] = (16, 8), dpi: int = 100,
                  cmap: str = "tab20") -> "matplotlib.figure.Figure":
    """Every panel in one figure: the embedding coloured by metacell with the
    archetypes marked, the metacell sizes, and the purity of ``labels`` (when
    given), compactness and separation over the metacells. ``save_as`` writes
    it (format from the extension) at ``figsize`` x ``dpi`` pixels, complete
    or not at all. Returns the Figure; its axes carry the labels
    "embedding", "sizes", "purity", "compactness", "separation"."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    grid = fig.add_gridspec(2, 4)
    panels = {"embedding": fig.add_subplot(grid[:, 0:2])}
    for name, cell in (("sizes", grid[0, 2]), ("purity", grid[1, 2]),
                       ("compactness", grid[0, 3]), ("separation", grid[1, 3])):
        panels[name] = fig.add_subplot(cell)
    mc = Metacells(adata, key, model)
    plot_2D(adata, basis, cmap=cmap, SEACell_key=key, model=model, obsm=obsm,
            title=f"{mc.m} metacells of {adata.n_obs} cells", ax=panels["embedding"])
    plot_SEACell_sizes(adata, SEACell_key=key, ax=panels["sizes"])
    common = dict(SEACell_key=key, model=model, obsm=obsm)
    if labels is not None:
        plot_purity(adata, labels, ax=panels["purity"], **common)
    else:
        panels["purity"].set_axis_off()
        panels["purity"].text(0.5, 0.5, "purity: no labels given", ha="center", va="center",
                              transform=panels["purity"].transAxes)
    plot_compactness(adata, ax=panels["compactness"], **common)
    plot_separation(adata, ax=panels["separation"], **common)
    for name, ax in panels.items():
        ax.set_label(name)
    if title:
        fig.suptitle(title)
    if save_as is not None:
        save(fig, save_as, dpi=dpi)
    return fig


def save(fig: "matplotlib.figure.Figure", path: str, dpi: Optional[int] = None) -> None:
    """Write fig to path, format from the extension, through a temporary
    file in the same folder renamed over path at the end: a failed write
    leaves no partial file (and an older file as it was)."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    supported = fig.canvas.get_supported_filetypes()
    if ext not in supported:
        raise _invalid(f"{path}: unknown image format {ext!r} (use one of "
                       f"{', '.join(sorted(supported))})")
    # A new name next to the target, created with the umask's mode (mkstemp's
    # would be 0600, and changing the umask to read it is process state).
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)),
                       f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise errors.error_for(errors.IO, f"{_OP}: cannot write {path}: {e.strerror}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=ext, dpi=dpi if dpi is not None else "figure")
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        raise errors.error_for(errors.IO, f"{_OP}: cannot write {path}: {e.strerror or e}") from e
    except BaseException:
        os.unlink(tmp)
        raise


def _maybe_save(ax: "matplotlib.axes.Axes", save_as: Optional[str]) -> None:
    if save_as is not None:
        save(ax.figure, save_as, dpi=150)


# ---- the command ----------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m ringrt.seacells_plot``: see the module's docstring and --help."""
    from ._seacells_files import load_for_plot, parse_args
    args = parse_args(argv)
    try:
        adata, labels = load_for_plot(args)
        plot_seacells(adata, key=args.key, basis=args.basis, labels=labels, obsm=args.obsm,
                      title=args.title or os.path.basename(args.input), save_as=args.plot,
                      dpi=args.dpi)
    except errors.RingrtError as e:
        print(f"{e}", file=sys.stderr)
        return 1
    print(f"{_OP}: wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

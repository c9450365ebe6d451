"""The files of ``python -m ringrt.seacells_plot``: its arguments, the input
AnnData (obs and the 2-D embeddings only; X is not read) and the outputs of
``ringrt seacells`` (``--out`` CSV, ``--json`` report, ``--archetypes-out``),
put into the AnnData as ``ringrt.seacells`` would have written them
(``obs[key]`` categorical in metacell order, ``uns[key]`` archetypes and
metrics), so that the plots read one layout. Every problem names the file
and, where it is one, the line."""
from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import errors

if TYPE_CHECKING:
    import anndata

_OP = "ringrt.seacells_plot"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m ringrt.seacells_plot",
        description="One PNG (or PDF/SVG, from the extension) of SEACells metacells: the 2-D "
                    "embedding coloured by metacell with the archetypes marked, the metacell "
                    "sizes, purity of --labels, compactness and separation.")
    p.add_argument("input", metavar="INPUT.h5ad", help="the AnnData ringrt seacells ran on (or an "
                   "AnnData with an obs column --key, e.g. one written after ringrt.seacells)")
    p.add_argument("--plot", required=True, metavar="FILE.png", help="the image to write")
    p.add_argument("--assign", metavar="CSV", help="ringrt seacells --out: cell,metacell,...")
    p.add_argument("--json", metavar="REPORT", help="ringrt seacells --json: metacell count, "
                   "compactness, separation, the --labels column")
    p.add_argument("--archetypes", metavar="FILE", help="ringrt seacells --archetypes-out: one "
                   "archetype cell index per line (names and marks the metacells)")
    p.add_argument("--labels", metavar="COLUMN", help="obs column for the purity (default: the "
                   "report's labels)")
    p.add_argument("--key", default="SEACell", help="obs column of the metacells (default SEACell)")
    p.add_argument("--basis", help="obsm key of the 2-D embedding (default X_umap, else X_tsne, "
                   "else the first two columns of --obsm)")
    p.add_argument("--obsm", default="X_pca",
                   help="the coordinates SEACells ran on (default X_pca)")
    p.add_argument("--dpi", type=int, default=100, help="pixels per inch of the 16 x 8 in figure")
    p.add_argument("--title", help="figure title (default: the input's file name)")
    args = p.parse_args(argv)
    if args.dpi <= 0:
        p.error(f"--dpi {args.dpi}: need a positive number of pixels per inch")
    return args


def _fail(path: str, msg: str, status: int = errors.IO) -> errors.RingrtError:
    return errors.error_for(status, f"{_OP}: {path}: {msg}")


def _read_h5ad(path: str, key: str) -> "anndata.AnnData":
    """obs, obsm and uns[key] of an .h5ad, in memory (not X: it may be large)."""
    import anndata
    if not os.path.isfile(path):
        raise _fail(path, "no such file")
    try:
        src = anndata.read_h5ad(path, backed="r")
    except Exception as e:  # h5py/anndata raise many types for a file that is not an h5ad
        raise _fail(path, f"cannot read it as an .h5ad ({type(e).__name__}: {e})") from e
    try:
        obsm = {k: np.asarray(v) for k, v in src.obsm.items() if np.ndim(v) == 2}
        ad = anndata.AnnData(obs=src.obs.copy(), obsm=obsm)
        if isinstance(src.uns.get(key), dict):
            ad.uns[key] = dict(src.uns[key])
    finally:
        src.file.close()
    return ad


def _read_report(path: str, n: int, input_path: str) -> Dict[str, Any]:
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise _fail(path, f"cannot read the --json report: {e}") from e
    if not isinstance(report, dict) or report.get("command") != "seacells":
        raise _fail(path, "is not a ringrt seacells --json report")
    if report.get("status") == "error":
        raise _fail(path, f"reports a failed run: {report.get('error')}")
    if report.get("cells") != n:
        raise _fail(path, f"is a run on {report.get('cells')} cells; {input_path} has {n}",
                    errors.INVALID_ARG)
    return report


def _read_archetypes(path: str, n: int) -> np.ndarray:
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise _fail(path, f"cannot read the archetypes: {e.strerror}") from e
    cells = []
    for no, line in enumerate(lines, 1):
        try:
            c = int(line.strip())
        except ValueError:
            raise _fail(path, f"line {no}: {line!r} is not a cell index") from None
        if not 0 <= c < n:
            raise _fail(path, f"line {no}: cell {c} is outside 0..{n - 1}", errors.INVALID_ARG)
        cells.append(c)
    if not cells:
        raise _fail(path, "holds no archetype")
    return np.asarray(cells, dtype=np.int64)


def _read_assignments(path: str, names: Sequence[str], input_path: str) -> np.ndarray:
    """The metacell column of ringrt's --out CSV, its cells checked against
    the input's cells (by name, or by position when the CSV numbers them)."""
    import pandas as pd
    try:
        df = pd.read_csv(path, dtype={"cell": str}, keep_default_na=False)
    except (OSError, ValueError) as e:
        raise _fail(path, f"cannot read the --assign CSV: {e}") from e
    if list(df.columns[:2]) != ["cell", "metacell"]:
        raise _fail(path, "is not a ringrt seacells --out CSV (its header must start with "
                    f"cell,metacell; it starts with {','.join(map(str, df.columns[:2]))})")
    n = len(names)
    if len(df) != n:
        raise _fail(path, f"has {len(df)} cells; {input_path} has {n}: the CSV must come from a "
                    "run on this input", errors.INVALID_ARG)
    cells = df["cell"].to_numpy(dtype=str)
    by_position = (cells == np.arange(n).astype(str)).all()
    if not by_position and not (cells == np.asarray(names, dtype=str)).all():
        row = int(np.flatnonzero(cells != np.asarray(names, dtype=str))[0])
        raise _fail(path, f"line {row + 2} is cell {cells[row]!r}, but cell {row} of "
                    f"{input_path} is {names[row]!r}: the CSV must come from a run on this "
                    "input", errors.INVALID_ARG)
    mc = pd.to_numeric(df["metacell"], errors="coerce").to_numpy()
    bad = np.flatnonzero(~np.isfinite(mc) | (mc != np.round(mc)) | (mc < -1))
    if bad.size:
        raise _fail(path, f"line {int(bad[0]) + 2}: metacell {df['metacell'][bad[0]]!r} is not "
                    "an index (-1 or more)")
    return mc.astype(np.int64)


def _metacell_names(arch: Optional[np.ndarray], m: int, names: Sequence[str]) -> list:
    """The archetype cells' names (the reference names metacells so), else
    'metacell j'."""
    if arch is not None:
        named = [str(names[c]) for c in arch]
        if len(set(named)) == m:
            return named
    return [f"metacell {j}" for j in range(m)]


def load_for_plot(args: argparse.Namespace) -> Tuple["anndata.AnnData", Optional[str]]:
    """The AnnData to plot and the labels column, from the command's files."""
    import pandas as pd
    ad = _read_h5ad(args.input, args.key)
    n, names = ad.n_obs, list(map(str, ad.obs_names))
    report = _read_report(args.json, n, args.input) if args.json else {}
    labels = args.labels or report.get("labels")
    if args.assign is None:
        if args.archetypes or args.json:
            raise errors.error_for(errors.INVALID_ARG, f"{_OP}: --archetypes and --json describe "
                                   "the run of an --assign CSV; give --assign too")
        return ad, labels
    codes = _read_assignments(args.assign, names, args.input)
    arch = _read_archetypes(args.archetypes, n) if args.archetypes else None
    m = report.get("metacells") or (len(arch) if arch is not None else int(codes.max()) + 1)
    if arch is not None and len(arch) != m:
        raise _fail(args.archetypes, f"has {len(arch)} archetypes; the run has {m} metacells",
                    errors.INVALID_ARG)
    if codes.max() >= m:
        row = int(np.argmax(codes >= m))
        raise _fail(args.assign, f"line {row + 2}: metacell {codes[row]} of {m}",
                    errors.INVALID_ARG)
    ad.obs[args.key] = pd.Categorical.from_codes(codes, categories=_metacell_names(arch, m, names))
    ad.uns[args.key] = {k: np.asarray(report[k], dtype=np.float64)
                        for k in ("compactness", "separation") if k in report}
    if arch is not None:
        ad.uns[args.key]["archetypes"] = arch
    return ad, labels

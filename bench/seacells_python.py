"""ringrt.seacells (Python, AnnData in memory) next to the `ringrt seacells`
tool on the same .h5ad and the same number of ranks: wall seconds of each.

Usage (under mpirun for several ranks; rank 0 prints one JSON line):
  python bench/seacells_python.py make OUT.h5ad N DIMS     synthetic blobs (float32 X_pca)
  python bench/seacells_python.py run IN.h5ad [N_METACELLS]

"run" reads the file with anndata, times ringrt.seacells (the call) and
reports the script's wall time from its start (imports included).
"""
import json
import os
import sys
import time

T0 = time.perf_counter()


def make(path: str, n: int, dims: int) -> None:
    import anndata
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(40, dims)) * 6.0
    lab = rng.integers(0, 40, n)
    x = (centers[lab] + rng.normal(size=(n, dims))).astype(np.float32)
    a = anndata.AnnData(obs=pd.DataFrame(index=[f"cell{i}" for i in range(n)]))
    a.obsm["X_pca"] = x
    a.write_h5ad(path)


def run(path: str, m: int) -> None:
    import anndata
    from mpi4py import MPI
    import ringrt
    t_imp = time.perf_counter() - T0
    adata = anndata.read_h5ad(path)
    t_read = time.perf_counter() - T0 - t_imp
    ctx = ringrt.default_context()
    MPI.COMM_WORLD.Barrier()
    t = time.perf_counter()
    model = ringrt.seacells(adata, n_metacells=m or None, ctx=ctx)
    call = time.perf_counter() - t
    if ctx.rank == 0:
        print(json.dumps({"side": "python", "input": os.path.basename(path), "cells": adata.n_obs,
                          "ranks": ctx.size, "threads": ctx.info()["threads"],
                          "metacells": model.n_metacells, "iterations": model.iterations,
                          "imports_s": round(t_imp, 3), "read_s": round(t_read, 3),
                          "call_s": round(call, 3), "library_run_s": round(model.seconds["run"], 3),
                          "script_s": round(time.perf_counter() - T0, 3),
                          "load": os.getloadavg()[0]}))


if sys.argv[1] == "make":
    make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
else:
    run(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)

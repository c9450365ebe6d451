"""SEACells on an .h5ad in one process, as in a notebook (no mpirun), and the
result saved for comparison: the archetypes, the hard assignments, the soft
weights and the RSS trace (.npz).

usage: wheel_seacells.py H5AD OUT.npz

tests/python/wheel_test.sh runs it twice: with the package and library of
the build tree (the reference) and with the installed wheel; the two must
agree (the same sources, the same fixed reduction order).
"""
import sys

import anndata
import numpy as np

import ringrt

adata = anndata.read_h5ad(sys.argv[1])
model = ringrt.seacells(adata, n_metacells=9)
labels = adata.obs["SEACell"].astype(str).to_numpy()
assert len(set(labels)) == 9, f"expected 9 metacells, got {sorted(set(labels))}"
np.savez(sys.argv[2], archetypes=model.archetypes, assignments=model.assignments,
         soft_weights=model.soft_weights, rss=model.rss, labels=labels.astype("U"))
print("seacells ok", model.iterations, "iterations, RSS", float(model.rss[-1]))

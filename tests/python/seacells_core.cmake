# The reference SEACells' Python surface (ringrt.core.SEACells, ringrt.evaluate,
# ringrt.plot; tests/python/test_seacells_core.py) on pbmc68k_reduced against
# the reference's formulas re-derived in the test: one process, and 2 ranks
# compared with a one-rank model bit for bit. The tutorial's steps
# (examples/python/seacells_notebook.py --check) at np 1 and 2.
if(EXISTS ${RINGRT_SHARED_DATA}/singlecell/pbmc68k_reduced.h5ad)
  set(_pbmc ${RINGRT_SHARED_DATA}/singlecell/pbmc68k_reduced.h5ad)
  ringrt_python_test(py_seacells_core_np1 test_seacells_core.py ARGS ${_pbmc}
                     LABELS seacells TIMEOUT 180)
  ringrt_python_test(py_seacells_core_np2 test_seacells_core.py NP 2 ARGS ${_pbmc}
                     LABELS seacells TIMEOUT 240)
  ringrt_python_test(py_seacells_notebook_np1 ../../examples/python/seacells_notebook.py
                     ARGS ${_pbmc} --check LABELS seacells TIMEOUT 180)
  ringrt_python_test(py_seacells_notebook_np2 ../../examples/python/seacells_notebook.py NP 2
                     ARGS ${_pbmc} --check LABELS seacells TIMEOUT 240)
endif()

# `ringrt seacells --h5ad-out / --summary-out` on pbmc68k_reduced, read back
# with anndata and scanpy (tests/python/test_seacells_outputs.py): np 1 and
# 3 (mpiexec passed in), hard and soft summaries, dense, CSR and layers.
if(EXISTS ${RINGRT_SHARED_DATA}/singlecell/pbmc68k_reduced.h5ad)
  ringrt_python_test(py_seacells_outputs test_seacells_outputs.py
                     ARGS $<TARGET_FILE:ringrt_app> ${MPIEXEC_EXECUTABLE} --oversubscribe
                          --bind-to none ${RINGRT_SHARED_DATA}/singlecell/pbmc68k_reduced.h5ad
                     LABELS seacells cli TIMEOUT 180)
endif()

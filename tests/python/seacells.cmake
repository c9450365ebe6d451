# ringrt.seacells over AnnData (tests/python/test_seacells.py): one process
# without mpirun (the notebook case, compared with the `ringrt seacells`
# tool) and 3 ranks under mpirun (compared with a one-rank run).
ringrt_python_test(py_seacells_np1 test_seacells.py ARGS $<TARGET_FILE:ringrt_app>
                   LABELS seacells TIMEOUT 120)
ringrt_python_test(py_seacells_np3 test_seacells.py NP 3 ARGS $<TARGET_FILE:ringrt_app>
                   LABELS seacells TIMEOUT 120)
# `ringrt seacells` on compressed, lzf, zarr and anndata-written inputs.
ringrt_python_test(py_h5ad_inputs test_h5ad_inputs.py ARGS $<TARGET_FILE:ringrt_app>
                   LABELS seacells TIMEOUT 120)

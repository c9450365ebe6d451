# The plots of SEACells metacells (python/ringrt/seacells_plot.py), from the
# Python front and from the `ringrt seacells` tool's files, one process.
ringrt_python_test(py_seacells_plot test_seacells_plot.py ARGS $<TARGET_FILE:ringrt_app>
                   LABELS seacells TIMEOUT 120)

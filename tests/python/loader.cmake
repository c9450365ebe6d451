# Loader part (issue 11): import order of ringrt and torch, in fresh
# interpreters (MPI singletons, so no NP), the cpu stream contract in Python.
ringrt_python_test(py_load_order test_load_order.py LABELS loader TIMEOUT 300)

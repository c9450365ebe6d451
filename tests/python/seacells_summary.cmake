# ringrt.summarize_by_SEACell / summarize_by_soft_SEACell (the library's
# rrt_seacells_summarize) against numpy (tests/python/test_seacells_summary.py):
# one process, and 2 ranks compared bit for bit with a one-rank run.
ringrt_python_test(py_seacells_summary_np1 test_seacells_summary.py LABELS seacells TIMEOUT 120)
ringrt_python_test(py_seacells_summary_np2 test_seacells_summary.py NP 2 LABELS seacells
                   TIMEOUT 120)

# ringrt.ilu0 / krylov_solve over scipy.sparse and the petsc4py preconditioner.
foreach(np 1 2 3)
  ringrt_python_test(py_ilu_np${np} test_ilu.py NP ${np} LABELS ilu TIMEOUT 120)
endforeach()

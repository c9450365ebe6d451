# ringrt.ilu0 / krylov_solve over scipy.sparse and the petsc4py preconditioner.
foreach(np 1 2 3)
  ringrt_python_test(py_ilu_np${np} test_ilu.py NP ${np} LABELS ilu TIMEOUT 120)
endforeach()
# One np = 3 job runs the KSP on COMM_SELF, on 2 ranks and on 3.
ringrt_python_test(py_ilu_petsc_np3 test_ilu_petsc.py NP 3 LABELS ilu petsc TIMEOUT 180)

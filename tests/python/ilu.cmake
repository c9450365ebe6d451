# ringrt.ilu0 / krylov_solve over scipy.sparse and the petsc4py preconditioner.
foreach(np 1 2 3)
  ringrt_python_test(py_ilu_np${np} test_ilu.py NP ${np} LABELS ilu TIMEOUT 120)
endforeach()
ringrt_python_test(py_ilu_emu_np2 test_ilu.py NP 2 ARGS emu LABELS ilu TIMEOUT 120)
# One np = 3 job runs the KSP on COMM_SELF, on 2 ranks and on 3.
ringrt_python_test(py_ilu_petsc_np3 test_ilu_petsc.py NP 3 LABELS ilu petsc TIMEOUT 180)
# The docs' examples (examples/python), on a small grid: they exit 1 unless they converge.
ringrt_python_test(py_ilu_example_scipy_np2 ../../examples/python/ilu_scipy.py NP 2 ARGS 16
                   LABELS ilu TIMEOUT 120)
ringrt_python_test(py_ilu_example_petsc_np2 ../../examples/python/ilu_petsc.py NP 2
                   ARGS 16 -pc_type python -pc_python_type ringrt.petsc.ILU0
                   -pc_ringrt_ordering rcm LABELS ilu petsc TIMEOUT 120)
# ILU(k) and the transpose apply against a naive ILU(k) and spsolve, bitwise
# across rank counts and backends (test_iluk.py); PETSc's ILU(k) at np 1.
foreach(np 1 2 4)
  ringrt_python_test(py_iluk_np${np} test_iluk.py NP ${np} ARGS cpu ${RINGRT_SHARED_DATA}/matrices
                     LABELS ilu TIMEOUT 120)
endforeach()
ringrt_python_test(py_iluk_emu_np3 test_iluk.py NP 3 ARGS emu ${RINGRT_SHARED_DATA}/matrices
                   LABELS ilu TIMEOUT 120)
ringrt_python_test(py_iluk_petsc_np1 test_iluk_petsc.py NP 1 ARGS ${RINGRT_SHARED_DATA}/matrices
                   LABELS ilu petsc TIMEOUT 120)

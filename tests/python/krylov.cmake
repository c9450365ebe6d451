# Krylov reasons, sides, monitor and FGMRES against PETSc's KSP (petsc4py).
foreach(np 1 3)
  ringrt_python_test(py_krylov_petsc_np${np} test_krylov_petsc.py NP ${np}
                     ARGS ${RINGRT_SHARED_DATA}/matrices LABELS ilu petsc TIMEOUT 120)
endforeach()

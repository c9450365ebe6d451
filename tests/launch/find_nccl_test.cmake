# cmake -DSRC=<repo> -DWORK=<scratch> -P find_nccl_test.cmake
# cmake/FindNCCL.cmake against the layout of the NCCL wheel that PyTorch
# installs (nvidia/nccl/include/nccl.h, nvidia/nccl/lib/libnccl.so.2, no
# libnccl.so; nvidia.nccl a namespace package whose __file__ is None), found
# through the Python named by NCCL_PYTHON; and through an NCCL_ROOT hint.
cmake_policy(VERSION 3.24)
file(REMOVE_RECURSE ${WORK})
set(site ${WORK}/site-packages)
file(MAKE_DIRECTORY ${site}/nvidia/nccl/include ${site}/nvidia/nccl/lib)
file(WRITE ${site}/nvidia/nccl/include/nccl.h
     "#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 7\n")
file(WRITE ${site}/nvidia/nccl/lib/libnccl.so.2 "")
# A stand-in interpreter that answers the module's one question the way the
# real one does for a namespace package (list(m.__path__)[0]).
file(WRITE ${WORK}/python "#!/bin/sh\ncase \"$*\" in *__path__*) echo '${site}/nvidia/nccl' ;; *) exit 1 ;; esac\n")
file(CHMOD ${WORK}/python PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

function(check how)
  if(NOT NCCL_FOUND OR NOT NCCL_VERSION STREQUAL "2.27.7")
    message(FATAL_ERROR "${how}: not found (NCCL_FOUND=${NCCL_FOUND} NCCL_VERSION=${NCCL_VERSION})")
  endif()
  if(NOT NCCL_INCLUDE_DIR STREQUAL "${site}/nvidia/nccl/include")
    message(FATAL_ERROR "${how}: NCCL_INCLUDE_DIR=${NCCL_INCLUDE_DIR}, not the wheel's")
  endif()
  if(NOT NCCL_LIBRARY STREQUAL "${site}/nvidia/nccl/lib/libnccl.so.2")
    message(FATAL_ERROR "${how}: NCCL_LIBRARY=${NCCL_LIBRARY}, not the wheel's libnccl.so.2")
  endif()
  message(STATUS "${how}: ${NCCL_INCLUDE_DIR}, ${NCCL_LIBRARY}: ok")
endfunction()

# The module caches what it found: each case starts without it.
macro(fresh)
  unset(NCCL_INCLUDE_DIR CACHE)
  unset(NCCL_LIBRARY CACHE)
  unset(NCCL_FOUND)
  unset(NCCL_VERSION)
endmacro()

set(CMAKE_MODULE_PATH ${SRC}/cmake)
fresh()
set(NCCL_PYTHON ${WORK}/python)
find_package(NCCL)
check("wheel through NCCL_PYTHON")

fresh()
set(NCCL_PYTHON /nonexistent/python)
set(NCCL_ROOT ${site}/nvidia/nccl)
find_package(NCCL)
check("wheel through NCCL_ROOT")

# FindNCCL: locate the NCCL headers (nccl.h) and, where it is, the library.
#
# ringrt never links NCCL: it opens the library at run time (src/comm/nccl_lib.c)
# and needs only the header at build time, for the types. Looks under
# NCCL_ROOT, $ENV{NCCL_ROOT}, $ENV{NCCL_HOME}, the NCCL wheel of a Python
# (the nvidia-nccl-cu* package that PyTorch depends on: nvidia/nccl/include
# and nvidia/nccl/lib/libnccl.so.2 only, no libnccl.so symlink), the CUDA
# toolkit and the system paths. The Python is NCCL_PYTHON, else RINGRT_PYTHON,
# else python3 on PATH.
#
# Defines NCCL_FOUND, NCCL_VERSION (from nccl.h), NCCL_INCLUDE_DIR, the
# imported target NCCL::headers, and NCCL_LIBRARY (libnccl.so or
# libnccl.so.2; may be NOTFOUND, it is not needed to build: the tests hand it
# to the library as RINGRT_NCCL_LIBRARY when the loader would not find it).
set(_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME})

set(_nccl_python "${NCCL_PYTHON}")
if(NOT _nccl_python)
  set(_nccl_python "${RINGRT_PYTHON}")
endif()
if(NOT _nccl_python)
  find_program(_nccl_python_exe NAMES python3 python)
  mark_as_advanced(_nccl_python_exe)
  set(_nccl_python "${_nccl_python_exe}")
endif()
if(_nccl_python)
  # nvidia and nvidia.nccl are namespace packages: __file__ is None, the
  # folder is __path__.
  execute_process(
    COMMAND "${_nccl_python}" -c "import nvidia.nccl as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _nccl_rc TIMEOUT 60)
  if(_nccl_rc EQUAL 0 AND IS_DIRECTORY "${_nccl_wheel}")
    list(APPEND _nccl_hints "${_nccl_wheel}")
  endif()
endif()
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
list(APPEND _nccl_hints /usr/local/cuda)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
# The wheel has only the versioned name, which find_library matches only when
# named in full; NAMES_PER_DIR: the first hint with either name wins (the
# wheel's, not a libnccl.so of the toolkit further down the list).
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_major REGEX "^#define NCCL_MAJOR +[0-9]+")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_minor REGEX "^#define NCCL_MINOR +[0-9]+")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_patch REGEX "^#define NCCL_PATCH +[0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _nccl_major "${_nccl_major}")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _nccl_minor "${_nccl_minor}")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _nccl_patch "${_nccl_patch}")
  set(NCCL_VERSION "${_nccl_major}.${_nccl_minor}.${_nccl_patch}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::headers AND NOT CMAKE_SCRIPT_MODE_FILE) # (a -P script: the test)
  add_library(NCCL::headers INTERFACE IMPORTED)
  set_target_properties(NCCL::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

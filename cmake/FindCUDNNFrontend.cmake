# FindCUDNNFrontend: the headers ringrt's cuDNN attention path is built
# against (src/kernels/cuda/attn_cudnn.cpp): cudnn_frontend.h (the header-only
# cudnn-frontend, from the nvidia-cudnn-frontend Python package or a source
# checkout) and cudnn.h (cuDNN 9: the CUDA toolkit, or PyTorch's
# nvidia-cudnn-cu* wheel). No library is linked: ringrt opens libcudnn.so.9
# at run time.
#
# Hints: CUDNN_FRONTEND_ROOT and CUDNN_ROOT (CMake or environment), then the
# packages of the Pythons CUDNN_PYTHON, RINGRT_PYTHON and python3 on PATH (in
# that order), then the CUDA toolkit and the system paths.
#
# Defines CUDNNFrontend_FOUND, CUDNN_FRONTEND_INCLUDE_DIR, CUDNN_INCLUDE_DIR,
# CUDNN_VERSION (from cudnn_version.h) and the imported target
# CUDNN::frontend (headers only, as system includes: their warnings are not ours).
set(_cf_hints ${CUDNN_FRONTEND_ROOT} $ENV{CUDNN_FRONTEND_ROOT})
set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT})

# Every Python that may hold the pip packages: launch/deps.sh installs
# cudnn-frontend with the python3 on PATH, while the tests' interpreter
# (RINGRT_PYTHON, a venv) may be another one.
find_program(_cf_python_exe NAMES python3 python)
mark_as_advanced(_cf_python_exe)
set(_cf_pythons ${CUDNN_PYTHON} ${RINGRT_PYTHON} ${_cf_python_exe})
list(REMOVE_DUPLICATES _cf_pythons)
foreach(_cf_python IN LISTS _cf_pythons)
  # nvidia-cudnn-frontend installs include/ beside its packages (purelib and
  # platlib differ on some layouts); nvidia.cudnn is PyTorch's cuDNN wheel.
  execute_process(
    COMMAND "${_cf_python}" -c "import sysconfig; p = sysconfig.get_paths(); print(p['purelib']); print(p['platlib'])"
    OUTPUT_VARIABLE _cf_sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET TIMEOUT 60)
  string(REPLACE "\n" ";" _cf_sites "${_cf_sites}")
  list(APPEND _cf_hints ${_cf_sites})
  execute_process(
    COMMAND "${_cf_python}" -c "import nvidia.cudnn as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE _cudnn_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE _cudnn_rc TIMEOUT 60)
  if(_cudnn_rc EQUAL 0 AND IS_DIRECTORY "${_cudnn_wheel}")
    list(APPEND _cudnn_hints "${_cudnn_wheel}")
  endif()
endforeach()
if(CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _cudnn_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
list(APPEND _cudnn_hints /usr/local/cuda)

find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h HINTS ${_cf_hints} PATH_SUFFIXES include)
find_path(CUDNN_INCLUDE_DIR cudnn_version.h HINTS ${_cudnn_hints} PATH_SUFFIXES include)
if(CUDNN_INCLUDE_DIR)
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_major REGEX "^#define CUDNN_MAJOR +[0-9]+")
  file(STRINGS "${CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_minor REGEX "^#define CUDNN_MINOR +[0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _cudnn_major "${_cudnn_major}")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _cudnn_minor "${_cudnn_minor}")
  set(CUDNN_VERSION "${_cudnn_major}.${_cudnn_minor}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNNFrontend
  REQUIRED_VARS CUDNN_FRONTEND_INCLUDE_DIR CUDNN_INCLUDE_DIR VERSION_VAR CUDNN_VERSION)
if(CUDNNFrontend_FOUND AND NOT TARGET CUDNN::frontend)
  add_library(CUDNN::frontend INTERFACE IMPORTED)
  set_target_properties(CUDNN::frontend PROPERTIES
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${CUDNN_FRONTEND_INCLUDE_DIR};${CUDNN_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_FRONTEND_INCLUDE_DIR};${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_FRONTEND_INCLUDE_DIR CUDNN_INCLUDE_DIR)

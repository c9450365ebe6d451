#!/usr/bin/env bash
# Check that what ringrt builds against is there, the way the build will look
# for it: commands on PATH (a module system or spack puts them there) and
# libraries through CMake's own search (cmake/RingrtDeps.cmake, the file the
# build uses, so CMAKE_PREFIX_PATH, HDF5_ROOT, MPI_HOME ... count).
#
#   bash launch/deps.sh [-DVAR=VALUE ...]     (launch/build.sh passes its -D arguments)
#
# All there: exit 0, nothing printed. Something missing: as root on Debian,
# apt-get install it and check again; otherwise (or if that did not help)
# print what is missing and how to provide it (Debian package, module/spack,
# the CMake variable that points at an install) and exit 1.
# Optional, installed as root on Debian, otherwise one note each: the Slurm
# test's daemons (slurm-wlm, munge; that test reports itself skipped),
# PETSc (petsc-dev; the PETSc PC plugin and its tests are not built;
# -DRINGRT_PETSC=OFF leaves it out, -DRINGRT_PETSC=ON makes it required),
# and the same way OpenBLAS, hwloc and HDF5 (with zlib) under their
# RINGRT_BLAS / RINGRT_HWLOC / RINGRT_HDF5 = AUTO (the default; ON makes one
# required, OFF leaves it unsearched): the build falls back without them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmake_args=()
for a in "$@"; do [[ "$a" == -D* ]] && cmake_args+=("$a"); done

# What to say about each item: what it is, Debian packages, module/spack, CMake.
declare -A what deb how cm
what[cmake]="command cmake, version 3.24 or newer"; deb[cmake]="cmake"
how[cmake]="module load cmake | spack load cmake | pip install --user cmake"
what[ninja]="command ninja (or ninja-build)"; deb[ninja]="ninja-build"
how[ninja]="module load ninja | spack load ninja | pip install --user ninja"
what[cc]="a C11 compiler (\$CC, else cc)"; deb[cc]="gcc"
how[cc]="module load gcc | spack load gcc"; cm[cc]="-DCMAKE_C_COMPILER=/path/to/cc (or export CC)"
what[cxx]="a C++17 compiler (\$CXX, else c++)"; deb[cxx]="g++"
how[cxx]="module load gcc | spack load gcc"; cm[cxx]="-DCMAKE_CXX_COMPILER=/path/to/c++ (or export CXX)"
what[python3]="command python3 (the tests' drivers)"; deb[python3]="python3"
how[python3]="module load python | spack load python"
what[pkg-config]="command pkg-config (the install test)"; deb[pkg-config]="pkg-config"
how[pkg-config]="module load pkgconf | spack load pkgconf"
what[mpi]="MPI: mpicc and mpirun on PATH, MPI found by CMake"; deb[mpi]="openmpi-bin libopenmpi-dev"
how[mpi]="module load openmpi | spack load openmpi"
cm[mpi]="-DMPI_HOME=/path/to/mpi (or -DMPI_C_COMPILER=/path/to/mpicc)"
what[openmp]="OpenMP for C and C++ (comes with gcc)"; deb[openmp]="libgomp1"
how[openmp]="module load gcc | for clang: libomp"; cm[openmp]="-DOpenMP_ROOT=/path/to/libomp"
what[openblas]="OpenBLAS: libopenblas and cblas.h"; deb[openblas]="libopenblas-dev"
how[openblas]="module load openblas | spack load openblas"
cm[openblas]="-DCMAKE_PREFIX_PATH=/path/to/openblas (or -DBLAS_LIBRARIES=.../libopenblas.so -DOPENBLAS_INCLUDE_DIR=...)"
what[hwloc]="hwloc: hwloc.h and libhwloc"; deb[hwloc]="libhwloc-dev"
how[hwloc]="module load hwloc | spack load hwloc"
cm[hwloc]="-DCMAKE_PREFIX_PATH=/path/to/hwloc (or -DHWLOC_INCLUDE_DIR=... -DHWLOC_LIBRARY=...)"
what[hdf5]="HDF5, the serial C library"; deb[hdf5]="libhdf5-dev"
how[hdf5]="module load hdf5 | spack load hdf5~mpi"; cm[hdf5]="-DHDF5_ROOT=/path/to/hdf5"
what[zlib]="zlib: zlib.h and libz"; deb[zlib]="zlib1g-dev"
how[zlib]="module load zlib | spack load zlib"; cm[zlib]="-DZLIB_ROOT=/path/to/zlib"
what[slurm]="Slurm daemons for tests/launch/slurm_test.sh"; deb[slurm]="slurm-wlm munge"
declare -A without
without[slurm]="that test will be skipped"
what[petsc]="PETSc (pkg-config PETSc.pc, or PETSC_DIR) for the PETSc PC plugin"; deb[petsc]="petsc-dev"
how[petsc]="module load petsc | spack load petsc"; cm[petsc]="-DPETSC_DIR=/path/to/petsc [-DPETSC_ARCH=arch]"
without[openblas]="in-tree loops replace its few dot/GEMM calls (same results; -DRINGRT_BLAS=OFF says so, =ON requires it)"
without[hwloc]="binding comes from sched_getaffinity and /sys (-DRINGRT_HWLOC=OFF says so, =ON requires it)"
without[hdf5]=".h5ad files cannot be read (.npy/.csv can; -DRINGRT_HDF5=OFF says so, =ON requires it)"
without[zlib]="gzip-compressed Matrix Market files are refused, and .h5ad needs it too"
without[petsc]="the PETSc plugin (libringrt_petsc.so) and its tests will not be built"

have() { command -v "$1" >/dev/null 2>&1; }
mpi_compiles() {
  local d rc
  d=$(mktemp -d "${TMPDIR:-/tmp}/ringrt-mpicc.XXXXXX")
  printf '#include <mpi.h>\nint main(void) { return MPI_Init(0, 0); }\n' >"$d/t.c"
  mpicc "$d/t.c" -o "$d/t" >/dev/null 2>&1
  rc=$?
  rm -rf "$d"
  return $rc
}
first_word() { set -- $1; echo "${1:-}"; }

# Commands. The library check needs cmake, ninja, both compilers and MPI.
check_commands() {
  missing=() optional=()
  local v
  v=$(cmake --version 2>/dev/null | sed -n '1s/^cmake version //p')
  [ -n "$v" ] && [ "$(printf '%s\n' 3.24 "$v" | sort -V | head -n 1)" = 3.24 ] || missing+=(cmake)
  have ninja || have ninja-build || missing+=(ninja)
  have "$(first_word "${CC:-cc}")" || missing+=(cc)
  have "$(first_word "${CXX:-c++}")" || missing+=(cxx)
  have python3 || missing+=(python3)
  have pkg-config || missing+=(pkg-config)
  # mpicc without mpi.h (Debian's openmpi-bin, pulled in by python3-mpi4py,
  # without libopenmpi-dev) would fail CMake's MPI probe: count it as missing
  { have mpicc && have mpirun && mpi_compiles; } || missing+=(mpi)
  { have slurmctld && have slurmd && have munged; } || optional+=(slurm)
}

# Libraries, through CMake's own search in a throwaway build folder.
check_libraries() {
  local probe log
  probe=$(mktemp -d "${TMPDIR:-/tmp}/ringrt-deps.XXXXXX")
  log=$probe/probe.log
  if ! cmake -S "$root/cmake/deps-probe" -B "$probe" -G Ninja \
    "${cmake_args[@]+"${cmake_args[@]}"}" >"$log" 2>&1; then
    echo "ringrt deps: the CMake dependency probe failed (cmake/deps-probe):" >&2
    tail -n 20 "$log" >&2
    rm -rf "$probe"
    exit 1
  fi
  local m
  for m in $(sed -n 's/^-- ringrt-deps-missing: //p' "$log"); do
    [[ " ${missing[*]} " == *" $m "* ]] || missing+=("$m")
  done
  for m in $(sed -n 's/^-- ringrt-deps-optional: //p' "$log"); do
    [[ " ${optional[*]} " == *" $m "* ]] || optional+=("$m")
  done
  rm -rf "$probe"
}

check_all() {
  check_commands
  local tool
  for tool in cmake ninja cc cxx mpi; do
    [[ " ${missing[*]} " == *" $tool "* ]] && return 0
  done
  check_libraries
}

report() {
  local m pkgs=()
  echo "ringrt deps: missing what the build needs:" >&2
  for m in "${missing[@]}"; do
    printf '  %-10s %s\n' "$m" "${what[$m]}" >&2
    printf '             Debian:  apt-get install %s\n' "${deb[$m]}" >&2
    printf '             modules: %s\n' "${how[$m]}" >&2
    [ -n "${cm[$m]:-}" ] && printf '             CMake:   launch/build.sh %s\n' "${cm[$m]}" >&2
    pkgs+=(${deb[$m]})
  done
  case " ${missing[*]} " in *" cmake "* | *" ninja "* | *" cc "* | *" cxx "*)
    echo "  (libraries not checked yet: that needs cmake, ninja and the compilers)" >&2 ;;
  esac
  echo "ringrt deps: all of it on Debian: sudo apt-get install ${pkgs[*]}" >&2
}

debian_root() { [ "$(id -u)" -eq 0 ] && [ -r /etc/debian_version ] && have apt-get; }

apt_install() {
  local m pkgs=()
  for m in "$@"; do pkgs+=(${deb[$m]}); done
  echo "ringrt deps: installing ${pkgs[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

# cuDNN's fused attention (src/kernels/cuda/attn_cudnn.cpp, RINGRT_CUDNN)
# builds against the cudnn-frontend headers: the nvidia-cudnn-frontend pip
# package, installed as root where nvcc is and the headers are not (else a
# note), without its Python dependencies (the headers are all the build
# reads: 7 s and 94 MB, against 17 s and 625 MB with the CUTLASS DSL).
# Pinned, so two machines build the same thing.
cudnn_frontend_pin=nvidia-cudnn-frontend==1.32.0
cudnn_frontend() {
  have nvcc && [[ " ${cmake_args[*]-} " != *"RINGRT_CUDNN=OFF"* ]] &&
    [[ " ${cmake_args[*]-} " != *"RINGRT_CUDA=OFF"* ]] || return 0
  # Where cmake/FindCUDNNFrontend.cmake looks first: CUDNN_FRONTEND_ROOT as a
  # -D argument or in the environment, then the packages of python3.
  local a roots=(${CUDNN_FRONTEND_ROOT-})
  for a in "${cmake_args[@]+"${cmake_args[@]}"}"; do
    [[ "$a" == -DCUDNN_FRONTEND_ROOT=* ]] && roots+=("${a#*=}")
  done
  for a in "${roots[@]+"${roots[@]}"}"; do
    [ -r "$a/include/cudnn_frontend.h" ] || [ -r "$a/cudnn_frontend.h" ] && return 0
  done
  have python3 && python3 -c '
import os, sys, sysconfig
p = sysconfig.get_paths()
sys.exit(0 if any(os.path.exists(os.path.join(p[k], "include", "cudnn_frontend.h"))
                  for k in ("purelib", "platlib")) else 1)' && return 0
  if [ "$(id -u)" -eq 0 ] &&
    python3 -m pip install -q --disable-pip-version-check --no-deps "$cudnn_frontend_pin" >/dev/null 2>&1; then
    echo "ringrt deps: installed $cudnn_frontend_pin (headers for cuDNN attention)" >&2
    return 0
  fi
  echo "ringrt deps: note: no cudnn_frontend.h (pip install $cudnn_frontend_pin); the cuda" \
    "backend builds without cuDNN attention" >&2
}
cudnn_frontend

# CuTe's layouts, the emulator's ground truth (tests/emu/cute_truth.sh, the
# test emu_cute_truth): the headers of the nvidia-cutlass wheel
# (cutlass_library/source/include; 6.4 MB download, 40 MB installed, 7 s),
# installed as root where nvcc is and python3 lacks them, without its
# Python dependencies; pinned. Without them the test is skipped.
cutlass_pin=nvidia-cutlass==4.2.0.0
cutlass_headers() {
  have nvcc || return 0
  # headers of one's own (as tests/emu/cute_truth.sh honours them)
  [ -n "${CUTLASS_INCLUDE_DIR:-}" ] && [ -f "$CUTLASS_INCLUDE_DIR/cute/tensor.hpp" ] && return 0
  have python3 || return 0
  python3 -c 'import importlib.util as u, os, sys
s = u.find_spec("cutlass_library")
sys.exit(0 if s and os.path.exists(os.path.join(os.path.dirname(s.origin), "source", "include",
                                                "cute", "tensor.hpp")) else 1)' && return 0
  if [ "$(id -u)" -eq 0 ] &&
    python3 -m pip install -q --disable-pip-version-check --no-deps "$cutlass_pin" >/dev/null 2>&1; then
    echo "ringrt deps: installed $cutlass_pin (CuTe headers for the emulator's ground truth)" >&2
    return 0
  fi
  echo "ringrt deps: note: no CuTe headers (pip install --no-deps $cutlass_pin); the test" \
    "emu_cute_truth is skipped" >&2
}
cutlass_headers

check_all
# Twice: the library probe runs only once the commands it needs are there,
# so what it finds missing shows up after the first install.
for round in 1 2; do
  debian_root && [ $((${#missing[@]} + ${#optional[@]})) -gt 0 ] || break
  [ "$round" = 2 ] && [ "${missing[*]} ${optional[*]}" = "$tried" ] && break
  tried="${missing[*]} ${optional[*]}"
  apt_install "${missing[@]}" "${optional[@]}" || echo "ringrt deps: apt-get failed" >&2
  check_all
done
for m in "${optional[@]+"${optional[@]}"}"; do
  echo "ringrt deps: note: no ${what[$m]} (Debian: ${deb[$m]}); ${without[$m]}" >&2
done
[ ${#missing[@]} -eq 0 ] && exit 0
report
exit 1

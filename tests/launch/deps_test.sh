#!/usr/bin/env bash
# launch/deps.sh as a user without root whose tools come from PATH (modules):
# all there -> exit 0 and silent; a command or a library hidden -> exit 1, the
# missing items named with their Debian package, module hint and CMake
# variable, and no apt-get; a CMake variable pointing at the install -> found.
# As root on Debian it must apt-get install what is missing (a stub apt-get
# records the call) and still fail when that did not help.
set -u
src=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
# In /tmp, not the build tree: user nobody must reach it whatever folder
# the build tree is in (the trap removes it).
tmp=$(mktemp -d /tmp/ringrt-deps-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# The script and the CMake files it uses, readable by any user.
mkdir -p "$tmp/src/launch" "$tmp/src/cmake" "$tmp/home"
cp "$src/launch/deps.sh" "$tmp/src/launch/"
cp -r "$src/cmake/RingrtDeps.cmake" "$src/cmake/RingrtPetsc.cmake" "$src/cmake/deps-probe" "$tmp/src/cmake/"
chmod -R a+rX "$tmp/src"
chmod 777 "$tmp/home"

# A PATH like a module system gives: every command of the system directories
# (not root's own ones), less the hidden ones, plus a stub apt-get that records
# that it ran. farm NAME HIDDEN... prints the folder.
sys_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
farm() {
  local dir=$tmp/$1 d f name
  shift
  mkdir -p "$dir"
  IFS=: read -r -a dirs <<<"$sys_path"
  for d in "${dirs[@]}"; do
    for f in "$d"/*; do
      name=${f##*/}
      [[ " $* apt-get " == *" $name "* ]] && continue
      [ -e "$dir/$name" ] || ln -s "$f" "$dir/$name"
    done
  done
  printf '#!/bin/sh\necho "apt-get $*" >>%s/apt.log\n' "$tmp" >"$dir/apt-get"
  chmod 755 "$dir/apt-get"
  echo "$dir"
}

# Run deps.sh as an ordinary user (nobody when we are root) with PATH $1.
as_user() {
  local path=$1
  shift
  local cmd=(env -i "PATH=$path" "HOME=$tmp/home" TMPDIR="$tmp/home" ${base_env[@]+"${base_env[@]}"}
    ${user_env[@]+"${user_env[@]}"}
    bash "$tmp/src/launch/deps.sh" "$@")
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups "${cmd[@]}"
  else
    "${cmd[@]}"
  fi
}

# cudnn-frontend's header, looked for where nvcc is: a stand-in that
# CUDNN_FRONTEND_ROOT points at makes "everything present" hold for users
# whose python3 lacks the pip package.
mkdir -p "$tmp/cudnn-fe/include"
touch "$tmp/cudnn-fe/include/cudnn_frontend.h"
chmod -R a+rX "$tmp/cudnn-fe"
# ... and CuTe's headers (the emulator's ground truth), likewise.
mkdir -p "$tmp/cutlass/include/cute"
touch "$tmp/cutlass/include/cute/tensor.hpp"
chmod -R a+rX "$tmp/cutlass"
base_env=("CUDNN_FRONTEND_ROOT=$tmp/cudnn-fe" "CUTLASS_INCLUDE_DIR=$tmp/cutlass/include")

full=$(farm full)
out=$(as_user "$full" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "everything present: exit $rc, output: $out"
[ -z "$out" ] || fail "everything present: not quiet: $out"

# Hidden commands: ninja and the MPI wrappers.
out=$(as_user "$(farm nompi ninja ninja-build mpicc mpirun)" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "ninja and MPI hidden: exit $rc (want 1), output: $out"
for want in "ninja " "apt-get install ninja-build" "module load ninja" "mpi " \
  "apt-get install openmpi-bin libopenmpi-dev" "-DMPI_HOME=" "libraries not checked yet"; do
  [[ "$out" == *"$want"* ]] || fail "ninja and MPI hidden: output lacks '$want': $out"
done
[ ! -e "$tmp/apt.log" ] || fail "apt-get ran for a user without root: $(cat "$tmp/apt.log")"

# Hidden libraries: hwloc.h and zlib.h live in /usr/include here, which
# CMake is told to ignore. Optional under AUTO (the default): exit 0 and a
# note naming each; required under RINGRT_HWLOC=ON / RINGRT_HDF5=ON: the
# message names those two and nothing else; not looked for under OFF.
out=$(as_user "$full" -DCMAKE_IGNORE_PATH=/usr/include 2>&1)
rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"note: no hwloc"*"libhwloc-dev"* && "$out" == *"note: no zlib"* ]] ||
  fail "hwloc hidden, AUTO: exit $rc (want 0), no notes naming hwloc and zlib: $out"
[[ "$out" != *openblas* && "$out" != *"missing"* ]] || fail "hwloc hidden, AUTO: says more: $out"
# OFF: hwloc is not looked for; zlib, optional on its own (gzip input), is
# still noted
out=$(as_user "$full" -DCMAKE_IGNORE_PATH=/usr/include -DRINGRT_HWLOC=OFF -DRINGRT_HDF5=OFF 2>&1)
rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"note: no zlib"* && "$out" != *hwloc* && "$out" != *hdf5* ]] ||
  fail "hwloc hidden, OFF: exit $rc, output: $out"
on=(-DRINGRT_HWLOC=ON -DRINGRT_HDF5=ON)
out=$(as_user "$full" -DCMAKE_IGNORE_PATH=/usr/include "${on[@]}" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "hwloc hidden, ON: exit $rc (want 1), output: $out"
for want in "hwloc " "apt-get install libhwloc-dev" "module load hwloc" "-DHWLOC_INCLUDE_DIR="; do
  [[ "$out" == *"$want"* ]] || fail "hwloc hidden: output lacks '$want': $out"
done
[[ "$out" == *"zlib "* && "$out" == *"zlib1g-dev"* ]] || fail "zlib hidden: not named: $out"
[[ "$out" != *openblas* && "$out" != *hdf5* && "$out" != *"mpi "* ]] ||
  fail "hwloc hidden: names more than hwloc and zlib: $out"
# ... and the CMake variables the message suggests make them found again.
out=$(as_user "$full" -DCMAKE_IGNORE_PATH=/usr/include "${on[@]}" -DHWLOC_INCLUDE_DIR=/usr/include \
  -DZLIB_INCLUDE_DIR=/usr/include 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || fail "hwloc given by -DHWLOC_INCLUDE_DIR: exit $rc, output: $out"

# PETSc hidden from pkg-config: optional (the PC plugin), so a note naming
# petsc-dev and exit 0; required under -DRINGRT_PETSC=ON; not looked for
# under -DRINGRT_PETSC=OFF.
user_env=(PKG_CONFIG_LIBDIR=/nonexistent)
out=$(as_user "$full" 2>&1)
rc=$?
[ $rc -eq 0 ] && [[ "$out" == *"note: no PETSc"*"petsc-dev"* ]] ||
  fail "PETSc hidden: exit $rc (want 0), no note naming petsc-dev: $out"
out=$(as_user "$full" -DRINGRT_PETSC=ON 2>&1)
rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"apt-get install petsc-dev"* && "$out" == *"-DPETSC_DIR="* ]] ||
  fail "PETSc hidden, RINGRT_PETSC=ON: exit $rc (want 1), output: $out"
out=$(as_user "$full" -DRINGRT_PETSC=OFF 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ] || fail "PETSc hidden, RINGRT_PETSC=OFF: exit $rc, output: $out"
user_env=()

# cudnn-frontend absent (where nvcc is on PATH): a note and exit 0; given as
# -DCUDNN_FRONTEND_ROOT, or not looked for under -DRINGRT_CUDNN=OFF: silent.
if [ -x "$full/nvcc" ]; then
  base_env=("CUTLASS_INCLUDE_DIR=$tmp/cutlass/include")
  out=$(as_user "$full" 2>&1)
  rc=$?
  # (unless the python3 of that PATH has the pip package: then it is there)
  sees=$(env -i "PATH=$full" python3 -c 'import os, sysconfig; p = sysconfig.get_paths()
print(any(os.path.exists(os.path.join(p[k], "include", "cudnn_frontend.h")) for k in ("purelib", "platlib")))' 2>/dev/null)
  if [ "$sees" != True ]; then
    [ $rc -eq 0 ] && [[ "$out" == *"note: no cudnn_frontend.h"*"nvidia-cudnn-frontend"* ]] ||
      fail "cudnn-frontend hidden: exit $rc (want 0), no note naming nvidia-cudnn-frontend: $out"
  fi
  out=$(as_user "$full" "-DCUDNN_FRONTEND_ROOT=$tmp/cudnn-fe" 2>&1)
  rc=$?
  [ $rc -eq 0 ] && [ -z "$out" ] || fail "cudnn-frontend given by -DCUDNN_FRONTEND_ROOT: exit $rc, output: $out"
  out=$(as_user "$full" -DRINGRT_CUDNN=OFF 2>&1)
  rc=$?
  [ $rc -eq 0 ] && [ -z "$out" ] || fail "cudnn-frontend hidden, RINGRT_CUDNN=OFF: exit $rc, output: $out"
  base_env=("CUDNN_FRONTEND_ROOT=$tmp/cudnn-fe" "CUTLASS_INCLUDE_DIR=$tmp/cutlass/include")
else
  echo "deps_test: no nvcc on PATH; the cudnn-frontend note is not checked" >&2
fi

# Root on Debian: apt-get install the missing package, check again, fail.
if [ "$(id -u)" -eq 0 ] && [ -r /etc/debian_version ]; then
  out=$(env -i "PATH=$(farm root ninja ninja-build)" "HOME=$tmp/home" "${base_env[@]}" bash "$tmp/src/launch/deps.sh" 2>&1)
  rc=$?
  [ $rc -eq 1 ] || fail "root, ninja hidden, stub apt-get: exit $rc (want 1), output: $out"
  grep -q "^apt-get install .*ninja-build" "$tmp/apt.log" 2>/dev/null ||
    fail "root on Debian did not apt-get install ninja-build: $(cat "$tmp/apt.log" 2>&1)"
  [[ "$out" == *"apt-get install ninja-build"* ]] || fail "root: no report after apt-get: $out"
fi
echo "deps_test: ok"

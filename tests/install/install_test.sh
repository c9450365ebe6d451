#!/usr/bin/env bash
# Install into a temporary prefix, then build the example downstream program
# with find_package(ringrt) (shared and static) and with pkg-config alone,
# and run each under mpirun at np = 2.
set -u
build=$1 src=$2 mpirun=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix
run2() { RINGRT_BACKEND=cpu "$mpirun" -np 2 --oversubscribe --bind-to none "$@"; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || fail "install: $(tail "$tmp/install.log")"
libdir=$(ls -d "$prefix"/lib*/ | head -n 1)
for f in bin/ringrt bin/ringrt-run include/ringrt/ringrt.h include/ringrt/config.h include/ringrt/export.h; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done
cmp -s "$src/LICENSE" "$prefix/share/doc/ringrt/LICENSE" || fail "share/doc/ringrt/LICENSE missing or not the LICENSE"
for f in libringrt.a libringrt.so cmake/ringrt/ringrtConfig.cmake cmake/ringrt/ringrtConfigVersion.cmake pkgconfig/ringrt.pc; do
  [ -e "$libdir/$f" ] || fail "missing $libdir$f"
done
soname=$(readelf -d "$libdir/libringrt.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libringrt\.so\.[0-9]+$ ]] || fail "SONAME is '$soname'"
[ -e "$libdir/$soname" ] || fail "no $soname file"
"$prefix/bin/ringrt" --version | grep -q '^ringrt ' || fail "installed ringrt --version"
grep -q "RINGRT_VERSION " "$prefix/include/ringrt/config.h" || fail "no RINGRT_VERSION macro"
grep -q "RINGRT_VERSION_CODE " "$prefix/include/ringrt/config.h" || fail "no RINGRT_VERSION_CODE macro"
# only the public API leaves the installed library (tests/api checks it in detail)
leaked=$(nm -D --defined-only "$libdir/libringrt.so" |
  awk '$3 !~ /^rrt_/ && $3 !~ /^(_init|_fini|_edata|_end|__bss_start)$/ {print $3}')
[ -z "$leaked" ] || fail "the installed libringrt.so exports internal symbols: $leaked"

# Consumers need neither the CUDA toolkit nor NCCL (the runtime is static,
# NCCL opened at run time): the package config must not look for them, and
# the consumers below are configured with both searches disabled.
! grep -Eq 'find_dependency\((CUDAToolkit|NCCL)' "$libdir/cmake/ringrt/ringrtConfig.cmake" ||
  fail "ringrtConfig.cmake still looks for CUDAToolkit/NCCL"
! grep -Eq 'CUDA::|NCCL::' "$libdir"/cmake/ringrt/ringrtTargets*.cmake ||
  fail "the exported targets name CUDA:: or NCCL:: targets"
no_cuda="-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON"
for kind in shared static; do
  static=OFF; [ $kind = static ] && static=ON
  cmake -S "$src/examples/train_step" -B "$tmp/ex_$kind" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DTRAIN_STEP_STATIC=$static $no_cuda >"$tmp/cfg_$kind.log" 2>&1 || fail "configure ($kind): $(tail -20 "$tmp/cfg_$kind.log")"
  cmake --build "$tmp/ex_$kind" >"$tmp/build_$kind.log" 2>&1 || fail "build ($kind): $(tail -20 "$tmp/build_$kind.log")"
  out=$(run2 "$tmp/ex_$kind/train_step" 64 2 2>&1) || fail "run ($kind): $out"
  [[ "$out" == *"2 ranks"*"output finite"* ]] || fail "output ($kind): $out"
  echo "find_package ($kind): $out"
done

export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs ringrt) || fail "pkg-config ringrt"
! grep -Eq -- '-l(cudart|cuda|nccl)\b' <<<"$(pkg-config --libs --static ringrt)" ||
  fail "pkg-config ringrt names the shared CUDA runtime or NCCL: $(pkg-config --libs --static ringrt)"
mpicc "$src/examples/train_step/train_step.c" $flags -lm -Wl,-rpath,"$libdir" -o "$tmp/ts_pc" ||
  fail "pkg-config build"
out=$(run2 "$tmp/ts_pc" 64 2 2>&1) || fail "run (pkg-config): $out"
[[ "$out" == *"output finite"* ]] || fail "output (pkg-config): $out"
echo "pkg-config: $out"

# The PETSc plugin, when it was built: installed next to libringrt.so, and it
# loads from there into a PETSc program (-dll_append), finding libringrt.so
# through its $ORIGIN run path.
if [ -e "$build/plugins/petsc/libringrt_petsc.so" ]; then
  [ -e "$libdir/libringrt_petsc.so" ] && [ -e "$prefix/include/ringrt_petsc.h" ] ||
    fail "the PETSc plugin or its header was not installed"
  readelf -d "$libdir/libringrt_petsc.so" | grep -q 'R.*PATH.*\[\$ORIGIN[]:]' ||
    fail "installed libringrt_petsc.so: run path does not start with \$ORIGIN: $(readelf -d "$libdir/libringrt_petsc.so" | grep PATH)"
  out=$(run2 "$build/tests/ilu/petsc_ksp" -grid 10 -dll_append "$libdir/libringrt_petsc.so" \
    -pc_type ringrt -ksp_view 2>&1) || fail "installed PETSc plugin: $out"
  [[ "$out" == *"type: ringrt"*"reason=CONVERGED_RTOL"* ]] || fail "installed PETSc plugin: $out"
  echo "PETSc plugin: $(grep '^result:' <<<"$out")"
fi
echo "install_test: ok"

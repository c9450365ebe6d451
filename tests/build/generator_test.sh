#!/usr/bin/env bash
# Configure and build the library and the `ringrt` tool with generator $1
# in folder $3 (made afresh), then run the tool; any error fails the test.
#   generator_test.sh GENERATOR SRC DIR [-DVAR=VALUE ...]
set -u
gen=$1 src=$2 dir=$3
shift 3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cmake -S "$src" -B "$dir" -G "$gen" "$@" >"$dir/configure.log" 2>&1 ||
  fail "configure with $gen: $(tail -n 30 "$dir/configure.log")"
grep -E "^-- ringrt:" "$dir/configure.log"
cmake --build "$dir" -j "$(nproc)" --target ringrt ringrt_app >"$dir/build.log" 2>&1 ||
  fail "build with $gen: $(grep -E -m 5 -B2 -A5 'error|Error' "$dir/build.log")"
! grep -q "warning:" "$dir/build.log" || fail "warnings with $gen: $(grep -m 5 warning: "$dir/build.log")"
out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGRT_BACKEND=cpu \
  "$dir/apps/ringrt" info 2>&1) || fail "ringrt info from the $gen build: $out"
echo "$out"
rm -rf "$dir"
echo "PASS: $gen builds libringrt and ringrt"

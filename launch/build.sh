#!/usr/bin/env bash
# Check (as root on Debian: install) the dependencies, configure and build
# ringrt into ./build (or $RINGRT_BUILD_DIR). Extra arguments go to cmake's
# configure step, and their -D settings to the dependency check as well (so
# -DHDF5_ROOT=... and the like count there too).
#
#   bash launch/build.sh [--target T ...] [-DVAR=VALUE ...]
#
# --target T builds only T and what it needs (launch/main-job.sh: the tool,
# ringrt_app); without it, everything (the library, the tool, the tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
configure=() targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = --target ] && [ $# -ge 2 ]; then
    targets+=(--target "$2")
    shift 2
  else
    configure+=("$1")
    shift
  fi
done
bash "$root/launch/deps.sh" "${configure[@]+"${configure[@]}"}"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja "${configure[@]+"${configure[@]}"}" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E "^-- ringrt:" "$build/configure.log" || true
cmake --build "$build" -j "$(nproc)" "${targets[@]+"${targets[@]}"}"

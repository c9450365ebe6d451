#!/usr/bin/env bash
# Check (as root on Debian: install) the dependencies, configure and build
# ringrt into ./build (or $RINGRT_BUILD_DIR). Extra arguments go to cmake's
# configure step, and their -D settings to the dependency check as well (so
# -DHDF5_ROOT=... and the like count there too).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
bash "$root/launch/deps.sh" "$@"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja "$@" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
grep -E "^-- ringrt:" "$build/configure.log" || true
cmake --build "$build" -j "$(nproc)"

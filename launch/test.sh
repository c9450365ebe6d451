#!/usr/bin/env bash
# The whole test suite: install dependencies, build, run CTest.
# GPU tests are reported as skipped where there is no GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
bash "$root/launch/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"

#!/usr/bin/env bash
# The main job: build, then a 4-rank causal zigzag ring attention with a
# check against a double-precision reference, on the default backend (cpu
# here, cuda on a GPU node). Extra arguments are added to the command.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
bash "$root/launch/build.sh"
extra=()
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(nproc)" -lt 4 ] && extra+=(--oversubscribe)
exec mpirun -np 4 "${extra[@]}" --bind-to none "$build/apps/ringrt" attn --causal --layout zigzag --check "$@"

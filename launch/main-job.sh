#!/usr/bin/env bash
# The main job: build the `ringrt` tool (and the library it needs, not the
# tests), then a 4-rank causal zigzag ring attention with a check against a
# double-precision reference, on the default backend (cpu here, cuda on a
# GPU node). Extra arguments are added to the command.
#
# In a new build folder on a machine without a GPU (no `nvidia-smi -L`), the
# CUDA backend is left out: the tool runs the cpu backend there, and nvcc
# would take longer than the job. A build folder configured before (say by
# launch/test.sh) is used as it is.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${RINGRT_BUILD_DIR:-$root/build}"
config=()
if [ ! -f "$build/CMakeCache.txt" ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  config+=(-DRINGRT_CUDA=OFF)
fi
bash "$root/launch/build.sh" --target ringrt_app "${config[@]+"${config[@]}"}"
extra=()
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ "$(nproc)" -lt 4 ] && extra+=(--oversubscribe)
exec mpirun -np 4 "${extra[@]}" --bind-to none "$build/apps/ringrt" attn --causal --layout zigzag --check "$@"

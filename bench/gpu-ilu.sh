#!/usr/bin/env bash
# ILU(0) on one GPU (cuda backend): builds ringrt with CUDA if needed, runs the
# ilu gpu tests, then `ringrt ilu` on generated problems and prints one JSON
# line per run (levels, analysis/factor/solve times, GFLOP/s of SpMV and of
# the triangular solves). Budget: well under 8 minutes on one H100/H200.
#
#   bench/gpu-ilu.sh [BUILD_DIR]        (default build-gpu)
#
# Not yet here: the side-by-side cuSPARSE csrilu02 + cusparseSpSV timing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ ! -x "$build/apps/ringrt" ]; then
  cmake -S . -B "$build" -G Ninja -DRINGRT_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
fi
(cd "$build" && ctest -L ilu -L gpu --output-on-failure --timeout 300) >&2 || echo '{"gpu_tests": "failed"}'
app="$build/apps/ringrt"
run() { timeout 240 mpirun -np 1 --bind-to none "$app" ilu --backend cuda --quiet --json - "$@" \
          2>/dev/null | grep '^{' || echo "{\"run\": \"$*\", \"status\": \"failed\"}"; }
echo "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo none)\", \"gpu\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)\"}"
for N in 32 64 100; do
  run --generate "laplace3d:$N" --solver gmres --maxit 500
done
run --generate laplace3d:100 --reorder multicolor --solver gmres --maxit 500
run --generate laplace2d:1000 --solver none
run --generate laplace2d:1000 --reorder multicolor --solver none
run --generate convdiff2d:1000,100 --reorder multicolor --solver bicgstab --maxit 500

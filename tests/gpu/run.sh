#!/usr/bin/env bash
# Build ringrt with CUDA and run the gpu-labelled tests (and the sm_80/sm_90
# object check) on a GPU machine; under 8 minutes on one H200.
#   tests/gpu/run.sh [build-dir]        (default: build-gpu)
# Its whole output, with the date and commit it prints, goes into
# docs/gpu-results.md.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build-gpu}
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin

echo "== ringrt gpu tests"
echo "date:   $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "commit: $(git rev-parse HEAD 2>/dev/null || echo 'unknown (not a git checkout)')"
echo "host:   $(hostname)"
nvidia-smi || echo "WARNING: nvidia-smi failed: no GPU or no driver; the gpu tests will be skipped"

missing=""
for tool in cmake nvcc mpicc mpirun; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "ERROR: missing:$missing."
  echo "ringrt needs CMake, the CUDA toolkit, Open MPI (openmpi-bin libopenmpi-dev), hwloc, HDF5 (libhdf5-dev)"
  echo "(libhwloc-dev) and OpenBLAS (libopenblas-dev) to build; install them and rerun."
  exit 2
fi
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)

start=$(date +%s)
if ! cmake -S . -B "$build" "${gen[@]}" -DRINGRT_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  echo "ERROR: configure failed (see above): are the Open MPI, hwloc and OpenBLAS development"
  echo "packages installed?"
  exit 2
fi
cmake --build "$build" -j "$(nproc)" || { echo "ERROR: build failed"; exit 1; }
echo "build: $(($(date +%s) - start)) s"

rc=0
(cd "$build" && ctest -L gpu --output-on-failure --timeout 300) || rc=1
(cd "$build" && ctest -R '^cuda_archs$' --output-on-failure) || rc=1
echo "total: $(($(date +%s) - start)) s, $([ $rc -eq 0 ] && echo PASSED || echo FAILED)"
exit $rc

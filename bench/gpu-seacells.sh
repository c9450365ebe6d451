#!/usr/bin/env bash
# SEACells on one GPU: the gpu-labelled seacells tests, then `ringrt seacells`
# on the cuda backend on the pbmc68k file and on a synthetic set; prints JSON.
# Usage: bench/gpu-seacells.sh [BUILD_DIR] [N_SYNTHETIC]
set -euo pipefail
BUILD=${1:-build}
N=${2:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# GPU_BENCH_SKIP_TESTS: tests/gpu/run.sh ran them; RINGRT_DATA: its copy of the data
if [ -z "${GPU_BENCH_SKIP_TESTS:-}" ]; then
  (cd "$BUILD" && ctest -L seacells -L gpu --output-on-failure) || echo '{"gpu_tests": "failed"}'
fi
DATA=${RINGRT_DATA:-$ROOT/../shared/data}
RINGRT="$BUILD/apps/ringrt"
# a build without HDF5 (the minimal GPU node) reads the .npy copy of X_pca
# that tests/gpu/prepare.sh writes
"$RINGRT" seacells "$DATA/singlecell/pbmc68k_reduced.h5ad" --labels bulk_labels \
  --backend cuda --quiet --json - ||
  "$RINGRT" seacells "$DATA/singlecell/pbmc68k_reduced_X_pca.npy" --backend cuda --quiet --json - ||
  echo '{"pbmc": "failed"}'
# synthetic blobs as CSV (50 dims, N cells, 40 centres)
SYN=$(mktemp --suffix=.csv)
awk -v n="$N" 'BEGIN { srand(1); for (i = 0; i < n; i++) { c = i % 40; line = "";
  for (k = 0; k < 50; k++) { v = (k == c % 50 ? 10 : 0) + (rand() + rand() + rand() - 1.5);
    line = line (k ? "," : "") v } print line } }' > "$SYN"
"$RINGRT" seacells "$SYN" --backend cuda --quiet --json -
rm -f "$SYN"

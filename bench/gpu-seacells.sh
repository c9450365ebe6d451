#!/usr/bin/env bash
# SEACells on one GPU: the gpu-labelled seacells tests, then `ringrt seacells`
# on the cuda backend on the pbmc68k file and on a synthetic set; prints JSON.
# Usage: bench/gpu-seacells.sh [BUILD_DIR] [N_SYNTHETIC]
set -euo pipefail
BUILD=${1:-build}
N=${2:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(cd "$BUILD" && ctest -L seacells -L gpu --output-on-failure) || echo '{"gpu_tests": "failed"}'
RINGRT="$BUILD/apps/ringrt"
"$RINGRT" seacells "$ROOT/../shared/data/singlecell/pbmc68k_reduced.h5ad" --labels bulk_labels \
  --backend cuda --quiet --json -
# synthetic blobs as CSV (50 dims, N cells, 40 centres)
SYN=$(mktemp --suffix=.csv)
awk -v n="$N" 'BEGIN { srand(1); for (i = 0; i < n; i++) { c = i % 40; line = "";
  for (k = 0; k < 50; k++) { v = (k == c % 50 ? 10 : 0) + (rand() + rand() + rand() - 1.5);
    line = line (k ? "," : "") v } print line } }' > "$SYN"
"$RINGRT" seacells "$SYN" --backend cuda --quiet --json -
rm -f "$SYN"

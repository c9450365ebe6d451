#!/usr/bin/env bash
# ringrt.seacells from Python vs the `ringrt seacells` tool: same .h5ad, same
# ranks (mpirun -np P), default parameters. One JSON line per run; the tool's
# line has its wall time (process start to exit, reading the file included).
#
# Usage: bench/seacells-python.sh BUILD_DIR PYTHON WORK_DIR [NPS (default "1 2")]
# Env:   SIZES  synthetic cells (default "10000"); DIMS (default 30)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$1 PY=$2 WORK=$3 NPS=${4:-"1 2"}
SIZES=${SIZES:-10000} DIMS=${DIMS:-30}
export RINGRT_LIBRARY=$BUILD/src/libringrt.so PYTHONPATH=$ROOT/python
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK"
inputs=("$ROOT/../shared/data/singlecell/pbmc68k_reduced.h5ad")
for n in $SIZES; do
  f=$WORK/blobs$n.h5ad
  [ -f "$f" ] || "$PY" "$ROOT/bench/seacells_python.py" make "$f" "$n" "$DIMS"
  inputs+=("$f")
done
for f in "${inputs[@]}"; do
  for np in $NPS; do
    mpirun -np "$np" --oversubscribe --bind-to none "$PY" "$ROOT/bench/seacells_python.py" run "$f"
    t0=$(date +%s.%N)
    mpirun -np "$np" --oversubscribe --bind-to none "$BUILD/apps/ringrt" seacells "$f" --quiet --json "$WORK/tool.json"
    t1=$(date +%s.%N)
    "$PY" -c "import json,os,sys; j=json.load(open(sys.argv[1])); print(json.dumps({'side': 'tool', 'input': os.path.basename(sys.argv[2]), 'cells': j['cells'], 'ranks': j['ranks'], 'metacells': j['metacells'], 'iterations': j['iterations'], 'wall_s': round($t1 - $t0, 3), 'load': os.getloadavg()[0]}))" "$WORK/tool.json" "$f"
  done
done

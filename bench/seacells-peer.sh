#!/usr/bin/env bash
# ringrt seacells next to the reference SEACells (dpeerlab), both of its CPU
# paths (use_sparse=True, the faster, and the dense one), on the same graph
# and from the same initial archetypes (ringrt's CSSP choice, --archetypes-out,
# fed to the reference): time and peak memory of the fit, final RSS, adjusted
# Rand index of the hard assignments. Cases: pbmc68k_reduced (700 cells),
# 5,780 cells (the marrow sample of Palantir when MARROW names its h5ad, else
# synthetic blobs of that size), synthetic 20,000 cells.
#
# The graph: ringrt's --knn is the reference's n_neighbors (REF_NEIGHBORS,
# default 15), so both sides build the same graph at every size (14 other
# cells per list below 8,192 cells, 15 from there, as scanpy does; bandwidth
# = distance to the 7th; docs/seacells.md). RINGRT_KNN overrides ringrt's
# side (default: REF_NEIGHBORS). The reference logs its neighbours per cell
# (knn_per_cell) so the record shows the match.
#
# Usage: bench/seacells-peer.sh [BUILD_DIR] [WORK_DIR]
# Env:   SEACELLS_PYTHON  a python with the reference's dependencies (pip `seacells`)
#        SEACELLS_SRC     a checkout of the GitHub SEACells (its SEACells/ folder's parent):
#                         the source with use_sparse; without it only pip's dense path runs
#        MARROW           .h5ad with obsm/X_pca of the marrow sample (bench/seacells_peer.py
#                         prep makes it from the counts)
#        CASES            default "pbmc700 cells5780 syn20000"
#        PATHS            reference paths, default "sparse dense"
#        REF_TIMEOUT      seconds per reference run (default 1800)
#        REF_MAX_ITER     the reference's max_iter (default 100, as its fit's default)
#        DENSE_MAX_ITER_LARGE  max_iter of the dense path from 10,000 cells on (default 3:
#                         it takes 2 min an iteration at 20k; its per-iteration time is what
#                         counts, and the record says how far it got)
#        REF_CORETYPE     OPENBLAS_CORETYPE for the reference (e.g. SkylakeX: the AVX-512
#                         kernel forced); by default OPENBLAS_CORETYPE/L2_SIZE are unset for it
#        SIZES            also scan ringrt's peak memory at these synthetic sizes (default none)
# Prints one JSON object per case on stdout (`seacells_peer.py summary`), each
# with the load average (uptime) at the start of each side: the machine may be
# shared. The raw files stay in WORK_DIR.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
WORK=${2:-$(mktemp -d)}
RINGRT=$BUILD/apps/ringrt
DRIVER=$ROOT/bench/seacells_peer.py
RINGRT_KNN=${RINGRT_KNN:-}
REF_NEIGHBORS=${REF_NEIGHBORS:-15}
REF_TIMEOUT=${REF_TIMEOUT:-1800}
REF_MAX_ITER=${REF_MAX_ITER:-100}
DENSE_MAX_ITER_LARGE=${DENSE_MAX_ITER_LARGE:-3}
CASES=${CASES:-"pbmc700 cells5780 syn20000"}
PATHS=${PATHS:-"sparse dense"}
SIZES=${SIZES:-}
PBMC=$ROOT/../shared/data/singlecell/pbmc68k_reduced.h5ad
mkdir -p "$WORK"
[ -x "$RINGRT" ] || { echo "no $RINGRT: build first (RINGRT_BUILD_DIR=$BUILD bash launch/build.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
PY=${SEACELLS_PYTHON:-}
[ -n "$PY" ] && "$PY" -c "import SEACells" >/dev/null 2>&1 || {
  echo "SEACELLS_PYTHON must name a python that imports SEACells (pip install seacells)" >&2
  exit 1
}
if [ -z "${SEACELLS_SRC:-}" ] && [[ " $PATHS " == *" sparse "* ]]; then
  echo "note: no SEACELLS_SRC: pip seacells 0.3.3 has no use_sparse, running the dense path only" >&2
  PATHS=dense
fi
export SEACELLS_SRC=${SEACELLS_SRC:-}

# synthetic cells as CSV: 50-D Gaussian blobs, 40 centres, fixed seed
synth() {
  awk -v n="$1" 'BEGIN { srand(1); for (i = 0; i < n; i++) { c = i % 40; line = "";
    for (k = 0; k < 50; k++) { v = (k == c % 50 ? 10 : 0) + (rand() + rand() + rand() - 1.5);
      line = line (k ? "," : "") v } print line } }' >"$2"
}
load() { uptime | sed 's/.*load average: //'; }

input_of() {
  case $1 in
    pbmc700) echo "$PBMC" ;;
    cells5780)
      if [ -n "${MARROW:-}" ]; then echo "$MARROW"; else
        [ -f "$WORK/syn5780.csv" ] || synth 5780 "$WORK/syn5780.csv"
        echo "$WORK/syn5780.csv"
      fi ;;
    syn*) local n=${1#syn}
      [ -f "$WORK/syn$n.csv" ] || synth "$n" "$WORK/syn$n.csv"
      echo "$WORK/syn$n.csv" ;;
  esac
}

# ringrt CASE INPUT [extra args]: one rank (OpenMP threads over the cores)
ringrt() {
  local c=$1 in=$2
  shift 2
  /usr/bin/time -v -o "$WORK/$c.time" "$RINGRT" seacells "$in" --quiet \
    --archetypes-out "$WORK/$c.arch" --out "$WORK/$c.assign.csv" --json "$WORK/$c.json" "$@" \
    >/dev/null 2>"$WORK/$c.log"
  echo $? >"$WORK/$c.rc"
}

# reference CASE PATH INPUT M CELLS: /usr/bin/time outside timeout, so that a
# run that is cut off still has its peak memory; its progress lines say how far
reference() {
  local c=$1 p=$2 in=$3 m=$4 cells=$5 it=$REF_MAX_ITER
  [ "$p" = dense ] && [ "$cells" -ge 10000 ] && it=$DENSE_MAX_ITER_LARGE
  rm -f "$WORK/$c.$p.out.json"
  # OPENBLAS_CORETYPE/L2_SIZE (set on some machines, slowing OpenBLAS) are
  # unset for the reference alone; REF_CORETYPE forces a kernel (SkylakeX)
  /usr/bin/time -v -o "$WORK/$c.$p.time" env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
    ${REF_CORETYPE:+OPENBLAS_CORETYPE=$REF_CORETYPE} timeout "$REF_TIMEOUT" "$PY" "$DRIVER" ref "$p" "$in" \
    "$WORK/$c.arch" "$m" "$WORK/$c.$p.out.json" --neighbors "$REF_NEIGHBORS" --max-iter "$it" \
    --min-iter $((it < 10 ? it : 10)) >"$WORK/$c.$p.log" 2>"$WORK/$c.$p.err"
  echo $? >"$WORK/$c.$p.rc"
}

echo "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)\", \"cores\": $(nproc), \"ringrt_knn\": \"$RINGRT_KNN\", \"ref_neighbors\": $REF_NEIGHBORS, \"seacells_src\": \"$SEACELLS_SRC\", \"marrow\": \"${MARROW:-}\"}"
for c in $CASES; do
  in=$(input_of "$c")
  loads="\"ringrt\": \"$(load)\""
  knn=${RINGRT_KNN:-$REF_NEIGHBORS}
  ringrt "$c" "$in" --knn "$knn"
  if [ "$(cat "$WORK/$c.rc")" != 0 ]; then
    echo "{\"case\": \"$c\", \"ringrt_failed\": $(cat "$WORK/$c.rc"), \"log\": \"$WORK/$c.log\"}"
    continue
  fi
  m=$(wc -l <"$WORK/$c.arch")
  cells=$(wc -l <"$WORK/$c.assign.csv")
  for p in $PATHS; do
    loads="$loads, \"$p\": \"$(load)\""
    reference "$c" "$p" "$in" "$m" $((cells - 1))
  done
  echo "{\"load\": {$loads}, \"ringrt_knn\": $knn, $("$PY" "$DRIVER" summary "$WORK" "$c" $PATHS | sed 's/^{//')"
done
# ringrt's peak memory against n (3 outer iterations: the peak is reached
# after the graph is built), default k, n/75 metacells
for n in $SIZES; do
  in=$(input_of "syn$n")
  l=$(load)
  ringrt "mem$n" "$in" --max-iter 3 --min-iter 3
  echo "{\"case\": \"memory$n\", \"cells\": $n, \"load\": \"$l\", \"ringrt\": $("$PY" -c "import sys; sys.path.insert(0, '$ROOT/bench'); import json, seacells_peer as s; print(json.dumps(s.ringrt_side('$WORK', 'mem$n')))")}"
done

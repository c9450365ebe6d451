#!/usr/bin/env bash
# ringrt seacells against the cell count at m = n/75 metacells (issue 14):
# time per outer iteration, the exact kNN apart, and peak memory per rank
# per cell, on the synthetic blobs of bench/seacells-peer.sh (40 Gaussian
# blobs in 50-D, fixed seed), 3 outer iterations.
#
# Configurations (one thread per rank unless named): np1 (OMP_NUM_THREADS=1),
# np2 (mpirun -n 2 --bind-to core, one thread each), np1t2 (one rank, two
# threads). Per iteration = (update_a + update_b + rss) / iterations from the
# JSON report (update_a includes the first A update from B0, so 4 A updates
# over 3 iterations: the same in every run). Peak memory: /usr/bin/time -v's
# maximum resident set of the largest process (rank) of the run.
#
# Usage: bench/seacells-scale.sh [BUILD_DIR] [WORK_DIR]
# Env:   SIZES    cell counts (default "20000 50000 100000 200000")
#        CONFIGS  (default "np1 np2 np1t2")
#        BLOB_CELLS  0 (default): 40 blobs at every n, so a blob's metacells (and what
#                 each cell's 2-hop neighbourhood reaches) grow with n; K > 0: n / K
#                 blobs of K cells, the same local structure at every n (K = 500 gives
#                 the 40 blobs of the 20k case)
#        OUT      JSON lines (default bench/results/seacells-scale-<UTC stamp>.jsonl)
# Each line carries the load average (uptime) before and after the run: the
# machine may be shared, and a loaded machine's times are not results.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
WORK=${2:-$(mktemp -d)}
RINGRT=$BUILD/apps/ringrt
SIZES=${SIZES:-"20000 50000 100000 200000"}
CONFIGS=${CONFIGS:-"np1 np2 np1t2"}
BLOB_CELLS=${BLOB_CELLS:-0}
OUT=${OUT:-$ROOT/bench/results/seacells-scale-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
mkdir -p "$WORK" "$(dirname "$OUT")"
[ -x "$RINGRT" ] || { echo "no $RINGRT: build first (RINGRT_BUILD_DIR=$BUILD bash launch/build.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# the blobs of bench/seacells-peer.sh (same awk program, same seed): N
# cells round robin over NB blobs; blob c < 50 is centred at 10 e_c (the
# peer's 40 blobs exactly), blob c >= 50 at 10 (e_a + e_(a+d mod 50)) with
# a = c mod 50, d = c / 50 in 1..24 (1,250 distinct centres, 10 or more
# apart; a blob's cells lie about 5 apart)
synth() {
  awk -v n="$1" -v nb="$3" 'BEGIN { srand(1); for (i = 0; i < n; i++) { c = i % nb; line = "";
    a = c % 50; b = c < 50 ? -1 : (a + int(c / 50)) % 50;
    for (k = 0; k < 50; k++) { v = (k == a ? 10 : 0) + (k == b ? 10 : 0) + (rand() + rand() + rand() - 1.5);
      line = line (k ? "," : "") v } print line } }' >"$2"
}
# blobs of a run: 40 whatever n (BLOB_CELLS=0), else n / BLOB_CELLS
blobs_of() { [ "$BLOB_CELLS" -gt 0 ] && echo $(($1 / BLOB_CELLS)) || echo 40; }
load() { uptime | sed 's/.*load average: //; s/,.*//'; }
tv() { grep -F "$2" "$1" | sed 's/.*: //'; }
wall_s() { tv "$1" "Elapsed (wall clock)" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }'; }

# run CONFIG N INPUT: one JSON line
run() {
  local cfg=$1 n=$2 in=$3 nb=$4 c="$1-$2-$4" l0 l1 rc
  local args=(seacells "$in" --quiet --max-iter 3 --min-iter 3 --out "$WORK/$c.csv" --json "$WORK/$c.json")
  l0=$(load)
  case $cfg in
  np1) OMP_NUM_THREADS=1 /usr/bin/time -v -o "$WORK/$c.time" "$RINGRT" "${args[@]}" >/dev/null 2>"$WORK/$c.err" ;;
  np1t2) OMP_NUM_THREADS=2 /usr/bin/time -v -o "$WORK/$c.time" "$RINGRT" "${args[@]}" >/dev/null 2>"$WORK/$c.err" ;;
  np2) /usr/bin/time -v -o "$WORK/$c.time" mpirun -n 2 --bind-to core -x OMP_NUM_THREADS=1 \
    "$RINGRT" "${args[@]}" >/dev/null 2>"$WORK/$c.err" ;;
  *) echo "unknown configuration $cfg" >&2; return 1 ;;
  esac
  rc=$?
  l1=$(load)
  python3 - "$WORK/$c.json" "$cfg" "$n" "$rc" "$(wall_s "$WORK/$c.time")" \
    "$(tv "$WORK/$c.time" "Maximum resident")" "$l0" "$l1" "$nb" <<'EOF'
import json, sys
path, cfg, n, rc, wall, peak_kb, l0, l1, nb = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(json.dumps({"config": cfg, "cells": int(n), "rc": int(rc), "error": str(e)}))
    sys.exit(0)
s, it = r["seconds"], max(r["iterations"], 1)
per_iter = (s["update_a"] + s["update_b"] + s["rss"]) / it
print(json.dumps({
    "config": cfg, "cells": int(n), "blobs": int(nb), "metacells": r["metacells"], "ranks": r["ranks"],
    "rc": int(rc), "iterations": r["iterations"], "per_iter_s": round(per_iter, 3),
    "update_a_s": round(s["update_a"], 3), "update_b_s": round(s["update_b"], 3),
    "rss_s": round(s["rss"], 3), "knn_s": round(s["knn"], 3), "kernel_s": round(s["kernel"], 3),
    "init_s": round(s["init"], 3), "wall_s": float(wall), "peak_rank_mb": int(peak_kb) // 1024,
    "peak_rank_kb_per_cell": round(int(peak_kb) * int(r["ranks"]) / int(n), 2),
    "rss_final": r["rss"][-1], "load_before": float(l0), "load_after": float(l1)}))
EOF
}

{
  echo "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)\", \"cores\": $(nproc), \"sizes\": \"$SIZES\", \"configs\": \"$CONFIGS\", \"blob_cells\": $BLOB_CELLS}"
  for n in $SIZES; do
    nb=$(blobs_of "$n")
    [ "$nb" -le 1250 ] || { echo "more than 1,250 blobs" >&2; exit 1; }
    in=$WORK/blobs$n-$nb.csv
    [ -f "$in" ] || synth "$n" "$in" "$nb"
    for cfg in $CONFIGS; do run "$cfg" "$n" "$in" "$nb"; done
  done
} | tee "$OUT"
echo "wrote $OUT" >&2

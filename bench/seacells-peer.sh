#!/usr/bin/env bash
# ringrt seacells next to the reference Python SEACells (pip `seacells`), same
# data and same initial archetypes (ringrt's CSSP choice, fed to the reference):
# wall time, peak memory (/usr/bin/time -v), final RSS, adjusted Rand index of
# the hard assignments, on pbmc68k_reduced (700 cells) and a synthetic
# 20k-cell set; then ringrt's peak memory at 20k, 50k and 100k synthetic cells.
#
# Both sides use their default graph: ringrt's --knn is the reference's
# n_neighbors (15), so they build the same graph at every size (14 other
# cells per list below 8192 cells, 15 from there, bandwidth = distance to
# the 7th; docs/seacells.md) and their final RSS values measure the same
# objective.
#
# Usage: bench/seacells-peer.sh [BUILD_DIR] [WORK_DIR]
# Env:   SEACELLS_PYTHON  a python with `seacells` installed (else a venv is
#                         made in WORK_DIR with pip; without it, only ringrt runs)
#        REF_TIMEOUT      seconds allowed to the reference per case (default 900)
#        SIZES            synthetic sizes for the memory scan (default "20000 50000 100000")
#        FIXED_M          also scan SIZES with --n-metacells FIXED_M (n growth
#                         without metacell growth; default 266, empty: skip)
#        SKIP_REF_SIZES   skip the side-by-side runs (memory scan only) when set
# Prints one JSON object per case on stdout, each with the load average
# (uptime) at its start: the machine may be shared.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
WORK=${2:-$(mktemp -d)}
RINGRT=$BUILD/apps/ringrt
REF_TIMEOUT=${REF_TIMEOUT:-900}
FIXED_M=${FIXED_M-266}
SIZES=${SIZES:-"20000 50000 100000"}
PBMC=$ROOT/../shared/data/singlecell/pbmc68k_reduced.h5ad
mkdir -p "$WORK"
[ -x "$RINGRT" ] || { echo "no $RINGRT: build first (RINGRT_BUILD_DIR=$BUILD bash launch/build.sh)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }

PY=${SEACELLS_PYTHON:-}
if [ -z "$PY" ]; then
  if [ -x "$WORK/venv/bin/python" ] || { python3 -m venv "$WORK/venv" &&
    "$WORK/venv/bin/pip" install --quiet seacells >"$WORK/pip.log" 2>&1; }; then
    PY=$WORK/venv/bin/python
  fi
fi
if [ -n "$PY" ] && ! "$PY" -c "import SEACells" >/dev/null 2>&1; then PY=""; fi
[ -n "$PY" ] || echo '{"reference": "seacells could not be installed: ringrt numbers only"}'

# synthetic cells as CSV: 50-D Gaussian blobs, 40 centres, fixed seed
synth() {
  awk -v n="$1" 'BEGIN { srand(1); for (i = 0; i < n; i++) { c = i % 40; line = "";
    for (k = 0; k < 50; k++) { v = (k == c % 50 ? 10 : 0) + (rand() + rand() + rand() - 1.5);
      line = line (k ? "," : "") v } print line } }' >"$2"
}

# field of /usr/bin/time -v output
tv() { grep -F "$2" "$1" | sed 's/.*: //'; }
wall_s() { tv "$1" "Elapsed (wall clock)" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }'; }

# ringrt CASE INPUT [extra args]: one rank (OpenMP threads over the cores)
ringrt() {
  local c=$1 in=$2
  shift 2
  /usr/bin/time -v "$RINGRT" seacells "$in" --quiet --archetypes-out "$WORK/$c.arch" \
    --out "$WORK/$c.assign.csv" --json "$WORK/$c.json" "$@" 2>"$WORK/$c.time" >/dev/null
  local rc=$?
  local m rss it
  m=$(tr ',' '\n' <"$WORK/$c.json" | grep '"metacells"' | sed 's/.*: //')
  rss=$(sed 's/.*"rss": \[\([^]]*\)\].*/\1/' "$WORK/$c.json" | tr ',' '\n' | tail -1 | tr -d ' ')
  it=$(tr ',' '\n' <"$WORK/$c.json" | grep '"iterations"' | sed 's/.*: //')
  echo "{\"rc\": $rc, \"metacells\": $m, \"iterations\": $it, \"wall_s\": $(wall_s "$WORK/$c.time"), \"peak_mb\": $(($(tv "$WORK/$c.time" "Maximum resident") / 1024)), \"rss_final\": $rss, \"seconds\": $(sed 's/.*"seconds": \({[^}]*}\).*/\1/' "$WORK/$c.json")}"
}

reference() {
  local c=$1 in=$2 m=$3
  [ -n "$PY" ] || { echo '"not installed"'; return; }
  # time outside timeout: the peak memory is reported even when it is cut off
  # (progress bars go to a separate log, so that a failure's traceback stays readable)
  /usr/bin/time -v -o "$WORK/$c.ref.time" timeout "$REF_TIMEOUT" "$PY" "$ROOT/bench/seacells_peer.py" \
    ref "$in" "$WORK/$c.arch" "$m" "$WORK/$c.ref.json" >"$WORK/$c.ref.log" 2>&1
  local rc=$?
  if [ $rc -eq 124 ]; then
    local last
    last=$(grep -a '^{"iteration"' "$WORK/$c.ref.log" | tail -1)
    echo "{\"did_not_finish_within_s\": $REF_TIMEOUT, \"peak_mb_so_far\": $(($(tv "$WORK/$c.ref.time" "Maximum resident") / 1024)), \"kernel\": $(grep -a '^{"kernel_s"' "$WORK/$c.ref.log" || echo null), \"last_iteration\": ${last:-null}}"
    return
  fi
  if [ $rc -ne 0 ]; then echo "{\"failed\": $rc, \"log\": \"$WORK/$c.ref.log\"}"; return; fi
  local ari
  ari=$("$PY" "$ROOT/bench/seacells_peer.py" compare "$WORK/$c.assign.csv" "$WORK/$c.ref.json")
  "$PY" -c "import json,sys; d=json.load(open('$WORK/$c.ref.json')); print(json.dumps({'wall_s': $(wall_s "$WORK/$c.ref.time"), 'peak_mb': $(tv "$WORK/$c.ref.time" "Maximum resident") // 1024, 'fit_s': round(d['fit_s'], 2), 'iterations': d['iterations'], 'rss_final': d['rss'][-1], 'ari_vs_ringrt': json.loads('$ari')['ari']}))"
}

load() { uptime | sed 's/.*load average: //'; }

side_by_side() {
  local c=$1 in=$2 r m l
  l=$(load)
  r=$(ringrt "$c" "$in")
  m=$(echo "$r" | sed 's/.*"metacells": \([0-9]*\).*/\1/')
  local lr
  lr=$(load)
  echo "{\"case\": \"$c\", \"load\": \"$l\", \"ringrt\": $r, \"load_ref\": \"$lr\", \"reference\": $(reference "$c" "$in" "$m")}"
}

echo "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)\", \"cores\": $(nproc)}"
if [ -z "${SKIP_REF_SIZES:-}" ]; then
  side_by_side pbmc700 "$PBMC"
  [ -f "$WORK/syn20000.csv" ] || synth 20000 "$WORK/syn20000.csv"
  side_by_side syn20000 "$WORK/syn20000.csv"
fi
# memory growth (3 outer iterations: the peak is reached after the graph is
# built), with n/75 metacells and then with FIXED_M metacells
for n in $SIZES; do
  [ -f "$WORK/syn$n.csv" ] || synth "$n" "$WORK/syn$n.csv"
  l=$(load)
  echo "{\"case\": \"memory$n\", \"cells\": $n, \"load\": \"$l\", \"ringrt\": $(ringrt "mem$n" "$WORK/syn$n.csv" --max-iter 3 --min-iter 3)}"
done
[ -n "$FIXED_M" ] && for n in $SIZES; do
  l=$(load)
  echo "{\"case\": \"memory${n}_m$FIXED_M\", \"cells\": $n, \"load\": \"$l\", \"ringrt\": $(ringrt "memm$n" "$WORK/syn$n.csv" --max-iter 3 --min-iter 3 --n-metacells "$FIXED_M")}"
done

#!/usr/bin/env bash
# Context-parallel modes side by side (issue 34): for each rank count,
# sequence length, head count and GQA ratio, `ringrt attn --causal` with
# --cp ring, a2a, allgather and auto, forward; prints one markdown row per
# run: measured time (median, slowest rank), bytes sent per rank, and the
# cost model's prediction for the mode that ran (ringrt attn --explain).
# `auto` is within X % of the best measured mode: the last column of the
# auto row.
#
#   bash bench/attn_cp_modes.sh [BUILD_DIR]          # the grid below (long: ~30 min on 2 cores)
#   QUICK=1 bash bench/attn_cp_modes.sh build        # a smoke run at S = 1024
#   NPS="2 4" SEQS="8192 16384 32768 65536" HEADS="8 32" GQAS="1 4 8" ITERS=3 bash bench/...
#
# The model-only table (P = 8..128) is bench/attn_cp_model (built with the
# tests: BUILD_DIR/tests/attn/attn_cp_model).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
ringrt=$build/apps/ringrt
[ -x "$ringrt" ] || { echo "no $ringrt: build the tool first (launch/build.sh --target ringrt_app)" >&2; exit 1; }
if [ -n "${QUICK:-}" ]; then
  NPS=${NPS:-2}; SEQS=${SEQS:-1024}; HEADS=${HEADS:-8}; GQAS=${GQAS:-"1 4"}; ITERS=${ITERS:-1}
fi
NPS=${NPS:-"2 4"}; SEQS=${SEQS:-"8192 16384"}; HEADS=${HEADS:-"8 32"}; GQAS=${GQAS:-"1 4 8"}
ITERS=${ITERS:-2}; DIM=${DIM:-64}; LAYOUT=${LAYOUT:-zigzag}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "| np | S | H | GQA | cp | ran | time s | bytes/rank | model s | model bytes | vs best |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for np in $NPS; do for S in $SEQS; do for H in $HEADS; do for G in $GQAS; do
  (( H % G == 0 )) || continue
  declare -A t=()
  for cp in ring a2a allgather auto; do
    out=$(mpirun --oversubscribe -np "$np" "$ringrt" attn --causal --layout "$LAYOUT" --seq "$S" \
          --heads "$H" --kv-heads $((H / G)) --dim "$DIM" --iters "$ITERS" --warmup 1 \
          --cp "$cp" --explain 2>&1) || { echo "| $np | $S | $H | $G | $cp | error: $(echo "$out" | tail -1) |"; continue; }
    ran=$(sed -n 's/.*-> \([a-z0-9+]*\) .*/\1/p' <<<"$out" | head -1)
    time=$(sed -n 's/^  time \([0-9.e+-]*\) s.*/\1/p' <<<"$out")
    bytes=$(sed -n 's/.*sent per rank \([0-9]*\) bytes.*/\1/p' <<<"$out")
    model=$(grep -- '<- runs' <<<"$out" | sed -n 's/.*predicted fwd \([0-9.e+-]*\) s.*/\1/p')
    mbytes=$(grep -- '<- runs' <<<"$out" | awk '{print $3}')
    t[$cp]=$time
    vs=""
    if [ "$cp" = auto ]; then
      vs=$(python3 -c "import sys; b=min(float(x) for x in sys.argv[2:]); print(f'{100*(float(sys.argv[1])/b-1):+.1f} %')" \
           "$time" ${t[ring]:-} ${t[a2a]:-} ${t[allgather]:-})
    fi
    echo "| $np | $S | $H | $G | $cp | $ran | $time | $bytes | $model | $mbytes | $vs |"
  done
  unset t
done; done; done; done

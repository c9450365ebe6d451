#!/usr/bin/env bash
# The accuracy cost of the library path (docs/attn.md, cuDNN fused
# attention): each ring step's partial output and gradients rounded once to
# the storage type before the f32 merge and sums. Runs `ringrt attn --check
# --backward` on the emu backend (the stand-in: the in-tree kernels under
# cuDNN's contract; the arithmetic of the rounding, not cuDNN's kernels) with
# RINGRT_ATTN_KERNEL=auto (in-tree, f32 partials) and =cudnn on identical
# inputs, and prints the largest relative errors against the double-
# precision reference (O, dQ, dK, dV: max |err| / max |ref|) side by side, for
# np = 1, 2, 4, 8 ring ranks, bf16 and f16, causal zigzag and non-causal
# contiguous (about 6 minutes on 2 cores).
#
#   bench/attn-lib-accuracy.sh [BUILD_DIR]      (default build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
app=$root/${1:-build}/apps/ringrt
[ -x "$app" ] || { echo "no $app: build first (launch/build.sh)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
seq=${SEQ:-1024} dim=${DIM:-64} heads=${HEADS:-2}
echo "# attn-lib-accuracy $(date -u +%Y-%m-%dT%H:%MZ) commit $(git -C "$root" rev-parse --short HEAD)"
echo "# emu, S=$seq H=$heads D=$dim, errors max|err|/max|ref| vs the double reference"
printf '%-5s %-3s %-6s | %-35s | %-35s\n' dtype np mask "auto (in-tree): O dQ dK dV" \
  "cudnn (rounded partials): O dQ dK dV"
for dt in bf16 f16; do
  for np in 1 2 4 8; do
    for mask in causal none; do
      args=(--layout contiguous)
      [ "$mask" = causal ] && args=(--causal --layout zigzag)
      row=()
      for kern in auto cudnn; do
        json=$(RINGRT_ATTN_KERNEL=$kern mpiexec -n "$np" --oversubscribe --bind-to none \
          -x RINGRT_ATTN_KERNEL "$app" attn --backend emu --dtype "$dt" --heads "$heads" \
          --dim "$dim" --seq "$seq" "${args[@]}" --check --backward --iters 1 --warmup 0 --quiet \
          --json - 2>/dev/null | grep '^{')
        row+=("$(python3 -c 'import json, sys
j = json.loads(sys.argv[1]); b = j["backward"]["check"]
print("%.2e %.2e %.2e %.2e" % (j["check"]["max_rel"], b["dq_max_rel"], b["dk_max_rel"],
                               b["dv_max_rel"]))' "$json")")
      done
      printf '%-5s %-3s %-6s | %-35s | %-35s\n' "$dt" "$np" "$mask" "${row[0]}" "${row[1]}"
    done
  done
done

#!/bin/sh
# Ring attention forward+backward on the CPU (issue 10): the ring at np=2,
# one core per rank (--bind-to core, 1 thread each), against np=1 on one
# core (1 thread); causal, zigzag, S=4096, H=8, D=64, f32. Each launch runs
# `ringrt attn --backward` with ITERS timed iterations (medians of the
# slowest rank's forward and backward times) after one warm-up.
#   target: np=2 forward+backward at least 1.8x faster than np=1.
# Writes bench/results/attn-ring-bwd-<UTC date>.json (the load average is
# recorded next to the numbers: run it on a quiet machine).
#
# usage: bench/attn_ring_bwd.sh [BUILD_DIR]     (default: build, as launch/build.sh makes it)
# env:   ITERS=5   timed iterations per launch
#        SEQ=4096  global sequence length (smaller for a smoke run)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
iters=${ITERS:-5}
seq=${SEQ:-4096}
[ -x "$app" ] || { echo "no $app: build first (bash launch/build.sh)"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found (reads the JSON reports)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # run NP: one launch, its JSON report in $tmp/npNP.json
  mpirun -np "$1" --bind-to core "$app" attn --backend cpu --backward --causal --layout zigzag \
    --seq "$seq" --heads 8 --dim 64 --dtype f32 --iters "$iters" --warmup 1 --quiet \
    --json "$tmp/np$1.json"
}
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
run 1
run 2

mkdir -p "$root/bench/results"
out=$root/bench/results/attn-ring-bwd-$(date -u +%Y%m%dT%H%MZ).json
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$tmp/np1.json" "$tmp/np2.json" "$out" "$commit" "$load" "$seq" "$iters" <<'PY'
import json, sys
f1, f2, out, commit, load, seq, iters = sys.argv[1:8]
r = {}
for np_, f in ((1, f1), (2, f2)):
    j = json.load(open(f))
    b = j["backward"]
    r[np_] = {"fwd_s": j["time_s"], "bwd_s": b["time_s"], "total_s": j["time_s"] + b["time_s"],
              "fwd_gflops": j["flops"] / j["time_s"] * 1e-9,
              "bwd_gflops": b["flops"] / b["time_s"] * 1e-9,
              "bwd_hidden_share": b["hidden_share"], "bwd_handoff_exposed_s": b["handoff_exposed_s"],
              "report": j}
speedup = r[1]["total_s"] / r[2]["total_s"]
res = {"bench": "attn_ring_bwd", "commit": commit, "loadavg_before": load, "seq": int(seq),
       "heads": 8, "dim": 64, "dtype": "f32", "causal": True, "layout": "zigzag",
       "iters": int(iters), "np1_1core": r[1], "np2_1core_per_rank": r[2],
       "speedup_fwd_bwd": speedup, "target": 1.8}
json.dump(res, open(out, "w"), indent=1)
for np_ in (1, 2):
    x = r[np_]
    print("np=%d: forward %.4f s (%.1f GFLOP/s), backward %.4f s (%.1f GFLOP/s), fwd+bwd %.4f s; "
          "backward comm hidden %.0f%%" % (np_, x["fwd_s"], x["fwd_gflops"], x["bwd_s"],
                                           x["bwd_gflops"], x["total_s"], 100 * x["bwd_hidden_share"]))
print("speed-up np=2 / np=1 forward+backward: %.2f x (target >= 1.8); %s" % (speedup, out))
PY

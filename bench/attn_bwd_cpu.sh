#!/bin/sh
# Backward against forward of the same CPU kernel family (issue 10): one
# rank, 2 OpenMP threads, S=4096 H=8 D=64 f32, causal and not. Each launch
# runs `ringrt attn --backward` (forward then backward every iteration,
# ITERS timed after one warm-up); LAUNCHES launches per case, medians.
# Backward FLOPs are counted as 2.5x the forward's (rrt_attn_flops_bwd).
#   target: backward FLOP/s at least 0.7x the forward's.
# usage: bench/attn_bwd_cpu.sh [BUILD_DIR]   (default: build, as launch/build.sh makes it)
# env:   ITERS=5 LAUNCHES=3 SEQ=4096 THREADS=2
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
[ -x "$app" ] || { echo "no $app: build first (bash launch/build.sh)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=${THREADS:-2}
mkdir -p "$root/bench/results"
out=$root/bench/results/attn-bwd-cpu-$(date -u +%Y%m%dT%H%M%SZ).json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mode in dense causal; do
  flag=""
  [ "$mode" = causal ] && flag=--causal
  for l in $(seq "${LAUNCHES:-3}"); do
    mpirun -np 1 --bind-to none "$app" attn --backend cpu --backward $flag --seq "${SEQ:-4096}" \
      --heads 8 --dim 64 --dtype f32 --iters "${ITERS:-5}" --warmup 1 --quiet \
      --json "$tmp/$mode-$l.json"
  done
done
python3 - "$tmp" "$out" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY'
import glob, json, os, statistics, sys
tmp, out, commit = sys.argv[1:4]
res = {"bench": "attn_bwd_cpu", "commit": commit, "threads": int(os.environ.get("OMP_NUM_THREADS", 2)),
       "load_avg_1min": os.getloadavg()[0], "cases": {}}
for name in ("dense", "causal"):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{tmp}/{name}-*.json"))]
    fwd = statistics.median(r["tflops"] for r in runs) * 1e3
    bwd = statistics.median(r["backward"]["tflops"] for r in runs) * 1e3
    case = "causal" if name == "causal" else "non-causal"
    res["cases"][case] = {"fwd_gflops": fwd, "bwd_gflops": bwd, "ratio": bwd / fwd,
                          "fwd_time_s": statistics.median(r["time_s"] for r in runs),
                          "bwd_time_s": statistics.median(r["backward"]["time_s"] for r in runs),
                          "launches": len(runs)}
    print(f"{case:10s} forward {fwd:7.1f} GFLOP/s  backward {bwd:7.1f} GFLOP/s  ratio {bwd/fwd:.2f}")
json.dump(res, open(out, "w"), indent=1)
print("wrote", out)
PY

#!/usr/bin/env bash
# ILU(0) on one GPU, ringrt (cuda backend) side by side with cuSPARSE
# (csrilu02 + cusparseSpSV) on the same matrices in the same run:
#   1. builds ringrt with CUDA if needed and runs the ilu gpu tests;
#   2. compiles bench/cusparse_ilu.c with nvcc (the cuSPARSE driver);
#   3. per problem: `ringrt ilu` (natural order with sync-free sweeps and with
#      a launch per level, RINGRT_ILU_SWEEP=levels; multicolour) and the
#      cuSPARSE driver, one JSON line each, then a table with the ratios.
# Everything is printed and also written to bench/results/gpu-ilu-<date>.jsonl;
# paste the table into docs/gpu-results.md with the date and commit printed.
# Budget: under 8 minutes on one H100/H200 (each step has its own timeout, a
# failing step prints a JSON line with "status": "failed" and the rest goes on).
#
#   bench/gpu-ilu.sh [BUILD_DIR]        (default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -d /usr/local/cuda/bin ] && PATH=$PATH:/usr/local/cuda/bin
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p bench/results
out=bench/results/gpu-ilu-$(date -u +%Y%m%dT%H%M%SZ).jsonl
t_start=$(date +%s)
say() { echo "$*" | tee -a "$out"; }

if [ ! -x "$build/apps/ringrt" ]; then
  echo "gpu-ilu.sh: building ringrt with CUDA in $build" >&2
  # the README's build (launch/build.sh, its default build type), with CUDA
  if ! RINGRT_BUILD_DIR="$build" timeout 600 bash launch/build.sh -DRINGRT_CUDA=ON >/dev/null; then
    say '{"step": "build", "status": "failed"}'
    exit 1
  fi
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
say "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo none)\", \"gpu\": \"${gpu:-unknown}\"}"

# 1. the gpu tests of the ilu area (factors bitwise equal to the serial reference)
log=$(mktemp)
if [ -n "${GPU_BENCH_SKIP_TESTS:-}" ]; then # tests/gpu/run.sh ran them
  status="run by tests/gpu/run.sh"
elif (cd "$build" && timeout 150 ctest -L ilu -L gpu --output-on-failure --timeout 120) >"$log" 2>&1; then
  # skipped (no device, or a build without CUDA) is not passed
  if grep -q "Skipped\|No tests were found" "$log"; then status=skipped; else status=passed; fi
else
  status=failed
fi
cat "$log" >&2
rm -f "$log"
say "{\"step\": \"gpu_tests\", \"status\": \"$status\"}"

# 2. the cuSPARSE driver
cs="$build/cusparse_ilu"
if ! timeout 120 "$nvcc" -O2 -o "$cs" bench/cusparse_ilu.c -lcusparse >&2; then
  say '{"step": "cusparse_build", "status": "failed"}'
  cs=""
fi

# 3. side by side
app="$build/apps/ringrt"
ringrt() { timeout 120 mpirun -np 1 --bind-to none "$app" ilu --backend cuda --quiet --json - \
             --repeat 10 "$@" 2>/dev/null | grep '^{' ||
             echo "{\"run\": \"ringrt $*\", \"status\": \"failed\"}"; }
cusparse() { if [ -n "$cs" ]; then timeout 120 "$cs" --repeat 10 "$@" | grep '^{' ||
             echo "{\"run\": \"cusparse $*\", \"status\": \"failed\"}"; fi; }
for p in laplace2d:1000 laplace3d:100 laplace3d:64; do
  say "$(ringrt --generate "$p" --solver none)"
  say "$(RINGRT_ILU_SWEEP=levels ringrt --generate "$p" --solver none)" # a launch per level
  say "$(ringrt --generate "$p" --solver none --reorder multicolor)"
  say "$(cusparse --generate "$p")"
done
# a solve, for the iteration count and the solve time on the GPU
say "$(ringrt --generate laplace3d:100 --solver gmres --maxit 500)"
say "$(ringrt --generate laplace3d:100 --reorder multicolor --solver gmres --maxit 500)"
say "{\"step\": \"done\", \"seconds\": $(( $(date +%s) - t_start ))}"

# table (python3 standard library only)
python3 - "$out" <<'PY' || true
import json, sys
rows = [json.loads(s) for s in open(sys.argv[1]) if s.startswith("{")]
ilu = [r for r in rows if r.get("command") == "ilu" and "solver" not in r]
cus = {r["problem"]: r for r in rows if r.get("tool") == "cusparse" and "factor_s" in r}
print("\n| problem | who | ordering | levels | launches factor/apply | analysis ms | factor ms "
      "| refactor ms | L+U solve ms |")
print("|---|---|---|---|---|---|---|---|---|")
for r in ilu:
    print("| %s | ringrt | %s | %d | %s/%s | %.2f | %.3f | %.3f | %.3f |" % (
        r["problem"], r["ordering"], r["levels_l"], r.get("launches_factor", "?"),
        r.get("launches_apply", "?"), 1e3 * r["analysis_s"], 1e3 * r["factor_s"],
        1e3 * r["refactor_s"], 1e3 * r["trisolve_s"]))
    c = cus.get(r["problem"])
    if c and r["ordering"] == "natural" and r.get("launches_factor") == 1:
        print("| %s | cuSPARSE | natural | - | - | %.2f | %.3f | %.3f | %.3f |" % (
            c["problem"], 1e3 * (c["analysis_s"] + c["spsv_analysis_s"]), 1e3 * c["factor_s"],
            1e3 * c["refactor_s"], 1e3 * c["trisolve_s"]))
        print("| %s | ratio ringrt/cuSPARSE | natural | | | | | %.2f | %.2f |" % (
            c["problem"], r["refactor_s"] / c["refactor_s"], r["trisolve_s"] / c["trisolve_s"]))
for r in rows:
    if r.get("command") == "ilu" and "solver" in r:
        print("\n%s %s: %s+ilu0 %d iterations, %.3f s, converged %s, true residual %.2e" % (
            r["problem"], r["ordering"], r["solver"], r["iterations"], r["solve_s"],
            r["converged"], r["true_residual"]))
PY
echo "results: $out" >&2

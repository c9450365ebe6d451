#!/usr/bin/env bash
# Forward+backward: ringrt's CPU attention against torch's CPU
# scaled_dot_product_attention with autograd (issue 10), S=4096 H=8 D=64,
# causal and not, f32 and bf16, 2 threads each; JSON in bench/results/.
#   bench/attn_torch.sh [BUILD]      BUILD: default ./build (the README's
#                                    build: RINGRT_BUILD_DIR=BUILD bash launch/build.sh)
# env: ROUNDS=5 (interleaved rounds), ITERS=3 (runs per measurement),
#      RINGRT_BENCH_VENV=DIR (the venv of bench/setup-torch.sh, default
#      bench/.venv-torch). torch is never installed here: run
#      bench/setup-torch.sh once (a bench setup step, never CI).
# Timings on a shared or loaded machine are indicative only.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
[ -x "$app" ] || { echo "no $app: build first (RINGRT_BUILD_DIR=$build bash launch/build.sh)"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 1; }
venv=${RINGRT_BENCH_VENV:-$root/bench/.venv-torch}
tpy=""
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  tpy=$venv/bin/python
elif python3 -c 'import torch' 2>/dev/null; then
  tpy=python3
else
  echo "# torch not importable: run bench/setup-torch.sh first; ringrt measured alone"
fi
mkdir -p "$root/bench/results"
out=$root/bench/results/attn-torch-$(date -u +%Y%m%dT%H%M%SZ).json
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 "$root/bench/attn_torch.py" --app "$app" --torch-python "$tpy" --rounds "${ROUNDS:-5}" \
  --iters "${ITERS:-3}" --commit "$commit" --out "$out"

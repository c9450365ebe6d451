#!/bin/sh
# CPU ring attention benchmark (issue 3). In one run, side by side, medians
# over REPS interleaved rounds (see bench/attn-cpu.py for the details):
#  (a) OpenBLAS sgemm GFLOP/s, 2 threads, at the attention's product shapes;
#  (b) `ringrt attn` local attention, np=1, 2 threads, f32, S=4096 H=8 D=64,
#      non-causal: GFLOP/s and the ratio to (a)  [target >= 0.70];
#  (c) causal against non-causal time  [target >= 1.8x];
#  (d) PyTorch CPU scaled_dot_product_attention, same shapes and threads;
#  (e) the ring: np=2 at 1 core per rank against np=1 on 1 core, time and
#      the share of communication hidden behind compute.
# Writes bench/results/attn-cpu-<UTC date>.json. Run it on a quiet machine
# (the load average is recorded next to the numbers).
#
# usage: bench/attn-cpu.sh [BUILD_DIR]        (default: build)
# env:   REPS=7                       rounds (each measures everything once)
#        RINGRT_BENCH_VENV=DIR        venv holding torch (default bench/.venv-torch)
#        RINGRT_BENCH_NO_INSTALL=1    never create the venv / pip install torch
#        QUIET_WAIT=S                 before each round wait up to S s for idle CPUs (0)
# torch comes from bench/setup-torch.sh (its CPU wheel, else PyPI's; a large
# download). If it cannot be installed the comparison is skipped and said so.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
reps=${REPS:-7}
[ -x "$app" ] || {
  echo "no $app: build first, as the README does (RINGRT_BUILD_DIR=$build bash launch/build.sh)"
  exit 1
}
command -v mpirun >/dev/null || { echo "mpirun not found"; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found (the driver needs it)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# (a) the sgemm driver, against the same OpenBLAS the library links
cblas=$(find /usr/include /usr/local/include -name cblas.h -path '*openblas*' 2>/dev/null | head -1)
[ -n "$cblas" ] || cblas=$(find /usr/include /usr/local/include -name cblas.h 2>/dev/null | head -1)
cc -O2 -fopenmp ${cblas:+-I"$(dirname "$cblas")"} "$root/bench/attn-sgemm.c" -o "$tmp/attn-sgemm" \
  -lopenblas

# (d) a python that imports torch: the system one, else the bench venv
venv=${RINGRT_BENCH_VENV:-$root/bench/.venv-torch}
tpy=""
note=""
if python3 -c 'import torch' 2>/dev/null; then
  tpy=python3
elif [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  tpy=$venv/bin/python
elif [ "${RINGRT_BENCH_NO_INSTALL:-0}" = 1 ]; then
  note="torch not importable and RINGRT_BENCH_NO_INSTALL=1"
else
  echo "# installing torch into $venv (once; bench/setup-torch.sh; large download)"
  if bash "$root/bench/setup-torch.sh" "$venv" >"$tmp/pip.log" 2>&1; then
    tpy=$venv/bin/python
  else
    note="pip install torch failed: $(tail -2 "$tmp/pip.log" 2>/dev/null | tr '\n' ' ')"
    echo "# $note"
  fi
fi

mkdir -p "$root/bench/results"
out=$root/bench/results/attn-cpu-$(date -u +%Y%m%dT%H%MZ).json
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 "$root/bench/attn-cpu.py" --app "$app" --sgemm "$tmp/attn-sgemm" --reps "$reps" \
  --torch-python "$tpy" --torch-note "$note" --commit "$commit" --out "$out" \
  --quiet-wait "${QUIET_WAIT:-0}"

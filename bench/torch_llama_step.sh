#!/usr/bin/env bash
# Training-step time of a small Hugging Face Llama on CPU (issue 33): ringrt
# context parallelism (attn_implementation "ringrt") at NP ranks x 1 thread
# against one process with transformers' sdpa at NP threads (the same
# cores), float32 and bfloat16, eager and torch.compile'd; JSON lines in
# bench/results/torch-llama-step-<time>.jsonl.
#   bench/torch_llama_step.sh [BUILD]     BUILD: default ./build
# env: NP=2, SEQ=2048 (global tokens), STEPS=10 (timed, median reported),
#      WARMUP=3, PYTHON (default: the venv of launch/python-deps.sh, ./.venv),
#      EXTRA="--no-compile" (or other bench/torch_llama_step.py options).
# Timings on a shared or loaded machine are indicative only.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
lib=$build/src/libringrt.so
[ -e "$lib" ] || { echo "no $lib: build first (RINGRT_BUILD_DIR=$build bash launch/build.sh)"; exit 1; }
py=${PYTHON:-$root/.venv/bin/python}
"$py" -c 'import torch, transformers, mpi4py' ||
  { echo "$py lacks torch/transformers/mpi4py: bash launch/python-deps.sh"; exit 1; }
np=${NP:-2}
mkdir -p "$root/bench/results"
out=$root/bench/results/torch-llama-step-$(date -u +%Y%m%dT%H%M%SZ).jsonl
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
args=(--seq "${SEQ:-2048}" --steps "${STEPS:-10}" --warmup "${WARMUP:-3}" --commit "$commit")
# shellcheck disable=SC2086 # EXTRA is a list of options
export RINGRT_LIBRARY=$lib PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
"$root/launch/ringrt-run" -n "$np" -x RINGRT_LIBRARY -x PYTHONPATH -- \
  "$py" "$root/bench/torch_llama_step.py" --threads 1 "${args[@]}" ${EXTRA:-} | tee "$out"
# shellcheck disable=SC2086
"$py" "$root/bench/torch_llama_step.py" --sdpa --threads "$np" "${args[@]}" ${EXTRA:-} | tee -a "$out"
echo "# $out"

#!/usr/bin/env bash
# Bench setup step (never CI): torch's CPU wheel in a venv for the peer
# comparisons (bench/attn_torch.sh, bench/attn-cpu.sh).
#   bench/setup-torch.sh [VENV]     default bench/.venv-torch (git-ignored)
# The CPU wheel index keeps the download to the CPU build; where that index
# cannot be reached, the default index's wheel is installed instead (it pulls
# the CUDA libraries too: several GiB; the report says which). Measures the
# install's wall time and the venv's size and writes them to
# bench/results/torch-install-*.json.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/bench/.venv-torch}
index=${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  echo "torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') already in $venv"
  exit 0
fi
t0=$(date +%s.%N)
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" -m pip install -q --index-url "$index" torch; then
  echo "# $index unreachable or without torch: the default index's wheel (with CUDA libraries)"
  index=default
  "$venv/bin/python" -m pip install -q torch
fi
t1=$(date +%s.%N)
"$venv/bin/python" -c 'import torch' || { echo "torch installed but does not import" >&2; exit 1; }
ver=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
venv_bytes=$(du -sb "$venv" | cut -f1)
torch_dir=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
torch_bytes=$(du -sb "$torch_dir" | cut -f1)
secs=$(python3 -c "print(round($t1 - $t0, 1))")
mkdir -p "$root/bench/results"
out=$root/bench/results/torch-install-$(date -u +%Y%m%dT%H%M%SZ).json
printf '{"torch": "%s", "index_url": "%s", "install_s": %s, "venv_bytes": %s, "torch_package_bytes": %s, "load_average": "%s"}\n' \
  "$ver" "$index" "$secs" "$venv_bytes" "$torch_bytes" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$out"
echo "torch $ver installed in $venv: $secs s, venv $((venv_bytes / 1048576)) MiB (torch package $((torch_bytes / 1048576)) MiB); $out"

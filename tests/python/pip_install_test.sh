#!/usr/bin/env bash
# The user's path, not the source tree's: install the C library into a
# prefix (cmake --install), the package with pip (pip install ./python,
# here into a target folder, without network: no build isolation, no
# dependencies), then import it with neither RINGRT_LIBRARY nor the source
# tree on the path and check which package and which library were loaded.
set -u
build=$1 src=$2 python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install: $(tail "$tmp/install.log")"
# From a copy: setuptools builds in the project folder (build/, *.egg-info),
# and the test run leaves nothing in the source tree.
cp -r "$src/python" "$tmp/python"
"$python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
  --target "$tmp/site" "$tmp/python" >"$tmp/pip.log" 2>&1 || fail "pip install ./python: $(tail "$tmp/pip.log")"
[ -f "$tmp/site/ringrt/py.typed" ] || fail "py.typed not installed (type hints)"

out=$(cd "$tmp" && env -u RINGRT_LIBRARY PYTHONPATH="$tmp/site" RINGRT_PREFIX="$tmp/prefix" \
  RINGRT_BACKEND=cpu "$python" -c '
import os, ringrt
with ringrt.Context() as ctx:
    maps = open("/proc/self/maps").read()
    lib = sorted({l.split()[-1] for l in maps.splitlines() if "libringrt.so" in l})
    print("package", os.path.dirname(ringrt.__file__))
    print("library", *lib)
    print("backend", ctx.backend, "size", ctx.size)
' 2>&1) || fail "import from the installed package: $out"
echo "$out"
[[ "$out" == *"package $tmp/site/ringrt"* ]] || fail "ringrt was not imported from the pip install"
[[ "$out" == *"library $tmp/prefix/lib"*"/libringrt.so.0"* ]] || fail "libringrt not loaded from RINGRT_PREFIX"
[[ "$out" == *"backend cpu size 1"* ]] || fail "context: $out"

# Nothing to find: the error names where it looked.
err=$(cd "$tmp" && env -u RINGRT_LIBRARY PYTHONPATH="$tmp/site" RINGRT_PREFIX="$tmp/nowhere" \
  LD_LIBRARY_PATH= "$python" -c 'import ringrt; ringrt.Context()' 2>&1) && fail "no library, yet it loaded"
[[ "$err" == *"cannot load libringrt"*"$tmp/nowhere/lib/libringrt.so.0 (absent)"* ]] ||
  fail "the not-found message does not name what was tried: $err"
echo "PASS"

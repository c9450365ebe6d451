#!/usr/bin/env bash
# A system install of the C library (cmake --install into a prefix) used by
# the Python package through RINGRT_PREFIX, ahead of the library a wheel
# carries (ringrt/_lib; here an unloadable stand-in, so loading it would
# fail): import with neither RINGRT_LIBRARY nor the source tree on the path
# and check which package and which library were loaded; with nothing to
# find, the error names every place tried. (The wheel itself: wheel_test.sh.)
set -u
build=$1 src=$2 python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  fail "cmake --install: $(tail "$tmp/install.log")"
# The package as a wheel installs it, with a stand-in for its own library.
mkdir -p "$tmp/site"
cp -r "$src/python/ringrt" "$tmp/site/ringrt"
mkdir "$tmp/site/ringrt/_lib"
echo "not a library" >"$tmp/site/ringrt/_lib/libringrt.so.0"

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
[[ "$err" == *"$tmp/site/ringrt/_lib/libringrt.so.0 ($tmp/site/ringrt/_lib/libringrt.so.0: "* ]] ||
  fail "the not-found message does not name the package's own library: $err"
echo "PASS"

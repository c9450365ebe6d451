#!/usr/bin/env bash
# A consumer of libringrt.so runs the cpu backend with the CUDA and NCCL
# libraries hidden from the loader: in a private mount namespace (unshare -m,
# root), an empty tmpfs over each CUDA toolkit directory and /dev/null over
# every libcuda*/libcudart*/libnccl* the loader cache names. LD_DEBUG then
# shows that no CUDA or NCCL object was initialised; the cuda backend must say
# "no usable GPU", and the NCCL loader must name everything it tried. Where
# unshare is not possible the libraries stay visible and only the LD_DEBUG
# check runs (said in the output).
set -u
exe=$1 mpirun=$2 have_cuda=$3 nccl_test=${4:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { "$mpirun" -np "$1" --oversubscribe --bind-to none "${@:2}"; }

if [ -z "${RRT_LOADER_HIDDEN:-}" ]; then
  if unshare -m true 2>/dev/null; then
    RRT_LOADER_HIDDEN=1 exec unshare -m bash "$0" "$@"
  fi
  echo "NOTE: unshare -m is not possible here: the CUDA/NCCL libraries are NOT hidden;" \
    "only checking with LD_DEBUG that none is loaded"
  RRT_LOADER_HIDDEN=0
fi

libs() { ldconfig -p | awk '$1 ~ /^lib(cuda|cudart|nccl)\.so/ {print $NF}' | sort -u; }
if [ "$RRT_LOADER_HIDDEN" = 1 ]; then
  for d in /usr/local/cuda /usr/local/cuda-*; do
    real=$(readlink -f "$d")
    [ -d "$real" ] && { mount -t tmpfs none "$real" || fail "mount tmpfs over $real"; }
  done
  for f in $(libs); do
    [ -e "$f" ] && { mount --bind /dev/null "$f" || fail "hide $f"; }
  done
  for f in $(libs); do [ -s "$f" ] && fail "$f is still visible"; done
  echo "hidden: CUDA toolkit directories and $(libs | wc -l) libcuda/libcudart/libnccl files"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(run 2 "$exe" 2>&1) || fail "the cpu consumer failed: $out"
echo "$out"
[[ "$out" == *"cpu backend ran: 2 ranks"* ]] || fail "no cpu run: $out"

out=$(run 1 -x LD_DEBUG=libs -x LD_DEBUG_OUTPUT="$tmp/ld" "$exe" 2>&1) ||
  fail "the cpu consumer failed under LD_DEBUG: $out"
ls "$tmp"/ld.* >/dev/null 2>&1 || fail "LD_DEBUG wrote nothing"
inits=$(grep -h "calling init:" "$tmp"/ld.* | grep -Ei 'lib(cuda|cudart|nccl)' || true)
[ -z "$inits" ] || fail "CUDA/NCCL objects were loaded: $inits"
echo "LD_DEBUG: $(grep -h 'calling init:' "$tmp"/ld.* | wc -l) objects initialised, none CUDA or NCCL"

if [ "$have_cuda" = ON ]; then
  out=$(RINGRT_BACKEND=cuda run 1 "$exe" no-gpu 2>&1)
  rc=$?
  if [ "$RRT_LOADER_HIDDEN" = 1 ] || [[ "$out" == *"no usable GPU"* ]]; then
    [ $rc = 0 ] || fail "backend cuda without a driver: $out"
    [[ "$out" == *"no usable GPU"* ]] || fail "backend cuda without a driver: $out"
    echo "backend cuda: $(echo "$out" | grep -m1 'no usable GPU')"
  else
    echo "NOTE: a GPU is visible, the no-GPU message is not checked here"
  fi
fi
if [ -n "$nccl_test" ]; then
  if [ "$RRT_LOADER_HIDDEN" = 1 ]; then
    out=$("$nccl_test" none 2>&1) || fail "NCCL loader with no NCCL: $out"
    echo "$out"
  else
    echo "NOTE: NCCL not hidden, the nothing-loads error is not checked here"
  fi
fi
echo "loader_hidden: ok"

#!/usr/bin/env bash
# libringrt.so has no load-time dependency on the CUDA runtime, the driver or
# NCCL: none in DT_NEEDED, and no CUDA/NCCL symbol left for another object
# to provide. In a CUDA build the static runtime must be inside instead.
set -u
lib=$1 have_cuda=$2 have_nccl=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
needed=$(readelf -d "$lib" | awk '/\(NEEDED\)/ {print $NF}' | tr -d '[]')
echo "DT_NEEDED of $lib:" $needed
bad=$(echo "$needed" | grep -Ei '^lib(cuda|cudart|nccl)' || true)
[ -z "$bad" ] || fail "libringrt.so needs $bad at load time"
undef=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | grep -E '^(cuda|cu|nccl)[A-Z]' || true)
[ -z "$undef" ] || fail "libringrt.so leaves CUDA/NCCL symbols to others: $undef"
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -E '^(cuda|__cuda|nccl)' | head || true)
[ -z "$exported" ] || fail "libringrt.so exports CUDA runtime symbols: $exported"
if [ "$have_cuda" = ON ]; then
  # cudaGetDeviceCount is called by the backend choice: it must be defined inside
  nm "$lib" 2>/dev/null | grep -q ' [tT] cudaGetDeviceCount$' ||
    nm -D "$lib" | grep -q cudaGetDeviceCount ||
    echo "note: no symbol table to show the static CUDA runtime (stripped?)"
  echo "CUDA build (NCCL $have_nccl): the CUDA runtime is linked statically, NCCL opened at run time"
else
  echo "CPU-only build: nothing CUDA to link, so this proves less than a CUDA build"
fi
echo "loader_readelf: ok"

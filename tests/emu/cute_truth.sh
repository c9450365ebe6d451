#!/usr/bin/env bash
# CuTe's fragment layouts as the emulator's ground truth (test_emu_cute.c):
# builds cute_layouts.cpp with nvcc for the host against the nvidia-cutlass
# wheel's headers (launch/deps.sh installs it where nvcc is), runs the
# emulator's check against its table, and requires the copy of the check
# linked with a planted swap in tc_emu.cpp to fail. Without nvcc or the
# headers: exit 77 (skipped), saying which is missing.
#   cute_truth.sh SRC_DIR OUT_DIR TEST_EXE PLANTED_EXE [PYTHON...]
set -uo pipefail
src="$1" out="$2" test_exe="$3" planted_exe="$4"
shift 4
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
[ -n "$nvcc" ] || { echo "SKIP: no nvcc (the CUDA toolkit) to compile CuTe's layouts"; exit 77; }
inc=${CUTLASS_INCLUDE_DIR:-}
if [ -z "$inc" ]; then
  for py in "$@" python3; do
    command -v "$py" >/dev/null || continue
    inc=$("$py" -c 'import importlib.util as u, os
s = u.find_spec("cutlass_library")
print(os.path.join(os.path.dirname(s.origin), "source", "include") if s else "")' 2>/dev/null)
    [ -n "$inc" ] && break
  done
fi
[ -n "$inc" ] && [ -r "$inc/cute/tensor.hpp" ] || {
  echo "SKIP: no CuTe headers (pip install --no-deps nvidia-cutlass==4.2.0.0, or CUTLASS_INCLUDE_DIR)"
  exit 77
}
mkdir -p "$out"
bin=$out/cute_layouts
if [ ! -x "$bin" ] || [ "$src/tests/emu/cute_layouts.cpp" -nt "$bin" ]; then
  "$nvcc" -std=c++17 -x cu -I "$inc" "$src/tests/emu/cute_layouts.cpp" -o "$bin" || exit 1
fi
"$bin" >"$out/cute_layouts.txt" || exit 1
echo "CuTe table: $(wc -l <"$out/cute_layouts.txt") lines from $inc"
"$test_exe" "$out/cute_layouts.txt" || { echo "FAIL: the emulator differs from CuTe"; exit 1; }
if "$planted_exe" "$out/cute_layouts.txt" >"$out/planted.log" 2>&1; then
  echo "FAIL: the emulator with a planted swap (RRT_EMU_PLANTED_SWAP) passed the CuTe check"
  exit 1
fi
echo "planted swap caught: $(grep -m1 'differ' "$out/planted.log")"
echo "the emulator's mma and ldmatrix agree with CuTe's layouts"

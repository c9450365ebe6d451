#!/bin/sh
# CUDA compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER): runs the nvcc command
# it is given with ptxas -v and keeps ptxas's report of each kernel (entry
# function, target, registers) next to the object as OBJ.ptxas, from which
# cmake/emu_kernel_regs.sh makes the emulator's register table. Everything
# else nvcc prints goes to stderr as before.
out=
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
[ -n "$out" ] || exec "$@"
log="$out.ptxas"
"$@" -Xptxas=-v 2>"$log.all"
rc=$?
grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$log.all" >&2
grep -e "^ptxas info *: Compiling entry function" -e "^ptxas info *: Used [0-9]* registers" \
  "$log.all" >"$log"
rm -f "$log.all"
exit $rc

#!/bin/sh
# The SIMT emulator's register table (src/kernels/emu/simt_executor.cpp,
# RINGRT_EMU_REGS): one line per kernel and target, "NAME ARCH REGISTERS",
# from the ptxas reports that cmake/ptxas_log.sh kept next to the CUDA
# objects. NAME is the demangled kernel without its return type, its
# parameters, an anonymous namespace and spaces ("rrt_attn_fwd_kernel<8,64>"),
# as the emulator spells a launched kernel.
#   emu_kernel_regs.sh OUT OBJECT...
set -eu
out=$1
shift
command -v c++filt >/dev/null || { echo "emu_kernel_regs.sh: needs c++filt (binutils)" >&2; exit 1; }
tmp="$out.tmp"
echo "# ringrt: registers per thread of each CUDA kernel (ptxas -v of this build)" >"$tmp"
for obj in "$@"; do
  case $obj in *.cu.o) ;; *) continue ;; esac
  [ -f "$obj.ptxas" ] || { echo "emu_kernel_regs.sh: no $obj.ptxas (built without cmake/ptxas_log.sh?)" >&2; exit 1; }
  # "Compiling entry function 'M' for 'sm_90'" then "Used N registers"
  sed -n -e "s/^ptxas info *: Compiling entry function '\([^']*\)' for '\([^']*\)'.*/E \1 \2/p" \
    -e 's/^ptxas info *: Used \([0-9]*\) registers.*/U \1/p' "$obj.ptxas" |
    awk '$1 == "E" { name = $2; arch = $3; next } $1 == "U" && name != "" { print name "\t" arch "\t" $2; name = "" }'
done | c++filt | awk -F'\t' '{
  s = $1; depth = 0
  gsub(/\(anonymous namespace\)::/, "", s)   # the emulator names them without it
  cut = length(s) + 1
  for (i = 1; i <= length(s); i++) {   # the parameters begin at the first "(" outside "<...>"
    c = substr(s, i, 1)
    if (c == "<") depth++
    else if (c == ">") depth--
    else if (c == "(" && depth == 0) { cut = i; break }
  }
  s = substr(s, 1, cut - 1)
  sub(/^void /, "", s)
  gsub(/ /, "", s)
  print s, $2, $3 }' >>"$tmp"
# Unchanged: keep the old file (and its time stamp).
if cmp -s "$tmp" "$out"; then rm -f "$tmp"; else mv "$tmp" "$out"; fi

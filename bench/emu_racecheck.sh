#!/usr/bin/env bash
# What the emulator's race checker costs (docs/runtime.md, "Race checker"):
# the emu tests of the attention kernels (and the SEACells/ILU ones) timed
# with RINGRT_EMU_RACECHECK=0 and =1 in BUILD, and, given a second build
# configured with -DRINGRT_EMU_INSTRUMENT_KERNELS=OFF, without the
# instrumentation at all. Median of REPS runs per test. Run on a quiet
# machine; the numbers go to docs/results.md.
#   bench/emu_racecheck.sh BUILD [PLAIN_BUILD] [REPS]
set -uo pipefail
build=$1 plain=${2:-} reps=${3:-3}
tests='^(attn_kernels_tc_emu|attn_bwd_tc_emu|attn_bwd_kernels_emu|attn_parity_emu_np1|attn_masks_emu_np1|seacells_ref_emu_np2|ilu.dist.emu.np2)$'
time_of() { # DIR NAME RACECHECK -> seconds (median of reps)
  local i t=()
  for ((i = 0; i < reps; i++)); do
    t+=("$(cd "$1" && RINGRT_EMU_RACECHECK=$3 ctest -R "^$2\$" 2>&1 |
      sed -nE 's/.*Passed +([0-9.]+) sec.*/\1/p')")
  done
  printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p"
}
printf '%-24s %10s %10s %10s %8s\n' test uninstr off on "on/off"
for name in $(cd "$build" && ctest -N -R "$tests" | sed -nE 's/.*Test +#[0-9]+: (.*)/\1/p'); do
  off=$(time_of "$build" "$name" 0)
  on=$(time_of "$build" "$name" 1)
  base=-
  [ -n "$plain" ] && base=$(time_of "$plain" "$name" 0)
  printf '%-24s %10s %10s %10s %8s\n' "$name" "$base" "$off" "$on" \
    "$(awk -v a="$on" -v b="$off" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
done

#!/usr/bin/env bash
# Planted faults: each __syncthreads of the tensor-core attention kernels
# deleted in turn (RINGRT_EMU_DROP_BARRIER=FILE:LINE) must fail its kernel
# test under the hazard modes (RINGRT_EMU_SCHED=runahead: a warp reads
# another warp's shared-memory writes without a barrier; RINGRT_EMU_CPASYNC=
# eager: a prefetch lands on a tile still being read). The barriers are
# found in the sources, so a new one is covered without editing this test.
# With MODE racecheck the default schedule runs instead, under the race
# checker (RINGRT_EMU_RACECHECK=1), and the test's output must name a
# shared-memory race: the checker itself catches each deletion.
#   planted_barriers.sh SRC_DIR TEST_ATTN_KERNELS TEST_ATTN_BWD_GPU [hazards|racecheck]
set -uo pipefail
src="$1" fwd_test="$2" bwd_test="$3" mode="${4:-hazards}"
export RINGRT_BACKEND=emu
case "$mode" in
hazards) export RINGRT_EMU_SCHED=runahead RINGRT_EMU_CPASYNC=eager RINGRT_EMU_RACECHECK=0
  caught='FAIL|deadlock' ;;
racecheck) export RINGRT_EMU_SCHED=block RINGRT_EMU_CPASYNC=lazy RINGRT_EMU_RACECHECK=1
  caught='shared-memory race' ;;
*) echo "planted_barriers.sh: MODE is hazards or racecheck, not $mode"; exit 2 ;;
esac
fails=0 planted=0
# the barrier lines of a kernel source (code, not comments)
barriers() { grep -n '^[^/*]*__syncthreads();' "$1" | cut -d: -f1; }
run_dropped() { # FILE LINE COMMAND...: the command must fail, its output matching $caught
  local file="$1" line="$2"
  shift 2
  planted=$((planted + 1))
  local out rc
  out=$(RINGRT_EMU_DROP_BARRIER="$file:$line" "$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && grep -qE "$caught" <<<"$out"; then
    echo "caught ($mode): $file:$line deleted: $(grep -m1 -oE "($caught).{0,160}" <<<"$out")"
  else
    echo "MISSED: $file:$line deleted and the test still passes (exit $rc)"
    fails=$((fails + 1))
  fi
}
for line in $(barriers "$src/src/kernels/cuda/attn_fwd_tc.cu"); do
  run_dropped attn_fwd_tc.cu "$line" "$fwd_test" tc
done
for line in $(barriers "$src/src/kernels/cuda/attn_bwd_tc.cu"); do
  RINGRT_ATTN_KERNEL=tc run_dropped attn_bwd_tc.cu "$line" "$bwd_test" emu tc
done
echo "$planted barriers deleted, $fails missed ($mode)"
[ "$planted" -ge 6 ] || { echo "FAIL: expected at least 6 barriers in the tc kernels, found $planted"; exit 1; }
[ "$fails" -eq 0 ]

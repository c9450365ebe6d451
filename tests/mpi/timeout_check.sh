#!/usr/bin/env bash
# Drive a timeout test (test_timeout, test_trace_timeout, tests/ilu test_ilu_timeout): the job MUST fail,
# within LIMIT seconds, with a message naming the operation, the peer, the
# step and the timeout.
# Usage: timeout_check.sh LIMIT MPIEXEC [MPIEXEC ARGS...] -- EXE [ARGS...]
# RINGRT_TIMEOUT and RINGRT_BACKEND come from the environment (CTest), and
# TIMEOUT_EXPECT, when set, replaces the expected stderr patterns
# ('|'-separated; default: test_timeout's ring shift at step 5 with peer 1).
# The time at which the first "FATAL" line reached stderr is recorded too.
# With TIMEOUT_SLOW_TEARDOWN_OK=1 the limit applies to that line (the rank
# that waited gave up and called MPI_Abort in time) rather than to the end
# of the job: under load Open MPI's launcher has been seen to lose the abort
# ("ORTE_ERROR_LOG: Data unpack would read past end of buffer in
# show_help.c") and leave a sleeping peer running until it wakes up.
set -u
limit=$1
shift
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$(date +%s)
# The outer `timeout` only guards against a broken abort path hanging CTest.
timeout -k 5 $((limit + 30)) "${launcher[@]}" "$@" 2>"$err" &
job=$!
fatal_at=
while kill -0 "$job" 2>/dev/null; do
  if [ -z "$fatal_at" ] && grep -q FATAL "$err"; then fatal_at=$(($(date +%s) - start)); fi
  sleep 0.5
done
wait "$job"
rc=$?
elapsed=$(($(date +%s) - start))
if [ -z "$fatal_at" ] && grep -q FATAL "$err"; then fatal_at=$elapsed; fi
cat "$err" >&2
echo "exit status $rc after ${elapsed} s, FATAL after ${fatal_at:-never} s" \
  "(limit ${limit} s, RINGRT_TIMEOUT=${RINGRT_TIMEOUT:-unset})"
if [ "$rc" -eq 77 ]; then
  echo "skipped"
  exit 77
fi
fail=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job succeeded; a timeout abort was expected"; fail=1; fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAIL: the job hung (killed by the guard)"; fail=1; fi
if [ "${TIMEOUT_SLOW_TEARDOWN_OK:-0}" = 1 ] && [ -n "$fatal_at" ] && [ "$fatal_at" -le "$limit" ]; then
  [ "$elapsed" -gt "$limit" ] && echo "note: the abort came after ${fatal_at} s; the launcher took ${elapsed} s to end the job"
elif [ "$elapsed" -gt "$limit" ]; then
  echo "FAIL: took ${elapsed} s > ${limit} s"; fail=1
fi
IFS='|' read -r -a patterns <<<"${TIMEOUT_EXPECT:-rrt_ring_shift|peer 1|step 5|timeout|RINGRT_TIMEOUT}"
for pat in "${patterns[@]}"; do
  if ! grep -q -- "$pat" "$err"; then echo "FAIL: stderr does not mention '$pat'"; fail=1; fi
done
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"

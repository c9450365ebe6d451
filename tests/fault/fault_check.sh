#!/usr/bin/env bash
# Drive one fault case (tests/fault/CMakeLists.txt): start a job, wait until
# its workload runs, hurt one rank, and check that the job then ends, with a
# non-zero exit, within LIMIT seconds of the fault, and says what it should.
#
# Usage: fault_check.sh [options] -- MPIEXEC [MPIEXEC ARGS...] -- EXE [ARGS...]
#   --fault kill|stop|hook  kill: SIGKILL the rank; stop: SIGSTOP it; hook: a
#                        library stall point (RINGRT_TEST_STALL) stalls it, the
#                        script only watches (default stop)
#   --rank R             the rank to hurt, found by OMPI_COMM_WORLD_RANK in
#                        /proc/PID/environ under the launcher (default 1)
#   --wait-for ERE       inject the fault once stderr has a line matching ERE
#                        (the workload's progress lines; with hook, the stall
#                        point's own line), and measure LIMIT from then
#   --wait-cpu S         ... or once every rank has used S s of CPU (for a
#                        workload without progress lines; both may be given)
#   --limit S            seconds from the fault to the end of the job (20)
#   --expect ERE         a "FATAL" line of stderr from a rank other than the
#                        hurt one must match it, its "FATAL rank N:" prefix
#                        left out; every --expect must match the same line
#                        (repeatable). (A stopped rank that Open MPI wakes with
#                        SIGCONT to end it reports its own expired wait.)
#   --expect-log ERE     stderr or stdout must match it somewhere (repeatable)
#   --any-exit           do not require a non-zero exit status: Open MPI 4.1's
#                        `mpirun --enable-recovery` exits 0 whatever its ranks
#                        return (`mpirun --enable-recovery -np 2 sh -c 'exit 3'`
#                        exits 0), so there the --expect lines are the check
# TIMEOUT_SLOW_TEARDOWN_OK=1 (environment) applies LIMIT to the first FATAL
# line instead of the end of the job, as in tests/mpi/timeout_check.sh: under
# load Open MPI has been seen to lose an abort and leave a peer running.
# On exit every rank process still alive is sent SIGCONT then SIGKILL, so a
# stopped or stalled rank is never left behind.
set -u
fault=stop rank=1 wait_for='' wait_cpu='' limit=20 any_exit=0
expect=() expect_log=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = --any-exit ]; then any_exit=1 && shift && continue; fi
  case "$1" in
    --fault) fault=$2 ;;
    --rank) rank=$2 ;;
    --wait-for) wait_for=$2 ;;
    --wait-cpu) wait_cpu=$2 ;;
    --limit) limit=$2 ;;
    --expect) expect+=("$2") ;;
    --expect-log) expect_log+=("$2") ;;
    *) echo "fault_check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
shift
launcher=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
case "$fault" in kill | stop | hook) ;; *) echo "fault_check.sh: bad --fault '$fault'" >&2; exit 2 ;; esac
if [ -z "$wait_for" ] && [ -z "$wait_cpu" ]; then
  echo "fault_check.sh: give --wait-for or --wait-cpu (when to inject the fault)" >&2
  exit 2
fi

# How long the job may take to reach its workload: launch and setup on a
# loaded machine (and under AddressSanitizer) are slow; only a guard.
ready_max=${FAULT_READY_MAX:-150}
err=$(mktemp) out=$(mktemp)
ranks=() # pids of every rank seen, for the cleanup
job=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  for p in "${ranks[@]}"; do
    kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  [ -n "$job" ] && kill -KILL "$job" 2>/dev/null
  rm -f "$err" "$out"
}
trap cleanup EXIT

now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
over() { awk -v a="$1" -v b="${2:-$limit}" 'BEGIN { exit !(a > b) }'; }

# Every descendant of the job that is an MPI rank: "PID RANK" lines.
rank_pids() {
  local todo=("$job") kids p r
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    kids=$(ps -o pid= --ppid "$p" 2>/dev/null) || true
    for k in $kids; do
      todo+=("$k")
      r=$(tr '\0' '\n' <"/proc/$k/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
      [ -n "$r" ] && echo "$k $r"
    done
  done
}

# CPU seconds (user + system) a process has used.
cpu_of() {
  local ticks
  ticks=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $12 + $13 }') || ticks=0
  awk -v t="${ticks:-0}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# 0 when every rank has used at least $wait_cpu s of CPU.
ranks_busy() {
  local p
  for p in "${ranks[@]}"; do
    awk -v c="$(cpu_of "$p")" -v w="$wait_cpu" 'BEGIN { exit !(c >= w) }' || return 1
  done
}

start=$(now)
# The outer `timeout` only guards against a broken abort path hanging CTest.
guard=$((ready_max + limit + 30))
timeout -k 5 "$guard" "${launcher[@]}" "$@" 2>"$err" >"$out" &
job=$!

# 1. Wait until the workload runs (and the rank to hurt is known).
victim='' t_fault=''
while :; do
  if ! kill -0 "$job" 2>/dev/null; then break; fi
  if grep -q FATAL "$err"; then break; fi
  mapfile -t seen < <(rank_pids)
  for line in "${seen[@]}"; do
    p=${line% *}
    [[ " ${ranks[*]} " == *" $p "* ]] || ranks+=("$p")
    [ "${line#* }" = "$rank" ] && victim=$p
  done
  ready=1
  [ -n "$victim" ] || ready=0
  [ -n "$wait_for" ] && ! grep -Eq -- "$wait_for" "$err" && ready=0
  [ -n "$wait_cpu" ] && ! ranks_busy && ready=0
  if [ "$ready" = 1 ]; then
    t_fault=$(now)
    break
  fi
  if [ "$(since "$start" | cut -d. -f1)" -ge "$ready_max" ]; then break; fi
  sleep 0.2
done

fail=0
if [ -z "$t_fault" ]; then
  cat "$err" >&2
  if grep -q FATAL "$err"; then
    echo "FAIL: a rank gave up before the fault was injected (RINGRT_TIMEOUT too short for this load?)"
  elif kill -0 "$job" 2>/dev/null; then
    echo "FAIL: the workload did not start within ${ready_max} s (wait-for '${wait_for}', wait-cpu ${wait_cpu:-none})"
  else
    echo "FAIL: the job ended before the fault was injected; make the workload longer"
  fi
  exit 1
fi

# 2. The fault.
case "$fault" in
  kill) kill -KILL "$victim" ;;
  stop) kill -STOP "$victim" ;;
  hook) ;; # the rank stalled itself: its stall line is what we waited for
esac
echo "fault: ${fault} rank ${rank} (pid ${victim}) $(since "$start") s after the start," \
  "at: $( ([ -n "$wait_for" ] && grep -E -m1 -- "$wait_for" "$err") || echo "ranks' CPU time >= ${wait_cpu} s")"

# 3. The job must end; note when the first FATAL line came. Past the limit
# (and a grace for a slow teardown) the job is ended here: the verdict is
# known, and the guard's minutes would only slow the suite down.
fatal_at='' gave_up=0
while kill -0 "$job" 2>/dev/null; do
  [ -z "$fatal_at" ] && grep -q FATAL "$err" && fatal_at=$(since "$t_fault")
  if over "$(since "$t_fault")" $((limit + 15)); then
    gave_up=1
    kill -TERM "$job" 2>/dev/null # timeout passes it on to the launcher
    sleep 3
    kill -KILL "$job" 2>/dev/null
    break
  fi
  sleep 0.2
done
wait "$job"
rc=$?
elapsed=$(since "$t_fault") total=$(since "$start")
[ -z "$fatal_at" ] && grep -q FATAL "$err" && fatal_at=$elapsed
cat "$err" >&2
echo "exit status $rc ${elapsed} s after the fault, FATAL after ${fatal_at:-never} s" \
  "(limit ${limit} s, RINGRT_TIMEOUT=${RINGRT_TIMEOUT:-unset})"

# Ranks the launcher left behind (a stopped one, typically) are killed by
# the cleanup; say so, it is the launcher's doing, not a failure of the job.
# A rank that is exiting gets a moment (zombies do not count).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]; }
left=()
for _ in 1 2 3 4 5 6 7 8 9 10; do
  left=()
  for p in "${ranks[@]}"; do alive "$p" && left+=("$p"); done
  [ ${#left[@]} -eq 0 ] && break
  sleep 0.3
done
[ ${#left[@]} -gt 0 ] && echo "note: rank processes ${left[*]} outlived the job; killing them"

if [ "$rc" -eq 0 ] && [ "$any_exit" = 1 ]; then
  echo "note: exit status 0 not checked (--any-exit: the launcher does not report the ranks' status)"
elif [ "$rc" -eq 0 ]; then
  echo "FAIL: the job succeeded; it should have failed"
  fail=1
fi
# (137 alone is also what mpirun returns when a rank was killed by SIGKILL)
if over "$total" "$((guard - 1))"; then echo "FAIL: the job hung (killed by the guard)"; fail=1; fi
if [ "$gave_up" = 1 ] && [ -z "$fatal_at" ]; then
  echo "FAIL: the job hung; ended by this script $((limit + 15)) s after the fault"
  fail=1
elif [ "$gave_up" = 1 ]; then
  echo "note: the job was still ending $((limit + 15)) s after the fault; ended by this script"
fi
if [ "${TIMEOUT_SLOW_TEARDOWN_OK:-0}" = 1 ] && [ -n "$fatal_at" ] && ! over "$fatal_at"; then
  over "$elapsed" && echo "note: the abort came after ${fatal_at} s; the launcher took ${elapsed} s to end the job"
elif over "$elapsed"; then
  echo "FAIL: the job took ${elapsed} s > ${limit} s after the fault to end"
  fail=1
fi
if [ ${#expect[@]} -gt 0 ]; then
  matched=0
  while IFS= read -r line; do
    all=1
    for pat in "${expect[@]}"; do grep -Eq -- "$pat" <<<"$line" || all=0; done
    [ "$all" = 1 ] && matched=1
  done < <(grep FATAL "$err" | grep -v "FATAL rank ${rank}:" | sed 's/FATAL rank [0-9]*://')
  if [ "$matched" = 0 ]; then
    echo "FAIL: no FATAL line of stderr matches all of: $(printf "'%s' " "${expect[@]}")"
    fail=1
  fi
fi
for pat in "${expect_log[@]}"; do
  if ! grep -Eq -- "$pat" "$err" "$out"; then echo "FAIL: the output does not mention '$pat'"; fail=1; fi
done
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"

#!/usr/bin/env bash
# Runs the libFuzzer harnesses of the file readers (tests/fuzz), one after
# the other, each for a set time, starting from the seed corpus (written by
# gen_seeds) and the regression inputs. Builds with RINGRT_FUZZ=ON (clang,
# -fsanitize=fuzzer,address,undefined) into its own build folder.
#
#   bench/fuzz.sh [SECONDS] [READER...]     (default 600 s; npy mm h5ad csv int_list)
#
#   RINGRT_FUZZ_BUILD_DIR  build folder (default ./build-fuzzer)
#   RINGRT_FUZZ_NICE       nice level of the fuzzers (default 19: a shared machine)
#
# Writes bench/results/fuzz-<date>.json (per reader: seconds, executions,
# corpus size, crashes) and keeps the grown corpora and any crashing input
# under bench/results/tmp/fuzz-<date>/ (crashes/<reader>/crash-*). A crash
# ends that reader's run (libFuzzer stops at the first one) and makes the
# script exit 1: fix the reader, then copy the input into
# tests/fuzz/regressions/<reader>/ so the replay test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=(npy mm h5ad csv int_list)
build=${RINGRT_FUZZ_BUILD_DIR:-build-fuzzer}
nice_level=${RINGRT_FUZZ_NICE:-19}

# Longest input per reader: a little over the largest seed; long inputs
# only slow a text reader down without reaching new code.
max_len() {
  case $1 in
    h5ad) echo 16384 ;;
    int_list) echo 1024 ;;
    *) echo 4096 ;;
  esac
}

cc=${CC:-clang}
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=$cc CXX=${CXX:-clang++} cmake -S . -B "$build" -G Ninja -DRINGRT_CUDA=OFF -DRINGRT_FUZZ=ON \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
fi
cmake --build "$build" --target fuzzers >/dev/null

stamp=$(date -u +%Y%m%dT%H%M%SZ)
work=$PWD/bench/results/tmp/fuzz-$stamp
out=bench/results/fuzz-$stamp.json
mkdir -p "$work/tmp"
"$build/tests/fuzz/gen_seeds" "$work/seeds"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
echo "fuzz: ${seconds} s per reader (${readers[*]}), commit $commit, results in $work"

status=0
entries=()
for r in "${readers[@]}"; do
  exe="$build/tests/fuzz/fuzz_$r"
  [ -x "$exe" ] || { echo "fuzz: no harness for '$r'" >&2; exit 2; }
  corpus=$work/corpus/$r crashes=$work/crashes/$r log=$work/$r.log
  mkdir -p "$corpus" "$crashes"
  regress=tests/fuzz/regressions/$r
  cmd=(nice -n "$nice_level" "$exe" -max_total_time="$seconds" -max_len="$(max_len "$r")"
       -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 -artifact_prefix="$crashes/"
       "$corpus" "$work/seeds/$r")
  [ -d "$regress" ] && cmd+=("$regress")
  start=$(date +%s)
  rc=0
  # The harnesses write each input to a file under $TMPDIR. Leaks inside
  # the system HDF5 (object headers it keeps after failing on a corrupt
  # file) are suppressed as in the sanitizer job; ours are still reported.
  TMPDIR=$work/tmp LSAN_OPTIONS=suppressions=$PWD/tests/sanitize/lsan.supp:print_suppressions=0 \
    "${cmd[@]}" >"$log" 2>&1 || rc=$?
  elapsed=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  ncorpus=$(find "$corpus" -type f | wc -l)
  # crash-, leak-, timeout-, oom- inputs; a slow-unit- one (over 10 s,
  # e.g. the 3 s limit of an .h5ad attribute read, twice) is only reported.
  found=$(find "$crashes" -type f ! -name 'slow-unit-*' -printf '"%f",' | sed 's/,$//')
  ncrash=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)
  nslow=$(find "$crashes" -type f -name 'slow-unit-*' | wc -l)
  [ "$rc" = 0 ] && [ "$ncrash" = 0 ] || status=1
  printf 'fuzz: %-8s %5d s  %10s execs  corpus %5d  crashes %d  (exit %d)\n' "$r" "$elapsed" \
    "${execs:-?}" "$ncorpus" "$ncrash" "$rc"
  entries+=("{\"reader\": \"$r\", \"seconds\": $elapsed, \"execs\": ${execs:-null},
    \"execs_per_s\": $(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) )), \"corpus_files\": $ncorpus,
    \"max_len\": $(max_len "$r"), \"peak_rss_mb\": ${rss:-null}, \"exit\": $rc,
    \"crashes\": $ncrash, \"crash_files\": [$found], \"slow_units\": $nslow}")
done

{
  echo "{\"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$commit\", \"seconds_per_reader\": $seconds,"
  echo " \"command\": \"bench/fuzz.sh $seconds ${readers[*]}\", \"compiler\": \"$($cc --version | head -1)\","
  echo " \"flags\": \"-fsanitize=fuzzer,address,undefined -rss_limit_mb=4096\", \"work_dir\": \"${work#$PWD/}\","
  echo " \"uptime\": \"$(uptime)\", \"readers\": ["
  sep=""
  for e in "${entries[@]}"; do
    printf '%s  %s\n' "$sep" "$e"
    sep=","
  done
  echo "]}"
} >"$out"
python3 -m json.tool "$out" >/dev/null
echo "fuzz: summary in $out"
exit $status

#!/usr/bin/env bash
# launch/ringrt-run: the exact mpirun line (--dry-run) and a real 2-rank run.
set -u
run=$1 ringrt=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
line=$(RINGRT_TIMEOUT=30 "$run" --dry-run -n 3 --backend cpu "$ringrt" info --json) || fail "dry run"
for want in "-np 3" "--bind-to none" "-x RINGRT_BACKEND" "-x RINGRT_TIMEOUT" "-x NCCL_DEBUG" "info --json"; do
  [[ "$line" == *"$want"* ]] || fail "dry run line lacks '$want': $line"
done
if [ "$(nproc)" -lt 3 ]; then
  [[ "$line" == *--oversubscribe* ]] || fail "3 ranks on $(nproc) cores need --oversubscribe: $line"
fi
line=$("$run" --dry-run -n 1 "$ringrt" info)
[[ "$line" != *--oversubscribe* ]] || fail "1 rank does not need --oversubscribe: $line"
line=$("$run" --dry-run -n 8 --hosts a:4,b:4 --per-node 4 "$ringrt" info)
[[ "$line" == *"--host a:4,b:4"* && "$line" == *"ppr:4:node"* && "$line" != *--oversubscribe* ]] ||
  fail "host list line: $line"
"$run" -n 0 "$ringrt" info 2>/dev/null && fail "-n 0 accepted"
"$run" --bogus "$ringrt" 2>/dev/null && fail "unknown option accepted"
out=$("$run" -n 2 --backend cpu "$ringrt" info --json -) || fail "real run failed"
[[ "$out" == *'"size":2'* ]] || fail "real run output: $out"
echo "ringrt_run_test: ok"

#!/usr/bin/env bash
# launch/ringrt-run: the mpirun line (--dry-run), which pasted into a shell
# with an empty environment must run the same job as the wrapper itself, and
# a real 2-rank run.
set -u
run=$1 ringrt=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringrt-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
line=$(RINGRT_TIMEOUT=30 "$run" --dry-run -n 3 --backend cpu "$ringrt" info --json) || fail "dry run"
for want in "-np 3" "--bind-to none" "-x RINGRT_BACKEND=cpu" "-x RINGRT_TIMEOUT=30" "-x NCCL_DEBUG=WARN" "info --json"; do
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
"$run" -x 'BAD NAME=1' "$ringrt" 2>/dev/null && fail "-x with a bad name accepted"
"$run" -x RINGRT_SURELY_UNSET "$ringrt" 2>/dev/null && fail "-x of an unset variable accepted"

# Paste test: the same job from the wrapper (in this environment) and from
# its dry-run line (in an empty one, so every value must come from the line).
# Arguments and values carry spaces, quotes, shell syntax and an empty word.
vars=(RINGRT_BACKEND=emu RINGRT_TIMEOUT=45 "NCCL_SOCKET_IFNAME=lo, eth'0" 'OMP_RINGRT_TEST=static "4"'
  'OPENBLAS_RINGRT_TEST=$(x) `y`;z')
args=("two words" "it's" 'say "hi"' '$HOME;`x`' "")
printf '%s\n' '#!/bin/bash' \
  'a=$(printf " %q" "$@"); echo "rank $OMPI_COMM_WORLD_RANK args:$a"' \
  'for v in RINGRT_BACKEND RINGRT_TIMEOUT NCCL_SOCKET_IFNAME NCCL_DEBUG OMP_RINGRT_TEST OPENBLAS_RINGRT_TEST \' \
  '  RINGRT_EXTRA OMPI_MCA_btl_vader_single_copy_mechanism; do' \
  '  echo "rank $OMPI_COMM_WORLD_RANK $v=${!v-<unset>}"; done' >"$tmp/probe.sh"
pasted() { env -i PATH="$PATH" HOME="$HOME" bash -c "$1"; }
want=$(env "${vars[@]}" "$run" -n 2 -x RINGRT_EXTRA="a = b" -- bash "$tmp/probe.sh" "${args[@]}" | sort) ||
  fail "probe run through the wrapper failed"
line=$(env "${vars[@]}" "$run" --dry-run -n 2 -x RINGRT_EXTRA="a = b" -- bash "$tmp/probe.sh" "${args[@]}")
got=$(pasted "$line" | sort) || fail "pasted dry-run line failed: $line"
[ "$want" = "$got" ] || fail "pasted dry-run line ran another job:
line: $line
wrapper:
$want
pasted:
$got"
quoted=$(printf ' %q' "${args[@]}")
[[ "$want" == *"rank 1 args:$quoted"* && "$want" == *"rank 0 RINGRT_EXTRA=a = b"* ]] ||
  fail "probe run did not see the arguments: $want"
# ringrt itself: the same report, written to a path with a space and quotes.
env "${vars[@]}" "$run" -n 2 -- "$ringrt" info --json "$tmp/run 'a'.json" >/dev/null || fail "info run"
line=$(env "${vars[@]}" "$run" --dry-run -n 2 -- "$ringrt" info --json "$tmp/pasted \"b\".json")
pasted "$line" >/dev/null || fail "pasted info line failed: $line"
cmp -s "$tmp/run 'a'.json" "$tmp/pasted \"b\".json" ||
  fail "info reports differ: $(cat "$tmp/run 'a'.json" "$tmp/pasted \"b\".json")"
grep -q '"backend":"emu"' "$tmp/pasted \"b\".json" || fail "RINGRT_BACKEND did not reach the pasted ranks"

out=$("$run" -n 2 --backend cpu "$ringrt" info --json -) || fail "real run failed"
[[ "$out" == *'"size":2'* ]] || fail "real run output: $out"
echo "ringrt_run_test: ok"

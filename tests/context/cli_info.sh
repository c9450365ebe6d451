#!/usr/bin/env bash
# ringrt info end to end: 4 ranks, table and JSON, a trace that parses,
# usage errors with a non-zero exit.
set -u
ringrt=$1 mpirun=$2 python=${3:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run4() { "$mpirun" -np 4 --oversubscribe --bind-to none "$ringrt" "$@"; }

run4 info >"$tmp/table" 2>"$tmp/err" || fail "info exited non-zero: $(cat "$tmp/err")"
rows=$(grep -cE '^[0-3] ' "$tmp/table")
[ "$rows" -eq 4 ] || fail "expected 4 rank rows, got $rows: $(cat "$tmp/table")"

run4 info --json "$tmp/info.json" --trace "$tmp/trace.json" >/dev/null 2>"$tmp/err" ||
  fail "info --json exited non-zero: $(cat "$tmp/err")"
"$python" - "$tmp/info.json" "$tmp/trace.json" <<'PY' || fail "JSON checks"
import json, sys
info = json.load(open(sys.argv[1]))
assert info["size"] == 4, info
ranks = info["ranks"]
assert [r["rank"] for r in ranks] == [0, 1, 2, 3], ranks
for r in ranks:
    assert r["backend"] in ("cpu", "cuda"), r
    assert r["threads"] >= 1, r
    assert r["transport"] in ("mpi", "nccl", "mpi-staged"), r
by_host = {}
for r in ranks:
    by_host.setdefault(r["host"], []).append(r["local_rank"])
for host, locals_ in by_host.items():
    assert sorted(locals_) == list(range(len(locals_))), (host, locals_)
trace = json.load(open(sys.argv[2]))
pids = {e["pid"] for e in trace["traceEvents"]}
assert pids == {0, 1, 2, 3}, pids
assert any(e.get("ph") == "X" and e["name"] == "info" for e in trace["traceEvents"])
PY

"$ringrt" --version | grep -qE '^ringrt [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
"$ringrt" --help | grep -q info || fail "--help lists info"
"$ringrt" nosuchcommand 2>/dev/null && fail "unknown command accepted"
run4 info --bogus >/dev/null 2>&1 && fail "unknown option accepted"
RINGRT_BACKEND=gpu run4 info >/dev/null 2>"$tmp/err" && fail "bad RINGRT_BACKEND accepted"
grep -q "RINGRT_BACKEND" "$tmp/err" || fail "bad RINGRT_BACKEND not named: $(cat "$tmp/err")"
echo "cli_info: ok"

#!/bin/sh
# `ringrt attn` at np = 4: a causal zigzag run with --check passes and writes
# JSON; outputs written with --out feed back in as --q/--k/--v files (and
# are checked again); malformed .npy inputs (truncated, wrong dtype, shapes
# that do not match) fail on every rank with a message naming the file.
# usage: cli_attn.sh RINGRT MPIEXEC WORKDIR
set -u
app=$1
mpiexec=$2
work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
run4() { "$mpiexec" -n 4 --oversubscribe --bind-to none "$app" attn "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

run4 --causal --layout zigzag --seq 256 --heads 4 --kv-heads 2 --dim 48 --iters 2 --check \
  --json "$work/r.json" >"$work/out1" 2>&1 || { cat "$work/out1"; fail "zigzag --check run"; }
grep -q "PASS" "$work/out1" || { cat "$work/out1"; fail "no PASS line"; }
grep -q '"pass":true' "$work/r.json" || fail "JSON lacks a passing check"
grep -q '"hidden_share"' "$work/r.json" || fail "JSON lacks hidden_share"

# global outputs in natural order, then fed back as inputs (stripe, bf16)
run4 --layout stripe --dtype bf16 --seq 64 --heads 2 --dim 32 --iters 1 --warmup 0 \
  --out "$work/o.npy" --lse "$work/lse.npy" --quiet >"$work/out2" 2>&1 || { cat "$work/out2"; fail "--out run"; }
[ -s "$work/o.npy" ] && [ -s "$work/lse.npy" ] || fail "outputs not written"
run4 --causal --layout contiguous --dtype bf16 --q "$work/o.npy" --k "$work/o.npy" --v "$work/o.npy" \
  --check --iters 1 >"$work/out3" 2>&1 || { cat "$work/out3"; fail "file inputs with --check"; }
grep -q "PASS" "$work/out3" || { cat "$work/out3"; fail "file inputs: no PASS"; }

# bad inputs: every one must fail cleanly and name the file
head -c 200 "$work/o.npy" >"$work/trunc.npy"
run4 --dtype bf16 --q "$work/trunc.npy" --k "$work/o.npy" --v "$work/o.npy" >"$work/e1" 2>&1 && fail "truncated file accepted"
grep -q "trunc.npy" "$work/e1" || { cat "$work/e1"; fail "truncated: message does not name the file"; }
run4 --dtype f32 --q "$work/o.npy" --k "$work/o.npy" --v "$work/o.npy" >"$work/e2" 2>&1 && fail "wrong dtype accepted"
grep -q "o.npy.*dtype" "$work/e2" || { cat "$work/e2"; fail "wrong dtype: unclear message"; }
run4 --dtype f32 --seq 32 --heads 2 --dim 16 --iters 1 --warmup 0 --out "$work/small.npy" --quiet || fail "small run"
run4 --dtype f32 --seq 32 --heads 2 --dim 8 --iters 1 --warmup 0 --out "$work/narrow.npy" --quiet || fail "narrow run"
run4 --q "$work/small.npy" --k "$work/narrow.npy" --v "$work/small.npy" >"$work/e3" 2>&1 && fail "shape mismatch accepted"
grep -q "narrow.npy: shape" "$work/e3" || { cat "$work/e3"; fail "shape mismatch: unclear message"; }
run4 --seq 30 --layout zigzag >"$work/e4" 2>&1 && fail "seq 30 over 4 ranks (zigzag) accepted"
grep -q "does not split" "$work/e4" || { cat "$work/e4"; fail "bad seq: unclear message"; }
echo "cli_attn: all passed"

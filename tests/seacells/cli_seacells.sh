#!/bin/sh
# `ringrt seacells` end to end:
# - pbmc68k_reduced (700 cells, obsm/X_pca, obs/bulk_labels) at np = 1..4:
#   the --out CSVs are identical; mean purity of bulk_labels beats random
#   groups of the same sizes (reported by the run, seeded) by a clear margin;
#   compactness and separation are in the JSON;
# - well-separated Gaussian blobs (CSV): every metacell is pure;
# - bad inputs fail on every rank with a message and no hang: missing obsm
#   key, fewer cells than metacells, NaN coordinates, malformed CSV (FILE:LINE).
# usage: cli_seacells.sh RINGRT MPIEXEC WORKDIR DATA_DIR
set -u
app=$1
mpiexec=$2
work=$3
data=$4
pbmc=$data/singlecell/pbmc68k_reduced.h5ad
rm -rf "$work" && mkdir -p "$work" || exit 1
run() { np=$1; shift; timeout 120 "$mpiexec" -n "$np" --oversubscribe --bind-to none "$app" seacells "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
jnum() { tr ',' '\n' <"$1" | grep "\"$2\":" | head -1 | sed 's/.*: *//; s/[]} ]//g'; }

# --- pbmc at np = 1..4 -------------------------------------------------------
for np in 1 2 3 4; do
  run $np "$pbmc" --labels bulk_labels --out "$work/pbmc$np.csv" --json "$work/pbmc$np.json" \
    --archetypes-out "$work/arch$np.txt" >"$work/pbmc$np.log" 2>&1 || { cat "$work/pbmc$np.log"; fail "pbmc np=$np"; }
  [ $np -eq 1 ] || cmp -s "$work/pbmc1.csv" "$work/pbmc$np.csv" || fail "np=$np assignments differ from np=1"
  [ $np -eq 1 ] || cmp -s "$work/arch1.txt" "$work/arch$np.txt" || fail "np=$np archetypes differ from np=1"
done
[ "$(wc -l <"$work/pbmc1.csv")" -eq 701 ] || fail "CSV should have a header and 700 rows"
head -1 "$work/pbmc1.csv" | grep -q '^cell,metacell,mc1,w1' || fail "CSV header"
sed -n 2p "$work/pbmc1.csv" | grep -q '^[A-Z]*-[0-9]*,' || fail "cell ids should be the obs index"
pur=$(jnum "$work/pbmc1.json" mean_purity)
rnd=$(jnum "$work/pbmc1.json" random_purity)
comp=$(jnum "$work/pbmc1.json" mean_compactness)
sep=$(jnum "$work/pbmc1.json" mean_separation)
echo "pbmc: purity $pur, random groups $rnd, compactness $comp, separation $sep"
# random groups of ~75 PBMCs reach ~0.35 (the largest label's share); metacells ~0.75
awk -v p="$pur" -v r="$rnd" 'BEGIN { exit !(p > r + 0.25 && r > 0.2 && r < 0.5) }' ||
  fail "purity $pur not clearly above random $rnd"
awk -v c="$comp" -v s="$sep" 'BEGIN { exit !(c > 0 && s > 0) }' || fail "compactness/separation missing"
# the archetypes written out feed back in and give the same run
run 2 "$pbmc" --archetypes-in "$work/arch1.txt" --out "$work/pbmc_in.csv" --quiet || fail "--archetypes-in"
cmp -s "$work/pbmc1.csv" "$work/pbmc_in.csv" || fail "--archetypes-in changes the assignments"

# --- well-separated blobs: every metacell pure --------------------------------
# 8 blobs in 10 dims, centre c at 20 * e_c, unit-ish noise; blob of row i = i % 8
awk 'BEGIN { srand(3); for (i = 0; i < 480; i++) { c = i % 8; line = "";
  for (k = 0; k < 10; k++) { v = (k == c ? 20 : 0) + (rand() + rand() + rand() - 1.5);
    line = line (k ? "," : "") v } print line } }' >"$work/blobs.csv"
run 3 "$work/blobs.csv" --n-metacells 16 --out "$work/blobs_out.csv" --json "$work/blobs.json" \
  >"$work/blobs.log" 2>&1 || { cat "$work/blobs.log"; fail "blobs run"; }
awk -F, 'NR > 1 { b = $1 % 8; if (($2 in blob) && blob[$2] != b) bad++; blob[$2] = b; n++ }
  END { if (bad || n != 480) { print bad " impure cells"; exit 1 } }' "$work/blobs_out.csv" ||
  fail "a metacell mixes blobs"

# --- errors: every rank fails with a message, nobody hangs ---------------------
errcase() { # NAME PATTERN ARGS...: np = 3 must fail, all 3 ranks saying PATTERN
  name=$1 pat=$2
  shift 2
  run 3 "$@" --quiet >"$work/$name.log" 2>&1 && { cat "$work/$name.log"; fail "$name accepted"; }
  [ $? -ne 124 ] || fail "$name: hang (timeout)"
  for r in 0 1 2; do
    grep "rank $r" "$work/$name.log" | grep -q "$pat" || { cat "$work/$name.log"; fail "$name: rank $r does not say '$pat'"; }
  done
}
errcase missing_key "obsm/nope" "$pbmc" --obsm nope
errcase missing_labels "obs/nope" "$pbmc" --labels nope
errcase too_many "fewer cells (700) than metacells (800)" "$pbmc" --n-metacells 800
sed '37s/^[^,]*,/nan,/' "$work/blobs.csv" >"$work/nan.csv"
errcase nan_coord "cell 36 is nan" "$work/nan.csv"
sed '5s/,[^,]*$/,1.5x/' "$work/blobs.csv" >"$work/bad.csv"
errcase bad_csv "bad.csv:5" "$work/bad.csv"
sed '7s/,[^,]*$//' "$work/blobs.csv" >"$work/short.csv"
errcase short_row "short.csv:7" "$work/short.csv"
echo "PASS"

#!/usr/bin/env bash
# CPU: ringrt ILU(0) side by side with PETSc's sequential ILU(0) (petsc4py),
# one rank, plus ringrt on two ranks (natural and multicolour orderings) and
# GMRES+ILU(0) on gk_isai_a in both. Prints a table and writes
# bench/results/ilu-petsc-<date>.json (with `uptime` before and after: the
# numbers mean little on a busy machine).
#
#   bench/ilu-petsc.sh [BUILD_DIR] [RUNS]     (default build-ilu2, 5)
#
# Needs Debian's python3-petsc4py (apt-get install python3-petsc4py
# python3-scipy); it lives in the system python, so /usr/bin/python3 runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-ilu2}
runs=${2:-5}
export PETSC_DIR=${PETSC_DIR:-/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real}
ncores=$(nproc --all)
export OMP_NUM_THREADS=1
py=/usr/bin/python3
if ! PYTHONPATH= $py -c 'import petsc4py, scipy' 2>/dev/null; then
  echo "ilu-petsc.sh: need python3-petsc4py and python3-scipy (apt-get install ...)" >&2
  exit 2
fi
if [ ! -x "$build/apps/ringrt" ]; then
  RINGRT_BUILD_DIR="$build" bash launch/build.sh -DRINGRT_CUDA=OFF >/dev/null # the README's build
fi
mkdir -p bench/results
out=bench/results/ilu-petsc-$(date -u +%Y%m%dT%H%M%SZ).json
load_before=$(uptime)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
echo "date $(date -u +%FT%TZ)  commit $commit"
echo "cpu  $(lscpu | sed -n 's/^Model name: *//p' | head -1), ${ncores} cores"
echo "load before: $load_before"
isai=../shared/data/matrices/gk_isai_a.mtx
[ -f "$isai" ] || isai=""
PYTHONPATH= $py bench/ilu_petsc.py --ringrt "$build/apps/ringrt" --runs "$runs" \
  --out "$out" ${isai:+--isai "$isai"}
load_after=$(uptime)
echo "load after:  $load_after"
# machine facts into the same JSON
PYTHONPATH= $py - "$out" "$load_before" "$load_after" "$commit" <<'PY'
import json, os, sys
p, before, after, commit = sys.argv[1:5]
r = json.load(open(p))
r["uptime_before"], r["uptime_after"] = before.strip(), after.strip()
r["nproc"] = os.cpu_count()
r["commit"] = commit
json.dump(r, open(p, "w"), indent=1)
PY

#!/usr/bin/env bash
# CPU: time to solution (analysis + factor + GMRES(30) to 1e-8, right
# preconditioned) and iterations, ringrt's ILU(0) against PETSc's
# bjacobi+ILU(0) (petsc4py), at np = 1 and 2, one core per rank, on the same
# matrices. Prints one line per configuration and writes
# bench/results/ilu-solve-<date>.json (render it with
# `python3 bench/ilu_solve.py --render FILE`).
#
#   bench/ilu-solve.sh [BUILD_DIR] [RUNS] [ORDERINGS] [PROBLEM...]
#       (default build-bench, 3, natural)
#
# Needs Debian's python3-petsc4py, python3-mpi4py and python3-scipy (the
# system python runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
runs=${2:-3}
orderings=${3:-natural}
shift $(($# < 3 ? $# : 3))
export PETSC_DIR=${PETSC_DIR:-$(ls -d /usr/lib/petscdir/petsc*/x86_64-linux-gnu-real | head -1)}
py=/usr/bin/python3
if ! PYTHONPATH= $py -c 'import petsc4py, mpi4py, scipy' 2>/dev/null; then
  echo "ilu-solve.sh: need python3-petsc4py, python3-mpi4py, python3-scipy (apt-get install ...)" >&2
  exit 2
fi
if [ ! -x "$build/apps/ringrt" ]; then
  RINGRT_BUILD_DIR="$build" bash launch/build.sh -DRINGRT_CUDA=OFF >/dev/null # the README's build
fi
mkdir -p bench/results
out=bench/results/ilu-solve-$(date -u +%Y%m%dT%H%M%SZ).json
load_before=$(uptime)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
echo "date $(date -u +%FT%TZ)  commit $commit"
echo "cpu  $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc --all) cores"
echo "load before: $load_before"
PYTHONPATH= $py bench/ilu_solve.py --ringrt "$build/apps/ringrt" --runs "$runs" \
  --orderings "$orderings" --out "$out" ${1:+--problems "$@"}
load_after=$(uptime)
echo "load after:  $load_after"
PYTHONPATH= $py - "$out" "$load_before" "$load_after" "$commit" <<'PY'
import json, os, sys
p, before, after, commit = sys.argv[1:5]
r = json.load(open(p))
r["uptime_before"], r["uptime_after"] = before.strip(), after.strip()
r["nproc"] = os.cpu_count()
r["commit"] = commit
json.dump(r, open(p, "w"), indent=1)
PY

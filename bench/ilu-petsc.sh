#!/usr/bin/env bash
# CPU: ringrt ILU(0) side by side with PETSc's sequential ILU(0) (petsc4py),
# one rank, plus ringrt on two ranks (natural and multicolour orderings) and
# GMRES+ILU(0) on gk_isai_a in both. Prints a table and writes
# bench/results/ilu-petsc-<date>.json (with `uptime` before and after: the
# numbers mean little on a busy machine).
#
#   bench/ilu-petsc.sh [BUILD_DIR] [RUNS] [LEVELS]   (default build-ilu2, 5, 0)
#
# LEVELS k > 0: ILU(k) in both (ringrt ilu --levels k, PETSc -pc_factor_levels k).
#
# Needs Debian's python3-petsc4py, python3-mpi4py and python3-scipy
# (apt-get install ...); they live in the system python, so /usr/bin/python3
# runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-ilu2}
runs=${2:-5}
levels=${3:-0}
. bench/ilu-common.sh
ilu_bench_begin ilu-petsc "$build"
isai=../shared/data/matrices/gk_isai_a.mtx
[ -f "$isai" ] || isai=""
PYTHONPATH= $py bench/ilu_petsc.py --ringrt "$build/apps/ringrt" --runs "$runs" \
  --out "$out" --levels "$levels" ${isai:+--isai "$isai"}
ilu_bench_end

#!/usr/bin/env bash
# CPU: time to solution (analysis + factor + GMRES(30) to 1e-8, right
# preconditioned) and iterations, ringrt's ILU(0) against PETSc's
# bjacobi+ILU(0) (petsc4py), at np = 1 and 2, one core per rank, on the same
# matrices. Prints one line per configuration and writes
# bench/results/ilu-solve-<date>.json (render it with
# `python3 bench/ilu_solve.py --render FILE`).
#
#   bench/ilu-solve.sh [BUILD_DIR] [RUNS] [ORDERINGS] [PROBLEM...]
#       (default build-bench, 3, natural; an ordering with "+f32" appended,
#       e.g. dd+f32, runs ringrt with f32 factors: a ringrt option PETSc has
#       no counterpart of, reported on its own rows)
#
# Needs Debian's python3-petsc4py, python3-mpi4py and python3-scipy (the
# system python runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench}
runs=${2:-3}
orderings=${3:-natural}
shift $(($# < 3 ? $# : 3))
. bench/ilu-common.sh
ilu_bench_begin ilu-solve "$build"
PYTHONPATH= $py bench/ilu_solve.py --ringrt "$build/apps/ringrt" --runs "$runs" \
  --orderings "$orderings" --out "$out" ${1:+--problems "$@"}
ilu_bench_end

# Sourced by the CPU ILU benchmarks against PETSc (ilu-petsc.sh,
# ilu-solve.sh): the environment check, the README's build when BUILD has
# none, and the run's facts (date, commit, CPU, uptime before and after)
# printed and written into the results JSON.
#
#   ilu_bench_begin NAME BUILD   sets $py, $out (bench/results/NAME-<date>.json), $commit
#   ilu_bench_end                adds the facts to $out
export PETSC_DIR=${PETSC_DIR:-$(ls -d /usr/lib/petscdir/petsc*/x86_64-linux-gnu-real | head -1)}
export OMP_NUM_THREADS=1
py=/usr/bin/python3

ilu_bench_begin() {
  local name=$1 build=$2
  if ! PYTHONPATH= $py -c 'import petsc4py, mpi4py, scipy' 2>/dev/null; then
    echo "$name.sh: need python3-petsc4py, python3-mpi4py, python3-scipy (apt-get install ...)" >&2
    exit 2
  fi
  if [ ! -x "$build/apps/ringrt" ]; then
    RINGRT_BUILD_DIR="$build" bash launch/build.sh -DRINGRT_CUDA=OFF >/dev/null # the README's build
  fi
  mkdir -p bench/results
  out=bench/results/$name-$(date -u +%Y%m%dT%H%M%SZ).json
  load_before=$(uptime)
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)
  git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"
  echo "date $(date -u +%FT%TZ)  commit $commit"
  echo "cpu  $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc --all) cores"
  echo "load before: $load_before"
}

ilu_bench_end() {
  local load_after
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
}

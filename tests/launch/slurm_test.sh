#!/usr/bin/env bash
# The Slurm templates on a real Slurm: start munged (if needed), slurmctld and
# slurmd on this machine with a throwaway configuration, submit the templates
# with the srun and the mpirun launcher, check that each job succeeded and
# wrote a correct report, stop what we started.
# Tasks are confined as on a production cluster (TaskPlugin=task/cgroup with
# ConstrainCores, in a cpuset hierarchy of our own so that concurrent runs do
# not meet): each rank of an `info` job must be bound to exactly the cores
# the job asked for per task (--cpus-per-task), 1 rank x 2 cpus and 2 ranks x
# 1 cpu, which fails if a template stops passing --cpus-per-task to srun
# (Slurm 22.05+ no longer takes it from sbatch: one core per rank).
# Exit 77 (skipped) when Slurm is not installed and cannot be, or when no
# cpuset cgroup can be made here (the binding check would prove nothing).
set -u
ringrt=$1 templates=$2 python=${3:-python3}
SKIP=77
for b in slurmctld slurmd sbatch munged sinfo; do
  command -v "$b" >/dev/null 2>&1 || { echo "skip: $b not installed (Debian slurm-wlm, munge)"; exit $SKIP; }
done
[ "$(id -u)" -eq 0 ] || { echo "skip: starting slurmd needs root"; exit $SKIP; }

tmp=$(mktemp -d /tmp/ringrt-slurm.XXXXXX)
chmod 755 "$tmp"
started_munge=0 cg=""
stop_pid() { # kill the daemon whose pid file is $1, wait until it is gone
  [ -f "$1" ] || return 0
  local pid
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
}
cleanup() {
  stop_pid "$tmp/slurmd.pid"
  stop_pid "$tmp/slurmctld.pid"
  [ "$started_munge" -eq 1 ] && stop_pid "$tmp/munged.pid"
  if [ -n "$cg" ]; then # our cpuset hierarchy: empty it, deepest first
    find "$tmp/cg/cpuset" -name tasks -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
    find "$tmp/cg/cpuset" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
    umount "$tmp/cg/cpuset" 2>/dev/null
    rmdir "$cg" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" INT TERM
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/job_*/ringrt-*.out "$tmp"/job_*/ringrt-*.json; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; } >&2
  done
  exit 1
}

# munge: reuse a running daemon, else start one as the munge user.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  runuser -u munge -- munged --pid-file="$tmp/munged.pid" 2>/dev/null ||
    runuser -u munge -- munged || fail "munged did not start"
  started_munge=1
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null 2>&1 || fail "munge does not work"
fi

# Task confinement: a cpuset cgroup (v1) of our own, mounted where Slurm's
# cgroup plugin looks (CgroupMountpoint), holding all of this machine's cores.
cpuset_root=/sys/fs/cgroup/cpuset
if [ -w "$cpuset_root" ] && [ -f "$cpuset_root/cpuset.cpus" ]; then
  cg=$cpuset_root/ringrt-test-${tmp##*.}
  mkdir -p "$tmp/cg/cpuset" &&
    mkdir "$cg" && cat "$cpuset_root/cpuset.cpus" >"$cg/cpuset.cpus" &&
    cat "$cpuset_root/cpuset.mems" >"$cg/cpuset.mems" &&
    mount --bind "$cg" "$tmp/cg/cpuset" || { rmdir "$cg" 2>/dev/null; cg=""; }
fi
if [ -z "$cg" ]; then
  echo "skip: no writable cgroup v1 cpuset here, so tasks cannot be confined"
  exit $SKIP
fi

host=$(hostname -s)
read -r p1 p2 < <("$python" -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=ringrt-test
SlurmctldHost=$host
SlurmctldPort=$p1
SlurmdPort=$p2
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/cgroup,task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
cat >"$tmp/cgroup.conf" <<CONF
CgroupPlugin=cgroup/v1
CgroupMountpoint=$tmp/cg
ConstrainCores=yes
CONF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -c -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -c -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -n 1)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || fail "node not idle after 30 s (state '$state')"
scontrol show config | grep -q "^TaskPlugin *= task/cgroup" || fail "slurmctld runs without task/cgroup"

# A template as a site would adapt it for a GPU-less node with 2 cores:
# adapt TEMPLATE NTASKS CPUS prints the path of the adapted copy.
adapt() {
  local out=$tmp/$(basename "$1" .sbatch)-$2x$3.sbatch
  sed -e "s/^#SBATCH --ntasks-per-node=[0-9]*/#SBATCH --ntasks-per-node=$2/" -e '/^#SBATCH --gpus-per-node/d' \
    -e "s/^#SBATCH --cpus-per-task=[0-9]*/#SBATCH --cpus-per-task=$3/" \
    -e 's/^#SBATCH --nodes=[0-9]*/#SBATCH --nodes=1/' "$1" >"$out"
  echo "$out"
}
# submit NAME LAUNCHER SCRIPT: run the job, wait, print the report's path.
submit() {
  local dir=$tmp/job_$1 out rc jobid
  mkdir -p "$dir"
  out=$(cd "$dir" && RINGRT_LAUNCHER=$2 timeout 180 sbatch --parsable --wait "$3" 2>&1)
  rc=$?
  jobid=$(echo "${out%%;*}" | tail -n 1)
  [ $rc -eq 0 ] || fail "$1: job failed (rc $rc): $out"
  [ -f "$dir/ringrt-$jobid.json" ] || fail "$1: job wrote no report $dir/ringrt-$jobid.json"
  grep -q "report in $dir/ringrt-$jobid.json" "$dir/ringrt-$jobid.out" ||
    fail "$1: job output lacks the report line"
  echo "$dir/ringrt-$jobid.json"
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGRT_BACKEND=cpu RINGRT_BIN=$ringrt
one=$templates/ringrt-1node.sbatch many=$templates/ringrt-nnodes.sbatch

# Binding: each rank on exactly CPUS cores of its own, as many threads.
for shape in 1x2 2x1; do
  ntasks=${shape%x*} cpus=${shape#*x}
  for launcher in srun mpirun; do
    report=$(RINGRT_ARGS=info submit "info-$launcher-$shape" $launcher "$(adapt "$one" $ntasks $cpus)") ||
      exit 1
    "$python" - "$report" "$ntasks" "$cpus" <<'PY' || fail "$launcher $shape: binding is wrong: $(cat "$report")"
import json, sys
r, n, c = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
def cores(s):  # hwloc list syntax: "0-1,4"
    out = set()
    for part in s.split(","):
        a, _, b = part.partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out
ranks = r["ranks"]
assert r["size"] == n and len(ranks) == n, r
seen = set()
for k in ranks:
    got = cores(k["cores"])
    assert len(got) == c and k["threads"] == c, f"rank {k['rank']}: cores {k['cores']}, threads {k['threads']}, asked {c}"
    assert not got & seen, f"rank {k['rank']} shares cores: {k['cores']}"
    seen |= got
PY
    echo "slurm info $launcher $shape: ok ($(grep -o '"cores":"[^"]*"' "$report" | tr '\n' ' '))"
  done
done

# A workload small enough for 2 cores, checked against the reference.
export RINGRT_ARGS="attn --causal --layout zigzag --seq 512 --heads 4 --dim 64 --check --quiet"
for job in "srun $one" "mpirun $one" "srun $many"; do
  read -r launcher template <<<"$job"
  name=attn-$launcher-$(basename "$template" .sbatch)
  report=$(submit "$name" "$launcher" "$(adapt "$template" 2 1)") || exit 1
  "$python" - "$report" 2 <<'PY' || fail "$name: report is wrong: $(cat "$report")"
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert r["command"] == "attn" and r["ranks"] == n, r
assert r["seq"] == 512 and r["causal"] and r["layout"] == "zigzag", r
assert r["check"]["pass"] is True and r["check"]["max_abs"] < 1e-5, r
assert r["time_s"] > 0 and r["tflops"] > 0, r
PY
  echo "slurm $name: ok"
done
echo "slurm_test: ok"

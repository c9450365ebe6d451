#!/usr/bin/env bash
# The Slurm templates on a real Slurm: start munged (if needed), slurmctld and
# slurmd on this machine with a throwaway configuration, submit the one-node
# template with the srun and the mpirun launcher, check that each job
# succeeded and wrote a correct report, stop what we started.
# Exit 77 (skipped) when Slurm is not installed and cannot be.
set -u
ringrt=$1 template=$2 python=${3:-python3}
SKIP=77
for b in slurmctld slurmd sbatch munged sinfo; do
  command -v "$b" >/dev/null 2>&1 || { echo "skip: $b not installed (Debian slurm-wlm, munge)"; exit $SKIP; }
done
[ "$(id -u)" -eq 0 ] || { echo "skip: starting slurmd needs root"; exit $SKIP; }

tmp=$(mktemp -d /tmp/ringrt-slurm.XXXXXX)
chmod 755 "$tmp"
started_munge=0
cleanup() {
  for d in slurmd slurmctld; do
    [ -f "$tmp/$d.pid" ] && kill "$(cat "$tmp/$d.pid")" 2>/dev/null
  done
  sleep 1
  [ "$started_munge" -eq 1 ] && [ -f "$tmp/munged.pid" ] && kill "$(cat "$tmp/munged.pid")" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log "$tmp"/job_*/ringrt-*.out; do
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
TaskPlugin=task/none
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
IgnoreSystemd=yes
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

# The template as a site would adapt it for a 2-core, GPU-less node.
ntasks=2
sed -e "s/--ntasks-per-node=[0-9]*/--ntasks-per-node=$ntasks/" \
    -e '/--gpus-per-node/d' -e 's/--cpus-per-task=[0-9]*/--cpus-per-task=1/' \
    "$template" >"$tmp/job.sbatch"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RINGRT_BACKEND=cpu RINGRT_BIN=$ringrt
# A workload small enough for 2 cores, checked against the reference.
export RINGRT_ARGS="attn --causal --layout zigzag --seq 512 --heads 4 --dim 64 --check --quiet"
for launcher in srun mpirun; do
  dir=$tmp/job_$launcher
  mkdir -p "$dir"
  out=$(cd "$dir" && RINGRT_LAUNCHER=$launcher timeout 180 sbatch --parsable --wait "$tmp/job.sbatch" 2>&1)
  rc=$?
  jobid=${out%%;*}
  jobid=$(echo "$jobid" | tail -n 1)
  [ $rc -eq 0 ] || fail "$launcher job failed (rc $rc): $out"
  report=$dir/ringrt-$jobid.json
  [ -f "$report" ] || fail "$launcher job wrote no report $report"
  "$python" - "$report" "$ntasks" <<'PY' || fail "$launcher report is wrong: $(cat "$report")"
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert r["command"] == "attn" and r["ranks"] == n, r
assert r["seq"] == 512 and r["causal"] and r["layout"] == "zigzag", r
assert r["check"]["pass"] is True and r["check"]["max_abs"] < 1e-5, r
assert r["time_s"] > 0 and r["tflops"] > 0, r
PY
  grep -q "report in $report" "$dir/ringrt-$jobid.out" || fail "$launcher job output lacks the report line"
  echo "slurm $launcher job $jobid: ok"
done
echo "slurm_test: ok"

"""A job started by torchrun (WORLD_SIZE > 1, no MPI launcher) raises at
ringrt.Context() in every process, saying how to launch it, instead of
running P independent one-rank jobs. Run without mpirun: this script starts
`python -m torch.distributed.run --standalone --nproc_per_node 2` on itself
("child" mode) and checks that both children found the error (and that an
explicit MPI.COMM_SELF context still works there, the opt-out); it also
checks the rule itself (context._launcher_problem) on its cases.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from ringrt import context


def check_rule() -> None:
    rule = context._launcher_problem
    assert rule(None, 1, True) is None  # plain `python script.py`
    assert rule("1", 1, True) is None  # torchrun --nproc_per_node 1
    assert rule("2", 2, True) is None  # mpirun -np 2 with torch's variables set from MPI's
    assert rule("2", 1, False) is None  # comm=MPI.COMM_SELF: one rank on purpose
    assert rule("two", 1, True) is None  # not torch's variable
    msg = rule("4", 1, True)
    for part in ("WORLD_SIZE=4", "mpirun -np 4", "srun -n 4", "launch/ringrt-run -n 4",
                 "MPI.COMM_SELF"):
        assert msg and part in msg, (part, msg)


def child() -> None:
    from mpi4py import MPI
    rank = os.environ.get("RANK")
    try:
        context.Context(backend="cpu")
    except RuntimeError as e:
        assert "mpirun -np 2" in str(e) and "srun -n 2" in str(e), str(e)
    else:
        print(f"child {rank}: no error from Context() under torchrun", flush=True)
        sys.exit(1)
    with context.Context(MPI.COMM_SELF, backend="cpu") as ctx:  # the explicit opt-out
        assert ctx.size == 1
    print(f"child ok {rank}", flush=True)


def main() -> None:
    check_rule()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", os.path.abspath(__file__), "child"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_COMM_WORLD", "PMI"))}
    # torchrun leaves its per-run folders (torchelastic_*) in TMPDIR
    with tempfile.TemporaryDirectory(prefix="rrt_torchrun_") as tmp:
        env["TMPDIR"] = tmp
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    out = run.stdout + run.stderr
    if run.returncode != 0 or "child ok 0" not in out or "child ok 1" not in out:
        sys.exit(f"torchrun children did not all refuse (rc {run.returncode}):\n{out}")
    print("PASS")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()

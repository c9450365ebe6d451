#!/usr/bin/env python3
"""Forward+backward of ringrt's CPU attention against torch's CPU
scaled_dot_product_attention with autograd (issue 10), run by
bench/attn_torch.sh.

Same shapes (S=4096, H=8, D=64, batch 1), causal and not, f32 and bf16, 2
threads on both sides. Every measurement once per round, rounds interleaved
(paired numbers see the same machine); reported: the median over rounds of
each side's median of --iters in-process runs, and the time ratio
torch / ringrt per case [target >= 2]. ringrt: `ringrt attn --backward
--json -` on one rank (its forward and backward times); torch: the forward
alone, then forward + backward (o.backward(dO)), as a training step runs
them. OPENBLAS_* is unset for the torch process only (it would size
torch's BLAS threads otherwise; ringrt's launch sets them as the runtime
expects). Standard library only (torch runs in --torch-python).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

S, H, D = 4096, 8, 64
THREADS = 2
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def sh(cmd, env, timeout=1800):
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as ex:
        return -1, "", str(ex)


def flops_fwd(causal):
    pairs = S * (S + 1) / 2 if causal else S * S
    return 4.0 * D * H * pairs


def bwd_time(j):
    """The backward time of a `ringrt attn --backward --json` report: a
    top-level bwd_time_s / backward_time_s, or backward.time_s."""
    for key in ("bwd_time_s", "backward_time_s"):
        if key in j:
            return j[key]
    b = j.get("backward")
    return b.get("time_s") if isinstance(b, dict) else None


def ringrt(app, dtype, causal, iters):
    cmd = ["mpirun", "-np", "1", "--bind-to", "none"]
    if (os.cpu_count() or 1) > THREADS and shutil.which("taskset"):
        cmd += ["taskset", "-c", "0-%d" % (THREADS - 1)]
    cmd += [app, "attn", "--backend", "cpu", "--seq", str(S), "--heads", str(H), "--dim", str(D),
            "--dtype", dtype, "--backward", "--iters", str(iters), "--warmup", "1", "--quiet",
            "--json", "-"] + (["--causal"] if causal else [])
    env = dict(os.environ, **MPI_ENV, OMP_NUM_THREADS=str(THREADS),
               OPENBLAS_NUM_THREADS=str(THREADS))
    rc, out, err = sh(cmd, env)
    for line in out.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            tb = bwd_time(j)
            if j.get("status") != "ok" or tb is None:
                return {"error": "report without a backward time: %s" % line[:400]}
            return {"fwd_s": j["time_s"], "bwd_s": tb, "total_s": j["time_s"] + tb,
                    "launch": " ".join(cmd)}
    return {"error": "rc %d: %s" % (rc, (err or out).strip()[-600:]), "launch": " ".join(cmd)}


TORCH_CODE = r"""
import json, statistics, sys, time, torch
S, H, D, threads, iters = (int(x) for x in sys.argv[1:6])
dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[sys.argv[6]]
causal = sys.argv[7] == "1"
torch.set_num_threads(threads)
f = torch.nn.functional.scaled_dot_product_attention
g = torch.Generator().manual_seed(1)
q, k, v, do = ((torch.rand(1, H, S, D, generator=g) * 2 - 1).to(dtype) for _ in range(4))
for t in (q, k, v):
    t.requires_grad_(True)
def fwd():
    with torch.no_grad():
        f(q, k, v, is_causal=causal)
def step():
    o = f(q, k, v, is_causal=causal)
    o.backward(do)
    q.grad = k.grad = v.grad = None
res = {"torch": torch.__version__, "threads": torch.get_num_threads(),
       "cpu_capability": torch.backends.cpu.get_cpu_capability()}
for name, fn in (("fwd_s", fwd), ("total_s", step)):
    fn()
    ts = []
    for _ in range(iters):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    res[name] = statistics.median(ts)
print(json.dumps(res))
"""


def torch_sdpa(python, dtype, causal, iters):
    if not python:
        return {"error": "no python with torch (bench/setup-torch.sh)"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    env["OMP_NUM_THREADS"] = str(THREADS)
    rc, out, err = sh([python, "-c", TORCH_CODE, str(S), str(H), str(D), str(THREADS),
                       str(iters), dtype, "1" if causal else "0"], env)
    if rc != 0:
        return {"error": (err or out).strip()[-600:]}
    return json.loads(out.strip().splitlines()[-1])


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--torch-python", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=3, help="in-process runs per measurement")
    ap.add_argument("--seq", type=int, default=4096, help="sequence length (smoke tests: small)")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    global S
    S = a.seq
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    r = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "commit": a.commit, "host_cpus": os.cpu_count(), "threads": THREADS,
         "shape": {"batch": 1, "seq": S, "heads": H, "dim": D}, "rounds": a.rounds,
         "iters": a.iters, "load_start": load0,
         "method": "rounds interleaved; per case the median over rounds of each side's median "
                   "of iters in-process runs; ratio = torch time / ringrt time"}
    cases = [(dt, c) for dt in ("f32", "bf16") for c in (False, True)]
    raw = []
    for i in range(a.rounds):
        x = {}
        for dt, c in cases:
            name = "%s_%s" % (dt, "causal" if c else "noncausal")
            x[name] = {"ringrt": ringrt(a.app, dt, c, a.iters),
                       "torch": torch_sdpa(a.torch_python, dt, c, a.iters)}
        raw.append(x)
        print("  round %d done" % (i + 1), flush=True)
    r["rounds_raw"] = raw
    r["cases"] = {}
    for dt, c in cases:
        name = "%s_%s" % (dt, "causal" if c else "noncausal")
        ours = [x[name]["ringrt"] for x in raw if "error" not in x[name]["ringrt"]]
        theirs = [x[name]["torch"] for x in raw if "error" not in x[name]["torch"]]
        e = {}
        if ours:
            e["ringrt"] = {k: med([j[k] for j in ours]) for k in ("fwd_s", "bwd_s", "total_s")}
        else:
            e["ringrt"] = {"error": raw[0][name]["ringrt"]["error"]}
        if theirs:
            e["torch"] = {k: med([j[k] for j in theirs]) for k in ("fwd_s", "total_s")}
            e["torch"]["version"] = theirs[0]["torch"]
            e["torch"]["cpu_capability"] = theirs[0]["cpu_capability"]
        else:
            e["torch"] = {"error": raw[0][name]["torch"]["error"]}
        fl = flops_fwd(c) * 3.5  # forward + backward (2.5x the forward), flash-attn's count
        if ours and theirs:
            e["ratio_fwd_bwd"] = e["torch"]["total_s"] / e["ringrt"]["total_s"]
            e["ratio_fwd"] = e["torch"]["fwd_s"] / e["ringrt"]["fwd_s"]
            e["ringrt_gflops_fwd_bwd"] = fl / e["ringrt"]["total_s"] * 1e-9
            e["torch_gflops_fwd_bwd"] = fl / e["torch"]["total_s"] * 1e-9
            print("%-15s fwd+bwd: ringrt %.3f s (%.1f GFLOP/s), torch %.3f s (%.1f GFLOP/s): "
                  "torch/ringrt %.2f x [target >= 2]; forward alone %.2f x" %
                  (name, e["ringrt"]["total_s"], e["ringrt_gflops_fwd_bwd"],
                   e["torch"]["total_s"], e["torch_gflops_fwd_bwd"], e["ratio_fwd_bwd"],
                   e["ratio_fwd"]))
        else:
            print("%-15s not compared: %s" % (name, e["ringrt"].get("error") or
                                              e["torch"].get("error")))
        r["cases"][name] = e
    with open("/proc/loadavg") as f:
        r["load_end"] = f.read().split()[:3]
    print("# load average %s at the start, %s at the end" % (" ".join(load0),
                                                            " ".join(r["load_end"])))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)
    print("# JSON: %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

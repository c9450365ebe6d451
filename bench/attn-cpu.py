#!/usr/bin/env python3
"""CPU ring attention benchmark driver (issue 3), run by bench/attn-cpu.sh.

In one run, side by side: every measurement once per round, --reps rounds
interleaved (so paired numbers see the same machine, which matters on a shared
box), medians over the rounds that other processes left alone (measured from
/proc/stat minus our own children's CPU time; all rounds if fewer than 3):
  (a) OpenBLAS sgemm GFLOP/s, 2 threads, at the attention's product shapes
      (bench/attn-sgemm.c); the reference is the best median of them;
  (b) `ringrt attn` local attention (np=1, 2 threads), f32, S=4096 H=8 D=64,
      non-causal: GFLOP/s and the ratio to (a)   [target >= 0.70];
  (c) the same causal: time ratio non-causal / causal  [target >= 1.8];
  (d) torch.nn.functional.scaled_dot_product_attention on the same shapes and
      threads, when a python with torch is given;
  (e) the ring on CPU: np=2 with 1 core per rank against np=1 on 1 core, time
      and the share of communication hidden behind compute.
Human-readable lines on stdout, everything as JSON in --out.
Standard library only: runs with the system python3.
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


def load():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def cpu_busy(sec=2.0):
    """Share of all CPUs busy over `sec` seconds (from /proc/stat), before we
    run anything: what else is running. None where /proc/stat is missing."""
    import time

    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait

    try:
        t0, i0 = snap()
        time.sleep(sec)
        t1, i1 = snap()
        return round(1.0 - (i1 - i0) / max(t1 - t0, 1), 3)
    except OSError:
        return None


def wait_quiet(max_wait, threshold=0.10):
    """Wait (up to max_wait s) for a 2 s window with the CPUs at most
    `threshold` busy; returns the last busy share seen."""
    import time
    end = time.time() + max_wait
    while True:
        b = cpu_busy()
        if b is None or b <= threshold or time.time() >= end:
            return b
        time.sleep(3)


def cpu_snapshot():
    """(busy jiffies of the whole machine, CPU seconds of our finished
    children, wall clock); None where /proc/stat is missing."""
    import resource
    import time
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(v) - v[3] - v[4], ru.ru_utime + ru.ru_stime, time.time()


def other_share(s0, s1):
    """Share of the machine's CPUs used by other work between two snapshots:
    all busy time minus what our own children used."""
    if not s0 or not s1:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    busy = (s1[0] - s0[0]) / hz
    mine = s1[1] - s0[1]
    return round(max(0.0, busy - mine) / ((os.cpu_count() or 1) * (s1[2] - s0[2])), 3)


def sh(cmd, env=None, timeout=900):
    """Run, return (rc, stdout, stderr); never raises on failure."""
    e = dict(os.environ)
    if env:
        e.update(env)
    try:
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.TimeoutExpired) as ex:
        return -1, "", str(ex)


def flops(causal):
    pairs = S * (S + 1) / 2 if causal else S * S
    return 4.0 * D * H * pairs


def sgemm(binary, threads, reps, coretype=None):
    env = {"OPENBLAS_CORETYPE": coretype} if coretype else {}
    rc, out, err = sh([binary, str(threads), str(reps)], env)
    if rc != 0:
        return {"error": (err or out).strip()[-400:]}
    shapes = {}
    for line in out.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            shapes[j["shape"]] = j
    return {"shapes": shapes, "best_median": max(j["median"] for j in shapes.values())}


MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}


def ringrt(app, np_, cores_per_rank, extra, reps, warmup=2):
    """One `ringrt attn` launch; its time_s is the median of `reps` runs
    (max over ranks per run). Ranks are pinned by the launcher so the
    runtime sizes its thread pool to cores_per_rank."""
    ncpu = os.cpu_count() or 1
    cmd = ["mpirun", "-np", str(np_), "--oversubscribe"]
    if cores_per_rank == 1:
        cmd += ["--bind-to", "core"]
    else:
        cmd += ["--bind-to", "none"]
        if ncpu > cores_per_rank and shutil.which("taskset"):
            cmd += ["taskset", "-c", "0-%d" % (cores_per_rank - 1)]
    cmd += [app, "attn", "--backend", "cpu", "--seq", str(S), "--heads", str(H), "--dim", str(D),
            "--dtype", "f32", "--iters", str(reps), "--warmup", str(warmup), "--quiet",
            "--json", "-"] + extra
    env = dict(MPI_ENV, OMP_NUM_THREADS=str(cores_per_rank),
               OPENBLAS_NUM_THREADS=str(cores_per_rank))
    rc, out, err = sh(cmd, env)
    for line in out.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            j["gflops"] = j["flops"] / j["time_s"] * 1e-9
            j["launch"] = " ".join(cmd)
            return j
    return {"error": "rc %d: %s" % (rc, (err or out).strip()[-600:]), "launch": " ".join(cmd)}


TORCH_CODE = r"""
import json, statistics, sys, time, torch
S, H, D, threads, reps = (int(x) for x in sys.argv[1:6])
torch.set_num_threads(threads)
f = torch.nn.functional.scaled_dot_product_attention
g = torch.Generator().manual_seed(1)
q, k, v = (torch.rand(1, H, S, D, generator=g) * 2 - 1 for _ in range(3))
res = {"torch": torch.__version__, "threads": torch.get_num_threads(),
       "cpu_capability": torch.backends.cpu.get_cpu_capability()}
for causal in (False, True):
    for _ in range(2):
        f(q, k, v, is_causal=causal)
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(q, k, v, is_causal=causal); ts.append(time.perf_counter() - t)
    res["causal" if causal else "noncausal"] = {"times_s": ts, "time_s": statistics.median(ts)}
print(json.dumps(res))
"""


def torch_sdpa(python, threads, reps):
    if not python:
        return {"error": "no python with torch (see bench/attn-cpu.sh)"}
    rc, out, err = sh([python, "-c", TORCH_CODE, str(S), str(H), str(D), str(threads), str(reps)],
                      {"OMP_NUM_THREADS": str(threads)})
    if rc != 0:
        return {"error": (err or out).strip()[-600:]}
    j = json.loads(out.strip().splitlines()[-1])
    for key, causal in (("noncausal", False), ("causal", True)):
        j[key]["gflops"] = flops(causal) / j[key]["time_s"] * 1e-9
    return j


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--sgemm", required=True)
    ap.add_argument("--torch-python", default="")
    ap.add_argument("--torch-note", default="")
    ap.add_argument("--reps", type=int, default=7, help="rounds")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--max-other", type=float, default=0.10,
                    help="rounds where other work used more of the CPUs are left out")
    ap.add_argument("--quiet-wait", type=float, default=0,
                    help="before each round wait up to this many seconds for idle CPUs")
    a = ap.parse_args()

    r = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
         "commit": a.commit, "host_cpus": os.cpu_count(), "rounds": a.reps,
         "shape": {"seq": S, "heads": H, "dim": D, "dtype": "f32", "batch": 1},
         "method": "every measurement once per round, rounds interleaved so that paired "
                   "numbers see the same machine; reported: medians over the rounds in which "
                   "other processes used at most max_other of the CPUs (all rounds when fewer "
                   "than 3 qualify); each ringrt/torch value is itself the median of 3 "
                   "in-process runs",
         "load_start": load()}
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        r["cpu_model"] = next((l.split(":", 1)[1].strip() for l in info.splitlines()
                               if l.startswith("model name")), "unknown")
    except OSError:
        info, r["cpu_model"] = "", "unknown"
    avx512 = "avx512f" in info
    print("# attn-cpu %s commit %s, %s, %d cpus, load average %s" %
          (r["date"], a.commit, r["cpu_model"], r["host_cpus"], r["load_start"]))

    rounds = []
    ring_cases = (("noncausal", []), ("causal_zigzag", ["--causal", "--layout", "zigzag"]))
    for i in range(a.reps):
        x = {"busy_before": wait_quiet(a.quiet_wait) if a.quiet_wait > 0 else cpu_busy(1.0)}
        snap0 = cpu_snapshot()
        x["sgemm"] = sgemm(a.sgemm, 2, 1)                                   # (a)
        if avx512:
            x["sgemm_avx512"] = sgemm(a.sgemm, 2, 1, "SkylakeX")
        x["nc"] = ringrt(a.app, 1, 2, [], 3, 1)                              # (b)
        x["c"] = ringrt(a.app, 1, 2, ["--causal"], 3, 1)                     # (c)
        x["torch"] = torch_sdpa(a.torch_python, 2, 3)                        # (d)
        x["ring"] = {n: {"np1": ringrt(a.app, 1, 1, e, 3, 1),               # (e)
                         "np2": ringrt(a.app, 2, 1, e, 3, 1)} for n, e in ring_cases}
        x["other_during"] = other_share(snap0, cpu_snapshot())
        rounds.append(x)
        ok = lambda j: j and "error" not in j
        print("  round %d (other work: %.0f%% of the CPUs before, %s during): sgemm best %s, "
              "attn %s s / causal %s s, "
              "torch %s s, ring np1/np2 %s/%s s" % (
                  i + 1, 100 * (x["busy_before"] or 0),
                  "%.0f%%" % (100 * x["other_during"]) if x["other_during"] is not None else "?",
                  "%.1f" % x["sgemm"]["best_median"] if ok(x["sgemm"]) else "-",
                  "%.4f" % x["nc"]["time_s"] if ok(x["nc"]) else "-",
                  "%.4f" % x["c"]["time_s"] if ok(x["c"]) else "-",
                  "%.4f" % x["torch"]["noncausal"]["time_s"] if ok(x["torch"]) else "-",
                  "%.4f" % x["ring"]["noncausal"]["np1"]["time_s"]
                  if ok(x["ring"]["noncausal"]["np1"]) else "-",
                  "%.4f" % x["ring"]["noncausal"]["np2"]["time_s"]
                  if ok(x["ring"]["noncausal"]["np2"]) else "-"), flush=True)
    r["rounds_raw"] = rounds
    ok = lambda j: j and "error" not in j
    # On a shared machine, summarise the rounds that other work left alone
    # (at most --max-other of the CPUs used by others during the round),
    # when there are at least 3 of them; the choice never looks at our
    # own numbers, and the raw rounds stay in the JSON.
    quiet = [x for x in rounds if x["other_during"] is not None and
             x["other_during"] <= a.max_other]
    r["rounds_used"] = [i + 1 for i, x in enumerate(rounds) if x in quiet] \
        if len(quiet) >= 3 else list(range(1, len(rounds) + 1))
    if len(quiet) >= 3:
        if len(quiet) < len(rounds):
            print("# summarising the %d of %d rounds where other work used <= %.0f%% of the CPUs"
                  " (rounds %s)" % (len(quiet), len(rounds), 100 * a.max_other,
                                     r["rounds_used"]))
        rounds = quiet
    else:
        print("# WARNING: fewer than 3 rounds ran without other work (<= %.0f%% of the CPUs): "
              "all rounds summarised, numbers disturbed" % (100 * a.max_other))

    # (a) sgemm: per shape the median over rounds; the reference is the best shape
    def sgemm_summary(key):
        shapes = {}
        for x in rounds:
            if ok(x.get(key)):
                for n, j in x[key]["shapes"].items():
                    shapes.setdefault(n, {"m": j["m"], "n": j["n"], "k": j["k"], "gflops": []})
                    shapes[n]["gflops"].append(j["median"])
        for j in shapes.values():
            j["median"] = med(j["gflops"])
        return shapes
    r["sgemm"] = sgemm_summary("sgemm")
    ref = max((j["median"] for j in r["sgemm"].values()), default=None)
    r["sgemm_reference_gflops"] = ref
    if ref:
        print("(a) OpenBLAS sgemm (its default kernel choice), 2 threads, GFLOP/s: " + ", ".join(
            "%s %dx%dx%d %.1f" % (n, j["m"], j["n"], j["k"], j["median"])
            for n, j in r["sgemm"].items()) + "; reference (best) %.1f" % ref)
    else:
        print("(a) sgemm FAILED: %s" % rounds[0]["sgemm"].get("error"))
    if avx512:
        r["sgemm_avx512_forced"] = sgemm_summary("sgemm_avx512")
        ref512 = max((j["median"] for j in r["sgemm_avx512_forced"].values()), default=None)
        r["sgemm_avx512_forced_best_gflops"] = ref512
        if ref512:
            # OpenBLAS 0.3.21 may not know a new CPU and pick its AVX2 (Haswell)
            # kernel; its AVX-512 kernel, forced, is the stricter reference.
            print("    OPENBLAS_CORETYPE=SkylakeX (AVX-512 kernel forced): " + ", ".join(
                "%s %.1f" % (n, j["median"]) for n, j in r["sgemm_avx512_forced"].items()) +
                "; best %.1f" % ref512)

    # (b), (c)
    nc_t = med([x["nc"]["time_s"] for x in rounds if ok(x["nc"])])
    c_t = med([x["c"]["time_s"] for x in rounds if ok(x["c"])])
    if nc_t and c_t:
        nc_g, c_g = flops(False) / nc_t * 1e-9, flops(True) / c_t * 1e-9
        pair_cs = med([x["nc"]["time_s"] / x["c"]["time_s"] for x in rounds
                       if ok(x["nc"]) and ok(x["c"])])
        pair_r = med([x["nc"]["gflops"] / x["sgemm"]["best_median"] for x in rounds
                      if ok(x["nc"]) and ok(x["sgemm"])])
        r["ringrt_local"] = {"noncausal_time_s": nc_t, "noncausal_gflops": nc_g,
                             "causal_time_s": c_t, "causal_gflops": c_g,
                             "launch": rounds[0]["nc"]["launch"]}
        r["ratio_to_sgemm"] = nc_g / ref if ref else None
        r["ratio_to_sgemm_paired_median"] = pair_r
        r["causal_speedup"] = nc_t / c_t
        r["causal_speedup_paired_median"] = pair_cs
        # the least disturbed round of each (min time, max GFLOP/s): on a shared
        # machine the best estimate of what the code does; medians are above
        nc_b = min(x["nc"]["time_s"] for x in rounds if ok(x["nc"]))
        c_b = min(x["c"]["time_s"] for x in rounds if ok(x["c"]))
        ref_b = max((x["sgemm"]["best_median"] for x in rounds if ok(x["sgemm"])), default=None)
        r["best_rounds"] = {"noncausal_time_s": nc_b, "causal_time_s": c_b,
                            "noncausal_gflops": flops(False) / nc_b * 1e-9,
                            "sgemm_best_gflops": ref_b,
                            "ratio_to_sgemm": flops(False) / nc_b * 1e-9 / ref_b if ref_b else None,
                            "causal_speedup": nc_b / c_b}
        line = ("(b) ringrt attn np=1 2 threads non-causal: %.4f s, %.1f GFLOP/s = %.2f x the "
                "sgemm reference (paired per round: %.2f x) [target >= 0.70]" %
                (nc_t, nc_g, r["ratio_to_sgemm"] or float("nan"), pair_r or float("nan")))
        if avx512 and r.get("sgemm_avx512_forced_best_gflops"):
            line += "; %.2f x the forced AVX-512 sgemm" % (
                nc_g / r["sgemm_avx512_forced_best_gflops"])
        print(line)
        print("(c) causal: %.4f s (%.1f GFLOP/s on unmasked pairs); non-causal / causal time "
              "%.2f x (paired per round: %.2f x) [target >= 1.8]" %
              (c_t, c_g, r["causal_speedup"], pair_cs))
        b = r["best_rounds"]
        print("    best rounds (min time, max sgemm): non-causal %.4f s %.1f GFLOP/s = %.2f x "
              "sgemm %.1f; causal %.4f s, speed-up %.2f x" %
              (b["noncausal_time_s"], b["noncausal_gflops"], b["ratio_to_sgemm"] or float("nan"),
               b["sgemm_best_gflops"] or float("nan"), b["causal_time_s"], b["causal_speedup"]))
    else:
        print("(b) ringrt attn FAILED: %s" % (rounds[0]["nc"].get("error") or
                                             rounds[0]["c"].get("error")))

    # (d) torch
    tr = [x["torch"] for x in rounds if ok(x["torch"])]
    if tr:
        t = {"torch": tr[0]["torch"], "cpu_capability": tr[0]["cpu_capability"],
             "threads": tr[0]["threads"]}
        for key, causal in (("noncausal", False), ("causal", True)):
            tt = med([j[key]["time_s"] for j in tr])
            t[key] = {"time_s": tt, "gflops": flops(causal) / tt * 1e-9}
        r["torch_sdpa"] = t
        line = ("(d) torch %s scaled_dot_product_attention (%s) %d threads: non-causal %.4f s "
                "%.1f GFLOP/s, causal %.4f s %.1f GFLOP/s" %
                (t["torch"], t["cpu_capability"], t["threads"], t["noncausal"]["time_s"],
                 t["noncausal"]["gflops"], t["causal"]["time_s"], t["causal"]["gflops"]))
        if nc_t and c_t:
            r["speedup_vs_torch"] = {"noncausal": t["noncausal"]["time_s"] / nc_t,
                                     "causal": t["causal"]["time_s"] / c_t}
            line += "; ringrt %.2f x / %.2f x faster" % (r["speedup_vs_torch"]["noncausal"],
                                                        r["speedup_vs_torch"]["causal"])
        print(line)
    else:
        err = a.torch_note or rounds[0]["torch"].get("error", "")
        r["torch_sdpa"] = {"error": err}
        print("(d) torch SDPA: not measured: %s" % err)

    # (e) ring
    r["ring"] = {}
    for name, _ in ring_cases:
        one = [x["ring"][name]["np1"] for x in rounds if ok(x["ring"][name]["np1"])]
        two = [x["ring"][name]["np2"] for x in rounds if ok(x["ring"][name]["np2"])]
        if not one or not two:
            bad = rounds[0]["ring"][name]
            print("(e) ring %s FAILED: %s" % (name, bad["np1"].get("error") or
                                              bad["np2"].get("error")))
            continue
        e = {"np1_time_s": med([j["time_s"] for j in one]),
             "np2_time_s": med([j["time_s"] for j in two]),
             "np2_comm_s": med([j["comm_s"] for j in two]),
             "np2_comm_exposed_s": med([j["comm_exposed_s"] for j in two]),
             "np2_compute_s": med([j["compute_s"] for j in two]),
             "np2_hidden_share": med([j["hidden_share"] for j in two]),
             "bytes_sent_per_rank": two[0]["bytes_sent_per_rank"],
             "launch_np1": one[0]["launch"], "launch_np2": two[0]["launch"]}
        e["speedup"] = e["np1_time_s"] / e["np2_time_s"]
        r["ring"][name] = e
        same = c_t if name != "noncausal" else nc_t
        print("(e) ring %s, 1 core per rank: np=1 %.4f s, np=2 %.4f s (speed-up %.2f x); np=2 "
              "sends %.1f MiB per rank, transfer %.4f s of which %.1f%% hidden (exposed %.5f s),"
              " compute %.4f s per rank%s" %
              (name, e["np1_time_s"], e["np2_time_s"], e["speedup"],
               e["bytes_sent_per_rank"] / 2**20, e["np2_comm_s"], 100 * e["np2_hidden_share"],
               e["np2_comm_exposed_s"], e["np2_compute_s"],
               "; np=1 with 2 threads: %.4f s" % same if same else ""))

    r["load_end"] = load()
    r["other_work_during_rounds"] = [x["other_during"] for x in r["rounds_raw"]]
    print("# load average at the end %s; share of the CPUs used by other work during each round:"
          " %s" % (r["load_end"], ", ".join("%.0f%%" % (100 * b) if b is not None else "?"
                                             for b in r["other_work_during_rounds"])))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)
    print("# JSON: %s" % a.out)


if __name__ == "__main__":
    sys.exit(main())

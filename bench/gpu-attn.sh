#!/usr/bin/env bash
# GPU ring attention benchmark (issue 3) for one machine with one GPU; the
# whole script stays under ~8 minutes (GPU_ATTN_BUDGET_S, default 450 s;
# steps that no longer fit are skipped and say so). Prints:
#  0. what the machine has (GPU, nvcc, MPI, NCCL, torch) and builds ringrt with
#     CUDA into BUILD_DIR if it is not built yet (needs MPI: without it only
#     the torch numbers can be taken);
#  1. the gpu-labelled attention tests (ctest -L attn -L gpu), with the default
#     transport and again with the MPI-staged one (RINGRT_NCCL=0);
#  2. `ringrt attn --backend cuda --backward`, np=1, bf16, H=16, D = 64 and
#     128, S = 4096 and 16384, causal and not: one JSON line each (forward
#     and backward time, TFLOP/s), under RINGRT_ATTN_KERNEL=auto (cuDNN
#     where the build has it) and =tc (the in-tree tensor-core kernels);
#  3. torch.nn.functional.scaled_dot_product_attention on the same shapes and
#     GPU (when torch with CUDA imports), forward and backward, with its
#     default choice and forced onto the flash and cuDNN backends, and a
#     side-by-side table against the fastest torch backend of each shape;
#  4. a 4-rank causal zigzag ring on the one GPU (bf16, S=16384, H=16, D=128):
#     NCCL with a distinct NCCL_HOSTID per rank over NCCL_SOCKET_IFNAME=lo,
#     and the MPI-staged transport; np=1 on the same shape for reference;
#     then a 4-rank --check at a size the naive reference affords.
# The log goes to stdout, to bench/results/gpu-attn-<UTC date>.log and, when
# $OUT is set (the device runner), to $OUT/. Paste it into docs/gpu-results.md
# with the date and commit.
#
# usage: bench/gpu-attn.sh [BUILD_DIR]        (default build-gpu)
set -u -o pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
build=${1:-build-gpu}
budget=${GPU_ATTN_BUDGET_S:-450}
start=$SECONDS
mkdir -p bench/results
log=bench/results/gpu-attn-$(date -u +%Y%m%dT%H%MZ).log
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none RINGRT_TIMEOUT=${RINGRT_TIMEOUT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seconds left, and a step limit that never runs past the budget
left() { echo $((budget - (SECONDS - start))); }
lim() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
fits() { # fits SECONDS NAME: is there time for a step that needs about SECONDS?
  if [ "$(left)" -lt "$1" ]; then
    echo "SKIPPED ($2): $(left) s of the ${budget} s budget left"
    return 1
  fi
}

main() {
echo "# gpu-attn.sh $(date -u +%Y-%m-%dT%H:%MZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
have_gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  have_gpu=1
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader
else
  echo "no GPU (nvidia-smi missing or failing): the cuda runs below will fail or skip"
fi
cc_arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
echo "nvcc: ${nvcc:-none} $([ -n "$nvcc" ] && "$nvcc" --version | tail -1)"
have_mpi=0
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
  have_mpi=1
  echo "mpi: $(mpirun --version 2>/dev/null | head -1)"
else
  echo "mpi: none (no mpirun/mpicc): ringrt needs MPI to build and run; only torch below"
fi
py=$(command -v python3 || true)
have_torch=0
if [ -n "$py" ] && "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  have_torch=1
  echo "torch: $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)')"
else
  echo "torch: not importable with CUDA: no SDPA comparison"
fi

app=$build/apps/ringrt
have_app=0
if [ -x "$app" ]; then
  have_app=1
elif [ "$have_mpi" = 1 ] && [ -n "$nvcc" ] && fits 60 "build"; then
  echo "## build ($build, CUDA arch ${cc_arch:-80;90})"
  t0=$SECONDS
  # the README's build (launch/build.sh, its default build type), with CUDA
  if RINGRT_BUILD_DIR="$build" timeout "$(lim 600)" bash launch/build.sh -DRINGRT_CUDA=ON \
    ${cc_arch:+-DCMAKE_CUDA_ARCHITECTURES=$cc_arch} -DCMAKE_CUDA_COMPILER="$nvcc" \
    >"$tmp/build.log" 2>&1; then
    have_app=1
    grep -E "^-- ringrt:" "$tmp/build.log"
    echo "built in $((SECONDS - t0)) s"
  else
    echo "BUILD FAILED after $((SECONDS - t0)) s:"
    tail -25 "$tmp/build.log" 2>/dev/null
  fi
fi
[ "$have_app" = 1 ] && [ "$have_mpi" = 0 ] && have_app=0

echo "## 1. gpu tests"
if [ -n "${GPU_BENCH_SKIP_TESTS:-}" ]; then
  echo "not run here (GPU_BENCH_SKIP_TESTS: tests/gpu/run.sh ran them)"
elif [ "$have_app" = 1 ] && fits 60 "gpu tests"; then
  (cd "$build" && timeout "$(lim 150)" ctest -L attn -L gpu --output-on-failure --timeout 120 2>&1 |
    tail -15)
  if fits 60 "gpu tests, MPI transport"; then
    echo "### again with the MPI-staged transport (RINGRT_NCCL=0)"
    (cd "$build" && RINGRT_NCCL=0 timeout "$(lim 150)" ctest -L attn -L gpu --output-on-failure \
      --timeout 120 2>&1 | tail -6)
  fi
else
  echo "not run (no ringrt build)"
fi

shapes="64:4096 64:16384 128:4096 128:16384"
echo "## 2. local attention, cuda backend, np=1, bf16, H=16 (JSON)"
: >"$tmp/ringrt.jsonl"
if [ "$have_app" = 1 ] && [ "$have_gpu" = 1 ]; then
  # auto (cuDNN where the build has it, docs/attn.md) and the in-tree
  # tensor-core kernels (tc), each row tagged with the kernel choice
  for kern in auto tc; do
    for sd in $shapes; do
      dim=${sd%%:*} seq=${sd##*:}
      for causal in "" "--causal"; do
        fits 15 "ringrt $kern D=$dim S=$seq $causal" || continue
        RINGRT_ATTN_KERNEL=$kern timeout "$(lim 60)" mpirun -np 1 --bind-to none \
          -x RINGRT_ATTN_KERNEL "$app" attn --backend cuda --dtype bf16 --batch 1 --heads 16 \
          --dim "$dim" --seq "$seq" $causal --iters 10 --warmup 3 --backward --quiet \
          --json - 2>"$tmp/err" | grep '^{' | sed "s/^{/{\"kernel\":\"$kern\",/" |
          tee -a "$tmp/ringrt.jsonl" ||
          echo "{\"kernel\":\"$kern\",\"error\":\"run failed: $(tail -1 "$tmp/err" | tr -d '"')\",\"dim\":$dim,\"seq\":$seq,\"causal\":\"$causal\"}"
      done
    done
  done
else
  echo "not run (no ringrt build or no GPU)"
fi

echo "## 3. torch SDPA, same shapes (JSON), then side by side"
: >"$tmp/torch.jsonl"
if [ "$have_torch" = 1 ] && fits 30 "torch"; then
  timeout "$(lim 200)" "$py" - "$shapes" <<'PY' | tee "$tmp/torch.jsonl"
import json, statistics, sys, torch
f = torch.nn.functional.scaled_dot_product_attention
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION)]
except ImportError:
    backends = [("default", None)]

def median_time(fn, reps=10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(ts)

def measure(dim, seq, causal):
    q, k, v = (torch.randn(1, 16, seq, dim, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    g = torch.randn(1, 16, seq, dim, device="cuda", dtype=torch.bfloat16)
    t_fwd = median_time(lambda: f(q, k, v, is_causal=causal))
    def fwd_bwd():
        o = f(q, k, v, is_causal=causal)
        torch.autograd.grad(o, (q, k, v), g)
    return t_fwd, median_time(fwd_bwd) - t_fwd  # backward alone, as ringrt reports it

for sd in sys.argv[1].split():
    dim, seq = (int(x) for x in sd.split(":"))
    for causal in (False, True):
        fl = 4 * dim * 16 * (seq * (seq + 1) / 2 if causal else seq * seq)
        for name, be in backends:
            row = {"torch_sdpa": torch.__version__, "backend": name, "dim": dim, "seq": seq,
                   "causal": causal}
            try:
                if be is None:
                    t, tb = measure(dim, seq, causal)
                else:
                    with sdpa_kernel(be):
                        t, tb = measure(dim, seq, causal)
                row.update(time_s=t, tflops=fl / t * 1e-12, bwd_time_s=tb,
                           bwd_tflops=2.5 * fl / tb * 1e-12 if tb > 0 else None)
            except Exception as ex:  # a backend this torch or GPU lacks
                row["error"] = str(ex).splitlines()[0][:200] if str(ex) else type(ex).__name__
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
PY
else
  echo "not run (torch with CUDA not importable, or no time left)"
fi
if [ -n "$py" ]; then
  "$py" - "$tmp/ringrt.jsonl" "$tmp/torch.jsonl" <<'PY'
import json, sys
def rows(p):
    try:
        return [json.loads(l) for l in open(p) if l.startswith("{")]
    except OSError:
        return []
def best(rs, key):  # the fastest torch backend of a shape for `key`
    vals = [(j[key], j["backend"]) for j in rs if j.get(key)]
    return max(vals) if vals else (None, "-")
r = {(j["dim"], j["seq"], j["causal"] in (True, "true"), j.get("kernel", "auto")): j
     for j in rows(sys.argv[1]) if "error" not in j}
t = {}
for j in rows(sys.argv[2]):
    t.setdefault((j["dim"], j["seq"], j["causal"]), []).append(j)
fmt = "%4s %6s %6s %-5s | %7s %7s %-8s %6s | %7s %7s %-8s %6s"
print("forward and backward TFLOP/s (backward: 2.5x the forward's FLOPs), bf16, H=16;")
print("ringrt kernel auto (cuDNN where built) and tc (in-tree tensor cores)")
print(fmt % ("D", "S", "causal", "kern", "ringrt", "torch", "(best)", "ratio", "r. bwd", "t. bwd",
             "(best)", "ratio"))
num = lambda x: "%.1f" % x if x else "-"
shapes = sorted(set(k[:3] for k in r) | set(t))
for shape in shapes:
    for kern in ("auto", "tc"):
        j = r.get(shape + (kern,), {})
        a, ab = j.get("tflops"), j.get("backward", {}).get("tflops")
        b, bn = best(t.get(shape, []), "tflops")
        bb, bbn = best(t.get(shape, []), "bwd_tflops")
        print(fmt % (*shape, kern, num(a), num(b), bn, "%.2f" % (a / b) if a and b else "-",
                     num(ab), num(bb), bbn, "%.2f" % (ab / bb) if ab and bb else "-"))
PY
fi

echo "## 4. 4-rank ring on the one GPU (causal zigzag, bf16, S=16384, H=16, D=128)"
ring="attn --backend cuda --dtype bf16 --heads 16 --dim 128 --seq 16384 --causal --layout zigzag --iters 5 --warmup 2 --quiet --json -"
if [ "$have_app" = 1 ] && [ "$have_gpu" = 1 ]; then
  # Several ranks on one GPU: NCCL refuses duplicate GPUs within a host, so
  # every rank claims its own host id and they talk over sockets on lo.
  cat >"$tmp/nccl_hostid.sh" <<'W'
#!/bin/sh
export NCCL_HOSTID="ringrt-bench-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
exec "$@"
W
  chmod +x "$tmp/nccl_hostid.sh"
  if fits 20 "ringrt info"; then
    echo "### ranks, devices and transports (np=4, NCCL_HOSTID per rank)"
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 timeout "$(lim 60)" mpirun -np 4 --oversubscribe \
      --bind-to none -x NCCL_SOCKET_IFNAME -x NCCL_IB_DISABLE "$tmp/nccl_hostid.sh" "$app" info \
      --backend cuda 2>&1 | tail -6 || echo "ringrt info failed"
  fi
  if fits 20 "np=1 reference"; then
    echo "### np=1"
    timeout "$(lim 60)" mpirun -np 1 --bind-to none "$app" $ring 2>&1 | tail -3 ||
      echo '{"error":"np=1 run failed"}'
  fi
  if fits 30 "nccl ring"; then
    echo "### np=4, NCCL (NCCL_HOSTID per rank, NCCL_SOCKET_IFNAME=lo, NCCL_IB_DISABLE=1)"
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 timeout "$(lim 120)" mpirun -np 4 --oversubscribe \
      --bind-to none -x NCCL_SOCKET_IFNAME -x NCCL_IB_DISABLE -x RINGRT_TIMEOUT \
      "$tmp/nccl_hostid.sh" "$app" $ring 2>&1 | tail -5 || echo '{"error":"nccl ring failed"}'
  fi
  if fits 30 "mpi-staged ring"; then
    echo "### np=4, MPI-staged transport (RINGRT_NCCL=0)"
    RINGRT_NCCL=0 timeout "$(lim 120)" mpirun -np 4 --oversubscribe --bind-to none \
      -x RINGRT_NCCL -x RINGRT_TIMEOUT "$app" $ring 2>&1 | tail -5 ||
      echo '{"error":"mpi-staged ring failed"}'
  fi
  if fits 30 "check"; then
    echo "### np=4 --check against the double-precision reference (S=2048, GQA 4/2, D=128)"
    NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 timeout "$(lim 120)" mpirun -np 4 --oversubscribe \
      --bind-to none -x NCCL_SOCKET_IFNAME -x NCCL_IB_DISABLE -x RINGRT_TIMEOUT \
      "$tmp/nccl_hostid.sh" "$app" attn --backend cuda --dtype bf16 --heads 4 --kv-heads 2 \
      --dim 128 --seq 2048 --causal --layout zigzag --check --iters 1 --warmup 0 2>&1 | tail -5 ||
      echo "check run failed"
  fi
else
  echo "not run (no ringrt build or no GPU)"
fi
echo "# done in $((SECONDS - start)) s; log $log"
}

main 2>&1 | tee "$log"
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then cp "$log" "$OUT/"; fi

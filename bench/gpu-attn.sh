#!/bin/sh
# GPU ring attention benchmark (issue 3), for one machine with a GPU; under
# 8 minutes on one H100/H200. Prints:
#  1. the gpu-labelled attention tests (ctest -L attn -L gpu);
#  2. `ringrt attn --backend cuda` local attention (np=1), bf16, D = 64 and 128,
#     S = 4096 and 16384, causal and not: JSON lines with time and TFLOP/s;
#  3. torch.nn.functional.scaled_dot_product_attention TFLOP/s on the same
#     shapes and GPU, when torch is importable;
#  4. a 4-rank causal zigzag ring on the one GPU: NCCL (distinct NCCL_HOSTID
#     per rank, NCCL_SOCKET_IFNAME=lo) and the MPI-staged transport.
# Paste the output into docs/gpu-results.md with the date and commit.
# usage: bench/gpu-attn.sh [BUILD_DIR]   (default: build)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
[ -x "$app" ] || { echo "no $app: build first (cmake -S . -B build -G Ninja && ninja -C build)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "# gpu-attn.sh $(date -u +%Y-%m-%dT%H:%MZ) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"

echo "## gpu tests"
(cd "$build" && timeout 240 ctest -L attn -L gpu --output-on-failure 2>&1 | tail -15)

echo "## local attention, cuda backend, np=1 (JSON)"
for dim in 64 128; do
  for seq in 4096 16384; do
    for causal in "" "--causal"; do
      timeout 60 mpirun -np 1 --bind-to none "$app" attn --backend cuda --dtype bf16 --batch 1 \
        --heads 16 --dim $dim --seq $seq $causal --iters 5 --warmup 2 --quiet --json - ||
        echo "{\"error\":\"run failed\",\"dim\":$dim,\"seq\":$seq,\"causal\":\"$causal\"}"
    done
  done
done

echo "## torch sdpa, same shapes"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  timeout 120 python3 - <<'PY'
import json, torch
f = torch.nn.functional.scaled_dot_product_attention
for dim in (64, 128):
    for seq in (4096, 16384):
        for causal in (False, True):
            q, k, v = (torch.randn(1, 16, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            for _ in range(2): f(q, k, v, is_causal=causal)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ts = []
            for _ in range(5):
                s.record(); f(q, k, v, is_causal=causal); e.record(); torch.cuda.synchronize()
                ts.append(s.elapsed_time(e) * 1e-3)
            t = sorted(ts)[2]
            fl = 4 * dim * 16 * (seq * (seq + 1) / 2 if causal else seq * seq)
            print(json.dumps({"torch_sdpa": True, "dim": dim, "seq": seq, "causal": causal,
                              "time_s": t, "tflops": fl / t * 1e-12}))
PY
else
  echo "torch with CUDA not importable: no comparison"
fi

echo "## 4-rank ring on one GPU (causal zigzag, bf16, S=16384, H=16, D=128)"
ring="attn --backend cuda --dtype bf16 --heads 16 --dim 128 --seq 16384 --causal --layout zigzag --iters 5 --warmup 2 --quiet --json -"
cat >"$build/nccl_hostid.sh" <<'W'
#!/bin/sh
export NCCL_HOSTID="ringrt-bench-${OMPI_COMM_WORLD_RANK:-0}"
exec "$@"
W
chmod +x "$build/nccl_hostid.sh"
NCCL_SOCKET_IFNAME=lo timeout 120 mpirun -np 4 --oversubscribe --bind-to none -x NCCL_SOCKET_IFNAME \
  "$build/nccl_hostid.sh" "$app" $ring || echo '{"error":"nccl ring failed"}'
RINGRT_NCCL=0 timeout 120 mpirun -np 4 --oversubscribe --bind-to none -x RINGRT_NCCL \
  "$app" $ring || echo '{"error":"mpi-staged ring failed"}'
echo "## check at a size the naive reference affords"
timeout 120 mpirun -np 4 --oversubscribe --bind-to none -x NCCL_SOCKET_IFNAME=lo "$build/nccl_hostid.sh" \
  "$app" attn --backend cuda --dtype bf16 --heads 4 --kv-heads 2 --dim 128 --seq 2048 --causal \
  --layout zigzag --check --iters 1 --warmup 0 || echo "check run failed"

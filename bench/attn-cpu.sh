#!/bin/sh
# CPU ring attention benchmark (issue 3). Prints, on this machine:
#  1. OpenBLAS sgemm GFLOP/s (2 threads) at the attention's GEMM shapes and square;
#  2. `ringrt attn` local attention, f32, S=4096 H=8 D=64, non-causal and causal,
#     np=1 with 2 threads: GFLOP/s, ratio to sgemm, causal speed-up;
#  3. torch.nn.functional.scaled_dot_product_attention on the same shapes when
#     torch is importable;
#  4. the ring at np=2 (1 core per rank) against np=1 (1 core): time and the
#     share of communication hidden behind compute.
# usage: bench/attn-cpu.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
app=$build/apps/ringrt
[ -x "$app" ] || { echo "no $app: build first (cmake -S . -B build -G Ninja && ninja -C build)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc=$(dirname "$(find /usr/include -name cblas.h -path '*openblas*' | head -1)")
cat >"$tmp/gemm.c" <<'C'
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
  int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), it = 5;
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
  for (long i = 0; i < (long)M * K; i++) a[i] = 1e-3f * (i % 7);
  for (long i = 0; i < (long)K * N; i++) b[i] = 1e-3f * (i % 5);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, a, K, b, N, 0, c, N);
  double t = now();
  for (int i = 0; i < it; i++) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, a, K, b, N, 0, c, N);
  t = now() - t;
  printf("%.2f\n", 2.0 * M * N * K * it / t * 1e-9);
  return 0;
}
C
cc -O2 -I"$inc" "$tmp/gemm.c" -o "$tmp/gemm" -lopenblas
g_sq=$(OPENBLAS_NUM_THREADS=2 "$tmp/gemm" 2048 2048 2048)
g_qk=$(OPENBLAS_NUM_THREADS=2 "$tmp/gemm" 4096 4096 64)
g_ref=$(echo "$g_sq $g_qk" | awk '{print ($1 > $2) ? $1 : $2}')
echo "sgemm (2 threads): 2048^3 $g_sq GFLOP/s, 4096x4096x64 $g_qk GFLOP/s; reference $g_ref"

json() { sed -n 's/.*"'"$2"'":\([^,}]*\).*/\1/p' "$1"; }
common="--backend cpu --seq 4096 --heads 8 --dim 64 --dtype f32 --iters 3 --warmup 1 --quiet"
mpirun -np 1 --bind-to none "$app" attn $common --json "$tmp/nc.json"
mpirun -np 1 --bind-to none "$app" attn $common --causal --json "$tmp/c.json"
t_nc=$(json "$tmp/nc.json" time_s); t_c=$(json "$tmp/c.json" time_s)
f_nc=$(json "$tmp/nc.json" tflops); f_c=$(json "$tmp/c.json" tflops)
echo "ringrt attn np=1 S=4096 H=8 D=64 f32 non-causal: $t_nc s, $(awk "BEGIN{print $f_nc*1000}") GFLOP/s," \
  "$(awk "BEGIN{printf \"%.2f\", $f_nc*1000/$g_ref}") x sgemm"
echo "ringrt attn np=1 causal: $t_c s ($(awk "BEGIN{print $f_c*1000}") GFLOP/s on unmasked pairs)," \
  "causal speed-up $(awk "BEGIN{printf \"%.2f\", $t_nc/$t_c}") x"
cat "$tmp/nc.json" "$tmp/c.json"

if python3 -c 'import torch' 2>/dev/null; then
  python3 - <<'PY'
import time, torch
torch.set_num_threads(2)
for causal in (False, True):
    q = torch.rand(1, 8, 4096, 64) * 2 - 1
    k = torch.rand(1, 8, 4096, 64) * 2 - 1
    v = torch.rand(1, 8, 4096, 64) * 2 - 1
    f = torch.nn.functional.scaled_dot_product_attention
    f(q, k, v, is_causal=causal)
    ts = []
    for _ in range(3):
        t = time.perf_counter(); f(q, k, v, is_causal=causal); ts.append(time.perf_counter() - t)
    t = sorted(ts)[1]
    fl = 4 * 64 * 8 * (4096 * 4097 / 2 if causal else 4096 * 4096)
    print(f"torch sdpa 2 threads causal={causal}: {t:.4f} s, {fl / t * 1e-9:.1f} GFLOP/s")
PY
else
  echo "torch not importable: no PyTorch comparison (pip install torch to add it)"
fi

ring="--backend cpu --seq 4096 --heads 8 --dim 64 --dtype f32 --causal --layout zigzag --iters 3 --warmup 1 --quiet"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 RINGRT_BIND=0 mpirun -np 1 --bind-to core "$app" attn $ring --json "$tmp/r1.json"
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpirun -np 2 --bind-to core "$app" attn $ring --json "$tmp/r2.json"
echo "ring causal zigzag S=4096, 1 core per rank: np=1 $(json "$tmp/r1.json" time_s) s," \
  "np=2 $(json "$tmp/r2.json" time_s) s, hidden share $(json "$tmp/r2.json" hidden_share)," \
  "K/V sent per rank $(json "$tmp/r2.json" bytes_sent_per_rank) bytes"
cat "$tmp/r1.json" "$tmp/r2.json"

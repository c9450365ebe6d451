// ILU(0) kernels for the cuda backend (and, compiled as C++, for the SIMT
// emulator of the emu backend). One thread per row of a level: the rows of
// a level are independent, and each row runs the serial IKJ arithmetic of
// kernels/ilu0_math.h, which is what keeps the factors bitwise identical to
// the CPU. One launch per level (the level's row list lives in device
// memory), or one sync-free launch for a run of levels (the *_chain kernels).
#include "kernels/simt.h"
#if defined(__CUDACC__)
#include <cuda/atomic> // cuda::atomic_ref (the emulator's: cuda_builtins.h)
#endif
#include "kernels/ilu0_math.h"

#include <stdint.h>

#define ILU0_BLOCK 128

static inline unsigned ilu0_grid(int64_t n) {
  int64_t g = (n + ILU0_BLOCK - 1) / ILU0_BLOCK;
  return (unsigned)(g > 0 ? g : 1);
}

__global__ void ilu0_factor_rows_k(const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nrows) return;
  rrt_ilu0_factor_row(rows[t], f);
}

RRT_KERNEL_API(rrt_k_ilu0_factor_rows)
(rrt_stream s, const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f) {
  RRT_LAUNCH(ilu0_factor_rows_k, ilu0_grid(nrows), ILU0_BLOCK, 0, s, rows, nrows, f);
}

// Triangular solves for f64 factor values and for f32 ones (factors_f32:
// widened to f64, same f64 arithmetic in the same order as the CPU kernels).
template <typename VT>
__device__ inline void ilu0_lsolve_row(int32_t i, const rrt_ilu0_idx *lr, const int32_t *col,
                                       const VT *v, const double *r, double *y) {
  double s = r[i];
  for (int64_t e = lr[2 * i]; e < lr[2 * i + 1]; e++)
    s = rrt_ilu0_update(s, (double)v[e], y[col[e]]);
  y[i] = s;
}

template <typename VT>
__global__ void ilu0_lsolve_rows_k(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
                                   const int32_t *col, const VT *v, const double *r, double *y) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nrows) return;
  ilu0_lsolve_row(rows[t], lr, col, v, r, y);
}

RRT_KERNEL_API(rrt_k_ilu0_lsolve_rows)
(rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
 const int32_t *col, const double *v, const double *r, double *y) {
  (void)ur; // the uniform (lr, ur) signature; L needs only lr
  RRT_LAUNCH((ilu0_lsolve_rows_k<double>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, rows, nrows, lr, col,
             v, r, y);
}

RRT_KERNEL_API(rrt_k_ilu0_lsolve_rows_f32)
(rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
 const int32_t *col, const float *v, const double *r, double *y) {
  (void)ur;
  RRT_LAUNCH((ilu0_lsolve_rows_k<float>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, rows, nrows, lr, col,
             v, r, y);
}

// U entries in decreasing position, times the reciprocal pivot (the same
// order and operations as the CPU kernel, see kernels/cpu/ilu0.h).
template <typename VT>
__device__ inline void ilu0_usolve_row(int32_t i, const rrt_ilu0_idx *ur, const int32_t *col,
                                       const VT *v, const double *dinv, const double *y,
                                       double *z) {
  int64_t d = ur[2 * i];
  double s = y[i];
  for (int64_t e = ur[2 * i + 1] - 1; e > d; e--)
    s = rrt_ilu0_update(s, (double)v[e], z[col[e]]);
  z[i] = rrt_ilu0_mul(s, dinv[i]);
}

template <typename VT>
__global__ void ilu0_usolve_rows_k(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *ur,
                                   const int32_t *col, const VT *v, const double *dinv,
                                   const double *y, double *z) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nrows) return;
  ilu0_usolve_row(rows[t], ur, col, v, dinv, y, z);
}

RRT_KERNEL_API(rrt_k_ilu0_usolve_rows)
(rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
 const int32_t *col, const double *v, const double *dinv, const double *y, double *z) {
  (void)lr;
  RRT_LAUNCH((ilu0_usolve_rows_k<double>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, rows, nrows, ur, col,
             v, dinv, y, z);
}

RRT_KERNEL_API(rrt_k_ilu0_usolve_rows_f32)
(rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
 const int32_t *col, const float *v, const double *dinv, const double *y, double *z) {
  (void)lr;
  RRT_LAUNCH((ilu0_usolve_rows_k<float>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, rows, nrows, ur, col,
             v, dinv, y, z);
}

// ---- Sync-free sweeps: a run of levels in one launch -------------------------
// rows[] holds the run's rows level by level, a topological order. Each warp
// takes the next 32 entries by a ticket from an atomic counter, so a row only
// waits for rows taken before it, by warps that are already running: no
// deadlock, whatever order blocks start in. A row spins (with __nanosleep,
// the emulator's fiber switch) until every local row it reads is marked done
// in this sweep, then runs the per-row code of the level kernels: results
// are bitwise those of one launch per level. Rows of earlier runs and ghosts
// (scattered by the halo before the launch) are ready. Lanes of one warp may
// wait for each other across a level boundary: independent thread
// scheduling (sm_70 and later) lets the awaited lane run.

// The list index of this thread's row. Every warp takes exactly one ticket,
// so the warp that takes the last one knows all are taken and rearms the
// counter for the next launch (stream order puts that launch after this one).
__device__ inline int64_t ilu0_chain_take(rrt_ilu0_chain c) {
  const unsigned lane = threadIdx.x % warpSize;
  const unsigned long long nwarps = (unsigned long long)gridDim.x * blockDim.x / warpSize;
  unsigned long long t = 0;
  if (lane == 0) {
    t = atomicAdd(c.ticket, 1ull);
    if (t == nwarps - 1) atomicExch(c.ticket, 0ull);
  }
  t = __shfl_sync(0xffffffffu, t, 0);
  return (int64_t)t * warpSize + lane;
}

// Wait until the local rows read through col[e0 .. e1) are done. The flags
// are device-scope atomics (cuda::atomic_ref; the emulator's is sequentially
// consistent): the acquire load that sees a producer's flag orders this
// thread's reads of that row's values after the producer's writes, which
// its release store of the flag published.
__device__ inline void ilu0_chain_wait(rrt_ilu0_chain c, const int32_t *col, int64_t e0,
                                       int64_t e1) {
  for (int64_t e = e0; e < e1; e++) {
    const int32_t k = col[e];
    if (k >= c.nloc) continue; /* a ghost: received before the launch */
    cuda::atomic_ref<int32_t, cuda::thread_scope_device> flag(c.done[k]);
    while (flag.load(cuda::memory_order_acquire) != c.gen)
      __nanosleep(64);
  }
}

__device__ inline void ilu0_chain_mark(rrt_ilu0_chain c, int32_t i) {
  cuda::atomic_ref<int32_t, cuda::thread_scope_device> flag(c.done[i]);
  flag.store(c.gen, cuda::memory_order_release);
}

__global__ void ilu0_factor_chain_k(rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                                    rrt_ilu0_factor_args f) {
  const int64_t t = ilu0_chain_take(c);
  if (t >= nrows) return;
  const int32_t i = rows[t];
  ilu0_chain_wait(c, f.col, f.lr[2 * i], f.lr[2 * i + 1]); /* the U rows its L entries read */
  rrt_ilu0_factor_row(i, f);
  ilu0_chain_mark(c, i);
}

RRT_KERNEL_API(rrt_k_ilu0_factor_chain)
(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f) {
  RRT_LAUNCH(ilu0_factor_chain_k, ilu0_grid(nrows), ILU0_BLOCK, 0, s, c, rows, nrows, f);
}

template <typename VT>
__global__ void ilu0_lsolve_chain_k(rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                                    const rrt_ilu0_idx *lr, const int32_t *col, const VT *v,
                                    const double *r, double *y) {
  const int64_t t = ilu0_chain_take(c);
  if (t >= nrows) return;
  const int32_t i = rows[t];
  ilu0_chain_wait(c, col, lr[2 * i], lr[2 * i + 1]);
  ilu0_lsolve_row(i, lr, col, v, r, y);
  ilu0_chain_mark(c, i);
}

RRT_KERNEL_API(rrt_k_ilu0_lsolve_chain)
(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
 const rrt_ilu0_idx *ur, const int32_t *col, const double *v, const double *r, double *y) {
  (void)ur;
  RRT_LAUNCH((ilu0_lsolve_chain_k<double>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, c, rows, nrows, lr,
             col, v, r, y);
}

RRT_KERNEL_API(rrt_k_ilu0_lsolve_chain_f32)
(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
 const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *r, double *y) {
  (void)ur;
  RRT_LAUNCH((ilu0_lsolve_chain_k<float>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, c, rows, nrows, lr,
             col, v, r, y);
}

template <typename VT>
__global__ void ilu0_usolve_chain_k(rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                                    const rrt_ilu0_idx *ur, const int32_t *col, const VT *v,
                                    const double *dinv, const double *y, double *z) {
  const int64_t t = ilu0_chain_take(c);
  if (t >= nrows) return;
  const int32_t i = rows[t];
  ilu0_chain_wait(c, col, ur[2 * i] + 1, ur[2 * i + 1]);
  ilu0_usolve_row(i, ur, col, v, dinv, y, z);
  ilu0_chain_mark(c, i);
}

RRT_KERNEL_API(rrt_k_ilu0_usolve_chain)
(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
 const rrt_ilu0_idx *ur, const int32_t *col, const double *v, const double *dinv, const double *y,
 double *z) {
  (void)lr;
  RRT_LAUNCH((ilu0_usolve_chain_k<double>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, c, rows, nrows, ur,
             col, v, dinv, y, z);
}

RRT_KERNEL_API(rrt_k_ilu0_usolve_chain_f32)
(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
 const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *dinv, const double *y,
 double *z) {
  (void)lr;
  RRT_LAUNCH((ilu0_usolve_chain_k<float>), ilu0_grid(nrows), ILU0_BLOCK, 0, s, c, rows, nrows, ur,
             col, v, dinv, y, z);
}

// factors_f32: vf = fl32(v) (first nval values), dinv[i] = 1 / vf[ur[2 * i]].
__global__ void ilu0_round_f32_k(int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur,
                                 const double *v, float *vf, double *dinv) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < nval) vf[t] = (float)v[t];
  if (t < nloc) dinv[t] = rrt_ilu0_div(1.0, (double)(float)v[ur[2 * t]]);
}

RRT_KERNEL_API(rrt_k_ilu0_round_f32)
(rrt_stream s, int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur, const double *v, float *vf,
 double *dinv) {
  RRT_LAUNCH(ilu0_round_f32_k, ilu0_grid(nval > nloc ? nval : nloc), ILU0_BLOCK, 0, s, nval, nloc,
             ur, v, vf, dinv);
}

__global__ void ilu0_spmv_k(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                            const double *a, const double *x, double *y) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  double s = 0.0;
  for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
    s = rrt_ilu0_madd(s, a[e], x[col[e]]);
  y[i] = s;
}

RRT_KERNEL_API(rrt_k_ilu0_spmv)
(rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col, const double *a,
 const double *x, double *y) {
  RRT_LAUNCH(ilu0_spmv_k, ilu0_grid(nrows), ILU0_BLOCK, 0, s, nrows, rowptr, col, a, x, y);
}

__global__ void ilu0_gather_k(const int32_t *idx, int64_t n, const double *src, double *buf) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) buf[t] = src[idx[t]];
}

RRT_KERNEL_API(rrt_k_ilu0_gather)
(rrt_stream s, const int32_t *idx, int64_t n, const double *src, double *buf) {
  RRT_LAUNCH(ilu0_gather_k, ilu0_grid(n), ILU0_BLOCK, 0, s, idx, n, src, buf);
}

__global__ void ilu0_scatter_k(const int32_t *idx, int64_t n, const double *buf, double *dst) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) dst[idx[t]] = buf[t];
}

RRT_KERNEL_API(rrt_k_ilu0_scatter)
(rrt_stream s, const int32_t *idx, int64_t n, const double *buf, double *dst) {
  RRT_LAUNCH(ilu0_scatter_k, ilu0_grid(n), ILU0_BLOCK, 0, s, idx, n, buf, dst);
}

__global__ void ilu0_axpby_k(int64_t n, double a, const double *x, double b, double *y) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // b == 0 overwrites y (it may hold garbage or NaN)
  if (b == 0.0)
    y[i] = rrt_ilu0_madd(0.0, a, x[i]);
  else
    y[i] = rrt_ilu0_madd(rrt_ilu0_madd(0.0, b, y[i]), a, x[i]);
}

RRT_KERNEL_API(rrt_k_ilu0_axpby)
(rrt_stream s, int64_t n, double a, const double *x, double b, double *y) {
  RRT_LAUNCH(ilu0_axpby_k, ilu0_grid(n), ILU0_BLOCK, 0, s, n, a, x, b, y);
}

// A group's dot products in one pass over y: each thread keeps one strided
// sum per vector, then each vector's sums are reduced in shared memory in a
// fixed tree, so the partials are deterministic; the host adds them in
// block order (one vector: the plain dot product).
__global__ void ilu0_mdot_partial_k(int64_t n, rrt_vec_group g, const double *y, double *partial) {
  __shared__ double sh[RRT_VEC_GROUP][ILU0_BLOCK];
  int tid = threadIdx.x;
  // Loops over the group's fixed bound, unrolled, with t < g.k inside: the
  // indices are constants, so s stays in registers and g in the parameter
  // space (a run-time index made nvcc copy both to local memory: 112 bytes
  // of stack frame on sm_80)
  double s[RRT_VEC_GROUP] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + tid; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double yi = y[i];
    RRT_UNROLL
    for (int t = 0; t < RRT_VEC_GROUP; t++)
      if (t < g.k) s[t] = rrt_ilu0_madd(s[t], g.x[t][i], yi);
  }
  RRT_UNROLL
  for (int t = 0; t < RRT_VEC_GROUP; t++)
    if (t < g.k) sh[t][tid] = s[t];
  __syncthreads();
  for (int w = ILU0_BLOCK / 2; w > 0; w /= 2) {
    if (tid < w)
      for (int t = 0; t < g.k; t++)
        sh[t][tid] = sh[t][tid] + sh[t][tid + w];
    __syncthreads();
  }
  if (tid == 0)
    for (int t = 0; t < g.k; t++)
      partial[t * gridDim.x + blockIdx.x] = sh[t][0];
}

RRT_KERNEL_API(rrt_k_ilu0_mdot_partial)
(rrt_stream s, int64_t n, rrt_vec_group g, const double *y, double *partial, int nblocks) {
  RRT_LAUNCH(ilu0_mdot_partial_k, (unsigned)nblocks, ILU0_BLOCK, 0, s, n, g, y, partial);
}

// rrt_ilu0_maxpy_elem's operations in its order, unrolled over the group's
// fixed bound with constant indices: &g of a by-value kernel argument, or a
// run-time index into it, made nvcc copy g to local memory (72 bytes of
// stack frame on sm_80)
__global__ void ilu0_maxpy_k(int64_t n, rrt_vec_group g, double *y) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = y[i];
  RRT_UNROLL
  for (int t = 0; t < RRT_VEC_GROUP; t++)
    if (t < g.k) v = rrt_ilu0_madd(v, g.a[t], g.x[t][i]);
  y[i] = v;
}

RRT_KERNEL_API(rrt_k_ilu0_maxpy)(rrt_stream s, int64_t n, rrt_vec_group g, double *y) {
  RRT_LAUNCH(ilu0_maxpy_k, ilu0_grid(n), ILU0_BLOCK, 0, s, n, g, y);
}

// Level analysis on the device (single pass per launch): a row whose
// dependencies (columns before it in position for L, after it for U) all
// have levels gets 1 + their maximum. Launched until nothing changes; the
// number of launches is the number of levels. level[i] == 0: unknown.
__global__ void ilu0_level_sweep_k(int64_t nrows, const int64_t *rowptr, const int32_t *col,
                                   const int64_t *pos, int upper, int32_t *level, int *changed) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows || level[i]) return;
  int32_t lev = 0;
  int64_t pi = pos[i];
  for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
    int32_t c = col[e];
    int64_t pc = pos[c];
    if (upper ? pc <= pi : pc >= pi) continue;
    int32_t lc = level[c];
    // a dependency finished in this same launch (lc != 0 but written after
    // we started) could shorten nothing: levels only grow launch by launch,
    // so count only levels from earlier launches (negative = this launch)
    if (lc <= 0) return;
    if (lc > lev) lev = lc;
  }
  level[i] = -(lev + 1);
  *changed = 1;
}

__global__ void ilu0_level_commit_k(int64_t nrows, int32_t *level) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nrows && level[i] < 0) level[i] = -level[i];
}

RRT_KERNEL_API(rrt_k_ilu0_level_sweep)
(rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col, const int64_t *pos,
 int upper, int32_t *level, int *changed) {
  // upper < 0: commit only (RRT_LAUNCH returns)
  if (upper < 0) RRT_LAUNCH(ilu0_level_commit_k, ilu0_grid(nrows), ILU0_BLOCK, 0, s, nrows, level);
  RRT_LAUNCH(ilu0_level_sweep_k, ilu0_grid(nrows), ILU0_BLOCK, 0, s, nrows, rowptr, col, pos, upper,
             level, changed);
}

// SEACells kernels for the cuda backend, also built for the SIMT emulator
// (emu backend). Per-element arithmetic comes from kernels/seacells_math.h
// and follows the CPU kernels (kernels/cpu/seacells.c) operation for
// operation: sums over a K row run serially in column order on one thread,
// argmins are reductions with lowest-index ties (order-independent), so
// cpu, emu and cuda give the same bits.
#include "kernels/simt.h"
#include "kernels/seacells_math.h"

#define SC_THREADS 128

// ---- kNN tile: one thread per query, exact distances ------------------------
__global__ void rrt_sc_knn_tile_kernel(const double *q, int64_t nq, int64_t q0, const double *r,
                                       int64_t nr, int64_t r0, int d, int k, double *best_d,
                                       int32_t *best_i) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nq) return;
  double *bd = best_d + i * k;
  int32_t *bi = best_i + i * k;
  for (int64_t j = 0; j < nr; j++) {
    if (r0 + j == q0 + i) continue;
    double dd = rrt_sc_sqdist(q + i * d, r + j * d, d);
    int64_t last = bi[k - 1] < 0 ? INT64_MAX : bi[k - 1];
    if (!rrt_sc_nn_less(dd, r0 + j, bd[k - 1], last)) continue;
    int p = k - 1;
    while (p > 0 && rrt_sc_nn_less(dd, r0 + j, bd[p - 1], bi[p - 1] < 0 ? INT64_MAX : bi[p - 1])) {
      bd[p] = bd[p - 1];
      bi[p] = bi[p - 1];
      p--;
    }
    bd[p] = dd;
    bi[p] = (int32_t)(r0 + j);
  }
}

RRT_KERNEL_API(rrt_k_sc_knn_tile)
(rrt_stream stream, const double *q, int64_t nq, int64_t q0, const double *r, int64_t nr,
 int64_t r0, int d, int k, double *best_d, int32_t *best_i) {
  if (nq == 0 || nr == 0) return RRT_SUCCESS;
  unsigned grid = (unsigned)((nq + SC_THREADS - 1) / SC_THREADS);
  RRT_LAUNCH(rrt_sc_knn_tile_kernel, grid, SC_THREADS, 0, stream, q, nq, q0, r, nr, r0, d, k,
             best_d, best_i);
}

// Block-wide argmin of (value, index) with lowest-index ties; every thread
// gets the winner.
__device__ static inline void rrt_sc_block_argmin(double *rv, int64_t *ri, double v, int64_t i,
                                                  double *outv, int64_t *outi) {
  rv[threadIdx.x] = v;
  ri[threadIdx.x] = i;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s && rrt_sc_argmin_better(rv[threadIdx.x + s], ri[threadIdx.x + s],
                                                     rv[threadIdx.x], ri[threadIdx.x])) {
      rv[threadIdx.x] = rv[threadIdx.x + s];
      ri[threadIdx.x] = ri[threadIdx.x + s];
    }
    __syncthreads();
  }
  *outv = rv[0];
  *outi = ri[0];
  __syncthreads();
}

// ---- A update: one thread block per cell, the three m-vectors (t2, u, a)
// in shared memory when they fit, else in a per-block global scratch -------
__global__ void rrt_sc_a_solve_kernel(int64_t nl, int m, int fw_iter, int capa, const int64_t *kptr,
                                      const int32_t *kcol, const double *kval,
                                      const int32_t *bfirst, const int32_t *bcnt,
                                      const int32_t *bent_j, const double *bent_w,
                                      const int64_t *t1p, const int32_t *t1c, const double *t1v,
                                      int first, int32_t *a_idx, double *a_w, int *a_nnz,
                                      double *scratch, int use_shared) {
  RRT_DYN_SHARED(double, dyn);
  __shared__ double rv[SC_THREADS];
  __shared__ int64_t ri[SC_THREADS];
  double *t2 = use_shared ? dyn : scratch + (int64_t)blockIdx.x * 4 * m;
  double *u = t2 + m, *a = t2 + 2 * m, *row = t2 + 3 * m;
  for (int j = threadIdx.x; j < m; j += blockDim.x)
    row[j] = 0.0; // a T1a row scattered at each step, cleared after it
  for (int64_t i = blockIdx.x; i < nl; i += gridDim.x) {
    for (int j = threadIdx.x; j < m; j += blockDim.x)
      t2[j] = 0.0, u[j] = 0.0, a[j] = 0.0;
    __syncthreads();
    if (threadIdx.x == 0) { // K B row in K-column order, as on the CPU
      for (int64_t p = kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = bfirst[c]; e < bfirst[c] + bcnt[c]; e++)
          t2[bent_j[e]] = t2[bent_j[e]] + kval[p] * bent_w[e];
      }
      // u = T1a a over the sparse rows, each u[j] summed over e ascending as
      // on the CPU (the dense sum's missing terms were +0)
      if (!first)
        for (int e = 0; e < a_nnz[i]; e++) {
          int l = a_idx[i * capa + e];
          double al = a_w[i * capa + e];
          a[l] = al;
          for (int64_t q = t1p[l]; q < t1p[l + 1]; q++)
            u[t1c[q]] = u[t1c[q]] + t1v[q] * al;
        }
    }
    __syncthreads();
    for (int t = 0; t < fw_iter; t++) {
      double bv = INFINITY;
      int64_t bi = INT64_MAX;
      for (int j = threadIdx.x; j < m; j += blockDim.x) {
        double g = rrt_sc_grad(u[j], t2[j]);
        if (rrt_sc_argmin_better(g, j, bv, bi)) bv = g, bi = j;
      }
      double gv;
      int64_t gi;
      rrt_sc_block_argmin(rv, ri, bv, bi, &gv, &gi);
      int amin = gi == INT64_MAX ? 0 : (int)gi;
      double f = rrt_sc_fw_step(t);
      // one thread per entry: race-free because a T1a row never repeats a
      // column (rrt_sc_gram accumulates each row densely and emits each
      // column once); the emulator's race checker reports a repeat
      // (tests/emu/test_emu_sc_scatter.c)
      for (int64_t q = t1p[amin] + threadIdx.x; q < t1p[amin + 1]; q += blockDim.x)
        row[t1c[q]] = t1v[q];
      __syncthreads();
      for (int j = threadIdx.x; j < m; j += blockDim.x) {
        a[j] = rrt_sc_fw_move(a[j], f, j == amin);
        u[j] = f == 1.0 ? row[j] : u[j] + f * (row[j] - u[j]);
      }
      __syncthreads();
      for (int64_t q = t1p[amin] + threadIdx.x; q < t1p[amin + 1]; q += blockDim.x)
        row[t1c[q]] = 0.0;
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      int nz = 0;
      for (int j = 0; j < m && nz < capa; j++)
        if (a[j] != 0.0) {
          a_idx[i * capa + nz] = j;
          a_w[i * capa + nz] = a[j];
          nz++;
        }
      a_nnz[i] = nz;
    }
    __syncthreads();
  }
}

RRT_KERNEL_API(rrt_k_sc_a_solve)
(rrt_stream stream, int64_t nl, int m, int fw_iter, int capa, const int64_t *kptr,
 const int32_t *kcol, const double *kval, const int32_t *bfirst, const int32_t *bcnt,
 const int32_t *bent_j, const double *bent_w, const int64_t *t1p, const int32_t *t1c,
 const double *t1v, int first, int32_t *a_idx, double *a_w, int *a_nnz, double *scratch) {
  if (nl == 0) return RRT_SUCCESS;
  size_t shmem = (size_t)4 * m * sizeof(double);
  int use_shared = shmem <= 40 * 1024;
  unsigned grid = (unsigned)(nl < 4096 ? nl : 4096);
  RRT_LAUNCH(rrt_sc_a_solve_kernel, grid, SC_THREADS, use_shared ? shmem : 0, stream, nl, m,
             fw_iter, capa, kptr, kcol, kval, bfirst, bcnt, bent_j, bent_w, t1p, t1c, t1v, first,
             a_idx, a_w, a_nnz, scratch, use_shared);
}

// ---- B update: fused gradient + argmin over each block's cells ----------
__global__ void
rrt_sc_b_argmin_kernel(int64_t nl, int64_t c0, int m, const int64_t *kptr, const int32_t *kcol,
                       const double *kval, const int32_t *bfirst, const int32_t *bcnt,
                       const int32_t *bent_j, const double *bent_w, const int32_t *hfirst,
                       const int32_t *hcnt, const int32_t *hent_j, const double *hent_w,
                       const int64_t *t1p, const int32_t *t1c, const double *t1v, double *part_v,
                       int64_t *part_i, double *scratch, int *iscratch) {
  __shared__ int nt_s;
  double *kbg = scratch + (int64_t)blockIdx.x * 3 * m, *kat = kbg + m, *sv = kbg + 2 * m;
  double *bv = part_v + (int64_t)blockIdx.x * m;
  int64_t *bi = part_i + (int64_t)blockIdx.x * m;
  int32_t *touched = iscratch + (int64_t)blockIdx.x * 2 * m;
  unsigned char *mark = (unsigned char *)(touched + m); /* m flags in the block's second m ints */
  int64_t chunk = (nl + gridDim.x - 1) / gridDim.x;
  int64_t lo = (int64_t)blockIdx.x * chunk, hi = lo + chunk < nl ? lo + chunk : nl;
  for (int j = threadIdx.x; j < m; j += blockDim.x)
    kat[j] = 0.0, sv[j] = 0.0, mark[j] = 0, bv[j] = INFINITY, bi[j] = INT64_MAX;
  __syncthreads();
  for (int64_t i = lo; i < hi; i++) {
    if (threadIdx.x == 0) { // sparse K Bg row, in K-column order as on the CPU
      nt_s = rrt_sc_sparse_row(kptr[i], kptr[i + 1], kcol, kval, bfirst, bcnt, bent_j, bent_w, mark,
                               kbg, touched);
      // K A^T row = X_i H, in X-column order as on the CPU (not stored: up to m per cell)
      for (int64_t p = kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = hfirst[c]; e < hfirst[c] + hcnt[c]; e++)
          kat[hent_j[e]] = kat[hent_j[e]] + kval[p] * hent_w[e];
      }
      // s = (K Bg)_i T1b over the sparse rows, each s[j] in touched order as
      // on the CPU (the dense sum's missing terms were +0)
      for (int t = 0; t < nt_s; t++) {
        int32_t l = touched[t];
        for (int64_t q = t1p[l]; q < t1p[l + 1]; q++)
          sv[t1c[q]] = sv[t1c[q]] + kbg[l] * t1v[q];
      }
    }
    __syncthreads();
    int nt = nt_s;
    for (int j = threadIdx.x; j < m; j += blockDim.x) {
      double g = rrt_sc_grad(sv[j], kat[j]);
      if (rrt_sc_argmin_better(g, c0 + i, bv[j], bi[j])) bv[j] = g, bi[j] = c0 + i;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int64_t p = kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = hfirst[c]; e < hfirst[c] + hcnt[c]; e++)
          kat[hent_j[e]] = 0.0;
      }
      for (int t = 0; t < nt; t++) {
        int32_t l = touched[t];
        for (int64_t q = t1p[l]; q < t1p[l + 1]; q++)
          sv[t1c[q]] = 0.0;
        mark[l] = 0;
      }
    }
    __syncthreads();
  }
}

RRT_KERNEL_API(rrt_k_sc_b_argmin)
(rrt_stream stream, int64_t nl, int64_t c0, int m, const int64_t *kptr, const int32_t *kcol,
 const double *kval, const int32_t *bfirst, const int32_t *bcnt, const int32_t *bent_j,
 const double *bent_w, const int32_t *hfirst, const int32_t *hcnt, const int32_t *hent_j,
 const double *hent_w, const int64_t *t1p, const int32_t *t1c, const double *t1v, double *part_v,
 int64_t *part_i, double *scratch, int *iscratch) {
  int64_t nb = (nl + 63) / 64;
  unsigned grid = (unsigned)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
  RRT_LAUNCH(rrt_sc_b_argmin_kernel, grid, SC_THREADS, 0, stream, nl, c0, m, kptr, kcol, kval,
             bfirst, bcnt, bent_j, bent_w, hfirst, hcnt, hent_j, hent_w, t1p, t1c, t1v, part_v,
             part_i, scratch, iscratch);
}

// Second stage: per archetype, the best over the blocks' partials.
__global__ void rrt_sc_argmin_reduce_kernel(int nparts, int m, const double *part_v,
                                            const int64_t *part_i, double *best_v,
                                            int64_t *best_i) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= m) return;
  double v = INFINITY;
  int64_t idx = INT64_MAX;
  for (int p = 0; p < nparts; p++)
    if (rrt_sc_argmin_better(part_v[(int64_t)p * m + j], part_i[(int64_t)p * m + j], v, idx))
      v = part_v[(int64_t)p * m + j], idx = part_i[(int64_t)p * m + j];
  best_v[j] = v;
  best_i[j] = idx;
}

RRT_KERNEL_API(rrt_k_sc_argmin_reduce)
(rrt_stream stream, int nparts, int m, const double *part_v, const int64_t *part_i, double *best_v,
 int64_t *best_i) {
  unsigned grid = (unsigned)((m + SC_THREADS - 1) / SC_THREADS);
  RRT_LAUNCH(rrt_sc_argmin_reduce_kernel, grid, SC_THREADS, 0, stream, nparts, m, part_v, part_i,
             best_v, best_i);
}

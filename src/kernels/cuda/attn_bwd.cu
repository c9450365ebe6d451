/* Ring attention backward kernels: FlashAttention-2's backward with
 * recomputation (P = exp(S - lse) from the forward's lse), f32 SIMT, in the
 * thread layout of the forward (attn_fwd.cu): 32 rows per block, LANES
 * consecutive lanes share one row and lane t owns the head-dimension
 * elements d = t + LANES * u; dot products are summed with xor shuffles, so
 * the lanes of a row hold bitwise the same score. LANES = 4 (128 threads)
 * up to head_dim 128; 8 (256 threads) above, which keeps a thread's four
 * register slices at 128 floats (with 4 lanes they would be 256: spills).
 *
 * Deterministic without atomics: two kernels per item, each output row owned
 * by one block.
 *   dkv: one block per (batch, kv head, tile of 32 keys); its keys' K, V and
 *        dK, dV slices sit in registers while Q, dO, lse and delta stream
 *        through shared memory in tiles of BQ rows, for every query head of
 *        the group in order, then the query rows in order.
 *   dq:  one block per (batch, query head, tile of 32 query rows); its rows'
 *        Q, dO and dQ slices sit in registers while K and V stream through
 *        shared memory in tiles of BK keys, in order.
 * Masking as in the forward: the row mask gives each row one range of
 * visible keys whose ends never decrease down the rows (rrt_attn_item_keys),
 * so a block visits only the query rows / keys its tile can see (found once
 * per block, block-uniform) and tests each pair against its row's range.
 * Rows that saw no key in the forward (lse = -inf) contribute nothing.
 * Template parameters: LANES, DPT = elements per lane (head_dim <= LANES *
 * DPT) and BQ / BK = rows per shared tile (two tiles: 32 KiB at most). */
#include "kernels/simt.h"

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_bwd.h"

namespace {

constexpr int kRows = 32; /* rows (keys for dkv, queries for dq) per block */

/* Sum over the LANES lanes of a row; every lane gets the same bits. */
template <int LANES> static __device__ inline float row_sum(float x) {
  RRT_UNROLL
  for (int m = 1; m < LANES; m <<= 1)
    x += __shfl_xor_sync(0xffffffffu, x, m);
  return x;
}

template <int LANES, int DPT, int BQ>
__global__ void __launch_bounds__(32 * LANES)
    rrt_attn_bwd_dkv_kernel(rrt_attn_bargs a, rrt_attn_item it, int64_t n_ktiles, float *dk,
                            float *dv) {
  constexpr int DM = LANES * DPT, kThreads = LANES * kRows; /* DM: padded head dim of the tiles */
  RRT_DYN_SHARED(float, smem);
  float *qs = smem;                      /* [BQ][DM] */
  float *dos = qs + BQ * DM;             /* [BQ][DM] */
  float *lses = dos + BQ * DM;           /* [BQ] */
  float *dels = lses + BQ;               /* [BQ] */
  int64_t *jbs = (int64_t *)(dels + BQ); /* [BQ] visible keys of each row */
  int64_t *jes = jbs + BQ;               /* [BQ] */
  const rrt_attn_kargs &f = a.f;

  const int tid = (int)threadIdx.x;
  const int row = tid / LANES, lane = tid % LANES;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t kt = blk % n_ktiles;
  const int hk = (int)((blk / n_ktiles) % f.heads_kv);
  const int64_t b = blk / (n_ktiles * f.heads_kv);
  const int G = f.heads_q / f.heads_kv, D = f.head_dim;

  const int64_t j0 = kt * kRows, j = j0 + row; /* key row within the item */
  const int64_t j1 = j0 + kRows < it.k_len ? j0 + kRows : it.k_len;
  const bool active = j < it.k_len;
  const int64_t koff = ((b * f.kv_rows + it.k_begin + j) * f.heads_kv + hk) * (int64_t)D;
  float kr[DPT], vr[DPT], dka[DPT], dva[DPT];
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = lane + LANES * u;
    kr[u] = (active && d < D) ? rrt_am_load(f.k, koff + d, f.dtype) : 0.0f;
    vr[u] = (active && d < D) ? rrt_am_load(f.v, koff + d, f.dtype) : 0.0f;
    dka[u] = dva[u] = 0.0f;
  }
  int64_t ib, ie;
  rrt_attn_rows_seeing(&it, f.mask, j0, j1, &ib, &ie);

  for (int g = 0; g < G; g++) {
    const int h = hk * G + g;
    for (int64_t i0 = ib; i0 < ie; i0 += BQ) {
      const int nq = (int)(ie - i0 < BQ ? ie - i0 : BQ);
      __syncthreads(); /* previous tile fully consumed */
      for (int e = tid; e < BQ * DM; e += kThreads) {
        const int ii = e / DM, d = e % DM;
        float qv = 0.0f, dov = 0.0f;
        if (ii < nq && d < D) {
          const int64_t off =
              ((b * f.q_rows + it.q_begin + i0 + ii) * f.heads_q + h) * (int64_t)D + d;
          qv = rrt_am_load(f.q, off, f.dtype);
          dov = rrt_am_load(a.dout, off, f.dtype);
        }
        qs[e] = qv;
        dos[e] = dov;
      }
      for (int e = tid; e < nq; e += kThreads) {
        const int64_t lrow = (b * f.heads_q + h) * f.q_rows + it.q_begin + i0 + e;
        lses[e] = a.lse[lrow];
        dels[e] = a.delta[lrow];
        rrt_attn_bwd_row_keys(&it, f.mask, lses[e], i0 + e, &jbs[e], &jes[e]);
      }
      __syncthreads();

      for (int ii = 0; ii < nq; ii++) {
        const float *qrow = qs + ii * DM, *dorow = dos + ii * DM;
        float s = 0.0f, dp = 0.0f;
        RRT_UNROLL
        for (int u = 0; u < DPT; u++) {
          s += qrow[lane + LANES * u] * kr[u];
          dp += dorow[lane + LANES * u] * vr[u];
        }
        s = row_sum<LANES>(s);
        dp = row_sum<LANES>(dp);
        if (!active || j < jbs[ii] || j >= jes[ii]) continue;
        float ds;
        const float p = rrt_attn_bwd_pds(s * f.scale, f.softcap, lses[ii], dp, dels[ii], &ds);
        RRT_UNROLL
        for (int u = 0; u < DPT; u++) {
          dva[u] += p * dorow[lane + LANES * u];
          dka[u] += ds * qrow[lane + LANES * u];
        }
      }
    }
  }

  if (!active) return;
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = lane + LANES * u;
    if (d >= D) continue;
    dk[koff + d] += dka[u] * f.scale;
    dv[koff + d] += dva[u];
  }
}

template <int LANES, int DPT, int BK>
__global__ void __launch_bounds__(32 * LANES)
    rrt_attn_bwd_dq_kernel(rrt_attn_bargs a, rrt_attn_item it, int64_t n_qtiles, float *dq) {
  constexpr int DM = LANES * DPT, kThreads = LANES * kRows;
  RRT_DYN_SHARED(float, smem);
  float *ks = smem;           /* [BK][DM] */
  float *vs = smem + BK * DM; /* [BK][DM] */
  const rrt_attn_kargs &f = a.f;

  const int tid = (int)threadIdx.x;
  const int row = tid / LANES, lane = tid % LANES;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t qt = blk % n_qtiles;
  const int h = (int)((blk / n_qtiles) % f.heads_q);
  const int64_t b = blk / (n_qtiles * f.heads_q);
  const int hk = h / (f.heads_q / f.heads_kv), D = f.head_dim;

  const int64_t i_first = qt * kRows, i = i_first + row; /* query row within the item */
  const int64_t i_last = i_first + kRows < it.q_len ? i_first + kRows - 1 : it.q_len - 1;
  const bool active = i < it.q_len;
  const int64_t qoff = ((b * f.q_rows + it.q_begin + i) * f.heads_q + h) * (int64_t)D;
  float qr[DPT], dor[DPT], acc[DPT];
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = lane + LANES * u;
    qr[u] = (active && d < D) ? rrt_am_load(f.q, qoff + d, f.dtype) : 0.0f;
    dor[u] = (active && d < D) ? rrt_am_load(a.dout, qoff + d, f.dtype) : 0.0f;
    acc[u] = 0.0f;
  }
  float lse = rrt_am_neg_inf(), del = 0.0f;
  int64_t jb = 0, je = 0;
  if (active) {
    const int64_t lrow = (b * f.heads_q + h) * f.q_rows + it.q_begin + i;
    lse = a.lse[lrow];
    del = a.delta[lrow];
    rrt_attn_bwd_row_keys(&it, f.mask, lse, i, &jb, &je);
  }
  /* block-uniform: the keys any row of the tile sees */
  int64_t kb, ke;
  rrt_attn_block_keys(&it, f.mask, i_first, i_last, &kb, &ke);

  for (int64_t j0 = kb; j0 < ke; j0 += BK) {
    const int nk = (int)(ke - j0 < BK ? ke - j0 : BK);
    __syncthreads(); /* previous tile fully consumed */
    for (int e = tid; e < BK * DM; e += kThreads) {
      const int jj = e / DM, d = e % DM;
      float kv = 0.0f, vv = 0.0f;
      if (jj < nk && d < D) {
        const int64_t off =
            ((b * f.kv_rows + it.k_begin + j0 + jj) * f.heads_kv + hk) * (int64_t)D + d;
        kv = rrt_am_load(f.k, off, f.dtype);
        vv = rrt_am_load(f.v, off, f.dtype);
      }
      ks[e] = kv;
      vs[e] = vv;
    }
    __syncthreads();

    for (int jj = 0; jj < nk; jj++) {
      const float *krow = ks + jj * DM, *vrow = vs + jj * DM;
      float s = 0.0f, dp = 0.0f;
      RRT_UNROLL
      for (int u = 0; u < DPT; u++) {
        s += qr[u] * krow[lane + LANES * u];
        dp += dor[u] * vrow[lane + LANES * u];
      }
      s = row_sum<LANES>(s);
      dp = row_sum<LANES>(dp);
      const int64_t jg = j0 + jj;
      if (jg < jb || jg >= je) continue;
      float ds;
      rrt_attn_bwd_pds(s * f.scale, f.softcap, lse, dp, del, &ds);
      RRT_UNROLL
      for (int u = 0; u < DPT; u++)
        acc[u] += ds * krow[lane + LANES * u];
    }
  }

  if (!active) return;
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = lane + LANES * u;
    if (d < D) dq[qoff + d] += acc[u] * f.scale;
  }
}

/* One thread per (batch, head, row). */
__global__ void rrt_attn_bwd_delta_kernel(const void *o, const void *dout, int dtype, int64_t batch,
                                          int64_t q_rows, int heads_q, int head_dim, float *delta) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < batch * heads_q * q_rows;
       t += stride) {
    const int64_t i = t % q_rows;
    const int h = (int)((t / q_rows) % heads_q);
    const int64_t b = t / (q_rows * heads_q);
    const int64_t off = ((b * q_rows + i) * heads_q + h) * (int64_t)head_dim;
    delta[t] = rrt_attn_bwd_delta(o, dout, off, head_dim, dtype);
  }
}

__global__ void rrt_attn_accumulate_kernel(float *acc, const float *part, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
    acc[t] += part[t];
}

__global__ void rrt_attn_add_rows_kernel(float *acc, const void *part, int dtype, int64_t rows,
                                         int64_t row0, int64_t nrows, int64_t batch,
                                         int64_t row_elems) {
  const int64_t per_b = nrows * row_elems, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < batch * per_b; t += stride) {
    const int64_t i = (t / per_b * rows + row0) * row_elems + t % per_b;
    acc[i] += rrt_am_load(part, i, dtype);
  }
}

__global__ void rrt_attn_store_rows_kernel(const float *in, int64_t in_rows, void *out,
                                           int64_t out_rows, int64_t batch, int64_t row_elems,
                                           int dtype) {
  const int64_t per_b = out_rows * row_elems, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < batch * per_b; t += stride) {
    const int64_t b = t / per_b;
    rrt_am_store(out, t, dtype, in[b * in_rows * row_elems + t % per_b]);
  }
}

/* Shared bytes of the dkv kernel: Q and dO tiles, lse and delta, key ranges. */
static inline size_t dkv_smem(int dm, int bq) {
  return (size_t)(2 * bq * dm + 2 * bq) * sizeof(float) + 2 * (size_t)bq * sizeof(int64_t);
}

static inline bool grid_ok(int64_t nblocks, int head_dim) {
  return nblocks < ((int64_t)1 << 31) && head_dim >= 1 && head_dim <= 256;
}

} // namespace

/* Tile variants by head_dim (<= 32, 64, 128, 256): LANES, DPT and rows per
 * shared tile, 32 * LANES threads. */
RRT_KERNEL_API(rrt_k_attn_bwd_dkv)
(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item, float *dk, float *dv) {
  const rrt_attn_bargs ba = *a;
  const rrt_attn_item it = *item;
  if (it.q_len <= 0 || it.k_len <= 0) return RRT_SUCCESS;
  const int64_t nkt = (it.k_len + kRows - 1) / kRows;
  const int64_t nblocks = ba.f.batch * ba.f.heads_kv * nkt;
  if (!grid_ok(nblocks, ba.f.head_dim)) return RRT_ERR_INVALID_ARG;
  const unsigned grid = (unsigned)nblocks;
  if (ba.f.head_dim <= 32)
    RRT_LAUNCH((rrt_attn_bwd_dkv_kernel<4, 8, 64>), grid, 4 * kRows, dkv_smem(32, 64), stream, ba,
               it, nkt, dk, dv);
  else if (ba.f.head_dim <= 64)
    RRT_LAUNCH((rrt_attn_bwd_dkv_kernel<4, 16, 64>), grid, 4 * kRows, dkv_smem(64, 64), stream, ba,
               it, nkt, dk, dv);
  else if (ba.f.head_dim <= 128)
    RRT_LAUNCH((rrt_attn_bwd_dkv_kernel<4, 32, 32>), grid, 4 * kRows, dkv_smem(128, 32), stream, ba,
               it, nkt, dk, dv);
  else
    RRT_LAUNCH((rrt_attn_bwd_dkv_kernel<8, 32, 16>), grid, 8 * kRows, dkv_smem(256, 16), stream, ba,
               it, nkt, dk, dv);
}

RRT_KERNEL_API(rrt_k_attn_bwd_dq)
(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item, float *dq) {
  const rrt_attn_bargs ba = *a;
  const rrt_attn_item it = *item;
  if (it.q_len <= 0 || it.k_len <= 0) return RRT_SUCCESS;
  const int64_t nqt = (it.q_len + kRows - 1) / kRows;
  const int64_t nblocks = ba.f.batch * ba.f.heads_q * nqt;
  if (!grid_ok(nblocks, ba.f.head_dim)) return RRT_ERR_INVALID_ARG;
  const unsigned grid = (unsigned)nblocks;
  /* K and V tiles: 2 * BK * LANES * DPT floats, 32 KiB at most */
  if (ba.f.head_dim <= 32)
    RRT_LAUNCH((rrt_attn_bwd_dq_kernel<4, 8, 64>), grid, 4 * kRows, 2 * 64 * 32 * sizeof(float),
               stream, ba, it, nqt, dq);
  else if (ba.f.head_dim <= 64)
    RRT_LAUNCH((rrt_attn_bwd_dq_kernel<4, 16, 64>), grid, 4 * kRows, 2 * 64 * 64 * sizeof(float),
               stream, ba, it, nqt, dq);
  else if (ba.f.head_dim <= 128)
    RRT_LAUNCH((rrt_attn_bwd_dq_kernel<4, 32, 32>), grid, 4 * kRows, 2 * 32 * 128 * sizeof(float),
               stream, ba, it, nqt, dq);
  else
    RRT_LAUNCH((rrt_attn_bwd_dq_kernel<8, 32, 16>), grid, 8 * kRows, 2 * 16 * 256 * sizeof(float),
               stream, ba, it, nqt, dq);
}

RRT_KERNEL_API(rrt_k_attn_bwd_delta)
(rrt_stream stream, const void *o, const void *dout, int dtype, int64_t batch, int64_t q_rows,
 int heads_q, int head_dim, float *delta) {
  const int64_t n = batch * heads_q * q_rows;
  if (n <= 0) return RRT_SUCCESS;
  RRT_LAUNCH(rrt_attn_bwd_delta_kernel, rrt_grid_for(n, 128), 128, 0, stream, o, dout, dtype, batch,
             q_rows, heads_q, head_dim, delta);
}

RRT_KERNEL_API(rrt_k_attn_accumulate)(rrt_stream stream, float *acc, const float *part, int64_t n) {
  if (n <= 0) return RRT_SUCCESS;
  RRT_LAUNCH(rrt_attn_accumulate_kernel, rrt_grid_for(n, 256), 256, 0, stream, acc, part, n);
}

RRT_KERNEL_API(rrt_k_attn_add_rows)
(rrt_stream stream, float *acc, const void *part, int dtype, int64_t rows, int64_t row0,
 int64_t nrows, int64_t batch, int64_t row_elems) {
  const int64_t n = batch * nrows * row_elems;
  if (n <= 0) return RRT_SUCCESS;
  if (row0 < 0 || row0 + nrows > rows) return RRT_ERR_INVALID_ARG;
  RRT_LAUNCH(rrt_attn_add_rows_kernel, rrt_grid_for(n, 256), 256, 0, stream, acc, part, dtype, rows,
             row0, nrows, batch, row_elems);
}

RRT_KERNEL_API(rrt_k_attn_store_rows)
(rrt_stream stream, const float *in, int64_t in_rows, void *out, int64_t out_rows, int64_t batch,
 int64_t row_elems, int dtype) {
  const int64_t n = batch * out_rows * row_elems;
  if (n <= 0) return RRT_SUCCESS;
  if (out_rows > in_rows) return RRT_ERR_INVALID_ARG;
  RRT_LAUNCH(rrt_attn_store_rows_kernel, rrt_grid_for(n, 256), 256, 0, stream, in, in_rows, out,
             out_rows, batch, row_elems, dtype);
}

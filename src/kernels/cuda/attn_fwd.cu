/* Ring attention kernels: tiled local attention with online softmax, the
 * LSE merge of a partial result into the running output, and the small
 * init/store helpers. Written for nvcc and for the SIMT emulator (see
 * src/kernels/emu/cuda_builtins.h for the subset): 128 threads per block, K/V
 * tiles in dynamic shared memory, warp shuffles, no lock-step assumptions.
 *
 * Local attention: one block per (batch, head, tile of 32 query rows).
 * Four consecutive lanes share a query row; lane t4 of the four owns the
 * head-dimension elements d = t4 + 4u, holds that slice of the scaled query
 * and of the f32 accumulator in registers, and the four partial dot
 * products of a score are summed with two xor shuffles (commutative, so all
 * four lanes hold bitwise the same score and the same softmax state).
 * A masked item's row sees one interval of keys (the plan's row mask,
 * rrt_attn_item_keys): the block walks the key tiles from its first row's
 * start to its last row's end (block-uniform), and each row gives
 * probability 0 to the keys of a tile outside its own interval.
 * Template parameters: DPT = elements per lane (head_dim <= 4 * DPT) and
 * BK = keys per shared-memory tile (K and V tiles take 2 * BK * 4 * DPT floats). */
#include "kernels/simt.h"

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_fwd.h"

namespace {

constexpr int kThreads = 128;
constexpr int kRows = kThreads / 4; /* query rows per block */

template <int DPT, int BK>
__global__ void rrt_attn_fwd_kernel(rrt_attn_kargs a, rrt_attn_item it, int64_t n_qtiles,
                                    float *o_part, float *lse_part) {
  constexpr int DM = 4 * DPT; /* padded head dim of the shared tiles */
  RRT_DYN_SHARED(float, smem);
  float *ks = smem;           /* [BK][DM] */
  float *vs = smem + BK * DM; /* [BK][DM] */

  const int tid = (int)threadIdx.x;
  const int row = tid >> 2, t4 = tid & 3;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t qt = blk % n_qtiles;
  const int h = (int)((blk / n_qtiles) % a.heads_q);
  const int64_t b = blk / (n_qtiles * a.heads_q);
  const int hk = h / (a.heads_q / a.heads_kv);
  const int D = a.head_dim;

  const int64_t i = qt * kRows + row; /* query row within the item */
  const bool active = i < it.q_len;
  const int64_t i_last = (qt + 1) * kRows < it.q_len ? (qt + 1) * kRows - 1 : it.q_len - 1;
  /* this row's visible keys (rows past the item take the last row's), and
   * the block's: from the first row's start to the last row's end */
  int64_t jb, je, kb, ke;
  rrt_attn_item_keys(&it, a.mask, active ? i : i_last, &jb, &je);
  rrt_attn_block_keys(&it, a.mask, qt * kRows, i_last, &kb, &ke);

  float qr[DPT], acc[DPT];
  const int64_t qoff = ((b * a.q_rows + it.q_begin + i) * a.heads_q + h) * (int64_t)D;
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = t4 + 4 * u;
    qr[u] = (active && d < D) ? rrt_am_load(a.q, qoff + d, a.dtype) : 0.0f;
    acc[u] = 0.0f;
  }
  float m = rrt_am_neg_inf(), l = 0.0f;

  /* block-uniform walk over the tiles some row of the block sees */
  for (int64_t j0 = kb; j0 < ke; j0 += BK) {
    const int nk = (int)(ke - j0 < BK ? ke - j0 : BK);
    int vb, ve; /* this row's visible keys of the tile */
    rrt_attn_tile_span(jb, je, j0, nk, &vb, &ve);

    __syncthreads(); /* previous tile fully consumed */
    for (int e = tid; e < BK * DM; e += kThreads) {
      const int jj = e / DM, d = e % DM;
      float kv = 0.0f, vv = 0.0f;
      if (jj < nk && d < D) {
        const int64_t off =
            ((b * a.kv_rows + it.k_begin + j0 + jj) * a.heads_kv + hk) * (int64_t)D + d;
        kv = rrt_am_load(a.k, off, a.dtype);
        vv = rrt_am_load(a.v, off, a.dtype);
      }
      ks[e] = kv;
      vs[e] = vv;
    }
    __syncthreads();

    float s[BK];
    float mx = rrt_am_neg_inf();
    RRT_UNROLL
    for (int jj = 0; jj < BK; jj++) {
      float part = 0.0f;
      RRT_UNROLL
      for (int u = 0; u < DPT; u++)
        part += qr[u] * ks[jj * DM + t4 + 4 * u];
      part += __shfl_xor_sync(0xffffffffu, part, 1);
      part += __shfl_xor_sync(0xffffffffu, part, 2);
      s[jj] = rrt_attn_score(part * a.scale, a.softcap);
      if (jj >= vb && jj < ve) mx = s[jj] > mx ? s[jj] : mx;
    }
    const float alpha = rrt_attn_rescale(&m, mx);
    float sum = 0.0f;
    RRT_UNROLL
    for (int jj = 0; jj < BK; jj++) {
      /* masked keys never go through exp: probability 0 whatever the score */
      s[jj] = jj >= vb && jj < ve ? rrt_attn_prob(s[jj], m) : 0.0f;
      sum += s[jj];
    }
    l = l * alpha + sum;
    /* The bound is the constant BK, not nk: a loop to nk indexes s[] with a
     * run-time value and puts it in local memory (4 * BK bytes of stack per
     * thread, -Xptxas -v); unrolled to BK with the keys past nk skipped, s
     * stays in registers and every sum is the same as before. */
    RRT_UNROLL
    for (int u = 0; u < DPT; u++) {
      float x = acc[u] * alpha;
      RRT_UNROLL
      for (int jj = 0; jj < BK; jj++)
        if (jj < nk) x += s[jj] * vs[jj * DM + t4 + 4 * u];
      acc[u] = x;
    }
  }

  if (!active) return;
  float inv_l;
  const float lse = rrt_attn_finish(m, l, &inv_l);
  float *o = o_part + ((b * it.q_len + i) * a.heads_q + h) * (int64_t)D;
  RRT_UNROLL
  for (int u = 0; u < DPT; u++) {
    const int d = t4 + 4 * u;
    if (d < D) o[d] = acc[u] * inv_l;
  }
  if (t4 == 0) lse_part[(b * a.heads_q + h) * it.q_len + i] = lse;
}

/* One thread per (batch, head, row): the coefficients depend on the row only. */
__global__ void rrt_attn_merge_kernel(int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                                      int64_t q_begin, int64_t q_len, const void *o_part,
                                      int part_dtype, const float *lse_part, float *o, float *lse) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= batch * heads_q * q_len) return;
  const int64_t i = t % q_len;
  const int h = (int)((t / q_len) % heads_q);
  const int64_t b = t / (q_len * heads_q);
  float *lr = lse + (b * heads_q + h) * q_rows + q_begin + i;
  float ca, cb;
  *lr = rrt_attn_merge_coef(*lr, lse_part[(b * heads_q + h) * q_len + i], &ca, &cb);
  float *orow = o + ((b * q_rows + q_begin + i) * heads_q + h) * (int64_t)head_dim;
  const int64_t prow = ((b * q_len + i) * heads_q + h) * (int64_t)head_dim;
  for (int d = 0; d < head_dim; d++)
    orow[d] = orow[d] * ca + rrt_am_load(o_part, prow + d, part_dtype) * cb;
}

__global__ void rrt_attn_init_kernel(float *o, int64_t n_o, float *lse, int64_t n_lse) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n_o || t < n_lse;
       t += stride) {
    if (t < n_o) o[t] = 0.0f;
    if (t < n_lse) lse[t] = rrt_am_neg_inf();
  }
}

/* One thread per (batch, head, row), as the merge. */
__global__ void rrt_attn_final_rows_kernel(int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                                           const float *sinks, float *o, float *lse) {
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= batch * heads_q * q_rows) return;
  const int64_t i = t % q_rows, bh = t / q_rows, h = bh % heads_q, b = bh / heads_q;
  const float c = rrt_attn_end_row(&lse[t], sinks, (int)h);
  if (c == 1.0f) return;
  float *row = o + ((b * q_rows + i) * heads_q + h) * (int64_t)head_dim;
  for (int d = 0; d < head_dim; d++)
    row[d] *= c;
}

__global__ void rrt_attn_store_kernel(const float *in, void *out, int dtype, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
    rrt_am_store(out, t, dtype, in[t]);
}

static inline unsigned grid_for(int64_t n, int threads) {
  int64_t g = (n + threads - 1) / threads;
  if (g < 1) g = 1;
  return (unsigned)(g < 65535 * 16 ? g : 65535 * 16);
}

} // namespace

RRT_KERNEL_API(rrt_k_attn_fwd)
(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item, float *o_part,
 float *lse_part) {
  const rrt_attn_kargs ka = *a;
  const rrt_attn_item it = *item;
  if (it.q_len <= 0) return RRT_SUCCESS;
  const int64_t nqt = (it.q_len + kRows - 1) / kRows;
  const int64_t nblocks = ka.batch * ka.heads_q * nqt;
  if (nblocks >= ((int64_t)1 << 31) || ka.head_dim > 256 || ka.head_dim < 1)
    return RRT_ERR_INVALID_ARG;
  const unsigned grid = (unsigned)nblocks;
  /* K and V tiles: 2 * BK * 4 * DPT floats = 32 KiB (16 KiB for DPT 8) */
  if (ka.head_dim <= 32)
    RRT_LAUNCH((rrt_attn_fwd_kernel<8, 64>), grid, kThreads, 2 * 64 * 32 * sizeof(float), stream,
               ka, it, nqt, o_part, lse_part);
  else if (ka.head_dim <= 64)
    RRT_LAUNCH((rrt_attn_fwd_kernel<16, 64>), grid, kThreads, 2 * 64 * 64 * sizeof(float), stream,
               ka, it, nqt, o_part, lse_part);
  else if (ka.head_dim <= 128)
    RRT_LAUNCH((rrt_attn_fwd_kernel<32, 32>), grid, kThreads, 2 * 32 * 128 * sizeof(float), stream,
               ka, it, nqt, o_part, lse_part);
  else
    RRT_LAUNCH((rrt_attn_fwd_kernel<64, 16>), grid, kThreads, 2 * 16 * 256 * sizeof(float), stream,
               ka, it, nqt, o_part, lse_part);
}

RRT_KERNEL_API(rrt_k_attn_merge)
(rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows, int64_t q_begin,
 int64_t q_len, const void *o_part, int part_dtype, const float *lse_part, float *o, float *lse) {
  const int64_t n = batch * heads_q * q_len;
  if (n <= 0) return RRT_SUCCESS;
  const int64_t g = (n + 127) / 128;
  if (g >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  RRT_LAUNCH(rrt_attn_merge_kernel, (unsigned)g, 128, 0, stream, batch, heads_q, head_dim, q_rows,
             q_begin, q_len, o_part, part_dtype, lse_part, o, lse);
}

RRT_KERNEL_API(rrt_k_attn_init)
(rrt_stream stream, float *o, int64_t n_o, float *lse, int64_t n_lse) {
  const int64_t n = n_o > n_lse ? n_o : n_lse;
  if (n <= 0) return RRT_SUCCESS;
  RRT_LAUNCH(rrt_attn_init_kernel, grid_for(n, 256), 256, 0, stream, o, n_o, lse, n_lse);
}

RRT_KERNEL_API(rrt_k_attn_final_rows)
(rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows, const float *sinks,
 float *o, float *lse) {
  const int64_t n = batch * heads_q * q_rows;
  if (n <= 0) return RRT_SUCCESS;
  const int64_t g = (n + 127) / 128;
  if (g >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  RRT_LAUNCH(rrt_attn_final_rows_kernel, (unsigned)g, 128, 0, stream, batch, heads_q, head_dim,
             q_rows, sinks, o, lse);
}

RRT_KERNEL_API(rrt_k_attn_store)
(rrt_stream stream, const float *in, void *out, int dtype, int64_t n) {
  if (n <= 0) return RRT_SUCCESS;
  RRT_LAUNCH(rrt_attn_store_kernel, grid_for(n, 256), 256, 0, stream, in, out, dtype, n);
}

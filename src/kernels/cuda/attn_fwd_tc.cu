/* Local attention forward on tensor cores (FlashAttention-2 style) for bf16
 * and f16 storage, written inside the tensor-core subset of tc_prims.h so
 * that the emulator runs it in CI. Same contract as rrt_k_attn_fwd
 * (attn_fwd.cu, the SIMT kernel and the reference for f32): normalised f32
 * o_part and lse_part of one item, fully masked rows 0 and -inf, the row
 * mask of the item (rrt_attn_item_keys) applied as there.
 *
 * One block = kWarps warps = kBQ query rows of one (batch, head); each warp
 * owns 16 rows. The block's Q tile and double-buffered K/V tiles of BK keys
 * sit in dynamic shared memory (rows padded by 8 elements, 16 bytes, so the
 * ldmatrix rows of one 8x8 matrix fall in distinct banks) and are filled
 * with cp.async (16 bytes a copy; rows past the item are zeroed with plain
 * stores, so that 0 * V never meets a stale NaN). Tile t + 1 is in flight
 * while tile t is computed: one commit group per tile, wait_group 1, then a
 * barrier; a second barrier ends the tile before its buffer is refilled.
 *
 * Per warp and tile: S = Q K^T by mma.m16n8k16 (A = Q from ldmatrix.x4, B =
 * K rows from ldmatrix.x2, f32 accumulate), scaled in f32, masked by the
 * rows' visible keys (keys outside give probability 0 and never reach exp),
 * online softmax in f32 registers with the helpers of attn_math.h (the four
 * lanes of a quad hold a row's columns; max and sum over the quad by xor
 * shuffles, so all four hold bitwise the same m and l); then P, rounded to
 * the storage type, times V (ldmatrix.x2.trans) into the f32 accumulator.
 * l sums the unrounded f32 probabilities (as the SIMT kernel), so the LSE
 * does not see the rounding of P; the output's error from it is at most one
 * rounding of P (2^-9 bf16, 2^-11 f16) relative, times max |V| (docs/attn.md).
 * Tiles outside the block's keys are never loaded; a warp skips the tiles
 * outside its own rows' keys (fully masked for it).
 *
 * With MERGE the epilogue also does rrt_k_attn_merge's work: it reads the
 * running f32 (o, lse) of its rows and writes the merged result in place
 * of the partial, with the same operations in the same order (bitwise the
 * merge kernel's result where contraction is off, as in the emulator build;
 * nvcc contracts this file, -fmad=true, so on a GPU up to an ulp apart).
 *
 * Template parameters: DMAX = head_dim bound of the register arrays (64, 128,
 * 256; head_dim is any multiple of 16 up to it), BK = keys per tile, BF16 =
 * the storage type (bf16, else f16), MERGE as above. */
#include "kernels/simt.h"

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_fwd.h"
#include "kernels/cuda/attn_tc.h"

namespace {

constexpr int kWarps = RRT_TC_WARPS;
constexpr int kThreads = 32 * kWarps;
constexpr int kBQ = RRT_TC_FWD_ROWS; /* query rows per block: 16 a warp */
static_assert(kBQ == 16 * kWarps, "a warp owns 16 query rows");

/* Max and sum over the four lanes of a quad (the lanes holding one row of
 * an accumulator tile): every lane gets the same bits. */
__device__ float tc_quad_max(float x) {
  float o = __shfl_xor_sync(0xffffffffu, x, 1);
  x = o > x ? o : x;
  o = __shfl_xor_sync(0xffffffffu, x, 2);
  return o > x ? o : x;
}

__device__ float tc_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

/* Without MERGE out/lse_out are o_part [batch, q_len, heads_q, D] and
 * lse_part [batch, heads_q, q_len]; with MERGE the running o [batch,
 * q_rows, heads_q, D] and lse [batch, heads_q, q_rows]. */
template <int DMAX, int BK, bool BF16, bool MERGE>
__global__ void rrt_attn_fwd_tc_kernel(rrt_attn_kargs a, rrt_attn_item it, int64_t n_qtiles,
                                       float *out, float *lse_out) {
  constexpr int NB = BK / 8;   /* key columns of 8 in S */
  constexpr int ND = DMAX / 8; /* head-dim columns of 8 in O */
  RRT_DYN_SHARED(uint16_t, smem);
  const int D = a.head_dim, DP = D + kTcPad, chunks = D / 8;
  uint16_t *qs = smem;             /* [kBQ][DP] */
  uint16_t *ks = qs + kBQ * DP;    /* [2][BK][DP] */
  uint16_t *vs = ks + 2 * BK * DP; /* [2][BK][DP] */

  const int tid = (int)threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t qt = blk % n_qtiles;
  const int h = (int)((blk / n_qtiles) % a.heads_q);
  const int64_t b = blk / (n_qtiles * a.heads_q);
  const int hk = h / (a.heads_q / a.heads_kv);

  /* the block's keys, then the warp's and its lanes' two rows' */
  const int64_t q0 = qt * kBQ;
  const int64_t i_last = q0 + kBQ < it.q_len ? q0 + kBQ - 1 : it.q_len - 1;
  int64_t kb, ke;
  rrt_attn_block_keys(&it, a.mask, q0, i_last, &kb, &ke);
  const int64_t w0 = q0 + 16 * warp;
  const bool warp_live = w0 < it.q_len;
  int64_t wkb = 0, wke = 0;
  if (warp_live)
    rrt_attn_block_keys(&it, a.mask, w0, w0 + 15 < it.q_len ? w0 + 15 : it.q_len - 1, &wkb, &wke);
  int64_t jb[2], je[2];
  RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t i = w0 + g + 8 * r;
    rrt_attn_item_keys(&it, a.mask, i < it.q_len ? i : i_last, &jb[r], &je[r]);
  }

  const uint16_t *qg = static_cast<const uint16_t *>(a.q) +
                       ((b * a.q_rows + it.q_begin + q0) * a.heads_q + h) * (int64_t)D;
  const int64_t kst = (int64_t)a.heads_kv * D; /* elements between key rows */
  const int64_t kvoff = ((b * a.kv_rows + it.k_begin) * a.heads_kv + hk) * (int64_t)D;
  const uint16_t *kg = static_cast<const uint16_t *>(a.k) + kvoff;
  const uint16_t *vg = static_cast<const uint16_t *>(a.v) + kvoff;
  const int64_t ntiles = ke > kb ? (ke - kb + BK - 1) / BK : 0;

  /* group 0: the Q tile and K/V tile 0 */
  const int64_t qvalid = it.q_len - q0 < kBQ ? it.q_len - q0 : kBQ;
  tc_load_rows(qs, DP, qg, (int64_t)a.heads_q * D, (int)qvalid, kBQ, chunks, tid, kThreads);
  if (ntiles > 0) {
    const int nk = (int)(ke - kb < BK ? ke - kb : BK);
    tc_load_rows(ks, DP, kg + kb * kst, kst, nk, BK, chunks, tid, kThreads);
    tc_load_rows(vs, DP, vg + kb * kst, kst, nk, BK, chunks, tid, kThreads);
  }
  rrt_cp_async_commit();

  float o[ND][4];
  RRT_UNROLL
  for (int nd = 0; nd < ND; nd++)
    o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
  float m[2] = {rrt_am_neg_inf(), rrt_am_neg_inf()}, l[2] = {0.0f, 0.0f};

  for (int64_t tt = 0; tt < ntiles; tt++) {
    const int64_t j0 = kb + tt * BK;
    const int nk = (int)(ke - j0 < BK ? ke - j0 : BK);
    if (tt + 1 < ntiles) { /* the next tile into the other buffer */
      const int64_t j1 = j0 + BK;
      const int nk1 = (int)(ke - j1 < BK ? ke - j1 : BK);
      const int nb1 = (int)((tt + 1) & 1);
      tc_load_rows(ks + nb1 * BK * DP, DP, kg + j1 * kst, kst, nk1, BK, chunks, tid, kThreads);
      tc_load_rows(vs + nb1 * BK * DP, DP, vg + j1 * kst, kst, nk1, BK, chunks, tid, kThreads);
    }
    rrt_cp_async_commit();
    rrt_cp_async_wait<1>(); /* this thread's copies of tile tt landed */
    __syncthreads();        /* and every thread's */

    const uint16_t *kt = ks + (int)(tt & 1) * BK * DP;
    const uint16_t *vt = vs + (int)(tt & 1) * BK * DP;
    /* warp-uniform: skip a tile none of the warp's rows sees */
    if (warp_live && j0 < wke && j0 + nk > wkb) {
      float s[NB][4];
      RRT_UNROLL
      for (int nb = 0; nb < NB; nb++)
        s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
      tc_rows_times_rows_t<NB, DMAX, BF16>(s, qs, 16 * warp, kt, nk, DP, D, lane);

      /* online softmax of the lane's two rows (g and g + 8) */
      int vb[2], ve[2];
      float mx[2] = {rrt_am_neg_inf(), rrt_am_neg_inf()};
      RRT_UNROLL
      for (int r = 0; r < 2; r++)
        rrt_attn_tile_span(jb[r], je[r], j0, nk, &vb[r], &ve[r]);
      RRT_UNROLL
      for (int nb = 0; nb < NB; nb++)
        RRT_UNROLL
      for (int c = 0; c < 4; c++) {
        const int r = c >> 1, jj = 8 * nb + 2 * t + (c & 1);
        s[nb][c] = rrt_attn_score(s[nb][c] * a.scale, a.softcap);
        if (jj >= vb[r] && jj < ve[r]) mx[r] = s[nb][c] > mx[r] ? s[nb][c] : mx[r];
      }
      float alpha[2], sum[2] = {0.0f, 0.0f};
      RRT_UNROLL
      for (int r = 0; r < 2; r++)
        alpha[r] = rrt_attn_rescale(&m[r], tc_quad_max(mx[r]));
      RRT_UNROLL
      for (int nb = 0; nb < NB; nb++)
        RRT_UNROLL
      for (int c = 0; c < 4; c++) {
        const int r = c >> 1, jj = 8 * nb + 2 * t + (c & 1);
        /* masked keys never go through exp: probability 0 whatever the score */
        s[nb][c] = jj >= vb[r] && jj < ve[r] ? rrt_attn_prob(s[nb][c], m[r]) : 0.0f;
        sum[r] += s[nb][c];
      }
      RRT_UNROLL
      for (int r = 0; r < 2; r++)
        l[r] = l[r] * alpha[r] + tc_quad_sum(sum[r]);
      RRT_UNROLL
      for (int nd = 0; nd < ND; nd++) {
        o[nd][0] *= alpha[0], o[nd][1] *= alpha[0];
        o[nd][2] *= alpha[1], o[nd][3] *= alpha[1];
      }

      /* O += P V: P leaves the registers only as the A fragments */
      tc_weights_times_rows<NB, ND, BF16>(o, s, vt, nk, DP, 0, D, lane);
    }
    __syncthreads(); /* tile tt consumed before its buffer is refilled */
  }
  rrt_cp_async_wait_all(); /* nothing left in flight (no tiles: the Q copies) */

  RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t i = w0 + g + 8 * r;
    const bool valid = i < it.q_len;
    float inv_l;
    float lse = rrt_attn_finish(m[r], l[r], &inv_l);
    /* rows of the item (partial) or of the running state (merged) */
    const int64_t orow_i = MERGE ? (b * a.q_rows + it.q_begin + i) : (b * it.q_len + i);
    const int64_t lse_i =
        (b * a.heads_q + h) * (MERGE ? a.q_rows : it.q_len) + (MERGE ? it.q_begin : 0) + i;
    float ca = 0.0f, cb = 1.0f;
    if (MERGE) {
      /* every lane of the quad reads the running lse before lane 0 writes it */
      const float old = valid ? lse_out[lse_i] : 0.0f;
      __syncwarp();
      if (valid) lse = rrt_attn_merge_coef(old, lse, &ca, &cb);
    }
    if (!valid) continue;
    float *orow = out + (orow_i * a.heads_q + h) * (int64_t)D;
    RRT_UNROLL
    for (int nd = 0; nd < ND; nd++) {
      if (8 * nd >= D) break;
      RRT_UNROLL
      for (int c = 0; c < 2; c++) {
        const float x = o[nd][2 * r + c] * inv_l; /* the partial, as o_part holds it */
        float *y = &orow[8 * nd + 2 * t + c];
        *y = MERGE ? *y * ca + x * cb : x;
      }
    }
    if (t == 0) lse_out[lse_i] = lse;
  }
}

template <int DMAX, int BK, bool BF16, bool MERGE>
rrt_status tc_launch(rrt_stream stream, const rrt_attn_kargs &ka, const rrt_attn_item &it,
                     int64_t nqt, unsigned grid, float *out, float *lse_out) {
  static std::atomic<unsigned long long> opted{0};
  const size_t most = rrt_attn_fwd_tc_smem(BK, DMAX);
  const rrt_status st =
      tc_opt_in(rrt_attn_fwd_tc_kernel<DMAX, BK, BF16, MERGE>, "rrt_attn_fwd_tc_kernel",
                most < ka.smem_optin ? most : ka.smem_optin, opted);
  if (st != RRT_SUCCESS) return st;
  RRT_LAUNCH((rrt_attn_fwd_tc_kernel<DMAX, BK, BF16, MERGE>), grid, kThreads,
             rrt_attn_fwd_tc_smem(BK, ka.head_dim), stream, ka, it, nqt, out, lse_out);
}

/* Shared memory (attn_tc_tiles.h): 45 KiB (64), 85 KiB (128), 99 KiB (256),
 * within every tensor-core arch's opt-in. */
template <bool BF16, bool MERGE>
rrt_status tc_dispatch(rrt_stream stream, const rrt_attn_kargs &ka, const rrt_attn_item &it,
                       int64_t nqt, unsigned grid, float *out, float *lse_out) {
  if (ka.head_dim <= 64)
    return tc_launch<64, 64, BF16, MERGE>(stream, ka, it, nqt, grid, out, lse_out);
  if (ka.head_dim <= 128)
    return tc_launch<128, 64, BF16, MERGE>(stream, ka, it, nqt, grid, out, lse_out);
  return tc_launch<256, 32, BF16, MERGE>(stream, ka, it, nqt, grid, out, lse_out);
}

} // namespace

/* Both wrappers: one launch of the kernel with or without the merge. */
template <bool MERGE>
static rrt_status tc_run(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item,
                         float *out, float *lse_out) {
  const rrt_attn_kargs ka = *a;
  const rrt_attn_item it = *item;
  if (!rrt_attn_tc_supported(&ka)) return RRT_ERR_INVALID_ARG;
  if (it.q_len <= 0) return RRT_SUCCESS;
  const int64_t nqt = (it.q_len + kBQ - 1) / kBQ;
  const int64_t nblocks = ka.batch * ka.heads_q * nqt;
  if (nblocks >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  if (ka.dtype == RRT_AM_BF16)
    return tc_dispatch<true, MERGE>(stream, ka, it, nqt, (unsigned)nblocks, out, lse_out);
  return tc_dispatch<false, MERGE>(stream, ka, it, nqt, (unsigned)nblocks, out, lse_out);
}

RRT_KERNEL_API(rrt_k_attn_fwd_tc)
(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item, float *o_part,
 float *lse_part) {
  return tc_run<false>(stream, a, item, o_part, lse_part);
}

RRT_KERNEL_API(rrt_k_attn_fwd_tc_merge)
(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item, float *o, float *lse) {
  return tc_run<true>(stream, a, item, o, lse);
}

/* Local attention forward on tensor cores (FlashAttention-2's schedule)
 * for bf16 and f16 storage, written inside the tensor-core subset of
 * tc_prims.h so that the emulator runs it in CI. Same contract as
 * rrt_k_attn_fwd (attn_fwd.cu, the SIMT kernel and the reference for f32):
 * normalised f32 o_part and lse_part of one item, fully masked rows 0 and
 * -inf, the row mask of the item (rrt_attn_item_keys) applied as there.
 *
 * One block = kWarps warps = BQ query rows of one (batch, head); each warp
 * owns MT 16-row mma tiles (MT = 2, 128-row blocks, up to head_dim 128; 1
 * at 256), so every K or V fragment read by ldmatrix feeds MT x 2 mma. The
 * Q tile and one K and one V tile of kBK keys sit in dynamic shared memory
 * (rows padded by 8 elements, 16 bytes, so the ldmatrix rows of one 8x8
 * matrix fall in distinct banks), filled with cp.async (16 bytes a copy;
 * rows past the item zeroed with plain stores, so that 0 * V never meets a
 * stale NaN). As in FlashAttention-2 the copies overlap the two products:
 * V of tile t loads while S = Q K^T of tile t is computed, K of tile t + 1
 * while O += P V is; each wait_group 0 is followed by a barrier, which also
 * tells that every warp is done with the buffer about to be refilled.
 *
 * Per warp and tile: S = Q K^T by mma.m16n8k16 (A = Q and B = K from
 * ldmatrix.x4, f32 accumulate; tc_score: where a per-element score
 * transform goes); only on a tile that the warp's rows' key ranges cut (a
 * mask edge, the item's ragged last tile) the keys outside a row's range
 * become -inf (tc_mask): a full tile has no per-element test. Online
 * softmax in f32 registers, the max on raw scores, p = 2^(s scale log2 e -
 * m scale log2 e) by one FFMA and one ex2.approx (the quad's four lanes
 * hold a row's columns; max and sum over the quad by xor shuffles, so all
 * four hold bitwise the same m and l); P rounded to the storage type by cvt.rn.bf16x2/f16x2,
 * times V (ldmatrix.x4.trans) into the f32 accumulator. l sums the
 * unrounded f32 probabilities (as the SIMT kernel), so the LSE does not
 * see the rounding of P; the output's error from it is at most one
 * rounding of P (2^-9 bf16, 2^-11 f16) relative, times max |V|
 * (docs/attn.md). Tiles outside the block's keys are never loaded; a warp
 * skips the tiles outside its own rows' keys (fully masked for it).
 *
 * With MERGE the epilogue also does rrt_k_attn_merge's work: it reads the
 * running f32 (o, lse) of its rows and writes the merged result in place
 * of the partial, with the same operations in the same order (bitwise the
 * merge kernel's result where contraction is off, as in the emulator build;
 * nvcc contracts this file, -fmad=true, so on a GPU up to an ulp apart).
 *
 * Template parameters: DMAX = head_dim bound of the register arrays (64, 128,
 * 256; head_dim is any multiple of 16 up to it), MT = 16-row mma tiles a
 * warp, BF16 = the storage type (bf16, else f16), MERGE as above. */
#include "kernels/simt.h"

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_fwd.h"
#include "kernels/cuda/attn_tc.h"

namespace {

constexpr int kWarps = RRT_TC_WARPS;
constexpr int kThreads = 32 * kWarps;
constexpr int kBK = RRT_TC_FWD_KEYS; /* keys a tile */
constexpr float kLog2e = 1.44269504088896340736f;
#if defined(RRT_TC_SASS_STEADY)
/* bench/tc_sass.py's static count only (wrong results): every tile taken
 * as full, so the main loop's SASS is the path a full tile runs */
constexpr bool kSteady = true;
#else
constexpr bool kSteady = false;
#endif

/* d = a b + c (tc_prims.h) in the storage type. */
template <bool BF16>
__device__ void tc_mma_c(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
  if (BF16)
    rrt_mma_m16n8k16_bf16(d, a, b, c);
  else
    rrt_mma_m16n8k16_f16(d, a, b, c);
}

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

/* Rows [0, ROWS) of a K or V tile by cp.async, the row's first `chunks`
 * 16-byte chunks of its DMAX / 8; with FULL every row is valid (no test a
 * chunk), else rows from nvalid on are zeroed. kThreads is a multiple of
 * DMAX / 8, so a thread's chunk column is the same in every step. */
template <int ROWS, int DMAX, bool FULL>
__device__ void tc_load_tile(uint16_t *dst, const uint16_t *src, int64_t stride, int nvalid,
                             int chunks, int tid) {
  constexpr int CH = DMAX / 8, DP = DMAX + kTcPad, STEP = kThreads / CH;
  static_assert(kThreads % CH == 0 && ROWS % STEP == 0, "whole steps of the block");
  const int c = tid % CH, r0 = tid / CH;
  if (c >= chunks) return;
  uint16_t *d = dst + r0 * DP + 8 * c;
  const uint16_t *g = src + r0 * stride + 8 * c;
  RRT_UNROLL
  for (int i = 0; i < ROWS / STEP; i++, g += STEP * stride) {
    if (FULL || r0 + i * STEP < nvalid) {
      rrt_cp_async_cg16(d + i * STEP * DP, g);
    } else {
      uint32_t *z = reinterpret_cast<uint32_t *>(d + i * STEP * DP);
      z[0] = z[1] = z[2] = z[3] = 0u;
    }
  }
}

/* The tile of nk keys from key j0 (kBK keys but at the item's end). */
template <int DMAX>
__device__ void tc_load_kv(uint16_t *dst, const uint16_t *src, int64_t stride, int nk, int chunks,
                           int tid) {
  if (kSteady || nk == kBK)
    tc_load_tile<kBK, DMAX, true>(dst, src, stride, nk, chunks, tid);
  else
    tc_load_tile<kBK, DMAX, false>(dst, src, stride, nk, chunks, tid);
}

/* s = Q K^T for the warp's MT x 16 query rows (tile qs from row x0) and
 * the tile's kBK keys (ks), over the head dim d < D in steps of 16: per
 * step one ldmatrix.x4 of Q a row tile and one of K a pair of key blocks,
 * each K fragment used by MT mma. */
template <int MT, int DMAX, bool BF16>
__device__ void tc_qk(float s[MT][kBK / 8][4], const uint16_t *qs, int x0, const uint16_t *ks,
                      int D, int lane) {
  constexpr int dp = DMAX + kTcPad;
  const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f}; /* C of the first step: no zeroing of s */
  if (DMAX >= 128) RRT_UNROLL
  for (int mt = 0; mt < MT; mt++)
    RRT_UNROLL
  for (int nb = 0; nb < kBK / 8; nb++)
    s[mt][nb][0] = s[mt][nb][1] = s[mt][nb][2] = s[mt][nb][3] = 0.0f;
  RRT_UNROLL
  for (int kk = 0; kk < DMAX / 16; kk++) {
    if (16 * kk >= D) break;
    uint32_t qa[MT][4];
    RRT_UNROLL
    for (int mt = 0; mt < MT; mt++)
      rrt_ldmatrix_x4(qa[mt], qs + (x0 + 16 * mt + (lane & 15)) * dp + 16 * kk + 8 * (lane >> 4));
    RRT_UNROLL
    for (int np = 0; np < kBK / 16; np++) {
      uint32_t kf[4]; /* B of key blocks 2np (kf[0..1]) and 2np + 1 (kf[2..3]) */
      rrt_ldmatrix_x4(kf, ks + (16 * np + (lane & 7) + 8 * (lane >> 4)) * dp + 16 * kk +
                              8 * ((lane >> 3) & 1));
      RRT_UNROLL
      for (int mt = 0; mt < MT; mt++) {
        float *s0 = s[mt][2 * np], *s1 = s[mt][2 * np + 1];
        tc_mma_c<BF16>(s0, qa[mt], kf, kk == 0 && DMAX < 128 ? zero : s0);
        tc_mma_c<BF16>(s1, qa[mt], kf + 2, kk == 0 && DMAX < 128 ? zero : s1);
      }
    }
  }
}

/* o += P V for the warp's rows: P as the A fragments pa (kBK / 16 key
 * steps), V the tile vs, over the head-dim column pairs below D; one
 * ldmatrix.x4.trans of V a (key step, 16 columns), used by MT x 2 mma. */
template <int MT, int DMAX, bool BF16>
__device__ void tc_pv(float o[MT][DMAX / 8][4], const uint32_t pa[MT][kBK / 16][4],
                      const uint16_t *vs, int D, int lane) {
  constexpr int dp = DMAX + kTcPad;
  RRT_UNROLL
  for (int np = 0; np < DMAX / 16; np++) {
    if (16 * np >= D) break;
    RRT_UNROLL
    for (int kk = 0; kk < kBK / 16; kk++) {
      uint32_t vf[4]; /* B of columns 16np.. (vf[0..1]) and 16np + 8.. (vf[2..3]) */
      rrt_ldmatrix_x4_trans(vf, vs + (16 * kk + (lane & 15)) * dp + 16 * np + 8 * (lane >> 4));
      RRT_UNROLL
      for (int mt = 0; mt < MT; mt++) {
        tc_mma<BF16>(o[mt][2 * np], pa[mt][kk], vf);
        tc_mma<BF16>(o[mt][2 * np + 1], pa[mt][kk], vf + 2);
      }
    }
  }
}

/* The per-element score hook. Scores stay raw (q . k): the row max is
 * taken on them and the scale goes into the exponent, p = 2^(s * scale *
 * log2 e - m * scale * log2 e), one FFMA and one ex2.approx an element (as
 * FlashAttention-2). With softcap (attn_math.h's rrt_attn_score, as every
 * kernel) a score is scaled and capped here instead, and the exponent's
 * factor (sl2) is then log2 e. */
__device__ float tc_score(float s, float scale, float softcap) {
  return rrt_attn_score(s * scale, softcap);
}

/* Keys outside the visible range of each of the lane's rows become -inf:
 * probability 0, never the row's max. Only on tiles the warp's key ranges
 * cut. rb/re: the rows' ranges relative to the block's first key, j0r:
 * the tile's first key relative to it (int32: tc_run refuses longer items). */
template <int MT>
__device__ void tc_mask(float s[MT][kBK / 8][4], const int rb[2 * MT], const int re[2 * MT],
                        int j0r, int nk, int t) {
  RRT_UNROLL
  for (int R = 0; R < 2 * MT; R++) {
    int vb = rb[R] - j0r, ve = re[R] - j0r;
    vb = vb < 0 ? 0 : vb > nk ? nk : vb;
    ve = ve < vb ? vb : ve > nk ? nk : ve;
    RRT_UNROLL
    for (int nb = 0; nb < kBK / 8; nb++)
      RRT_UNROLL
    for (int c = 0; c < 2; c++) {
      const int jj = 8 * nb + 2 * t + c;
      if (jj < vb || jj >= ve) s[R >> 1][nb][2 * (R & 1) + c] = rrt_am_neg_inf();
    }
  }
}

/* The online-softmax step of one row: the running max m (of raw scores)
 * becomes max(m, tile_max); returns exp(scale * (m_old - m_new)) =
 * 2^(sl2 (m_old - m_new)), which rescales the old sum and accumulator
 * (rrt_attn_rescale's rules: 0 while m is -inf, a NaN on either side makes
 * m and the factor NaN). */
__device__ float tc_rescale2(float *m, float tile_max, float sl2) {
  const float m_old = *m;
  float m_new = tile_max > m_old ? tile_max : m_old;
  if (tile_max != tile_max) m_new = tile_max;
  *m = m_new;
  if (m_new == rrt_am_neg_inf()) return 0.0f;
  return rrt_ex2_approx((m_old - m_new) * sl2);
}

/* Softmax of a tile of raw scores for the lane's 2 MT rows: s becomes
 * p = 2^(s sl2 - m sl2) (a -inf score gives 0, also while m is -inf: m
 * sl2 then counts as 0; NaN stays NaN, +inf against m = +inf gives NaN as
 * in a float64 softmax), m, l and the accumulator o are updated. The row
 * max by fmaxf, which like the SIMT kernel's compare passes a NaN over. */
template <int MT, int ND>
__device__ void tc_softmax(float s[MT][kBK / 8][4], float m[2 * MT], float l[2 * MT],
                           float o[MT][ND][4], float sl2) {
  RRT_UNROLL
  for (int mt = 0; mt < MT; mt++)
    RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int R = 2 * mt + r;
    float mx = rrt_am_neg_inf();
    RRT_UNROLL
    for (int nb = 0; nb < kBK / 8; nb++)
      mx = fmaxf(mx, fmaxf(s[mt][nb][2 * r], s[mt][nb][2 * r + 1]));
    const float alpha = tc_rescale2(&m[R], tc_quad_max(mx), sl2);
    const float ms = m[R] == rrt_am_neg_inf() ? 0.0f : m[R] * sl2;
    float sum = 0.0f;
    RRT_UNROLL
    for (int nb = 0; nb < kBK / 8; nb++)
      RRT_UNROLL
    for (int c = 0; c < 2; c++) {
      float &x = s[mt][nb][2 * r + c];
      x = rrt_ex2_approx(fmaf(x, sl2, -ms));
      sum += x;
    }
    l[R] = l[R] * alpha + tc_quad_sum(sum);
    RRT_UNROLL
    for (int nd = 0; nd < ND; nd++)
      o[mt][nd][2 * r] *= alpha, o[mt][nd][2 * r + 1] *= alpha;
  }
}

/* Without MERGE out/lse_out are o_part [batch, q_len, heads_q, D] and
 * lse_part [batch, heads_q, q_len]; with MERGE the running o [batch,
 * q_rows, heads_q, D] and lse [batch, heads_q, q_rows]. The lane's rows
 * w0 + 16 mt + g + 8 r of the item, m the max of their raw scores. */
template <int MT, int DMAX, bool MERGE>
__device__ void tc_store(const rrt_attn_kargs &a, const rrt_attn_item &it, int64_t b, int h,
                         int64_t w0, const float o[MT][DMAX / 8][4], const float m[2 * MT],
                         const float l[2 * MT], int g, int t, float *out, float *lse_out) {
  const int D = a.head_dim;
  RRT_UNROLL
  for (int mt = 0; mt < MT; mt++)
    RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t i = w0 + 16 * mt + g + 8 * r;
    const bool valid = i < it.q_len;
    float inv_l;
    /* with softcap the scores, and so the max, are already scaled */
    const float mscale = a.softcap > 0.0f ? 1.0f : a.scale;
    float lse = rrt_attn_finish(m[2 * mt + r] * mscale, l[2 * mt + r], &inv_l);
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
    for (int nd = 0; nd < DMAX / 8; nd++) {
      if (8 * nd >= D) break;
      RRT_UNROLL
      for (int c = 0; c < 2; c++) {
        const float x = o[mt][nd][2 * r + c] * inv_l; /* the partial, as o_part holds it */
        float *y = &orow[8 * nd + 2 * t + c];
        *y = MERGE ? *y * ca + x * cb : x;
      }
    }
    if (t == 0) lse_out[lse_i] = lse;
  }
}

template <int DMAX, int MT, bool BF16, bool MERGE>
__global__ void __launch_bounds__(kThreads, 2)
    rrt_attn_fwd_tc_kernel(rrt_attn_kargs a, rrt_attn_item it, int64_t n_qtiles, float *out,
                           float *lse_out) {
  constexpr int BQ = 16 * MT * kWarps; /* query rows of the block */
  constexpr int ND = DMAX / 8;         /* head-dim columns of 8 in O */
  RRT_DYN_SHARED(uint16_t, smem);
  constexpr int DP = DMAX + kTcPad; /* a compile-time row stride: immediate ldmatrix offsets */
  const int D = a.head_dim, chunks = D / 8;
  uint16_t *qs = smem;         /* [BQ][DP] */
  uint16_t *ks = qs + BQ * DP; /* [kBK][DP] */
  uint16_t *vs = ks + kBK * DP;

  const int tid = (int)threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t qt = blk % n_qtiles;
  const int h = (int)((blk / n_qtiles) % a.heads_q);
  const int64_t b = blk / (n_qtiles * a.heads_q);
  const int hk = h / (a.heads_q / a.heads_kv);

  /* the block's keys [kb, ke); the union [wkb, wke) and the intersection
   * [wib, wie) of the warp's rows' ranges (both ends nondecreasing in the
   * row): a tile inside the intersection is full for every row. In the
   * loop keys count from kb, in int32 (tc_run refuses longer items), so
   * that fewer registers stay live beside S and O. */
  const int64_t q0 = qt * BQ;
  const int64_t i_last = q0 + BQ < it.q_len ? q0 + BQ - 1 : it.q_len - 1;
  int64_t kb, ke;
  rrt_attn_block_keys(&it, a.mask, q0, i_last, &kb, &ke);
  const int64_t w0 = q0 + 16 * MT * warp;
  const bool warp_live = w0 < it.q_len;
  int64_t wkb = 0, wke = 0, wib = 0, wie = 0;
  if (warp_live) {
    rrt_attn_item_keys(&it, a.mask, w0, &wkb, &wie);
    rrt_attn_item_keys(&it, a.mask, w0 + 16 * MT - 1 < i_last ? w0 + 16 * MT - 1 : i_last, &wib,
                       &wke);
  }

  const uint16_t *qg = static_cast<const uint16_t *>(a.q) +
                       ((b * a.q_rows + it.q_begin + q0) * a.heads_q + h) * (int64_t)D;
  const int64_t kst = (int64_t)a.heads_kv * D; /* elements between key rows */
  const int64_t kvoff = ((b * a.kv_rows + it.k_begin) * a.heads_kv + hk) * (int64_t)D;
  const uint16_t *kg = static_cast<const uint16_t *>(a.k) + kvoff;
  const uint16_t *vg = static_cast<const uint16_t *>(a.v) + kvoff;
  const int nkeys = (int)(ke - kb);
  const int uwb = (int)(wkb - kb), uwe = (int)(wke - kb); /* the warp's union */
  const int iwb = (int)(wib - kb), iwe = (int)(wie - kb); /* its intersection */
  const uint16_t *kb_g = kg + kb * kst, *vb_g = vg + kb * kst;
  /* the lane's rows' key ranges relative to kb (rows past the item take
   * the last row's), for tc_mask: 4 MT registers, not the item's fields */
  int rb[2 * MT], re[2 * MT];
  RRT_UNROLL
  for (int R = 0; R < 2 * MT; R++) {
    const int64_t i = w0 + 16 * (R >> 1) + g + 8 * (R & 1);
    int64_t jb, je;
    rrt_attn_item_keys(&it, a.mask, i < i_last ? i : i_last, &jb, &je);
    rb[R] = (int)(jb - kb);
    re[R] = (int)(je > jb ? je - kb : jb - kb);
  }

  /* first group: the Q tile and K of tile 0 */
  const int64_t qvalid = it.q_len - q0 < BQ ? it.q_len - q0 : BQ;
  tc_load_rows(qs, DP, qg, (int64_t)a.heads_q * D, (int)qvalid, BQ, chunks, tid, kThreads);
  if (nkeys > 0) tc_load_kv<DMAX>(ks, kb_g, kst, nkeys < kBK ? nkeys : kBK, chunks, tid);
  rrt_cp_async_commit();

  float o[MT][ND][4];
  RRT_UNROLL
  for (int mt = 0; mt < MT; mt++)
    RRT_UNROLL
  for (int nd = 0; nd < ND; nd++)
    o[mt][nd][0] = o[mt][nd][1] = o[mt][nd][2] = o[mt][nd][3] = 0.0f;
  float m[2 * MT], l[2 * MT];
  RRT_UNROLL
  for (int R = 0; R < 2 * MT; R++)
    m[R] = rrt_am_neg_inf(), l[R] = 0.0f;
  const bool capped = a.softcap > 0.0f; /* scores scaled and capped first: sl2 = log2 e */
  const float sl2 = capped ? kLog2e : a.scale * kLog2e;

  for (int j0 = 0; j0 < nkeys; j0 += kBK) { /* the tile's first key, from kb */
    const int nk = nkeys - j0 < kBK ? nkeys - j0 : kBK;
    rrt_cp_async_wait<0>(); /* this thread's copies of K (and Q) landed */
    __syncthreads();        /* every thread's; every warp is done with V of the tile before */
    tc_load_kv<DMAX>(vs, vb_g + j0 * kst, kst, nk, chunks, tid);
    rrt_cp_async_commit();

    /* warp-uniform: skip a tile none of the warp's rows sees */
    const bool live = warp_live && j0 < uwe && j0 + nk > uwb;
    uint32_t pa[MT][kBK / 16][4];
    if (live) {
      float s[MT][kBK / 8][4];
      tc_qk<MT, DMAX, BF16>(s, qs, 16 * MT * warp, ks, D, lane);
      if (capped) /* block-uniform: the uncapped loop has no per-element work here */
        RRT_UNROLL
      for (int mt = 0; mt < MT; mt++)
        RRT_UNROLL
      for (int nb = 0; nb < kBK / 8; nb++)
        RRT_UNROLL
      for (int c = 0; c < 4; c++)
        s[mt][nb][c] = tc_score(s[mt][nb][c], a.scale, a.softcap);
      if (!kSteady && !(nk == kBK && j0 >= iwb && j0 + kBK <= iwe)) /* a tile the ranges cut */
        tc_mask<MT>(s, rb, re, j0, nk, t);
      tc_softmax<MT, ND>(s, m, l, o, sl2);
      RRT_UNROLL
      for (int mt = 0; mt < MT; mt++)
        RRT_UNROLL
      for (int kk = 0; kk < kBK / 16; kk++)
        tc_acc_to_a<BF16>(s[mt][2 * kk], s[mt][2 * kk + 1], pa[mt][kk]);
    }

    rrt_cp_async_wait<0>(); /* this thread's copies of V landed */
    __syncthreads();        /* every thread's; every warp is done with K of this tile */
    const int j1 = j0 + kBK;
    if (j1 < nkeys) {
      tc_load_kv<DMAX>(ks, kb_g + j1 * kst, kst, nkeys - j1 < kBK ? nkeys - j1 : kBK, chunks, tid);
      rrt_cp_async_commit();
    }
    if (live) tc_pv<MT, DMAX, BF16>(o, pa, vs, D, lane);
  }
  rrt_cp_async_wait_all(); /* nothing left in flight (no tiles: the Q copies) */

  tc_store<MT, DMAX, MERGE>(a, it, b, h, w0, o, m, l, g, t, out, lse_out);
}

template <int DMAX, int MT, bool BF16, bool MERGE>
rrt_status tc_launch(rrt_stream stream, const rrt_attn_kargs &ka, const rrt_attn_item &it,
                     float *out, float *lse_out) {
  static std::atomic<unsigned long long> opted{0};
  constexpr int BQ = 16 * MT * kWarps;
  const int64_t nqt = (it.q_len + BQ - 1) / BQ;
  const int64_t nblocks = ka.batch * ka.heads_q * nqt;
  if (nblocks >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  const size_t most = rrt_attn_fwd_tc_smem(DMAX);
  const rrt_status st =
      tc_opt_in(rrt_attn_fwd_tc_kernel<DMAX, MT, BF16, MERGE>, "rrt_attn_fwd_tc_kernel",
                most < ka.smem_optin ? most : ka.smem_optin, opted);
  if (st != RRT_SUCCESS) return st;
  RRT_LAUNCH((rrt_attn_fwd_tc_kernel<DMAX, MT, BF16, MERGE>), (unsigned)nblocks, kThreads, most,
             stream, ka, it, nqt, out, lse_out);
}

/* Blocks of rrt_attn_fwd_tc_rows rows (attn_tc_tiles.h): 128 up to the
 * 128 bound, 64 at 256. */
template <bool BF16, bool MERGE>
rrt_status tc_dispatch(rrt_stream stream, const rrt_attn_kargs &ka, const rrt_attn_item &it,
                       float *out, float *lse_out) {
  if (ka.head_dim <= 64) return tc_launch<64, 2, BF16, MERGE>(stream, ka, it, out, lse_out);
  if (ka.head_dim <= 128) return tc_launch<128, 2, BF16, MERGE>(stream, ka, it, out, lse_out);
  return tc_launch<256, 1, BF16, MERGE>(stream, ka, it, out, lse_out);
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
  if (it.k_len > INT32_MAX - kBK) { /* the kernel's key offsets in a block are int32 */
    rrt_launch_note("rrt_attn_fwd_tc_kernel", "an item of 2^31 keys or more (int32 key offsets)");
    return RRT_ERR_INVALID_ARG;
  }
  if (ka.dtype == RRT_AM_BF16) return tc_dispatch<true, MERGE>(stream, ka, it, out, lse_out);
  return tc_dispatch<false, MERGE>(stream, ka, it, out, lse_out);
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

/* Ring attention backward on tensor cores (FlashAttention-2's backward with
 * recomputation) for bf16 and f16 storage, in the tensor-core subset of
 * tc_prims.h so that the emulator runs it in CI. Same contract as the SIMT
 * kernels of attn_bwd.cu (the reference for f32, and for these kernels in
 * the tests): two kernels per item, each output element owned by one lane
 * that sums its terms in a fixed order (no atomics, bitwise repeatable), the
 * row mask of the item applied through rrt_attn_item_keys, rows that saw no
 * key in the forward (lse = -inf) contributing nothing.
 *
 *   dkv: one block per (batch, kv head, tile of keys); each warp owns 16
 *        keys (and, above head_dim 128, half of the head dim: DSPLIT = 2
 *        warps share the keys and recompute their scores, so that a lane's
 *        dK and dV accumulators stay at 128 floats). K and V of the block
 *        are loaded once; Q, dO, lse, delta and the rows' visible keys of
 *        every query head of the group, then every query row in tiles of
 *        BQ, stream through double-buffered shared memory (cp.async, one
 *        commit group a tile, as the forward). Per warp and tile:
 *        S^T = K Q^T and dP^T = V dO^T (mma.m16n8k16, f32 accumulate),
 *        P^T = exp(S^T scale - lse) and dS^T = P^T (dP^T - delta) in f32 on
 *        the visible pairs (exact zeros elsewhere; attn_math.h), then
 *        dV += P^T dO and dK += dS^T Q with P^T and dS^T rounded to the
 *        storage type as the A operand (dO and Q by ldmatrix.trans).
 *   dq:  one block per (batch, query head, 64 query rows), 16 rows a warp;
 *        K and V stream through double-buffered tiles of BK keys. S = Q K^T,
 *        dP = dO V^T, dS as above, dQ += dS K (K by ldmatrix.trans).
 * dK and dQ are scaled once, when they are added out. The rounding of P and
 * dS to the storage type is the only error beyond the SIMT kernels' f32
 * sums (docs/attn.md gives the bound the tests check). Non-finite values:
 * as the cpu kernel's tile products, a non-finite Q, dO or K element
 * reaches, through the exact 0 of a hidden pair, gradients of pairs that
 * share its tile: never hidden, sometimes wider than the reference.
 * Template parameters: DMAX = head_dim bound of the register arrays (64,
 * 128, 256; head_dim any multiple of 16 up to it), BQ / BK = rows of a
 * streamed tile, BF16 = the storage type (bf16, else f16). */
#include "kernels/simt.h"

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_bwd.h"
#include "kernels/cuda/attn_tc.h"

namespace {

constexpr int kWarps = RRT_TC_WARPS;
constexpr int kThreads = 32 * kWarps;
constexpr int kDqRows = RRT_TC_DQ_ROWS; /* query rows of a dq block: 16 a warp */
static_assert(kDqRows == 16 * kWarps, "a warp owns 16 query rows");

constexpr float kLog2e = 1.44269504088896340736f;

/* P = exp(s scale - lse) of a visible pair as 2^(s sl2 - lse2), sl2 =
 * scale log2 e and lse2 = lse log2 e: one FFMA and one ex2.approx (as the
 * forward), in place of rrt_attn_bwd_prob's expf; callers never pass a row
 * whose lse is -inf (its keys are empty, rrt_attn_bwd_row_keys). */
__device__ float tc_bwd_prob(float s, float sl2, float lse2) {
  return rrt_ex2_approx(fmaf(s, sl2, -lse2));
}

/* P and dS of a visible pair from its raw score s. With softcap (cap > 0,
 * attn_math.h) the score is scaled and capped first and dS takes the cap's
 * derivative, as rrt_attn_bwd_pds; the exponent stays the base-2 one. */
__device__ float tc_bwd_pds(float s, float sl2, float lse2, float scale, float cap, float dp,
                            float del, float *ds) {
  float g = 1.0f;
  if (cap > 0.0f) {
    s = rrt_attn_softcap_bwd(s * scale, cap, &g);
    sl2 = kLog2e;
  }
  const float p = tc_bwd_prob(s, sl2, lse2);
  *ds = cap > 0.0f ? rrt_attn_bwd_dscore(p, dp, del) * g : rrt_attn_bwd_dscore(p, dp, del);
  return p;
}

template <int N> __device__ void tc_zero(float acc[N][4]) {
  RRT_UNROLL
  for (int n = 0; n < N; n++)
    acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
}

/* ---- dK, dV ------------------------------------------------------------------- */

/* What the blocks of one dkv launch share, and where a block's query tiles
 * (head g of the group, rows [i0, i0 + nq)) come from. */
struct dkv_tiles {
  int64_t b, ib, ie, nqt; /* batch entry; rows seeing the block's keys; tiles per head */
  int hk, G;
  __device__ void tile(int64_t tt, int bq, int *h, int64_t *i0, int *nq) const {
    *h = hk * G + (int)(tt / nqt);
    *i0 = ib + (tt % nqt) * bq;
    *nq = (int)(ie - *i0 < bq ? ie - *i0 : bq);
  }
};

/* Query tile tt into buffer `buf`: Q and dO rows by cp.async, and the rows'
 * lse, delta and visible keys by plain stores (empty past the tile's rows). */
template <int BQ>
__device__ void dkv_load_tile(const rrt_attn_bargs &a, const rrt_attn_item &it, const dkv_tiles &tl,
                              int64_t tt, uint16_t *qs, uint16_t *dos, int64_t *jbs, int64_t *jes,
                              float *lses, float *dels, int dp, int tid) {
  const rrt_attn_kargs &f = a.f;
  int h, nq;
  int64_t i0;
  tl.tile(tt, BQ, &h, &i0, &nq);
  const int64_t off = ((tl.b * f.q_rows + it.q_begin + i0) * f.heads_q + h) * (int64_t)f.head_dim;
  const int64_t stride = (int64_t)f.heads_q * f.head_dim;
  const int chunks = f.head_dim / 8;
  tc_load_rows(qs, dp, static_cast<const uint16_t *>(f.q) + off, stride, nq, BQ, chunks, tid,
               kThreads);
  tc_load_rows(dos, dp, static_cast<const uint16_t *>(a.dout) + off, stride, nq, BQ, chunks, tid,
               kThreads);
  for (int e = tid; e < BQ; e += kThreads) {
    float lse = rrt_am_neg_inf(), del = 0.0f;
    int64_t jb = 0, je = 0;
    if (e < nq) {
      const int64_t lrow = (tl.b * f.heads_q + h) * f.q_rows + it.q_begin + i0 + e;
      lse = a.lse[lrow];
      del = a.delta[lrow];
      rrt_attn_bwd_row_keys(&it, f.mask, lse, i0 + e, &jb, &je);
    }
    lses[e] = lse;
    dels[e] = del;
    jbs[e] = jb;
    jes[e] = je;
  }
}

template <int DMAX, int BQ, bool BF16, int DSPLIT>
__global__ void rrt_attn_bwd_dkv_tc_kernel(rrt_attn_bargs a, rrt_attn_item it, int64_t n_ktiles,
                                           float *dk, float *dv) {
  constexpr int NQ = BQ / 8;                /* query columns of 8 in S^T */
  constexpr int NDW = DMAX / 8 / DSPLIT;    /* head-dim columns of 8 a warp owns */
  constexpr int BKV = 16 * kWarps / DSPLIT; /* keys of a block */
  RRT_DYN_SHARED(uint16_t, smem);
  const rrt_attn_kargs &f = a.f;
  const int D = f.head_dim, DP = D + kTcPad, chunks = D / 8;
  uint16_t *ks = smem;                                           /* [BKV][DP] */
  uint16_t *vs = ks + BKV * DP;                                  /* [BKV][DP] */
  uint16_t *qs = vs + BKV * DP;                                  /* [2][BQ][DP] */
  uint16_t *dos = qs + 2 * BQ * DP;                              /* [2][BQ][DP] */
  int64_t *jbs = reinterpret_cast<int64_t *>(dos + 2 * BQ * DP); /* [2][BQ] */
  int64_t *jes = jbs + 2 * BQ;                                   /* [2][BQ] */
  float *lses = reinterpret_cast<float *>(jes + 2 * BQ);         /* [2][BQ] */
  float *dels = lses + 2 * BQ;                                   /* [2][BQ] */

  const int tid = (int)threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int kw = warp / DSPLIT, nd0 = (warp % DSPLIT) * NDW;
  const int64_t blk = (int64_t)blockIdx.x;
  dkv_tiles tl;
  const int64_t kt = blk % n_ktiles;
  tl.hk = (int)((blk / n_ktiles) % f.heads_kv);
  tl.b = blk / (n_ktiles * f.heads_kv);
  tl.G = f.heads_q / f.heads_kv;

  const int64_t j0 = kt * BKV, j1 = j0 + BKV < it.k_len ? j0 + BKV : it.k_len;
  const int64_t wj0 = j0 + 16 * kw, wj1 = wj0 + 16 < it.k_len ? wj0 + 16 : it.k_len;
  const bool warp_live = wj0 < it.k_len;
  rrt_attn_rows_seeing(&it, f.mask, j0, j1, &tl.ib, &tl.ie);
  tl.nqt = tl.ie > tl.ib ? (tl.ie - tl.ib + BQ - 1) / BQ : 0;
  const int64_t ntiles = tl.G * tl.nqt;

  /* group 0: the block's K and V, and query tile 0 */
  const int64_t kst = (int64_t)f.heads_kv * D;
  const int64_t kvoff = ((tl.b * f.kv_rows + it.k_begin + j0) * f.heads_kv + tl.hk) * (int64_t)D;
  tc_load_rows(ks, DP, static_cast<const uint16_t *>(f.k) + kvoff, kst, (int)(j1 - j0), BKV, chunks,
               tid, kThreads);
  tc_load_rows(vs, DP, static_cast<const uint16_t *>(f.v) + kvoff, kst, (int)(j1 - j0), BKV, chunks,
               tid, kThreads);
  if (ntiles > 0) dkv_load_tile<BQ>(a, it, tl, 0, qs, dos, jbs, jes, lses, dels, DP, tid);
  rrt_cp_async_commit();

  float dka[NDW][4], dva[NDW][4];
  tc_zero<NDW>(dka);
  tc_zero<NDW>(dva);
  for (int64_t tt = 0; tt < ntiles; tt++) {
    const int buf = (int)(tt & 1), nbuf = buf ^ 1;
    if (tt + 1 < ntiles) /* the next tile into the other buffer */
      dkv_load_tile<BQ>(a, it, tl, tt + 1, qs + nbuf * BQ * DP, dos + nbuf * BQ * DP,
                        jbs + nbuf * BQ, jes + nbuf * BQ, lses + nbuf * BQ, dels + nbuf * BQ, DP,
                        tid);
    rrt_cp_async_commit();
    rrt_cp_async_wait<1>(); /* this thread's copies of tile tt landed */
    __syncthreads();        /* and every thread's, and the plain stores */

    int h, nq;
    int64_t i0, tkb, tke;
    tl.tile(tt, BQ, &h, &i0, &nq);
    rrt_attn_block_keys(&it, f.mask, i0, i0 + nq - 1, &tkb, &tke);
    /* warp-uniform: skip a tile whose rows see none of the warp's keys */
    if (warp_live && wj0 < tke && wj1 > tkb) {
      const uint16_t *qt = qs + buf * BQ * DP, *dot = dos + buf * BQ * DP;
      const int64_t *tjb = jbs + buf * BQ, *tje = jes + buf * BQ;
      const float *tlse = lses + buf * BQ, *tdel = dels + buf * BQ;
      float s[NQ][4], dp[NQ][4]; /* S^T, dP^T: keys g, g + 8 of the warp x queries */
      tc_zero<NQ>(s);
      tc_zero<NQ>(dp);
      tc_rows_times_rows_t<NQ, DMAX, BF16>(s, ks, 16 * kw, qt, nq, DP, D, lane);
      tc_rows_times_rows_t<NQ, DMAX, BF16>(dp, vs, 16 * kw, dot, nq, DP, D, lane);
      const float sl2 = f.scale * kLog2e;
      RRT_UNROLL
      for (int n = 0; n < NQ; n++)
        RRT_UNROLL
      for (int c = 0; c < 4; c++) {
        const int64_t j = wj0 + g + 8 * (c >> 1);
        const int ii = 8 * n + 2 * t + (c & 1);
        float p = 0.0f, ds = 0.0f; /* hidden pairs: exact zeros, never through exp */
        if (j < it.k_len && j >= tjb[ii] && j < tje[ii]) {
          p = tc_bwd_pds(s[n][c], sl2, tlse[ii] * kLog2e, f.scale, f.softcap, dp[n][c], tdel[ii],
                         &ds);
        }
        s[n][c] = p;
        dp[n][c] = ds;
      }
      tc_weights_times_rows<NQ, NDW, BF16>(dva, s, dot, nq, DP, nd0, D, lane);
      tc_weights_times_rows<NQ, NDW, BF16>(dka, dp, qt, nq, DP, nd0, D, lane);
    }
    __syncthreads(); /* tile tt consumed before its buffer is refilled */
  }
  rrt_cp_async_wait_all(); /* nothing left in flight */

  RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t j = wj0 + g + 8 * r;
    if (j >= it.k_len) continue;
    const int64_t off = ((tl.b * f.kv_rows + it.k_begin + j) * f.heads_kv + tl.hk) * (int64_t)D;
    RRT_UNROLL
    for (int nd = 0; nd < NDW; nd++) {
      if (8 * (nd0 + nd) >= D) break;
      RRT_UNROLL
      for (int c = 0; c < 2; c++) {
        const int64_t e = off + 8 * (nd0 + nd) + 2 * t + c;
        dk[e] += dka[nd][2 * r + c] * f.scale;
        dv[e] += dva[nd][2 * r + c];
      }
    }
  }
}

/* ---- dQ ------------------------------------------------------------------------ */

template <int DMAX, int BK, bool BF16>
__global__ void rrt_attn_bwd_dq_tc_kernel(rrt_attn_bargs a, rrt_attn_item it, int64_t n_qtiles,
                                          float *dq) {
  constexpr int NB = BK / 8;   /* key columns of 8 in S */
  constexpr int ND = DMAX / 8; /* head-dim columns of 8 in dQ */
  RRT_DYN_SHARED(uint16_t, smem);
  const rrt_attn_kargs &f = a.f;
  const int D = f.head_dim, DP = D + kTcPad, chunks = D / 8;
  uint16_t *qs = smem;               /* [kDqRows][DP] */
  uint16_t *dos = qs + kDqRows * DP; /* [kDqRows][DP] */
  uint16_t *ks = dos + kDqRows * DP; /* [2][BK][DP] */
  uint16_t *vs = ks + 2 * BK * DP;   /* [2][BK][DP] */

  const int tid = (int)threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int64_t blk = (int64_t)blockIdx.x;
  const int64_t qt = blk % n_qtiles;
  const int h = (int)((blk / n_qtiles) % f.heads_q);
  const int64_t b = blk / (n_qtiles * f.heads_q);
  const int hk = h / (f.heads_q / f.heads_kv);

  /* the block's keys, the warp's, and its lanes' two rows' (with lse, delta) */
  const int64_t q0 = qt * kDqRows;
  const int64_t i_last = q0 + kDqRows < it.q_len ? q0 + kDqRows - 1 : it.q_len - 1;
  int64_t kb, ke;
  rrt_attn_block_keys(&it, f.mask, q0, i_last, &kb, &ke);
  const int64_t w0 = q0 + 16 * warp;
  const bool warp_live = w0 < it.q_len;
  int64_t wkb = 0, wke = 0;
  if (warp_live)
    rrt_attn_block_keys(&it, f.mask, w0, w0 + 15 < it.q_len ? w0 + 15 : it.q_len - 1, &wkb, &wke);
  int64_t jb[2] = {0, 0}, je[2] = {0, 0};
  float lse[2], del[2] = {0.0f, 0.0f};
  RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t i = w0 + g + 8 * r;
    lse[r] = rrt_am_neg_inf();
    if (i >= it.q_len) continue;
    const int64_t lrow = (b * f.heads_q + h) * f.q_rows + it.q_begin + i;
    lse[r] = a.lse[lrow];
    del[r] = a.delta[lrow];
    rrt_attn_bwd_row_keys(&it, f.mask, lse[r], i, &jb[r], &je[r]);
  }

  const int64_t qoff = ((b * f.q_rows + it.q_begin + q0) * f.heads_q + h) * (int64_t)D;
  const int64_t kst = (int64_t)f.heads_kv * D;
  const int64_t kvoff = ((b * f.kv_rows + it.k_begin) * f.heads_kv + hk) * (int64_t)D;
  const uint16_t *kg = static_cast<const uint16_t *>(f.k) + kvoff;
  const uint16_t *vg = static_cast<const uint16_t *>(f.v) + kvoff;
  const int64_t ntiles = ke > kb ? (ke - kb + BK - 1) / BK : 0;

  /* group 0: the Q and dO tiles and K/V tile 0 */
  const int qvalid = (int)(it.q_len - q0 < kDqRows ? it.q_len - q0 : kDqRows);
  const int64_t qst = (int64_t)f.heads_q * D;
  tc_load_rows(qs, DP, static_cast<const uint16_t *>(f.q) + qoff, qst, qvalid, kDqRows, chunks, tid,
               kThreads);
  tc_load_rows(dos, DP, static_cast<const uint16_t *>(a.dout) + qoff, qst, qvalid, kDqRows, chunks,
               tid, kThreads);
  if (ntiles > 0) {
    const int nk = (int)(ke - kb < BK ? ke - kb : BK);
    tc_load_rows(ks, DP, kg + kb * kst, kst, nk, BK, chunks, tid, kThreads);
    tc_load_rows(vs, DP, vg + kb * kst, kst, nk, BK, chunks, tid, kThreads);
  }
  rrt_cp_async_commit();

  const float sl2 = f.scale * kLog2e;
  const float lse2[2] = {lse[0] * kLog2e, lse[1] * kLog2e}; /* used only where finite */
  float acc[ND][4];
  tc_zero<ND>(acc);
  for (int64_t tt = 0; tt < ntiles; tt++) {
    const int64_t jt = kb + tt * BK;
    const int nk = (int)(ke - jt < BK ? ke - jt : BK);
    if (tt + 1 < ntiles) { /* the next tile into the other buffer */
      const int64_t j1 = jt + BK;
      const int nk1 = (int)(ke - j1 < BK ? ke - j1 : BK);
      const int nb1 = (int)((tt + 1) & 1);
      tc_load_rows(ks + nb1 * BK * DP, DP, kg + j1 * kst, kst, nk1, BK, chunks, tid, kThreads);
      tc_load_rows(vs + nb1 * BK * DP, DP, vg + j1 * kst, kst, nk1, BK, chunks, tid, kThreads);
    }
    rrt_cp_async_commit();
    rrt_cp_async_wait<1>(); /* this thread's copies of tile tt landed */
    __syncthreads();        /* and every thread's */

    if (warp_live && jt < wke && jt + nk > wkb) {
      const uint16_t *kt = ks + (int)(tt & 1) * BK * DP;
      const uint16_t *vt = vs + (int)(tt & 1) * BK * DP;
      float s[NB][4], dp[NB][4];
      tc_zero<NB>(s);
      tc_zero<NB>(dp);
      tc_rows_times_rows_t<NB, DMAX, BF16>(s, qs, 16 * warp, kt, nk, DP, D, lane);
      tc_rows_times_rows_t<NB, DMAX, BF16>(dp, dos, 16 * warp, vt, nk, DP, D, lane);
      int vb[2], ve[2];
      RRT_UNROLL
      for (int r = 0; r < 2; r++)
        rrt_attn_tile_span(jb[r], je[r], jt, nk, &vb[r], &ve[r]);
      /* a tile every row of the warp sees whole: no per-element test */
      const bool full =
          __all_sync(0xffffffffu, vb[0] == 0 && ve[0] == BK && vb[1] == 0 && ve[1] == BK);
      if (full) {
        RRT_UNROLL
        for (int n = 0; n < NB; n++)
          RRT_UNROLL
        for (int c = 0; c < 4; c++)
          tc_bwd_pds(s[n][c], sl2, lse2[c >> 1], f.scale, f.softcap, dp[n][c], del[c >> 1],
                     &s[n][c]);
      } else {
        RRT_UNROLL
        for (int n = 0; n < NB; n++)
          RRT_UNROLL
        for (int c = 0; c < 4; c++) {
          const int r = c >> 1, jj = 8 * n + 2 * t + (c & 1);
          float ds = 0.0f; /* hidden pairs: exact zeros, never through exp */
          if (jj >= vb[r] && jj < ve[r])
            tc_bwd_pds(s[n][c], sl2, lse2[r], f.scale, f.softcap, dp[n][c], del[r], &ds);
          s[n][c] = ds;
        }
      }
      tc_weights_times_rows<NB, ND, BF16>(acc, s, kt, nk, DP, 0, D, lane);
    }
    __syncthreads(); /* tile tt consumed before its buffer is refilled */
  }
  rrt_cp_async_wait_all(); /* nothing left in flight (no tiles: the Q copies) */

  RRT_UNROLL
  for (int r = 0; r < 2; r++) {
    const int64_t i = w0 + g + 8 * r;
    if (i >= it.q_len) continue;
    float *row = dq + ((b * f.q_rows + it.q_begin + i) * f.heads_q + h) * (int64_t)D;
    RRT_UNROLL
    for (int nd = 0; nd < ND; nd++) {
      if (8 * nd >= D) break;
      RRT_UNROLL
      for (int c = 0; c < 2; c++)
        row[8 * nd + 2 * t + c] += acc[nd][2 * r + c] * f.scale;
    }
  }
}

/* ---- launches ---------------------------------------------------------------- */

/* Each instantiation opts in once per device to the most it launches with
 * there (attn_tc.h: tc_opt_in), and launches with its tiles' bytes at this
 * head_dim (attn_tc_tiles.h). */
template <int DMAX, int BQ, bool BF16, int DSPLIT>
rrt_status dkv_launch(rrt_stream stream, const rrt_attn_bargs &ba, const rrt_attn_item &it,
                      float *dk, float *dv) {
  static std::atomic<unsigned long long> opted{0};
  constexpr int BKV = 16 * kWarps / DSPLIT;
  const int64_t nkt = (it.k_len + BKV - 1) / BKV;
  const int64_t nblocks = ba.f.batch * ba.f.heads_kv * nkt;
  if (nblocks >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  const size_t most = rrt_attn_dkv_tc_smem(BQ, DSPLIT, DMAX), optin = ba.f.smem_optin;
  const rrt_status st = tc_opt_in(rrt_attn_bwd_dkv_tc_kernel<DMAX, BQ, BF16, DSPLIT>,
                                  "rrt_attn_bwd_dkv_tc_kernel", most < optin ? most : optin, opted);
  if (st != RRT_SUCCESS) return st;
  RRT_LAUNCH((rrt_attn_bwd_dkv_tc_kernel<DMAX, BQ, BF16, DSPLIT>), (unsigned)nblocks, kThreads,
             rrt_attn_dkv_tc_smem(BQ, DSPLIT, ba.f.head_dim), stream, ba, it, nkt, dk, dv);
}

template <int DMAX, int BK, bool BF16>
rrt_status dq_launch(rrt_stream stream, const rrt_attn_bargs &ba, const rrt_attn_item &it,
                     float *dq) {
  static std::atomic<unsigned long long> opted{0};
  const int64_t nqt = (it.q_len + kDqRows - 1) / kDqRows;
  const int64_t nblocks = ba.f.batch * ba.f.heads_q * nqt;
  if (nblocks >= ((int64_t)1 << 31)) return RRT_ERR_INVALID_ARG;
  const size_t most = rrt_attn_dq_tc_smem(BK, DMAX), optin = ba.f.smem_optin;
  const rrt_status st = tc_opt_in(rrt_attn_bwd_dq_tc_kernel<DMAX, BK, BF16>,
                                  "rrt_attn_bwd_dq_tc_kernel", most < optin ? most : optin, opted);
  if (st != RRT_SUCCESS) return st;
  RRT_LAUNCH((rrt_attn_bwd_dq_tc_kernel<DMAX, BK, BF16>), (unsigned)nblocks, kThreads,
             rrt_attn_dq_tc_smem(BK, ba.f.head_dim), stream, ba, it, nqt, dq);
}

/* Tile variants by head_dim bound (64, 128, 256) and the device's opt-in
 * limit (attn_tc_tiles.h). Shared memory at the bound: dkv 57, 70, 101 KiB
 * (bq 16 at 256: 67 KiB); dq 55, 104, 132 KiB (bk 32 at 128: 68 KiB, bk 16
 * at 256: 99 KiB), so sm_86/89's 99 KiB runs every head_dim. */
template <bool BF16>
rrt_status dkv_dispatch(rrt_stream stream, const rrt_attn_bargs &ba, const rrt_attn_item &it,
                        float *dk, float *dv) {
  const int hd = ba.f.head_dim;
  if (hd <= 64) return dkv_launch<64, 64, BF16, 1>(stream, ba, it, dk, dv);
  if (hd <= 128) return dkv_launch<128, 32, BF16, 1>(stream, ba, it, dk, dv);
  if (rrt_attn_dkv_tc_bq(hd, ba.f.smem_optin) == 32)
    return dkv_launch<256, 32, BF16, 2>(stream, ba, it, dk, dv);
  return dkv_launch<256, 16, BF16, 2>(stream, ba, it, dk, dv);
}

template <bool BF16>
rrt_status dq_dispatch(rrt_stream stream, const rrt_attn_bargs &ba, const rrt_attn_item &it,
                       float *dq) {
  const int hd = ba.f.head_dim, bk = rrt_attn_dq_tc_bk(hd, ba.f.smem_optin);
  if (hd <= 64) return dq_launch<64, 64, BF16>(stream, ba, it, dq);
  if (hd <= 128)
    return bk == 64 ? dq_launch<128, 64, BF16>(stream, ba, it, dq)
                    : dq_launch<128, 32, BF16>(stream, ba, it, dq);
  return bk == 32 ? dq_launch<256, 32, BF16>(stream, ba, it, dq)
                  : dq_launch<256, 16, BF16>(stream, ba, it, dq);
}

} // namespace

RRT_KERNEL_API(rrt_k_attn_bwd_dkv_tc)
(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item, float *dk, float *dv) {
  const rrt_attn_bargs ba = *a;
  const rrt_attn_item it = *item;
  if (!rrt_attn_bwd_tc_supported(&ba)) return RRT_ERR_INVALID_ARG;
  if (it.q_len <= 0 || it.k_len <= 0) return RRT_SUCCESS;
  if (ba.f.dtype == RRT_AM_BF16) return dkv_dispatch<true>(stream, ba, it, dk, dv);
  return dkv_dispatch<false>(stream, ba, it, dk, dv);
}

RRT_KERNEL_API(rrt_k_attn_bwd_dq_tc)
(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item, float *dq) {
  const rrt_attn_bargs ba = *a;
  const rrt_attn_item it = *item;
  if (!rrt_attn_bwd_tc_supported(&ba)) return RRT_ERR_INVALID_ARG;
  if (it.q_len <= 0 || it.k_len <= 0) return RRT_SUCCESS;
  if (ba.f.dtype == RRT_AM_BF16) return dq_dispatch<true>(stream, ba, it, dq);
  return dq_dispatch<false>(stream, ba, it, dq);
}

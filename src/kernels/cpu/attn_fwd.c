/* CPU local attention (flash-attention style, on the host).
 *
 * Once per call (one ring step), K is transposed to [batch, head_kv, D, key]
 * and, unless head_dim is a multiple of 16 (then V is read in place), V padded
 * to [batch, head_kv, key, Dp] (Dp = head_dim rounded up to 16);
 * every query block of every query head sharing that KV head reads them.
 * Then per (batch, head, block of BQ query rows): walk the item's keys in
 * tiles of BK, S = Q K^T (Q pre-scaled by scale * log2 e, so scores are in
 * log2 units), online softmax per row (exp2) over the row's visible keys,
 * acc = alpha * acc + P V. A masked item's row i sees one interval of keys
 * [jb(i), je(i)) (the plan's row mask, rrt_attn_item_keys) whose ends never
 * decrease down the rows: the walk runs from the block's first row's start
 * to its last row's end (a sliding window skips most tiles without looking
 * at them), and register tiles no row of theirs sees are skipped. The finished
 * block result is merged into the running (o, lse) with the shared LSE merge
 * (kernels/attn_math.h).
 *
 * The two products are register-tiled C (GCC vector extensions) in
 * attn_fwd_tile.h, built for AVX-512, AVX2+FMA and the baseline and
 * picked at run time (RINGRT_CPU_ISA=avx512|avx2|base forces one, for tests
 * and comparisons). */
#include "kernels/cpu/attn_fwd.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_math.h"
#include "kernels/cpu/attn_exp2.h"
#include "comm/env.h"
#include "kernels/cpu/cpu_isa.h"

/* BQ rows per query block (a multiple of ROWS_ALIGN, the common multiple of
 * every instance's register-tile heights), BK keys per tile. With D = 64 a
 * block's working set (Q 24 KiB, S 96 KiB, acc 24 KiB, K and V tiles 64 KiB
 * each) stays in a 1-2 MiB L2. */
enum { BQ = 96, BK = 256, ROWS_ALIGN = 24, DP_ALIGN = 16 };

typedef struct packed_kv {
  float *kt; /* [batch, heads_kv, D, ldkt]: K transposed, columns past kv_rows zero */
  float *vp; /* [batch, heads_kv, kv_rows, dp]: V, columns past D zero; NULL: V in place */
  int64_t ldkt;
  int64_t ldv; /* distance of V rows: dp, or heads_kv * D in place */
  int dp;
} packed_kv;

typedef struct scratch {
  float *qs;  /* [BQ][D] scaled query rows (rows past nq zero) */
  float *s;   /* [BQ][BK] scores, then probabilities */
  float *acc; /* [BQ][dp] unnormalised output */
  float m[BQ], l[BQ], alpha[BQ];
  int64_t jb[BQ], je[BQ]; /* visible keys of each row of the block, item-relative */
  int vb[BQ], ve[BQ];     /* the same within the current tile, tile-relative */
} scratch;

/* rrt_attn_rescale for a running max in log2 units: exp2(m_old - m_new),
 * 0 while the row has seen only -inf scores (not NaN); NaN in, NaN out. */
static inline float rescale2(float *m, float tile_max) {
  float m_old = *m;
  if (tile_max <= m_old && m_old != rrt_am_neg_inf()) return 1.0f; /* the common case: no exp2f */
  float m_new = m_old > tile_max ? m_old : tile_max;
  *m = m_new;
  if (m_new == rrt_am_neg_inf()) return 0.0f;
  return exp2f(m_old - m_new);
}

/* ---- the instances ---- */
#if defined(__clang__)
#pragma clang fp contract(fast)
#define T_OPT unused /* a harmless filler */
#else
#define T_OPT optimize("fp-contract=fast", "no-trapping-math")
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define RRT_ATTN_X86 1
#define T_SFX avx512
#define T_ATTR __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"), T_OPT))
#define T_W 16
#define T_RQK 8
#define T_RPV 6
#define T_CV 4
#include "kernels/cpu/attn_fwd_tile.h"

#define T_SFX avx2
#define T_ATTR __attribute__((target("avx2,fma"), T_OPT))
#define T_W 8
#define T_RQK 6
#define T_RPV 6
#define T_CV 2
#include "kernels/cpu/attn_fwd_tile.h"
#endif

#define T_SFX base
#define T_ATTR __attribute__((T_OPT))
#define T_W 4
#define T_RQK 6
#define T_RPV 6
#define T_CV 2
#include "kernels/cpu/attn_fwd_tile.h"

typedef void (*block_fn)(const rrt_attn_cpu_args *, const packed_kv *, const rrt_attn_item *,
                         int64_t, int, int64_t, scratch *);

static block_fn pick_block(int isa) {
  switch (rrt_cpu_variant_pick(isa)) {
#if RRT_ATTN_X86
  case RRT_CPU_VARIANT_AVX512: return attn_block_avx512;
  case RRT_CPU_VARIANT_AVX2: return attn_block_avx2;
#endif
  default: return attn_block_base;
  }
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* Transpose K and pad V for (batch, kv head, chunk of 64 keys) t. */
static void pack_chunk(const rrt_attn_cpu_args *a, const packed_kv *pk, int64_t t, int64_t nchunk) {
  const int D = a->head_dim, Hkv = a->heads_kv, dp = pk->dp;
  const int64_t bh = t / nchunk, j0 = t % nchunk * 64, b = bh / Hkv, hk = bh % Hkv;
  const int64_t j1 = j0 + 64 < a->kv_rows ? j0 + 64 : a->kv_rows;
  const int64_t ldk = (int64_t)Hkv * D;
  const float *k = a->k + (b * a->kv_rows * Hkv + hk) * (int64_t)D;
  const float *v = a->v + (b * a->kv_rows * Hkv + hk) * (int64_t)D;
  float *kt = pk->kt + bh * D * pk->ldkt;
  float *vp = pk->vp ? pk->vp + bh * a->kv_rows * dp : NULL;
  for (int d = 0; d < D; d++)
    for (int64_t j = j0; j < j1; j++)
      kt[d * pk->ldkt + j] = k[j * ldk + d];
  if (j1 == a->kv_rows) /* last chunk: zero the padding columns */
    for (int d = 0; d < D; d++)
      for (int64_t j = j1; j < pk->ldkt; j++)
        kt[d * pk->ldkt + j] = 0.0f;
  for (int64_t j = j0; j < j1 && vp; j++) {
    memcpy(vp + j * dp, v + j * ldk, sizeof(float) * (size_t)D);
    for (int d = D; d < dp; d++)
      vp[j * dp + d] = 0.0f;
  }
}

rrt_status rrt_attn_fwd_cpu(const rrt_attn_cpu_args *a, const rrt_attn_item *items, int nitems) {
  if (nitems <= 0) return RRT_SUCCESS;
  const int D = a->head_dim;
  packed_kv pk;
  pk.dp = (D + DP_ALIGN - 1) / DP_ALIGN * DP_ALIGN;
  pk.ldkt = (a->kv_rows + 15) / 16 * 16 + 16; /* + 16: room for a partial vector, no 2^k stride */
  const int64_t nbh = a->batch * a->heads_kv, nchunk = (a->kv_rows + 63) / 64;
  pk.kt = alloc64(sizeof(float) * (size_t)(nbh * D * pk.ldkt));
  const int v_inplace = D == pk.dp;
  pk.vp = v_inplace ? NULL : alloc64(sizeof(float) * (size_t)(nbh * a->kv_rows * pk.dp));
  pk.ldv = v_inplace ? (int64_t)a->heads_kv * D : pk.dp;
  const block_fn block = pick_block(a->isa);
  const int pk_ok = pk.kt && (pk.vp || v_inplace);
  int fail = !pk_ok;

#pragma omp parallel if (pk_ok)
  {
    scratch w;
    w.qs = alloc64(sizeof(float) * BQ * (size_t)D);
    w.s = alloc64(sizeof(float) * BQ * BK);
    w.acc = alloc64(sizeof(float) * BQ * (size_t)pk.dp);
    const int ok = pk_ok && w.qs && w.s && w.acc;
    if (!ok) {
#pragma omp atomic write
      fail = 1;
    }
    /* every thread meets every worksharing loop; failures only skip bodies */
#pragma omp for schedule(static)
    for (int64_t t = 0; t < nbh * nchunk; t++)
      if (pk_ok) pack_chunk(a, &pk, t, nchunk);
    for (int n = 0; n < nitems; n++) {
      const rrt_attn_item *it = &items[n];
      const int64_t nqb = (it->q_len + BQ - 1) / BQ;
      const int64_t ntask = a->batch * a->heads_q * nqb;
      /* causal blocks differ in cost: hand them out dynamically, the last
       * query blocks (which see the most keys) first so the tail is short */
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < ntask; t++) {
        if (!ok) continue; /* the call fails; other threads finish their share */
        int64_t qb = nqb - 1 - t % nqb;
        int h = (int)((t / nqb) % a->heads_q);
        int64_t b = t / (nqb * a->heads_q);
        block(a, &pk, it, b, h, qb, &w);
        if (a->progress && omp_get_thread_num() == 0) a->progress(a->progress_arg);
      }
    }
    free(w.qs);
    free(w.s);
    free(w.acc);
  }
  free(pk.kt);
  free(pk.vp);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

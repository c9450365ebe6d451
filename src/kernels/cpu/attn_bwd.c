/* CPU local attention backward (FlashAttention-2 with recomputation, on
 * the host, every sum in f32).
 *
 * Work is split into tasks of (batch, KV head, lane): a task owns the dK/dV
 * rows of its KV head and the dQ rows of the query heads of its lane, so no
 * two tasks write the same accumulator and nothing needs an atomic. Inside a
 * task: for each query head of the lane (its Q and dO rows padded once), for
 * each block of BK keys (K, V transposed and K padded), for each block of BQ
 * query rows that sees the key block: recompute S = Q K^T and P = exp(S - lse) from the
 * forward's LSE, dP = dO V^T, dS = P * (dP - delta), then dV += P^T dO and
 * dK += dS^T Q (in key-block accumulators added out after the block),
 * dQ += dS K (in an accumulator of the head's rows of the item). Key blocks no row sees and query
 * blocks that see none of a key block are skipped (the row mask's bounds are
 * nondecreasing, so the rows seeing a key block are one range).
 *
 * Determinism: a lane is either the whole group of query heads of a KV head
 * or one part of it; the lanes per group depend only on the shape (enough
 * tasks for MIN_TASKS threads), never on the thread count. With several
 * lanes, each lane's dK/dV go to its own scratch, added to dk/dv in lane
 * order after the item. Every sum therefore has one order, fixed by the
 * shape and the instruction set: the result is bitwise the same for any
 * OpenMP thread count and any scheduling (not across instruction sets).
 *
 * The products are register-tiled C (GCC vector extensions) in
 * attn_bwd_tile.h, built for AVX-512, AVX2+FMA and the baseline and picked
 * at run time like the forward's (RINGRT_CPU_ISA forces one). */
#include "kernels/cpu/attn_bwd.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "comm/env.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/attn_math.h"
#include "kernels/cpu/attn_exp2.h"

/* BQ query rows by BK keys per tile: with D = 64 the tile's working set
 * (S and dP 24 KiB each, the K/V packs 96 KiB, the dK/dV accumulators
 * 64 KiB, the block's Q, dO, dQ rows 12 KiB each) stays in a 512 KiB L2. BQ is a multiple of
 * ROWS_ALIGN (every instance's T_RQK and T_RNN divide it), BK of 16 (vector
 * widths) and KEYS_ALIGN (every T_RTN divides it). */
enum { BQ = 48, BK = 128, ROWS_ALIGN = 24, KEYS_ALIGN = 8, DP_ALIGN = 16, MIN_TASKS = 16 };

typedef struct bwd_ctx {
  int D, dp;     /* head_dim, padded to DP_ALIGN */
  int64_t q_len; /* rows of the item */
  float c2;      /* scale * log2(e): P = 2^(S * c2 - lse * log2(e)) */
  float cap2;    /* softcap * log2(e), 0 off: P = 2^(cap(S * c2) - lse * log2(e)) */
  int64_t j0;    /* first key (item-relative) of the current key block */
} bwd_ctx;

typedef struct bwd_scratch {
  float *qp, *dop, *dql; /* [qpad][dp] one head's Q, dO (rows past q_len zero), dQ sum */
  int64_t *jb, *je;      /* [qpad] visible keys [jb, je) of each row of the item */
  float *kt, *vt;        /* [D][BK] the key block's K, V transposed (columns past nk zero) */
  float *kp;             /* [BK][dp] the key block's K, padded */
  float *dka, *dva;      /* [BK][dp] the key block's dK / scale, dV */
  float *s, *dp;         /* [BQ][BK] S then P, dP then dS */
} bwd_scratch;

/* Visible columns [cb, ce) of item row `row` in the current key block. */
static inline void bwd_cols(const bwd_ctx *c, const bwd_scratch *w, int64_t row, int nk, int *cb,
                            int *ce) {
  int64_t b = w->jb[row] - c->j0, e = w->je[row] - c->j0;
  b = b < 0 ? 0 : b > nk ? nk : b;
  e = e < b ? b : e > nk ? nk : e;
  *cb = (int)b;
  *ce = (int)e;
}

/* ---- the instances ---- */
#if defined(__clang__)
#pragma clang fp contract(fast)
#define T_OPT unused /* a harmless filler */
#else
#define T_OPT optimize("fp-contract=fast", "no-trapping-math")
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define RRT_ATTN_BWD_X86 1
#define T_SFX avx512
#define T_ATTR __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"), T_OPT))
#define T_W 16
#define T_RQK 8
#define T_RTN 4
#define T_RNN 6
#define T_CV 4
#include "kernels/cpu/attn_bwd_tile.h"

#define T_SFX avx2
#define T_ATTR __attribute__((target("avx2,fma"), T_OPT))
#define T_W 8
#define T_RQK 6
#define T_RTN 4
#define T_RNN 6
#define T_CV 2
#include "kernels/cpu/attn_bwd_tile.h"
#endif

/* The baseline has AVX-512's register-tile shape at 4 floats a vector: the
 * fallback of CPUs with 32 vector registers (aarch64), and on x86 its tests
 * run the code paths the AVX-512 instance takes where the CPU lacks it. */
#define T_SFX base
#define T_ATTR __attribute__((T_OPT))
#define T_W 4
#define T_RQK 8
#define T_RTN 4
#define T_RNN 6
#define T_CV 4
#include "kernels/cpu/attn_bwd_tile.h"

typedef void (*tile_fn)(const bwd_ctx *, bwd_scratch *, const float *, const float *, int64_t, int,
                        const float *, const float *, float *);

static tile_fn pick_tile(int isa) {
  switch (rrt_cpu_variant_pick(isa)) {
#if RRT_ATTN_BWD_X86
  case RRT_CPU_VARIANT_AVX512: return bwd_tile_avx512;
  case RRT_CPU_VARIANT_AVX2: return bwd_tile_avx2;
#endif
  default: return bwd_tile_base;
  }
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/* Lanes per KV head: the smallest divisor of the group size that gives
 * MIN_TASKS tasks (the whole group when none does). */
static int bwd_lanes(const rrt_attn_cpu_bwd_args *a) {
  const int g = a->heads_q / a->heads_kv;
  for (int ng = 1; ng < g; ng++)
    if (g % ng == 0 && a->batch * a->heads_kv * ng >= MIN_TASKS) return ng;
  return g;
}

/* Query head h's Q and dO rows of the item padded to dp (zeros past D and
 * past the item's rows), its dQ sum zeroed. */
static void pack_rows(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *it, int64_t b, int h,
                      const bwd_ctx *c, bwd_scratch *w) {
  const int D = c->D, dp = c->dp;
  const size_t bytes = sizeof(float) * (size_t)(round_up(c->q_len, BQ) * dp);
  memset(w->qp, 0, bytes);
  memset(w->dop, 0, bytes);
  memset(w->dql, 0, bytes);
  for (int64_t r = 0; r < c->q_len; r++) {
    const int64_t src = ((b * a->q_rows + it->q_begin + r) * a->heads_q + h) * (int64_t)D;
    memcpy(w->qp + r * dp, a->q + src, sizeof(float) * (size_t)D);
    memcpy(w->dop + r * dp, a->dout + src, sizeof(float) * (size_t)D);
  }
}

/* K and V of keys [j0, j0 + nk) of the item: kt, vt transposed (zero up to
 * the vector-rounded width), kp padded; the block's accumulators zeroed. */
static void pack_keys(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *it, int64_t b, int hk,
                      int nk, const bwd_ctx *c, bwd_scratch *w) {
  const int D = c->D, dp = c->dp, Hkv = a->heads_kv;
  for (int k = 0; k < nk; k++) {
    const int64_t src = ((b * a->kv_rows + it->k_begin + c->j0 + k) * Hkv + hk) * (int64_t)D;
    for (int d = 0; d < D; d++) {
      w->kt[d * BK + k] = a->k[src + d];
      w->vt[d * BK + k] = a->v[src + d];
    }
    memcpy(w->kp + (size_t)k * dp, a->k + src, sizeof(float) * (size_t)D);
    memset(w->kp + (size_t)k * dp + D, 0, sizeof(float) * (size_t)(dp - D));
  }
  for (int d = 0; d < D; d++)
    for (int k = nk; k < BK; k++)
      w->kt[d * BK + k] = w->vt[d * BK + k] = 0.0f;
  memset(w->dka, 0, sizeof(float) * BK * (size_t)dp);
  memset(w->dva, 0, sizeof(float) * BK * (size_t)dp);
}

/* First row in [lo, hi) whose x is > v (x nondecreasing), else hi. */
static int64_t first_above(const int64_t *x, int64_t lo, int64_t hi, int64_t v) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (x[mid] > v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Where a task's dK/dV go: out[k * ld + d] for item key k. */
typedef struct bwd_out {
  float *dk, *dv;
  int64_t ld;
} bwd_out;

static void flush_keys(const bwd_ctx *c, const bwd_scratch *w, int nk, float scale,
                       const bwd_out *out) {
  for (int k = 0; k < nk; k++) {
    float *dk = out->dk + (c->j0 + k) * out->ld, *dv = out->dv + (c->j0 + k) * out->ld;
    const float *ka = w->dka + (size_t)k * c->dp, *va = w->dva + (size_t)k * c->dp;
    for (int d = 0; d < c->D; d++) {
      dk[d] += ka[d] * scale;
      dv[d] += va[d];
    }
  }
}

static void flush_rows(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *it, int64_t b, int h,
                       const bwd_ctx *c, const bwd_scratch *w) {
  for (int64_t r = 0; r < c->q_len; r++) {
    float *dq = a->dq + ((b * a->q_rows + it->q_begin + r) * a->heads_q + h) * c->D;
    const float *acc = w->dql + r * c->dp;
    for (int d = 0; d < c->D; d++)
      dq[d] += acc[d] * a->scale;
  }
}

/* One task: KV head hk of batch b, query heads [h0, h0 + nh) of its group,
 * one after the other (the scratch holds one head's rows). */
static void bwd_task(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *it, int64_t b, int hk,
                     int h0, int nh, tile_fn tile, bwd_scratch *w, const bwd_out *out) {
  bwd_ctx c = {a->head_dim,
               (int)round_up(a->head_dim, DP_ALIGN),
               it->q_len,
               a->scale * 1.44269504088896341f,
               a->softcap * 1.44269504088896341f,
               0};
  for (int64_t r = 0; r < c.q_len; r++)
    rrt_attn_item_keys(it, a->mask, r, &w->jb[r], &w->je[r]);
  for (int h = h0; h < h0 + nh; h++) {
    const int64_t row0 = (b * a->heads_q + h) * a->q_rows + it->q_begin;
    pack_rows(a, it, b, h, &c, w);
    for (c.j0 = 0; c.j0 < it->k_len; c.j0 += BK) {
      const int nk = (int)(it->k_len - c.j0 < BK ? it->k_len - c.j0 : BK);
      /* rows seeing the block: je > j0 (a suffix) and jb < j0 + nk (a prefix) */
      const int64_t rb = first_above(w->je, 0, c.q_len, c.j0);
      const int64_t re = first_above(w->jb, rb, c.q_len, c.j0 + nk - 1);
      if (rb >= re) continue;
      pack_keys(a, it, b, hk, nk, &c, w);
      for (int64_t i0 = rb / BQ * BQ; i0 < re; i0 += BQ)
        tile(&c, w, w->qp, w->dop, i0, nk, a->lse + row0, a->delta + row0, w->dql);
      flush_keys(&c, w, nk, a->scale, out);
      if (a->progress && omp_get_thread_num() == 0) a->progress(a->progress_arg);
    }
    flush_rows(a, it, b, h, &c, w);
  }
}

static int scratch_alloc(bwd_scratch *w, int64_t qpad, int D, int dp) {
  const size_t rows = (size_t)qpad * (size_t)dp;
  w->qp = alloc64(sizeof(float) * rows);
  w->dop = alloc64(sizeof(float) * rows);
  w->dql = alloc64(sizeof(float) * rows);
  w->jb = alloc64(sizeof(int64_t) * (size_t)qpad);
  w->je = alloc64(sizeof(int64_t) * (size_t)qpad);
  w->kt = alloc64(sizeof(float) * BK * (size_t)D);
  w->vt = alloc64(sizeof(float) * BK * (size_t)D);
  w->kp = alloc64(sizeof(float) * BK * (size_t)dp);
  w->dka = alloc64(sizeof(float) * BK * (size_t)dp);
  w->dva = alloc64(sizeof(float) * BK * (size_t)dp);
  w->s = calloc(BQ * BK, sizeof(float)); /* columns past a tile's are read, never used */
  w->dp = calloc(BQ * BK, sizeof(float));
  return w->qp && w->dop && w->dql && w->jb && w->je && w->kt && w->vt && w->kp && w->dka &&
         w->dva && w->s && w->dp;
}

static void scratch_free(bwd_scratch *w) {
  free(w->qp), free(w->dop), free(w->dql), free(w->jb), free(w->je), free(w->kt), free(w->vt);
  free(w->kp), free(w->dka), free(w->dva), free(w->s), free(w->dp);
}

/* dk/dv += the lanes' partial sums of item keys, lane after lane. */
static void reduce_lanes(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *it, int ng,
                         const float *lanes) {
  const int D = a->head_dim, Hkv = a->heads_kv;
  const int64_t nrow = a->batch * Hkv * it->k_len, lane_sz = it->k_len * D;
#pragma omp for schedule(static)
  for (int64_t t = 0; t < nrow; t++) {
    const int64_t bh = t / it->k_len, k = t % it->k_len, b = bh / Hkv, hk = bh % Hkv;
    const int64_t dst = ((b * a->kv_rows + it->k_begin + k) * Hkv + hk) * (int64_t)D;
    for (int l = 0; l < ng; l++) {
      const float *src = lanes + (bh * ng + l) * 2 * lane_sz + k * D;
      for (int d = 0; d < D; d++) {
        a->dk[dst + d] += src[d];
        a->dv[dst + d] += src[lane_sz + d];
      }
    }
  }
}

rrt_status rrt_attn_bwd_cpu(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *items,
                            int nitems) {
  if (nitems <= 0) return RRT_SUCCESS;
  const int D = a->head_dim, dp = (int)round_up(D, DP_ALIGN), Hkv = a->heads_kv;
  const int ng = bwd_lanes(a), nh = a->heads_q / Hkv / ng;
  const int64_t ntask = a->batch * Hkv * ng, qpad = round_up(a->q_rows, BQ);
  /* per lane: dK then dV of the item's keys ([k_len][D] each) */
  float *lanes = ng > 1 ? alloc64(sizeof(float) * (size_t)(ntask * 2 * a->kv_rows * D)) : NULL;
  const tile_fn tile = pick_tile(a->isa);
  int fail = ng > 1 && !lanes;

#pragma omp parallel if (!fail)
  {
    bwd_scratch w = {0};
    const int ok = !fail && scratch_alloc(&w, qpad, D, dp);
    if (!ok) {
#pragma omp atomic write
      fail = 1;
    }
    /* every thread meets every worksharing loop; failures only skip bodies */
    for (int n = 0; n < nitems; n++) {
      const rrt_attn_item *it = &items[n];
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < ntask; t++) {
        if (!ok) continue; /* the call fails; other threads finish their share */
        const int64_t bh = t / ng, b = bh / Hkv;
        const int hk = (int)(bh % Hkv), lane = (int)(t % ng);
        const int64_t koff = ((b * a->kv_rows + it->k_begin) * Hkv + hk) * (int64_t)D;
        bwd_out out = {a->dk + koff, a->dv + koff, (int64_t)Hkv * D};
        if (ng > 1) {
          float *mine = lanes + t * 2 * it->k_len * D;
          memset(mine, 0, sizeof(float) * (size_t)(2 * it->k_len * D));
          out = (bwd_out){mine, mine + it->k_len * D, D};
        }
        bwd_task(a, it, b, hk, (hk * ng + lane) * nh, nh, tile, &w, &out);
      }
      if (ng > 1) reduce_lanes(a, it, ng, lanes); /* (after a failure: meaningless, harmless) */
    }
    scratch_free(&w);
  }
  free(lanes);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

void rrt_attn_cpu_bwd_delta(float *delta, const void *o, const void *dout, int64_t batch,
                            int64_t rows, int heads, int head_dim, int dtype) {
  const int64_t n = batch * rows * heads;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < n; t++) { /* t = (b * rows + i) * heads + h */
    const int64_t b = t / (rows * heads), i = t / heads % rows, h = t % heads;
    delta[(b * heads + h) * rows + i] = rrt_attn_bwd_delta(o, dout, t * head_dim, head_dim, dtype);
  }
}

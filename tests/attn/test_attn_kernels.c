/* The forward kernel tables (rrt_attn_kernels_for: cpu in every vector
 * variant, emu) called directly with hand-built items and row masks, against
 * a naive float64 softmax per row written here. The masks are random per-row
 * intervals [lo, hi] of global key positions whose ends never decrease (the
 * contract of sched/attn_item.h): narrow windows that skip most key tiles,
 * random walks with empty rows, causal prefixes, intervals wider than the
 * block; positions with strides 1 and 3, items with q_begin/k_begin offsets
 * over two step calls (rows merged from several items), GQA/MQA, head_dim
 * 1, 40, 72, f32/bf16/f16; NaN/Inf in K. One rank: no ring, only the
 * kernels.
 *
 * With the argument `tc`: only the emu table, forced onto the tensor-core
 * forward kernel (RINGRT_ATTN_KERNEL=tc, kernels/cuda/attn_fwd_tc.cu), bf16
 * and f16, head_dim 16, 32, 48, 64, 128 and 256, every mask kind, lengths
 * that are not multiples of its tiles (128 query rows, 64 at head_dim 256;
 * 64 keys), items of two query blocks with a ragged second one, tiles that
 * no row's range cuts (the full-tile path, no per-element mask) beside
 * tiles that a mask edge or the item's end cuts.
 * Its tolerance is the same ref_tol_o as the SIMT kernel's: the output is
 * stored in the storage type (half an ulp: 2^-9 bf16, 2^-11 f16, of |O| <=
 * max|V| = 1 here), and the kernel rounds P to that type before P V, one
 * more relative rounding of each weight (l sums the unrounded ones), so at
 * most 2^-9 (bf16) or 2^-11 (f16) times max|V| more: 2^-8 = 3.9e-3 < 8e-3
 * and 2^-10 = 9.8e-4 < 1e-3 (f16 products and f32 sums add ~1e-6). The LSE
 * uses no rounded value (f32 scores from exact products): REF_TOL_LSE.
 * The table runs the kernel with the merge fused (rrt_k_attn_fwd_tc_merge);
 * tc mode also checks that rrt_k_attn_fwd_tc (the partial, as
 * rrt_k_attn_fwd) followed by the merge kernel gives bitwise the same. */
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "comm/ctx.h"
#include "kernels/attn_table.h"
#include "kernels/cuda/attn_fwd.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* MASK_NONFINITE: the walk, with NaN, +inf and -inf planted in K (masked
 * keys must not leak into the rows that do not see them). */
enum { MASK_WINDOW, MASK_WALK, MASK_CAUSAL, MASK_WIDE, MASK_NONFINITE, MASK_KINDS };
static const char *const mask_names[MASK_KINDS] = {"window", "walk", "causal", "wide",
                                                   "walk+nonfinite"};

typedef struct kcase {
  int batch, hq, hkv, dim;
  rrt_dtype dt;
  int64_t q_rows, kv_rows;
  int q_stride, k_stride;
} kcase;

/* cpu: several query blocks (96 rows) and key tiles (256 keys) per item */
static const kcase cpu_cases[] = {
    {1, 2, 2, 40, RRT_DTYPE_F32, 300, 700, 1, 1}, {2, 4, 2, 72, RRT_DTYPE_F32, 200, 600, 3, 1},
    {1, 3, 1, 1, RRT_DTYPE_F32, 250, 650, 1, 3},  {1, 2, 1, 40, RRT_DTYPE_BF16, 150, 560, 3, 3},
    {1, 2, 2, 72, RRT_DTYPE_F16, 130, 530, 1, 1},
};
/* emu: one fiber per GPU thread, so tiny shapes; still 2 query tiles (32
 * rows) and 2-3 key tiles (64 keys; 32 for head_dim > 64) per item */
static const kcase emu_cases[] = {
    {1, 2, 1, 40, RRT_DTYPE_F32, 45, 150, 1, 3},
    {1, 2, 2, 72, RRT_DTYPE_BF16, 40, 100, 3, 1},
    {1, 1, 1, 1, RRT_DTYPE_F16, 40, 140, 1, 1},
};

/* emu, tensor-core kernel: two query tiles (64 rows) in the longest items
 * of the first case, several key tiles per item, GQA, strides */
static const kcase tc_cases[] = {
    {1, 2, 1, 64, RRT_DTYPE_BF16, 100, 170, 1, 3},
    {1, 2, 2, 128, RRT_DTYPE_F16, 70, 150, 3, 1},
    {1, 1, 1, 128, RRT_DTYPE_BF16, 50, 140, 1, 1},
    {2, 2, 1, 64, RRT_DTYPE_F16, 60, 130, 1, 1},
    {1, 1, 1, 256, RRT_DTYPE_BF16, 40, 90, 1, 1},
    {1, 1, 1, 48, RRT_DTYPE_F16, 45, 100, 1, 2},
    /* 3-4 key tiles an item: each load of K or V overwrites the buffer of
     * the tile before, so a missing barrier shows (RINGRT_EMU_SCHED=
     * runahead with RINGRT_EMU_CPASYNC=eager) */
    {1, 1, 1, 16, RRT_DTYPE_BF16, 70, 200, 1, 1},
    /* two 128-row query blocks an item, the second ragged (items of 155
     * and 200 rows), head_dim below its bound (32 of 64) */
    {1, 1, 1, 32, RRT_DTYPE_BF16, 300, 140, 1, 1},
};

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* uniform in [0, n) */
static int64_t rng_int(uint64_t *s, int64_t n) { return (int64_t)(rng_next(s) % (uint64_t)n); }

static float rng_unit(uint64_t *s) { return (float)rng_int(s, 2000001) / 1000000.0f - 1.0f; }

/* Global positions of local rows: an offset and a stride (increasing). */
typedef struct posmap {
  int64_t q0, qs, k0, ks;
} posmap;

/* lo/hi of every query row: nondecreasing, sweeping from before the first
 * key to past the last so that rows at both ends see none of some items. */
static void make_mask(int kind, const kcase *c, const posmap *pm, uint64_t *rs, int64_t *lo,
                      int64_t *hi) {
  const int64_t span = c->kv_rows * pm->ks;
  const int64_t rate = span / c->q_rows + 1;
  int64_t l = pm->k0 - 40, h = l;
  for (int64_t q = 0; q < c->q_rows; q++) {
    l += rng_int(rs, 2 * rate + 1);
    switch (kind) {
    case MASK_WINDOW: h = l + 8 + rng_int(rs, 24); break; /* a few dozen keys wide */
    case MASK_WALK: h = l + rng_int(rs, 200) - 20; break; /* some rows empty */
    case MASK_CAUSAL: h = l; break;
    default: h = l + 3 * span; break; /* every later key */
    }
    if (q > 0 && h < hi[q - 1]) h = hi[q - 1];
    lo[q] = kind == MASK_CAUSAL || kind == MASK_WIDE ? pm->k0 - 1000 : l;
    hi[q] = h;
  }
}

/* Items over two step calls: A and B (masked) in the first, C (unmasked)
 * in the second; B's rows overlap A's, C's rows are inside B's. */
static int make_items(const kcase *c, const posmap *pm, rrt_attn_item *it) {
  const int64_t Lq = c->q_rows, Lk = c->kv_rows;
  const int64_t qb[3] = {0, Lq / 3, Lq - 20}, ql[3] = {Lq / 2 + 5, Lq - Lq / 3, 20};
  const int64_t kb[3] = {3, Lk / 3, Lk / 4}, kl[3] = {2 * Lk / 3 - 3, Lk - Lk / 3, 50};
  for (int n = 0; n < 3; n++)
    it[n] = (rrt_attn_item){qb[n], ql[n], pm->q0 + qb[n] * pm->qs, pm->qs,
                            kb[n], kl[n], pm->k0 + kb[n] * pm->ks, pm->ks,
                            n < 2};
  return 3;
}

typedef struct kdata {
  void *q, *k, *v; /* host, storage dtype */
  int64_t *lo, *hi;
  size_t nq, nkv, nl;
} kdata;

/* Naive float64 softmax of row (b, h, q) over every visible key of every
 * item that covers q (a key in two items counts twice, as two merges do),
 * written literally: m = max (NaN if any score is), p = exp(s - m), so NaN,
 * +inf and all -inf give NaN. No visible key at all: NaN too (the table's
 * finish: a plan's rows always see a key, so -inf at the end can only mean
 * that every score was -inf). */
static void ref_row(const kcase *c, const kdata *kd, const rrt_attn_item *items, int nitems,
                    const posmap *pm, int64_t b, int h, int64_t q, double *o, double *lse) {
  const int D = c->dim, hk = h / (c->hq / c->hkv), dt = (int)c->dt;
  const double scale = 1.0 / sqrt((double)D);
  double mx = -HUGE_VAL, sum = 0.0;
  int seen = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int d = 0; d < D; d++)
      o[d] = 0.0;
    for (int n = 0; n < nitems; n++) {
      const rrt_attn_item *it = &items[n];
      if (q < it->q_begin || q >= it->q_begin + it->q_len) continue;
      for (int64_t kr = it->k_begin; kr < it->k_begin + it->k_len; kr++) {
        const int64_t kpos = pm->k0 + kr * pm->ks;
        if (it->masked && (kpos < kd->lo[q] || kpos > kd->hi[q])) continue;
        double s = 0.0;
        for (int d = 0; d < D; d++)
          s += rrt_am_load(kd->q, ((b * c->q_rows + q) * c->hq + h) * D + d, dt) *
               rrt_am_load(kd->k, ((b * c->kv_rows + kr) * c->hkv + hk) * D + d, dt);
        s *= scale;
        if (pass == 0) {
          seen = 1;
          if (s > mx || s != s || mx != mx) mx = mx != mx ? mx : s;
          continue;
        }
        const double p = exp(s - mx);
        sum += p;
        for (int d = 0; d < D; d++)
          o[d] += p * rrt_am_load(kd->v, ((b * c->kv_rows + kr) * c->hkv + hk) * D + d, dt);
      }
    }
    if (!seen) break;
  }
  for (int d = 0; d < D; d++)
    o[d] = seen ? o[d] / sum : NAN;
  *lse = seen ? mx + log(sum) : NAN;
}

/* Run the table on the case and compare every row; returns the worst |dO|. */
static double run_table(rrt_ctx_t ctx, const kcase *c, const kdata *kd, const rrt_attn_item *items,
                        int nitems, const posmap *pm, const char *what) {
  const rrt_attn_kernels *kt = rrt_attn_kernels_for(rrt_ctx_backend(ctx));
  const size_t es = ref_es(c->dt), mb = (size_t)c->q_rows * sizeof(int64_t);
  void *q, *k, *v, *o;
  float *o_acc = NULL, *lse;
  int64_t *lo, *hi;
  CHECK_OK(rrt_malloc(ctx, kd->nq * es, &q));
  CHECK_OK(rrt_malloc(ctx, kd->nkv * es, &k));
  CHECK_OK(rrt_malloc(ctx, kd->nkv * es, &v));
  CHECK_OK(rrt_malloc(ctx, kd->nq * es, &o));
  CHECK_OK(rrt_malloc(ctx, kd->nl * sizeof(float), (void **)&lse));
  CHECK_OK(rrt_malloc(ctx, mb, (void **)&lo));
  CHECK_OK(rrt_malloc(ctx, mb, (void **)&hi));
  if (c->dt != RRT_DTYPE_F32) CHECK_OK(rrt_malloc(ctx, kd->nq * sizeof(float), (void **)&o_acc));
  CHECK_OK(rrt_memcpy_to_backend(ctx, q, kd->q, kd->nq * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, k, kd->k, kd->nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, v, kd->v, kd->nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, lo, kd->lo, mb));
  CHECK_OK(rrt_memcpy_to_backend(ctx, hi, kd->hi, mb));
  float *acc = o_acc ? o_acc : (float *)o;
  const rrt_attn_kshape sh = {c->batch, c->q_rows, c->kv_rows, c->hq,
                              c->hkv,   c->dim,    (int)c->dt, (float)(1.0 / sqrt((double)c->dim)),
                              {lo, hi}, 0,         0.0f};
  rrt_attn_work w;
  memset(&w, 0, sizeof w);
  const rrt_attn_progress prog = {NULL, NULL};
  CHECK_OK(kt->work_create(ctx, &sh, &w));
  CHECK_OK(kt->start(ctx, &sh, &w, q, k, v, NULL, acc, lse));
  CHECK_OK(kt->step(ctx, &sh, &w, k, v, items, nitems - 1, acc, lse, &prog));
  CHECK_OK(kt->step(ctx, &sh, &w, k, v, items + nitems - 1, 1, acc, lse, &prog));
  CHECK_OK(kt->finish(ctx, &sh, acc, lse, NULL, o));
  kt->work_destroy(ctx, &w);

  void *ho = malloc(kd->nq * es);
  float *hl = malloc(kd->nl * sizeof(float));
  double *ro = malloc(sizeof(double) * (size_t)c->dim);
  CHECK_OK(rrt_memcpy_to_host(ctx, ho, o, kd->nq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, hl, lse, kd->nl * sizeof(float)));
  double worst_o = 0.0, worst_l = 0.0;
  int64_t nan_rows = 0, nan_wrong = 0;
  for (int64_t b = 0; b < c->batch; b++)
    for (int h = 0; h < c->hq; h++)
      for (int64_t r = 0; r < c->q_rows; r++) {
        double rl;
        ref_row(c, kd, items, nitems, pm, b, h, r, ro, &rl);
        const double gl = hl[(b * c->hq + h) * c->q_rows + r];
        const int rnan = isnan(rl);
        nan_rows += rnan;
        int wrong = rnan != isnan(gl);
        if (!rnan && !(fabs(gl - rl) <= worst_l)) worst_l = fabs(gl - rl);
        for (int d = 0; d < c->dim; d++) {
          double g = rrt_am_load(ho, ((b * c->q_rows + r) * c->hq + h) * c->dim + d, (int)c->dt);
          wrong |= rnan != isnan(g);
          if (!rnan && !(fabs(g - ro[d]) <= worst_o)) worst_o = fabs(g - ro[d]);
        }
        if (wrong && nan_wrong++ == 0)
          fprintf(stderr, "%s: row %lld head %d: reference %s, got LSE %g\n", what, (long long)r, h,
                  rnan ? "NaN" : "finite", gl);
      }
  CHECK_MSG(nan_wrong == 0, "%s: %lld rows NaN in one of the reference and the result only", what,
            (long long)nan_wrong);
  if (getenv("RRT_TEST_VERBOSE")) printf("%s: %lld NaN rows\n", what, (long long)nan_rows);
  CHECK_MSG(worst_o <= ref_tol_o(c->dt) && worst_l <= REF_TOL_LSE,
            "%s b=%d hq=%d hkv=%d D=%d %s rows %lld x %lld strides %d/%d: |dO| %.3g (tol %.3g) "
            "|dLSE| %.3g (tol %.3g)",
            what, c->batch, c->hq, c->hkv, c->dim, rrt_dtype_name(c->dt), (long long)c->q_rows,
            (long long)c->kv_rows, c->q_stride, c->k_stride, worst_o, ref_tol_o(c->dt), worst_l,
            REF_TOL_LSE);
  free(ho);
  free(hl);
  free(ro);
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, o);
  rrt_free(ctx, o_acc);
  rrt_free(ctx, lse);
  rrt_free(ctx, lo);
  rrt_free(ctx, hi);
  return worst_o;
}

/* tc mode: rrt_k_attn_fwd_tc then rrt_k_attn_merge over the items, against
 * rrt_k_attn_fwd_tc_merge (the table's path), bitwise (the emulator build
 * does not contract: the same operations give the same bits). */
static void check_tc_unfused(rrt_ctx_t ctx, const kcase *c, const kdata *kd,
                             const rrt_attn_item *items, int nitems, const char *what) {
  const size_t es = ref_es(c->dt), mb = (size_t)c->q_rows * sizeof(int64_t);
  const size_t no = kd->nq * sizeof(float), nl = kd->nl * sizeof(float);
  void *q, *k, *v;
  int64_t *lo, *hi;
  float *o[2], *lse[2], *op, *lp;
  CHECK_OK(rrt_malloc(ctx, kd->nq * es, &q));
  CHECK_OK(rrt_malloc(ctx, kd->nkv * es, &k));
  CHECK_OK(rrt_malloc(ctx, kd->nkv * es, &v));
  CHECK_OK(rrt_malloc(ctx, mb, (void **)&lo));
  CHECK_OK(rrt_malloc(ctx, mb, (void **)&hi));
  CHECK_OK(rrt_malloc(ctx, no, (void **)&op));
  CHECK_OK(rrt_malloc(ctx, nl, (void **)&lp));
  for (int p = 0; p < 2; p++) {
    CHECK_OK(rrt_malloc(ctx, no, (void **)&o[p]));
    CHECK_OK(rrt_malloc(ctx, nl, (void **)&lse[p]));
  }
  CHECK_OK(rrt_memcpy_to_backend(ctx, q, kd->q, kd->nq * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, k, kd->k, kd->nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, v, kd->v, kd->nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, lo, kd->lo, mb));
  CHECK_OK(rrt_memcpy_to_backend(ctx, hi, kd->hi, mb));
  const rrt_attn_kargs ka = {.q = q,
                             .k = k,
                             .v = v,
                             .batch = c->batch,
                             .q_rows = c->q_rows,
                             .kv_rows = c->kv_rows,
                             .heads_q = c->hq,
                             .heads_kv = c->hkv,
                             .head_dim = c->dim,
                             .dtype = (int)c->dt,
                             .scale = (float)(1.0 / sqrt((double)c->dim)),
                             .mask = {lo, hi},
                             .smem_optin = ctx->smem_optin};
  rrt_stream cs = ctx->compute_stream;
  for (int p = 0; p < 2; p++)
    CHECK_OK(rrt_k_attn_init_emu(cs, o[p], (int64_t)kd->nq, lse[p], (int64_t)kd->nl));
  for (int n = 0; n < nitems; n++) {
    CHECK_OK(rrt_k_attn_fwd_tc_emu(cs, &ka, &items[n], op, lp));
    CHECK_OK(rrt_k_attn_merge_emu(cs, c->batch, c->hq, c->dim, c->q_rows, items[n].q_begin,
                                  items[n].q_len, op, RRT_DTYPE_F32, lp, o[0], lse[0]));
    CHECK_OK(rrt_k_attn_fwd_tc_merge_emu(cs, &ka, &items[n], o[1], lse[1]));
  }
  float *h[4] = {malloc(no), malloc(no), malloc(nl), malloc(nl)};
  for (int p = 0; p < 2; p++) {
    CHECK_OK(rrt_memcpy_to_host(ctx, h[p], o[p], no));
    CHECK_OK(rrt_memcpy_to_host(ctx, h[2 + p], lse[p], nl));
  }
  /* the same bits, or NaN in both (the payload of a NaN may differ) */
  int64_t differ = 0;
  for (size_t i = 0; i < kd->nq + kd->nl; i++) {
    const float a = i < kd->nq ? h[0][i] : h[2][i - kd->nq];
    const float b = i < kd->nq ? h[1][i] : h[3][i - kd->nq];
    differ += memcmp(&a, &b, sizeof a) != 0 && !(isnan(a) && isnan(b));
  }
  CHECK_MSG(differ == 0,
            "%s D=%d %s: rrt_k_attn_fwd_tc + merge and rrt_k_attn_fwd_tc_merge differ in %lld "
            "values",
            what, c->dim, rrt_dtype_name(c->dt), (long long)differ);
  for (int i = 0; i < 4; i++)
    free(h[i]);
  for (int p = 0; p < 2; p++) {
    rrt_free(ctx, o[p]);
    rrt_free(ctx, lse[p]);
  }
  rrt_free(ctx, op);
  rrt_free(ctx, lp);
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, lo);
  rrt_free(ctx, hi);
}

static void fill(void *x, size_t n, int dt, float amp, uint64_t *rs) {
  for (size_t i = 0; i < n; i++)
    rrt_am_store(x, (int64_t)i, dt, amp * rng_unit(rs));
}

/* NaN, +inf and -inf in one element of K each, at keys a few rows see. */
static void plant_nonfinite(const kcase *c, kdata *kd) {
  const float val[3] = {NAN, HUGE_VALF, -HUGE_VALF};
  for (int n = 0; n < 3; n++) {
    const int64_t kr = c->kv_rows * (n + 1) / 4, d = n % c->dim;
    rrt_am_store(kd->k, (kr * c->hkv + (c->hkv - 1)) * c->dim + d, (int)c->dt, val[n]);
  }
}

/* Whether the CPU has what the avx512 variant needs (kernels/cpu/attn_fwd.c). */
static int have_avx512(void) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
#else
  return 0;
#endif
}

/* Every mask kind on one case; the cpu table in each vector variant. */
static void run_case(rrt_ctx_t ctx, const kcase *c, uint64_t seed) {
  const int cpu = rrt_ctx_backend(ctx) == RRT_BACKEND_CPU;
  const size_t es = ref_es(c->dt);
  kdata kd;
  kd.nq = (size_t)(c->batch * c->q_rows * c->hq * c->dim);
  kd.nkv = (size_t)(c->batch * c->kv_rows * c->hkv * c->dim);
  kd.nl = (size_t)(c->batch * c->hq * c->q_rows);
  kd.q = malloc(kd.nq * es);
  kd.k = malloc(kd.nkv * es);
  kd.v = malloc(kd.nkv * es);
  kd.lo = malloc(sizeof(int64_t) * (size_t)c->q_rows);
  kd.hi = malloc(sizeof(int64_t) * (size_t)c->q_rows);
  uint64_t rs = seed * 0x9E3779B97F4A7C15ull + 1;
  fill(kd.q, kd.nq, (int)c->dt, 2.0f, &rs); /* sharper softmax than [-1, 1] */
  fill(kd.k, kd.nkv, (int)c->dt, 1.0f, &rs);
  fill(kd.v, kd.nkv, (int)c->dt, 1.0f, &rs);
  const posmap pm = {1000, c->q_stride, 500, c->k_stride};
  rrt_attn_item items[3];
  const int nitems = make_items(c, &pm, items);
  for (int kind = 0; kind < MASK_KINDS; kind++) {
    make_mask(kind == MASK_NONFINITE ? MASK_WALK : kind, c, &pm, &rs, kd.lo, kd.hi);
    if (kind == MASK_NONFINITE) plant_nonfinite(c, &kd);
    /* avx512bf16: the vdpbf16ps kernel for bf16 storage (emulated where the
     * CPU lacks it), the avx512 one for the others */
    static const int isas[] = {RRT_CPU_ISA_AVX512, RRT_CPU_ISA_AVX2, RRT_CPU_ISA_BASE,
                               RRT_CPU_ISA_AVX512BF16};
    static const char *const isa_names[] = {"cpu avx512", "cpu avx2", "cpu base", "cpu avx512bf16"};
    for (int v = 0; v < (cpu ? 4 : 1); v++) {
      char what[64];
      if (cpu && v == 0 && !have_avx512()) continue; /* it would run the avx2 one again */
      /* the variant is read from RINGRT_CPU_ISA at context creation; the
       * test sets the context's copy (unsupported ones fall back) */
      if (cpu) ctx->env.cpu_isa = isas[v];
      snprintf(what, sizeof what, "%s mask %s", cpu ? isa_names[v] : "emu", mask_names[kind]);
      double e = run_table(ctx, c, &kd, items, nitems, &pm, what);
      /* once a case (two more runs): the mask with empty and NaN rows */
      if (ctx->env.attn_kernel == RRT_ATTN_KERNEL_TC && kind == MASK_NONFINITE)
        check_tc_unfused(ctx, c, &kd, items, nitems, what);
      if (getenv("RRT_TEST_VERBOSE"))
        printf("%-24s D=%2d %-4s |dO| %.2e\n", what, c->dim, rrt_dtype_name(c->dt), e);
    }
  }
  free(kd.q);
  free(kd.k);
  free(kd.v);
  free(kd.lo);
  free(kd.hi);
}

static void run_backend(rrt_backend be, const kcase *cs, int n, int tc) {
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  cfg.backend = be;
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx));
  if (!ctx) return;
  /* read from RINGRT_ATTN_KERNEL at context creation; the test sets the copy */
  if (tc) ctx->env.attn_kernel = RRT_ATTN_KERNEL_TC;
  for (int i = 0; i < n; i++)
    run_case(ctx, &cs[i], 7u + (unsigned)i);
  rrt_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc > 1 && strcmp(argv[1], "tc") == 0) {
    run_backend(RRT_BACKEND_EMU, tc_cases, (int)(sizeof tc_cases / sizeof *tc_cases), 1);
  } else {
    run_backend(RRT_BACKEND_CPU, cpu_cases, (int)(sizeof cpu_cases / sizeof *cpu_cases), 0);
    run_backend(RRT_BACKEND_EMU, emu_cases, (int)(sizeof emu_cases / sizeof *emu_cases), 0);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

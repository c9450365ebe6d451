/* The backward kernel table of the emu (or cuda) backend against the
 * float64 reference (attn_ref_bwd.h), through the table entries the ring
 * driver calls: bwd_start (delta, dq = 0), zero, then bwd_step over two K/V
 * blocks: a foreign block (two items splitting the query rows, in one
 * call; its raw kv_rows-strided f32 dK/dV accumulator is checked, padding
 * rows included), and the rank's own block in two calls of half the rows
 * each into two accumulators folded by accumulate (the dK/dV hand-off),
 * stored by bwd_finish (storage dtype, q_rows rows). Items cover unmasked
 * and row-masked blocks (causal, sliding window, packed documents),
 * strided positions, GQA/MQA, odd head dims in every tile variant,
 * f32/bf16/f16, a NaN query row, and a rerun that must give the same bits.
 * Usage: test_attn_bwd_gpu emu|cuda [cpu|tc] (cuda: exit 77 without a GPU;
 * cpu: the cpu table must agree with this one on the same inputs). Tiny
 * shapes: the emulator runs one fiber per thread.
 *
 * tc (with RINGRT_ATTN_KERNEL=tc, so the table must take the tensor-core
 * kernels of attn_bwd_tc.cu or fail): bf16/f16 cases of every tile variant
 * (head_dim 16-64, 128, 256: two warps a key group), lengths past one tile
 * (64 query rows a dq block, 64 or 32 keys a dkv block, query tiles of 64 or
 * 32), GQA, every mask, a NaN row. Those kernels round P and dS to the
 * storage type before the products that consume them, so the check is per
 * element against a first-order bound computed here from the float64
 * terms: |got - ref| <= u |ref| (the stored result; not for the raw f32
 * accumulator) + u A + 1e-4 A + 1e-6, where u is the unit roundoff of the
 * storage type (2^-8 bf16, 2^-11 f16) and A the sum of the absolute values
 * of the element's terms (P |dO| for dV; scale P (|dP| + |delta|) |Q| for
 * dK and |K| for dQ, which also covers the rounding of dS); 1e-4 A is the
 * f32 sums (a few hundred terms, 2^-24 each) and the f32 exp with room to
 * spare. A NaN of the reference must be a NaN; with a NaN row the kernels
 * may give more NaN (tile products, docs/attn.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref_bwd.h"
#include "comm/ctx.h"
#include "kernels/attn_math.h"
#include "kernels/attn_table.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

typedef struct bcase {
  int64_t batch, rows;
  int hq, hkv, dim;
  rrt_dtype dt;
  int mask;    /* 0 none, 1 causal, 2 window (3 left, 2 right), 3 documents */
  int stride;  /* position stride of the masked block's queries and keys */
  int nan_row; /* query row (batch 0, head 0) made NaN, -1: none */
} bcase;

/* Host copies of one problem in storage dtype and the f64 values they hold. */
typedef struct prob {
  bcase c;
  int64_t nk;         /* the reference's keys: block 0's `rows`, then block 1's */
  int64_t kv_rows;    /* rows of a block as stored (rows + padding) */
  size_t nq_e, nkv_e; /* elements of Q and of one stored K block (all batch entries) */
  void *q, *k[2], *v[2], *dout, *o;
  float *lse;
  int64_t *lo, *hi;                /* row mask (global positions) */
  rrt_attn_item items[4];          /* block 0: rows [0, h), [h, R); block 1: the same */
  double *vq, *vk, *vv, *vdo, *vo; /* per batch: [rows, hq, d] / [nk, hkv, d] */
  double *vos;                     /* vo as stored (the o the kernels are given) */
  double *rdq, *rdk, *rdv, *rlse;
  char *vis; /* [rows * nk] pairs the items make visible */
} prob;

static double stored(rrt_dtype dt, float x) {
  float y = x;
  if (dt == RRT_DTYPE_BF16) y = rrt_bf16_to_f32(rrt_f32_to_bf16(x));
  if (dt == RRT_DTYPE_F16) y = rrt_f16_to_f32(rrt_f32_to_f16(x));
  return y;
}

static float rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 40) / 8388608.0 - 1.0);
}

/* Row mask of query row i (position i * stride): key positions [lo, hi]. */
static void row_mask(const bcase *c, int64_t i, int64_t *lo, int64_t *hi) {
  const int64_t p = i * c->stride;
  *lo = 0;
  *hi = INT64_MAX / 4;
  if (c->mask == 1) *hi = p;
  if (c->mask == 2) {
    *lo = p - 3 * c->stride;
    *hi = p + 2 * c->stride;
  }
  if (c->mask == 3) { /* documents of 5 rows each: causal within a document */
    const int64_t doc = 5 * c->stride;
    *lo = p / doc * doc;
    *hi = p;
  }
}

static int ref_vis(const void *arg, int64_t i, int64_t j) {
  const prob *p = (const prob *)arg;
  return p->vis[i * p->nk + j];
}

/* Two blocks of `rows` keys: block 0 unmasked at positions below every
 * query (masked too under a window or documents, then at the queries'
 * positions), block 1 at the queries' own positions, masked; each as two
 * items of half the query rows. */
static void make_items(prob *p) {
  const bcase *c = &p->c;
  const int64_t R = c->rows, h = R / 2, st = c->stride;
  const int64_t base = c->mask >= 2 ? 0 : -R * st - 7;
  for (int blk = 0; blk < 2; blk++) {
    const int masked = blk == 0 ? c->mask >= 2 : c->mask != 0;
    const int64_t k0 = blk == 0 ? base : 0;
    rrt_attn_item a = {0, h, 0, st, 0, R, k0, st, masked};
    rrt_attn_item b = {h, R - h, h * st, st, 0, R, k0, st, masked};
    p->items[2 * blk] = a;
    p->items[2 * blk + 1] = b;
  }
  for (int64_t i = 0; i < R; i++)
    for (int blk = 0; blk < 2; blk++)
      for (int64_t j = 0; j < R; j++) {
        const rrt_attn_item *it = &p->items[2 * blk];
        const int64_t kpos = it->k_pos0 + j * it->k_stride;
        int v = !it->masked || (kpos >= p->lo[i] && kpos <= p->hi[i]);
        p->vis[i * p->nk + blk * R + j] = (char)v;
      }
}

static void fill(prob *p, uint64_t seed) {
  const bcase *c = &p->c;
  const int64_t R = c->rows, B = c->batch, D = c->dim;
  const size_t es = c->dt == RRT_DTYPE_F32 ? 4 : 2;
  p->nk = 2 * R;
  p->kv_rows = R + 3; /* padding rows the items never reach */
  p->nq_e = (size_t)(B * R * c->hq * D);
  p->nkv_e = (size_t)(B * p->kv_rows * c->hkv * D);
  p->q = calloc(p->nq_e, es);
  p->dout = calloc(p->nq_e, es);
  p->o = calloc(p->nq_e, es);
  p->lse = calloc((size_t)(B * c->hq * R), sizeof(float));
  for (int blk = 0; blk < 2; blk++) {
    p->k[blk] = calloc(p->nkv_e, es);
    p->v[blk] = calloc(p->nkv_e, es);
  }
  p->lo = calloc((size_t)R, sizeof(int64_t));
  p->hi = calloc((size_t)R, sizeof(int64_t));
  p->vis = calloc((size_t)(R * p->nk), 1);
  const size_t qb = (size_t)(R * c->hq * D), kb = (size_t)(p->nk * c->hkv * D);
  p->vq = calloc(qb * B, sizeof(double));
  p->vdo = calloc(qb * B, sizeof(double));
  p->vo = calloc(qb * B, sizeof(double));
  p->vos = calloc(qb * B, sizeof(double));
  p->rdq = calloc(qb * B, sizeof(double));
  p->vk = calloc(kb * B, sizeof(double));
  p->vv = calloc(kb * B, sizeof(double));
  p->rdk = calloc(kb * B, sizeof(double));
  p->rdv = calloc(kb * B, sizeof(double));
  p->rlse = calloc((size_t)(B * c->hq * R), sizeof(double));
  for (int64_t i = 0; i < R; i++)
    row_mask(c, i, &p->lo[i], &p->hi[i]);
  make_items(p);
  uint64_t s = seed;
  for (size_t e = 0; e < qb * B; e++) {
    float x = 1.5f * rnd(&s), g = rnd(&s);
    const int64_t d = (int64_t)(e % (size_t)D), h = (int64_t)(e / (size_t)D % (size_t)c->hq);
    const int64_t i = (int64_t)(e / (size_t)(D * c->hq) % (size_t)R);
    if (e < qb && h == 0 && i == c->nan_row && d == 1) x = NAN;
    rrt_am_store(p->q, (int64_t)e, (int)c->dt, x);
    rrt_am_store(p->dout, (int64_t)e, (int)c->dt, g);
    p->vq[e] = stored(c->dt, x);
    p->vdo[e] = stored(c->dt, g);
  }
  /* K/V: reference order [b][key of both blocks][hkv][d]; storage per block
   * [b][kv_rows][hkv][d] */
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = 0; j < p->nk; j++)
      for (int64_t e = 0; e < c->hkv * D; e++) {
        float x = rnd(&s), y = rnd(&s);
        const int blk = (int)(j / R);
        const int64_t off = (b * p->kv_rows + j % R) * c->hkv * D + e;
        rrt_am_store(p->k[blk], off, (int)c->dt, x);
        rrt_am_store(p->v[blk], off, (int)c->dt, y);
        p->vk[(size_t)b * kb + (size_t)(j * c->hkv * D + e)] = stored(c->dt, x);
        p->vv[(size_t)b * kb + (size_t)(j * c->hkv * D + e)] = stored(c->dt, y);
      }
}

/* The reference: forward (o, lse as the kernels are given them, rounded to
 * storage / f32) and backward from the rounded o. */
static void reference(prob *p, double scale) {
  const bcase *c = &p->c;
  const int64_t R = c->rows, D = c->dim;
  const size_t qb = (size_t)(R * c->hq * D), kb = (size_t)(p->nk * c->hkv * D);
  for (int64_t b = 0; b < c->batch; b++) {
    ref_bwd_problem rp = {R,
                          p->nk,
                          c->hq,
                          c->hkv,
                          c->dim,
                          scale,
                          p->vq + b * qb,
                          p->vk + b * kb,
                          p->vv + b * kb,
                          p->vdo + b * qb,
                          NULL,
                          ref_vis,
                          p,
                          0,
                          NULL};
    double *lse = p->rlse + b * c->hq * R;
    CHECK(ref_attn_bwd(&rp, p->vo + b * qb, lse, p->rdq + b * qb, p->rdk + b * kb,
                       p->rdv + b * kb) == 0);
    for (size_t e = 0; e < qb; e++) {
      rrt_am_store(p->o, (int64_t)(b * qb + e), (int)c->dt, (float)p->vo[b * qb + e]);
      p->vos[b * qb + e] = stored(c->dt, (float)p->vo[b * qb + e]);
    }
    for (int64_t e = 0; e < c->hq * R; e++)
      p->lse[b * c->hq * R + e] = (float)lse[e];
    rp.o_delta = p->vos + b * qb; /* the gradients the kernels must give from that o */
    CHECK(ref_attn_bwd(&rp, p->vo + b * qb, lse, p->rdq + b * qb, p->rdk + b * kb,
                       p->rdv + b * kb) == 0);
  }
}

static void *to_backend(rrt_ctx_t ctx, const void *h, size_t bytes) {
  void *d = NULL;
  CHECK_OK(rrt_malloc(ctx, bytes, &d));
  CHECK_OK(rrt_memcpy_to_backend(ctx, d, h, bytes));
  return d;
}

/* Outputs of one run of the table (host): dq, and dk, dv of the own block
 * in storage dtype, delta, and block 0's raw f32 accumulator (dK then dV). */
typedef struct result {
  void *dq, *dk, *dv;
  float *delta, *dkv0;
} result;

static rrt_status run_table(rrt_ctx_t ctx, const rrt_attn_kernels *kt, prob *p, double scale,
                            result *out) {
  const bcase *c = &p->c;
  const size_t es = c->dt == RRT_DTYPE_F32 ? 4 : 2, nl = (size_t)(c->batch * c->hq * c->rows);
  const size_t own = (size_t)(c->batch * c->rows * c->hkv * c->dim); /* dk rows: q_rows */
  void *q = to_backend(ctx, p->q, p->nq_e * es), *dout = to_backend(ctx, p->dout, p->nq_e * es);
  void *o = to_backend(ctx, p->o, p->nq_e * es), *lse = to_backend(ctx, p->lse, nl * 4);
  void *k[2], *v[2];
  for (int blk = 0; blk < 2; blk++) {
    k[blk] = to_backend(ctx, p->k[blk], p->nkv_e * es);
    v[blk] = to_backend(ctx, p->v[blk], p->nkv_e * es);
  }
  int64_t *lo = to_backend(ctx, p->lo, (size_t)c->rows * 8);
  int64_t *hi = to_backend(ctx, p->hi, (size_t)c->rows * 8);
  float *delta, *dq, *dkv[3];
  void *dq_s, *dk_s, *dv_s;
  /* the accumulators start as NaN bytes: bwd_start and zero must clear them */
  const size_t njunk = 2 * p->nkv_e > p->nq_e ? 2 * p->nkv_e : p->nq_e;
  unsigned char *junk = malloc(njunk * 4);
  memset(junk, 0xff, njunk * 4);
  CHECK_OK(rrt_malloc(ctx, nl * 4, (void **)&delta));
  dq = to_backend(ctx, junk, p->nq_e * 4);
  for (int a = 0; a < 3; a++)
    dkv[a] = to_backend(ctx, junk, 2 * p->nkv_e * 4);
  free(junk);
  CHECK_OK(rrt_malloc(ctx, p->nq_e * es, &dq_s));
  CHECK_OK(rrt_malloc(ctx, own * es, &dk_s));
  CHECK_OK(rrt_malloc(ctx, own * es, &dv_s));

  rrt_attn_kshape sh = {c->batch,   c->rows,      p->kv_rows, c->hq, c->hkv, c->dim,
                        (int)c->dt, (float)scale, {lo, hi},   0,     0.0f};
  rrt_attn_work w;
  memset(&w, 0, sizeof w);
  rrt_attn_progress prog = {NULL, NULL};
  rrt_status st = kt->work_create(ctx, &sh, &w);
  if (st == RRT_SUCCESS) st = kt->bwd_start(ctx, &sh, &w, q, o, dout, delta, dq);
  for (int a = 0; a < 3 && st == RRT_SUCCESS; a++)
    st = kt->zero(ctx, dkv[a], 2 * p->nkv_e);
  /* block 0: both items in one call; block 1: one item a call, two accumulators */
  if (st == RRT_SUCCESS)
    st = kt->bwd_step(ctx, &sh, &w, k[0], v[0], &p->items[0], 2, lse, delta, dq, dkv[0], &prog);
  for (int n = 0; n < 2 && st == RRT_SUCCESS; n++)
    st = kt->bwd_step(ctx, &sh, &w, k[1], v[1], &p->items[2 + n], 1, lse, delta, dq, dkv[1 + n],
                      &prog);
  if (st == RRT_SUCCESS) st = kt->accumulate(ctx, dkv[1], dkv[2], 2 * p->nkv_e);
  if (st == RRT_SUCCESS) st = kt->bwd_finish(ctx, &sh, dq, dkv[1], dq_s, dk_s, dv_s);
  kt->work_destroy(ctx, &w);

  out->dq = malloc(p->nq_e * es);
  out->dk = malloc(own * es);
  out->dv = malloc(own * es);
  out->delta = malloc(nl * 4);
  out->dkv0 = malloc(2 * p->nkv_e * 4);
  CHECK_OK(rrt_memcpy_to_host(ctx, out->dkv0, dkv[0], 2 * p->nkv_e * 4));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->dq, dq_s, p->nq_e * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->dk, dk_s, own * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->dv, dv_s, own * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->delta, delta, nl * 4));
  void *bufs[] = {q,  dout,  o,  lse,    k[0],   k[1],   v[0], v[1], lo,
                  hi, delta, dq, dkv[0], dkv[1], dkv[2], dq_s, dk_s, dv_s};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    rrt_free(ctx, bufs[i]);
  return st;
}

static void result_free(result *r) {
  free(r->dq);
  free(r->dk);
  free(r->dv);
  free(r->delta);
  free(r->dkv0);
}

/* Largest error of n stored values against the reference, relative to the
 * reference's largest |x|; NaN must sit exactly where the reference has it. */
static double rel_err(const char *what, const bcase *c, const void *got, const double *ref,
                      size_t n) {
  double emax = 0, amax = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(ref[i]) && fabs(ref[i]) > amax) amax = fabs(ref[i]);
  for (size_t i = 0; i < n; i++) {
    const double g = rrt_am_load(got, (int64_t)i, (int)c->dt);
    const int same = isnan(ref[i]) == isnan(g);
    CHECK_MSG(same, "%s[%zu] = %g, reference %g (NaN placement)", what, i, g, ref[i]);
    if (!same) return INFINITY;
    if (!isnan(ref[i]) && fabs(g - ref[i]) > emax) emax = fabs(g - ref[i]);
  }
  return emax / (amax > 0 ? amax : 1);
}

/* Storage rounding (half an ulp of the dtype, relative) plus f32 sums over
 * at most a few hundred terms of O(1) values. */
static double tolerance(rrt_dtype dt) {
  return dt == RRT_DTYPE_BF16 ? 8e-3 : dt == RRT_DTYPE_F16 ? 2e-3 : 2e-5;
}

/* The reference's dK or dV of key block blk ([b][nk][hkv][d]) at the
 * kernels' layout: [b][rows][hkv][d] (own block, as stored by bwd_finish)
 * or, with kv_rows > rows, [b][kv_rows][hkv][d] with zero padding rows (the
 * raw accumulator). */
static void block_rows(const prob *p, const double *ref, int blk, int64_t rows, double *out) {
  const bcase *c = &p->c;
  const int64_t R = c->rows, row = c->hkv * c->dim;
  memset(out, 0, sizeof(double) * (size_t)(c->batch * rows * row));
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t r = 0; r < R; r++)
      for (int64_t e = 0; e < row; e++)
        out[(b * rows + r) * row + e] = ref[(b * p->nk + blk * R + r) * row + e];
}

/* Block 0's raw f32 accumulator (dK then dV) against the reference. */
static double raw_err(const prob *p, const float *dkv0, const double *rk, const double *rv) {
  bcase f32 = p->c;
  f32.dt = RRT_DTYPE_F32;
  const size_t n = p->nkv_e;
  double *x = malloc(sizeof(double) * n);
  block_rows(p, rk, 0, p->kv_rows, x);
  double e = rel_err("dk(block 0, raw)", &f32, dkv0, x, n);
  block_rows(p, rv, 0, p->kv_rows, x);
  const double ev = rel_err("dv(block 0, raw)", &f32, dkv0 + n, x, n);
  free(x);
  return e > ev ? e : ev;
}

/* Largest difference of two tables' stored results, relative to the
 * largest |x| of `ref` (the table that matched the float64 reference, NaN
 * placement included). A NaN of ref must be a NaN of got (never hidden); got
 * may have more NaN only when `wider` (the cpu kernel's tile products
 * spread a non-finite Q or K to pairs sharing its tile, docs/attn.md). */
static double agree_err(const char *what, rrt_dtype dt, const void *ref, const void *got, size_t n,
                        int wider) {
  double emax = 0, amax = 0;
  for (size_t i = 0; i < n; i++) {
    const double r = rrt_am_load(ref, (int64_t)i, (int)dt);
    if (!isnan(r) && fabs(r) > amax) amax = fabs(r);
  }
  for (size_t i = 0; i < n; i++) {
    const double r = rrt_am_load(ref, (int64_t)i, (int)dt),
                 g = rrt_am_load(got, (int64_t)i, (int)dt);
    const int ok = isnan(r) ? isnan(g) : !isnan(g) || wider;
    CHECK_MSG(ok, "%s[%zu] = %g, other table %g (NaN placement)", what, i, g, r);
    if (!ok) return INFINITY;
    if (!isnan(r) && !isnan(g) && fabs(g - r) > emax) emax = fabs(g - r);
  }
  return emax / (amax > 0 ? amax : 1);
}

/* The cpu table on the same inputs gives the same answer: both lie within
 * the reference's tolerance, so they lie within twice it of each other. */
static void check_agree(rrt_ctx_t ctx, const rrt_attn_kernels *cpu, prob *p, double scale,
                        const result *mine, int ci) {
  const bcase *c = &p->c;
  const size_t own = (size_t)(c->batch * c->rows * c->hkv * c->dim);
  const int wider = c->nan_row >= 0;
  result rc;
  CHECK_OK(run_table(ctx, cpu, p, scale, &rc));
  const double eq = agree_err("dq(cpu)", c->dt, mine->dq, rc.dq, p->nq_e, wider);
  const double ek = agree_err("dk(cpu)", c->dt, mine->dk, rc.dk, own, wider);
  const double ev = agree_err("dv(cpu)", c->dt, mine->dv, rc.dv, own, wider);
  const double tol = 2 * tolerance(c->dt);
  CHECK_MSG(eq <= tol && ek <= tol && ev <= tol, "case %d: vs cpu: dq %.2e dk %.2e dv %.2e > %.1e",
            ci, eq, ek, ev, tol);
  result_free(&rc);
}

static void check_case(rrt_ctx_t ctx, const rrt_attn_kernels *kt, const rrt_attn_kernels *cpu,
                       const bcase *c, int ci) {
  prob p;
  memset(&p, 0, sizeof p);
  p.c = *c;
  fill(&p, 1000u + (uint64_t)ci);
  const double scale = 1.0 / sqrt((double)c->dim);
  reference(&p, scale);
  result r1, r2;
  CHECK_OK(run_table(ctx, kt, &p, scale, &r1));
  const size_t own = (size_t)(c->batch * c->rows * c->hkv * c->dim);
  double *fk = calloc(own, sizeof(double)), *fv = calloc(own, sizeof(double));
  block_rows(&p, p.rdk, 1, c->rows, fk);
  block_rows(&p, p.rdv, 1, c->rows, fv);
  const double tol = tolerance(c->dt);
  const double edq = rel_err("dq", c, r1.dq, p.rdq, p.nq_e);
  const double edk = rel_err("dk", c, r1.dk, fk, own);
  const double edv = rel_err("dv", c, r1.dv, fv, own);
  const double eraw = raw_err(&p, r1.dkv0, p.rdk, p.rdv);
  CHECK_MSG(edq <= tol && edk <= tol && edv <= tol && eraw <= 2e-5,
            "case %d (%s, D %d, hq %d/%d, mask %d): dq %.2e dk %.2e dv %.2e raw %.2e > %.1e", ci,
            kt->name, c->dim, c->hq, c->hkv, c->mask, edq, edk, edv, eraw, tol);
  /* delta from the storage-dtype o: f32 sums of head_dim products */
  double ed = 0;
  for (int64_t b = 0; b < c->batch; b++)
    for (int h = 0; h < c->hq; h++)
      for (int64_t i = 0; i < c->rows; i++) {
        double t = 0;
        for (int d = 0; d < c->dim; d++) {
          const size_t e = (size_t)(((b * c->rows + i) * c->hq + h) * c->dim + d);
          t += p.vdo[e] * p.vos[e];
        }
        const float g = r1.delta[(b * c->hq + h) * c->rows + i];
        CHECK_MSG(isnan(t) == isnan(g), "delta NaN placement, row %lld", (long long)i);
        if (!isnan(t) && fabs(g - t) > ed) ed = fabs(g - t);
      }
  CHECK_MSG(ed <= 1e-4, "case %d: delta error %.2e", ci, ed);
  /* determinism: a second run gives the same bits */
  CHECK_OK(run_table(ctx, kt, &p, scale, &r2));
  const size_t es = c->dt == RRT_DTYPE_F32 ? 4 : 2;
  CHECK_MSG(memcmp(r1.dq, r2.dq, p.nq_e * es) == 0 && memcmp(r1.dk, r2.dk, own * es) == 0 &&
                memcmp(r1.dv, r2.dv, own * es) == 0,
            "case %d: a rerun differs", ci);
  result_free(&r2);
  if (cpu) check_agree(ctx, cpu, &p, scale, &r1, ci);
  result_free(&r1);
  free(fk);
  free(fv);
  void *bufs[] = {p.q,  p.dout, p.o,  p.lse, p.k[0], p.k[1], p.v[0], p.v[1], p.lo,  p.hi,  p.vis,
                  p.vq, p.vk,   p.vv, p.vdo, p.vo,   p.vos,  p.rdq,  p.rdk,  p.rdv, p.rlse};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    free(bufs[i]);
}

/* Unit roundoff of the storage type. */
static double unit_roundoff(rrt_dtype dt) { return dt == RRT_DTYPE_BF16 ? 0x1p-8 : 0x1p-11; }

/* The sums of absolute terms of every gradient element (reference layouts,
 * see the bound in the header): non-finite terms are left out (their
 * elements are NaN in the reference, or may be, with a NaN row). */
static void abs_terms(const prob *p, double scale, double *adq, double *adk, double *adv) {
  const bcase *c = &p->c;
  const int64_t R = c->rows, D = c->dim, G = c->hq / c->hkv;
  const size_t qb = (size_t)(R * c->hq * D), kb = (size_t)(p->nk * c->hkv * D);
  memset(adq, 0, sizeof(double) * qb * (size_t)c->batch);
  memset(adk, 0, sizeof(double) * kb * (size_t)c->batch);
  memset(adv, 0, sizeof(double) * kb * (size_t)c->batch);
  for (int64_t b = 0; b < c->batch; b++)
    for (int h = 0; h < c->hq; h++)
      for (int64_t i = 0; i < R; i++) {
        const double *q = p->vq + b * qb + (size_t)((i * c->hq + h) * D);
        const double *g = p->vdo + b * qb + (size_t)((i * c->hq + h) * D);
        const double *o = p->vos + b * qb + (size_t)((i * c->hq + h) * D);
        const double lse = p->rlse[(b * c->hq + h) * R + i];
        double delta = 0;
        for (int64_t d = 0; d < D; d++)
          delta += g[d] * o[d];
        for (int64_t j = 0; j < p->nk; j++) {
          if (!p->vis[i * p->nk + j]) continue;
          const size_t ko = b * kb + (size_t)((j * c->hkv + h / G) * D);
          double sc = 0, dp = 0;
          for (int64_t d = 0; d < D; d++) {
            sc += q[d] * p->vk[ko + d];
            dp += g[d] * p->vv[ko + d];
          }
          const double pr = exp(sc * scale - lse), w = scale * pr * (fabs(dp) + fabs(delta));
          if (!isfinite(pr) || !isfinite(w)) continue;
          for (int64_t d = 0; d < D; d++) {
            adv[ko + d] += pr * fabs(g[d]);
            adk[ko + d] += w * fabs(q[d]);
            adq[b * qb + (size_t)((i * c->hq + h) * D + d)] += w * fabs(p->vk[ko + d]);
          }
        }
      }
}

/* Largest err / bound over n elements of got (dtype dt) against ref with
 * the bound of the header (u_store: the rounding of the stored result, 0
 * for an f32 accumulator); NaN placement as described there. */
static double bound_ratio(const char *what, rrt_dtype dt, const void *got, const double *ref,
                          const double *abs_sum, size_t n, double u, double u_store, int wider) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    const double g = rrt_am_load(got, (int64_t)i, (int)dt);
    const int ok = isnan(ref[i]) ? isnan(g) : !isnan(g) || wider;
    CHECK_MSG(ok, "%s[%zu] = %g, reference %g (NaN placement)", what, i, g, ref[i]);
    if (!ok) return INFINITY;
    if (isnan(ref[i]) || isnan(g)) continue;
    const double bound = u_store * fabs(ref[i]) + (u + 1e-4) * abs_sum[i] + 1e-6;
    const double r = fabs(g - ref[i]) / bound;
    if (r > worst) worst = r;
  }
  return worst;
}

/* The tensor-core kernels through the table (forced by RINGRT_ATTN_KERNEL=tc)
 * against the reference with the per-element bound; a rerun gives the same
 * bits. */
static void check_case_tc(rrt_ctx_t ctx, const rrt_attn_kernels *kt, const bcase *c, int ci) {
  prob p;
  memset(&p, 0, sizeof p);
  p.c = *c;
  fill(&p, 2000u + (uint64_t)ci);
  const double scale = 1.0 / sqrt((double)c->dim);
  reference(&p, scale);
  const size_t qb = p.nq_e, kb = (size_t)(c->batch * p.nk * c->hkv * c->dim);
  const size_t own = (size_t)(c->batch * c->rows * c->hkv * c->dim);
  double *adq = malloc(sizeof(double) * qb), *adk = malloc(sizeof(double) * kb);
  double *adv = malloc(sizeof(double) * kb);
  abs_terms(&p, scale, adq, adk, adv);
  result r1, r2;
  CHECK_OK(run_table(ctx, kt, &p, scale, &r1));
  const double u = unit_roundoff(c->dt);
  const int wider = c->nan_row >= 0;
  double *ref = malloc(sizeof(double) * p.nkv_e), *abs_sum = malloc(sizeof(double) * p.nkv_e);
  bcase f32 = *c;
  f32.dt = RRT_DTYPE_F32;
  double worst[5];
  worst[0] = bound_ratio("dq", c->dt, r1.dq, p.rdq, adq, qb, u, u, wider);
  /* the own block (block 1) as stored, then block 0's raw accumulator */
  const double *refs[2] = {p.rdk, p.rdv}, *abss[2] = {adk, adv};
  const void *stored_g[2] = {r1.dk, r1.dv};
  for (int x = 0; x < 2; x++) {
    block_rows(&p, refs[x], 1, c->rows, ref);
    block_rows(&p, abss[x], 1, c->rows, abs_sum);
    worst[1 + x] = bound_ratio(x ? "dv" : "dk", c->dt, stored_g[x], ref, abs_sum, own, u, u, wider);
    block_rows(&p, refs[x], 0, p.kv_rows, ref);
    block_rows(&p, abss[x], 0, p.kv_rows, abs_sum);
    worst[3 + x] = bound_ratio(x ? "dv(block 0, raw)" : "dk(block 0, raw)", f32.dt,
                               r1.dkv0 + x * p.nkv_e, ref, abs_sum, p.nkv_e, u, 0, wider);
  }
  double w = 0;
  for (int x = 0; x < 5; x++)
    w = worst[x] > w ? worst[x] : w;
  CHECK_MSG(w <= 1,
            "tc case %d (D %d, hq %d/%d, mask %d, %s): error / bound dq %.2f dk %.2f "
            "dv %.2f raw dk %.2f raw dv %.2f",
            ci, c->dim, c->hq, c->hkv, c->mask, c->dt == RRT_DTYPE_BF16 ? "bf16" : "f16", worst[0],
            worst[1], worst[2], worst[3], worst[4]);
  printf("tc case %d: D %d %s mask %d: largest error / bound %.3f\n", ci, c->dim,
         c->dt == RRT_DTYPE_BF16 ? "bf16" : "f16", c->mask, w);
  CHECK_OK(run_table(ctx, kt, &p, scale, &r2));
  CHECK_MSG(memcmp(r1.dq, r2.dq, p.nq_e * 2) == 0 && memcmp(r1.dk, r2.dk, own * 2) == 0 &&
                memcmp(r1.dv, r2.dv, own * 2) == 0 &&
                memcmp(r1.dkv0, r2.dkv0, 2 * p.nkv_e * 4) == 0,
            "tc case %d: a rerun differs", ci);
  result_free(&r1);
  result_free(&r2);
  free(ref);
  free(abs_sum);
  free(adq);
  free(adk);
  free(adv);
  void *bufs[] = {p.q,  p.dout, p.o,  p.lse, p.k[0], p.k[1], p.v[0], p.v[1], p.lo,  p.hi,  p.vis,
                  p.vq, p.vk,   p.vv, p.vdo, p.vo,   p.vos,  p.rdq,  p.rdk,  p.rdv, p.rlse};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    free(bufs[i]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  const int with_cpu = argc > 2 && strcmp(argv[2], "cpu") == 0;
  const int tc = argc > 2 && strcmp(argv[2], "tc") == 0;
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  cfg.backend = cuda ? RRT_BACKEND_CUDA : RRT_BACKEND_EMU;
  cfg.bind = 0;
  rrt_ctx_t ctx = NULL;
  rrt_status st = rrt_ctx_create(MPI_COMM_SELF, &cfg, &ctx);
  if (st == RRT_ERR_NO_DEVICE || st == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP;
  }
  CHECK_OK(st);
  const rrt_attn_kernels *kt = rrt_attn_kernels_for(cuda ? RRT_BACKEND_CUDA : RRT_BACKEND_EMU);
  const rrt_attn_kernels *cpu = with_cpu ? rrt_attn_kernels_for(RRT_BACKEND_CPU) : NULL;
  CHECK(kt && kt->bwd_start && kt->bwd_step && kt->accumulate && kt->zero && kt->bwd_finish);
  CHECK(!with_cpu || (cpu && cpu->bwd_step));
  /* every tile variant (D <= 32, 64, 128, 256), masks, strides, GQA/MQA */
  const bcase cases[] = {
      {2, 37, 2, 1, 5, RRT_DTYPE_F32, 1, 1, -1},   /* causal, 2 key tiles, GQA, batch 2 */
      {1, 40, 3, 3, 40, RRT_DTYPE_F32, 2, 2, -1},  /* window, strided positions */
      {1, 33, 4, 1, 72, RRT_DTYPE_BF16, 3, 1, -1}, /* documents, MQA, bf16 */
      {1, 20, 2, 2, 130, RRT_DTYPE_F16, 0, 1, -1}, /* unmasked, D > 128, f16 */
      {1, 18, 2, 1, 16, RRT_DTYPE_F32, 1, 1, 6},   /* a NaN query row */
  };
  /* tensor cores: every tile variant past one tile, masks, GQA, a NaN row */
  const bcase tc_cases[] = {
      {1, 70, 2, 1, 64, RRT_DTYPE_BF16, 1, 1, -1},  /* causal, GQA, 2 dq blocks */
      {2, 40, 2, 2, 48, RRT_DTYPE_F16, 2, 2, -1},   /* window, strided, batch 2 */
      {1, 45, 4, 2, 128, RRT_DTYPE_BF16, 3, 1, -1}, /* documents, GQA 4:2 */
      {1, 36, 1, 1, 256, RRT_DTYPE_F16, 0, 1, -1},  /* unmasked, two warps a key group */
      {1, 33, 2, 1, 16, RRT_DTYPE_BF16, 1, 1, 5},   /* a NaN query row */
      /* 3-4 tiles a block (query tiles x GQA for dkv, key tiles for dq):
       * a prefetch reuses the buffer of the tile two back, so a missing
       * end-of-tile barrier shows (the planted-fault test) */
      {1, 140, 2, 1, 16, RRT_DTYPE_BF16, 0, 1, -1},
  };
  for (size_t i = 0; ctx && tc && i < sizeof tc_cases / sizeof tc_cases[0]; i++)
    check_case_tc(ctx, kt, &tc_cases[i], (int)i);
  for (size_t i = 0; ctx && !tc && kt->bwd_step && i < sizeof cases / sizeof cases[0]; i++)
    check_case(ctx, kt, cpu, &cases[i], (int)i);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* The backward entries of an attention kernel table (bwd_start, bwd_step,
 * accumulate, zero, bwd_finish), called directly on a one-rank context,
 * against the float64 reference of attn_ref_bwd.h.
 *
 * Each case runs two "ring steps": two K/V blocks (kv_rows rows, longer
 * than the rank's q_rows, padding never reached) with their own items
 * (offsets, position strides 1 or 3, masked by a random nondecreasing row
 * mask or not, several items per step). The reference sees the same pairs
 * with the two blocks' keys side by side, so the LSE the kernel gets covers
 * both blocks (as in a ring) and dQ sums over both steps. GQA 4:2, MQA 4:1,
 * MHA with enough heads for one task per KV head, GQA 16:4 in lanes of two
 * query heads; head_dim 1, 8, 16, 40, 64, 72; f32, bf16, f16; NaN inputs
 * (the NaN pattern must match, see err_add).
 * Determinism: the step sequence repeated, with 1 and 3 OpenMP threads,
 * gives the same bits.
 *
 * Usage: test_attn_bwd_kernels BACKEND [full|small] (BACKEND cpu, emu or
 * cuda; small: tiny shapes for the emulator). RINGRT_CPU_ISA picks the CPU
 * kernel's vector variant. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref_bwd.h"
#include "comm/ctx.h"
#include "kernels/attn_math.h"
#include "kernels/attn_table.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

enum { NSTEP = 2, MAXIT = 3 };

typedef struct tcase {
  int batch, L, KV, hq, hkv, D;
  rrt_dtype dt;
  int qs, ks; /* position strides of the queries and the keys */
  int nan;    /* 1: NaN in one V element; 2: NaN in one Q element */
} tcase;

static const tcase full_cases[] = {
    {1, 100, 150, 4, 2, 64, RRT_DTYPE_F32, 1, 1, 0}, /* GQA 4:2, several tiles */
    {2, 61, 140, 4, 1, 40, RRT_DTYPE_F32, 3, 1, 0},  /* MQA, batch 2, query stride 3 */
    {1, 53, 131, 4, 2, 72, RRT_DTYPE_F32, 1, 3, 0},  /* head_dim past a vector multiple */
    {1, 70, 90, 4, 1, 1, RRT_DTYPE_F32, 3, 3, 0},    /* head_dim 1 */
    {2, 40, 60, 8, 8, 16, RRT_DTYPE_F32, 1, 1, 0},   /* 16 KV heads: one lane per group */
    {2, 30, 50, 16, 4, 8, RRT_DTYPE_F32, 3, 1, 0},   /* lanes of two query heads */
    {1, 77, 150, 4, 2, 64, RRT_DTYPE_BF16, 1, 1, 0}, /* half storage */
    {1, 45, 100, 4, 1, 72, RRT_DTYPE_F16, 1, 3, 0},  /* half storage */
    {1, 50, 80, 4, 2, 40, RRT_DTYPE_F32, 1, 1, 1},   /* NaN propagation */
    {1, 50, 80, 4, 2, 40, RRT_DTYPE_F32, 1, 1, 2},
};
static const tcase small_cases[] = {
    {1, 9, 14, 4, 2, 40, RRT_DTYPE_F32, 1, 3, 0},
    {1, 7, 11, 4, 1, 16, RRT_DTYPE_BF16, 3, 1, 0},
};

/* One step's items and the positions of its block's keys. */
typedef struct tstep {
  rrt_attn_item it[MAXIT];
  int n;
  int64_t kpos0, ks;
} tstep;

typedef struct tprob {
  const tcase *c;
  int64_t qpos0;
  int64_t *lo, *hi; /* row mask, global key positions */
  tstep st[NSTEP];
} tprob;

static uint64_t rng_state;
static double urand(void) { /* [-1, 1) */
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}
static int64_t irand(int64_t n) { return (int64_t)((urand() + 1.0) * 0.5 * (double)n); }

static rrt_attn_item mk_item(const tprob *p, const tstep *s, int64_t q0, int64_t q1, int64_t k0,
                             int64_t k1, int masked) {
  rrt_attn_item it = {q0,    q1 - q0, p->qpos0 + q0 * p->c->qs, p->c->qs,
                      k0,    k1 - k0, s->kpos0 + k0 * s->ks,    s->ks,
                      masked};
  return it;
}

/* Items with offsets, a masked and an unmasked item sharing query rows. */
static void build_problem(tprob *p, const tcase *c) {
  const int64_t L = c->L, KV = c->KV;
  p->c = c;
  p->qpos0 = 50;
  p->st[0].kpos0 = 0;
  p->st[1].kpos0 = 40;
  for (int s = 0; s < NSTEP; s++)
    p->st[s].ks = c->ks;
  p->st[0].it[0] = mk_item(p, &p->st[0], 0, L / 2, 0, KV * 2 / 3, 1);
  p->st[0].it[1] = mk_item(p, &p->st[0], 0, L / 2, KV * 2 / 3, KV - 1, 0);
  p->st[0].it[2] = mk_item(p, &p->st[0], L / 2, L, 2, KV - 1, 0);
  p->st[0].n = 3;
  p->st[1].it[0] = mk_item(p, &p->st[1], 1, L, 0, KV - 3, 1);
  p->st[1].n = 1;
  /* random nondecreasing bounds around the query positions; some rows see nothing */
  p->lo = malloc(sizeof(int64_t) * (size_t)L);
  p->hi = malloc(sizeof(int64_t) * (size_t)L);
  int64_t lo = irand(10) - 5, hi = lo + irand(40) - 2;
  for (int64_t q = 0; q < L; q++) {
    lo += irand(2 * c->ks + 1);
    hi += irand(3 * c->ks + 1);
    p->lo[q] = lo;
    p->hi[q] = hi;
  }
}

/* Reference visibility: query row i, key j of the two blocks side by side. */
static int vis_fn(const void *arg, int64_t i, int64_t j) {
  const tprob *p = arg;
  const int s = (int)(j / p->c->KV);
  const int64_t jj = j % p->c->KV;
  for (int n = 0; n < p->st[s].n; n++) {
    const rrt_attn_item *it = &p->st[s].it[n];
    if (i < it->q_begin || i >= it->q_begin + it->q_len) continue;
    if (jj < it->k_begin || jj >= it->k_begin + it->k_len) continue;
    const int64_t kp = it->k_pos0 + (jj - it->k_begin) * it->k_stride;
    return !it->masked || (kp >= p->lo[i] && kp <= p->hi[i]);
  }
  return 0;
}

/* Storage-dtype values of n elements and their stored values as doubles. */
static void *gen(size_t n, rrt_dtype dt, double amp, double *stored) {
  void *x = malloc(n * (dt == RRT_DTYPE_F32 ? 4 : 2));
  for (size_t i = 0; i < n; i++) {
    rrt_am_store(x, (int64_t)i, (int)dt, (float)(amp * urand()));
    stored[i] = rrt_am_load(x, (int64_t)i, (int)dt);
  }
  return x;
}

static void *to_backend(rrt_ctx_t ctx, const void *host, size_t bytes) {
  void *p = NULL;
  CHECK_OK(rrt_malloc(ctx, bytes ? bytes : 1, &p));
  if (p && bytes) CHECK_OK(rrt_memcpy_to_backend(ctx, p, host, bytes));
  return p;
}

/* The kernel's f32 accumulators after the two steps and their outputs. */
typedef struct kout {
  float *dq;             /* [B, L, Hq, D] */
  float *dkv[NSTEP];     /* [B, KV, Hkv, D] dK then dV, per block */
  void *sdq, *sdk, *sdv; /* bwd_finish of dq and block 0's dkv, storage dtype */
} kout;

/* Device-side operands of one case. */
typedef struct kin {
  void *q, *o, *dout, *k[NSTEP], *v[NSTEP];
  float *lse;
} kin;

static void run_kernels(rrt_ctx_t ctx, const rrt_attn_kernels *kern, const rrt_attn_kshape *sh,
                        const tprob *p, const kin *in, kout *out) {
  const size_t nq = (size_t)sh->batch * sh->q_rows * sh->heads_q * sh->head_dim;
  const size_t nkv = (size_t)sh->batch * sh->kv_rows * sh->heads_kv * sh->head_dim;
  const size_t nl = (size_t)sh->batch * sh->heads_q * sh->q_rows, es = rrt_dtype_size(sh->dtype);
  rrt_attn_work w;
  memset(&w, 0, sizeof w);
  CHECK_OK(kern->work_create(ctx, sh, &w));
  float *delta, *dq, *dkv[NSTEP], *part;
  void *sdq, *sdk, *sdv;
  CHECK_OK(rrt_malloc(ctx, nl * 4, (void **)&delta));
  CHECK_OK(rrt_malloc(ctx, nq * 4, (void **)&dq));
  CHECK_OK(rrt_malloc(ctx, 2 * nkv * 4, (void **)&part));
  for (int s = 0; s < NSTEP; s++)
    CHECK_OK(rrt_malloc(ctx, 2 * nkv * 4, (void **)&dkv[s]));
  const size_t nkq = (size_t)sh->batch * sh->q_rows * sh->heads_kv * sh->head_dim;
  CHECK_OK(rrt_malloc(ctx, nq * es, &sdq));
  CHECK_OK(rrt_malloc(ctx, nkq * es, &sdk));
  CHECK_OK(rrt_malloc(ctx, nkq * es, &sdv));
  CHECK_OK(rrt_memset(ctx, dq, 0x7f, nq * 4)); /* garbage bwd_start must clear */
  CHECK_OK(kern->bwd_start(ctx, sh, &w, in->q, in->o, in->dout, delta, dq));
  rrt_attn_progress prog = {NULL, NULL};
  for (int s = 0; s < NSTEP; s++) {
    /* the block's dK/dV start from zero (zero); the last item's sum comes
     * from a second call into a partial sum that is then added (accumulate),
     * as the ring hands dK/dV on */
    const int n0 = p->st[s].n - 1;
    CHECK_OK(rrt_memset(ctx, dkv[s], 0x7f, 2 * nkv * 4));
    CHECK_OK(rrt_memset(ctx, part, 0x7f, 2 * nkv * 4));
    CHECK_OK(kern->zero(ctx, dkv[s], 2 * nkv));
    CHECK_OK(kern->zero(ctx, part, 2 * nkv));
    CHECK_OK(kern->bwd_step(ctx, sh, &w, in->k[s], in->v[s], p->st[s].it, n0, in->lse, delta, dq,
                            dkv[s], &prog));
    CHECK_OK(kern->bwd_step(ctx, sh, &w, in->k[s], in->v[s], p->st[s].it + n0, 1, in->lse, delta,
                            dq, part, &prog));
    CHECK_OK(kern->accumulate(ctx, dkv[s], part, 2 * nkv));
  }
  CHECK_OK(kern->bwd_finish(ctx, sh, dq, dkv[0], sdq, sdk, sdv));
  out->dq = malloc(nq * 4);
  CHECK_OK(rrt_memcpy_to_host(ctx, out->dq, dq, nq * 4));
  for (int s = 0; s < NSTEP; s++) {
    out->dkv[s] = malloc(2 * nkv * 4);
    CHECK_OK(rrt_memcpy_to_host(ctx, out->dkv[s], dkv[s], 2 * nkv * 4));
    rrt_free(ctx, dkv[s]);
  }
  out->sdq = malloc(nq * es);
  out->sdk = malloc(nkq * es);
  out->sdv = malloc(nkq * es);
  CHECK_OK(rrt_memcpy_to_host(ctx, out->sdq, sdq, nq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->sdk, sdk, nkq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, out->sdv, sdv, nkq * es));
  rrt_free(ctx, delta), rrt_free(ctx, dq), rrt_free(ctx, part);
  rrt_free(ctx, sdq), rrt_free(ctx, sdk), rrt_free(ctx, sdv);
  kern->work_destroy(ctx, &w);
}

static void kout_free(kout *o) {
  free(o->dq), free(o->sdq), free(o->sdk), free(o->sdv);
  for (int s = 0; s < NSTEP; s++)
    free(o->dkv[s]);
}

static int kout_same(const kout *a, const kout *b, size_t nq, size_t nkv) {
  int same = memcmp(a->dq, b->dq, nq * 4) == 0;
  for (int s = 0; s < NSTEP; s++)
    same = same && memcmp(a->dkv[s], b->dkv[s], 2 * nkv * 4) == 0;
  return same;
}

/* Error of got against ref relative to ref's largest |value|. NaN must be
 * wherever the reference has NaN; with `spread` it may also be elsewhere:
 * a non-finite Q, dO or K element times the exact 0 of a hidden pair gives
 * NaN in a product over a tile, as in a matmul-based backward (torch's);
 * a non-finite V (read only by dP, whose hidden pairs are discarded) or a
 * NaN score must not spread. nan_ok = 0 when that fails. */
typedef struct terr {
  double rel;
  int nan_ok, spread;
} terr;

static void err_add(terr *e, double got, double ref, double scale) {
  if (isnan(ref) || isnan(got)) {
    if (isnan(ref) ? !isnan(got) : !e->spread) e->nan_ok = 0;
    return;
  }
  const double r = fabs(got - ref) / scale;
  if (!(r <= e->rel)) e->rel = r;
}

static double finite_absmax(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]) && fabs(x[i]) > m) m = fabs(x[i]);
  return m > 0 ? m : 1.0;
}

/* Tolerance on |got - ref| / max|ref| per gradient. The reference is
 * computed in double from the very inputs the kernel sees (stored values,
 * the storage-rounded O for delta, the f32 LSE's rounding aside), so only
 * f32 arithmetic counts, for every dtype: sums of at most 2 * KV + L * Hq /
 * Hkv terms (<= 600 here) in f32 (relative error <= n * 2^-24 of the sum of
 * |terms|, ~4e-5 in the worst case, ~sqrt(n) * 2^-24 ~ 1.5e-6 typically),
 * the LSE's f32 rounding (|lse| <= 10: P off by <= 6e-7 relative), and the
 * 2^x polynomial (2e-8): typically ~sqrt(n) * 2^-24 * (some cancellation)
 * ~1e-6. Observed: <= 8e-7 on every case and vector variant. Allow 2e-5
 * (the worst-case bound, unreached, would be ~4e-5). */
#define TOL_REL 2e-5

static void check_case(rrt_ctx_t ctx, const tcase *c, uint64_t seed) {
  rng_state = seed;
  const int B = c->batch, L = c->L, KV = c->KV, Hq = c->hq, Hkv = c->hkv, D = c->D;
  const rrt_dtype dt = c->dt;
  const size_t es = rrt_dtype_size(dt), nq = (size_t)B * L * Hq * D, nkv = (size_t)B * KV * Hkv * D;
  const size_t nl = (size_t)B * Hq * L, nkq = (size_t)B * L * Hkv * D;
  const double scale = 1.0 / sqrt((double)D);
  tprob p;
  build_problem(&p, c);
  /* inputs: storage tensors and their stored values */
  double *q = malloc(nq * 8), *dout = malloc(nq * 8), *k[NSTEP], *v[NSTEP];
  void *sq = gen(nq, dt, 2.0, q), *sdout = gen(nq, dt, 1.0, dout), *sk[NSTEP], *sv[NSTEP];
  for (int s = 0; s < NSTEP; s++) {
    k[s] = malloc(nkv * 8), v[s] = malloc(nkv * 8);
    sk[s] = gen(nkv, dt, 1.0, k[s]);
    sv[s] = gen(nkv, dt, 1.0, v[s]);
  }
  if (c->nan == 1) { /* a V element of a key some rows see, others not */
    rrt_am_store(sv[1], (int64_t)(5 * Hkv * D), (int)dt, NAN);
    v[1][5 * Hkv * D] = NAN;
  }
  if (c->nan == 2) { /* a Q element of a row of masked items */
    rrt_am_store(sq, (int64_t)(3 * Hq * D + 1), (int)dt, NAN);
    q[3 * Hq * D + 1] = NAN;
  }
  /* the reference, per batch entry, on the two blocks side by side */
  const size_t nqb = (size_t)L * Hq * D, nkb = (size_t)KV * Hkv * D;
  double *kc = malloc(2 * nkb * 8), *vc = malloc(2 * nkb * 8);
  double *o = malloc(nq * 8), *lse = malloc(nl * 8), *dq = malloc(nq * 8);
  double *dk = malloc((size_t)B * 2 * nkb * 8), *dv = malloc((size_t)B * 2 * nkb * 8);
  double *o_st = malloc(nq * 8);
  void *so = malloc(nq * es);
  float *flse = malloc(nl * 4);
  for (int b = 0; b < B; b++) {
    for (int s = 0; s < NSTEP; s++) {
      memcpy(kc + s * nkb, k[s] + b * nkb, nkb * 8);
      memcpy(vc + s * nkb, v[s] + b * nkb, nkb * 8);
    }
    ref_bwd_problem rp = {L,  2 * KV,         Hq,   Hkv,    D,  scale, q + b * nqb, kc,
                          vc, dout + b * nqb, NULL, vis_fn, &p, 0,     NULL};
    /* O as the kernel gets it (storage dtype) is what delta must use */
    CHECK(ref_attn_bwd(&rp, o + b * nqb, lse + (size_t)b * Hq * L, dq + b * nqb, dk + b * 2 * nkb,
                       dv + b * 2 * nkb) == 0);
    for (size_t i = b * nqb; i < (b + 1) * nqb; i++) {
      rrt_am_store(so, (int64_t)i, (int)dt, (float)o[i]);
      o_st[i] = rrt_am_load(so, (int64_t)i, (int)dt);
    }
    rp.o_delta = o_st + b * nqb;
    CHECK(ref_attn_bwd(&rp, o + b * nqb, lse + (size_t)b * Hq * L, dq + b * nqb, dk + b * 2 * nkb,
                       dv + b * 2 * nkb) == 0);
  }
  for (size_t i = 0; i < nl; i++)
    flse[i] = (float)lse[i];

  const rrt_attn_kernels *kern = rrt_attn_kernels_for(rrt_ctx_backend(ctx));
  CHECK(kern && kern->bwd_step);
  if (!kern || !kern->bwd_step) return;
  kin in;
  in.q = to_backend(ctx, sq, nq * es);
  in.o = to_backend(ctx, so, nq * es);
  in.dout = to_backend(ctx, sdout, nq * es);
  in.lse = to_backend(ctx, flse, nl * 4);
  for (int s = 0; s < NSTEP; s++) {
    in.k[s] = to_backend(ctx, sk[s], nkv * es);
    in.v[s] = to_backend(ctx, sv[s], nkv * es);
  }
  int64_t *mlo = to_backend(ctx, p.lo, (size_t)L * 8), *mhi = to_backend(ctx, p.hi, (size_t)L * 8);
  rrt_attn_kshape sh = {B, L, KV, Hq, Hkv, D, (int)dt, (float)scale, {mlo, mhi}, 0, 0.0f};

  kout r1, r2, r3;
  run_kernels(ctx, kern, &sh, &p, &in, &r1);
  const int nthr = omp_get_max_threads();
  omp_set_num_threads(1);
  run_kernels(ctx, kern, &sh, &p, &in, &r2);
  omp_set_num_threads(3);
  run_kernels(ctx, kern, &sh, &p, &in, &r3);
  omp_set_num_threads(nthr);
  CHECK_MSG(kout_same(&r1, &r2, nq, nkv) && kout_same(&r1, &r3, nq, nkv),
            "the same input gave different bits (%d, 1 and 3 threads)", nthr);

  /* against the reference: dQ, and dK/dV of each block */
  terr eq = {0, 1, c->nan == 2}, ek = eq, ev = eq;
  const double sq_ = finite_absmax(dq, nq), sk_ = finite_absmax(dk, (size_t)B * 2 * nkb),
               sv_ = finite_absmax(dv, (size_t)B * 2 * nkb);
  for (size_t i = 0; i < nq; i++)
    err_add(&eq, r1.dq[i], dq[i], sq_);
  for (int b = 0; b < B; b++)
    for (int s = 0; s < NSTEP; s++)
      for (size_t i = 0; i < nkb; i++) {
        err_add(&ek, r1.dkv[s][b * nkb + i], dk[b * 2 * nkb + s * nkb + i], sk_);
        err_add(&ev, r1.dkv[s][nkv + b * nkb + i], dv[b * 2 * nkb + s * nkb + i], sv_);
      }
  /* bwd_finish: dq, and block 0's first L rows per batch entry, rounded once */
  int fin_ok = 1;
  void *want = malloc(nq * es);
  for (size_t i = 0; i < nq; i++)
    rrt_am_store(want, (int64_t)i, (int)dt, r1.dq[i]);
  fin_ok = memcmp(want, r1.sdq, nq * es) == 0;
  for (int t = 0; t < 2; t++) {
    for (size_t i = 0; i < nkq; i++) {
      const size_t b = i / ((size_t)L * Hkv * D), rest = i % ((size_t)L * Hkv * D);
      rrt_am_store(want, (int64_t)i, (int)dt, r1.dkv[0][t * nkv + b * nkb + rest]);
    }
    fin_ok = fin_ok && memcmp(want, t ? r1.sdv : r1.sdk, nkq * es) == 0;
  }
  free(want);
  CHECK_MSG(eq.rel <= TOL_REL && ek.rel <= TOL_REL && ev.rel <= TOL_REL && eq.nan_ok && ek.nan_ok &&
                ev.nan_ok && fin_ok,
            "b=%d L=%d KV=%d hq=%d hkv=%d D=%d %s qs=%d ks=%d nan=%d: rel err dQ %.3g dK %.3g dV "
            "%.3g (tol %.g), NaN pattern %d %d %d, finish %d",
            B, L, KV, Hq, Hkv, D, rrt_dtype_name(dt), c->qs, c->ks, c->nan, eq.rel, ek.rel, ev.rel,
            TOL_REL, eq.nan_ok, ek.nan_ok, ev.nan_ok, fin_ok);
  if (getenv("RRT_TEST_VERBOSE"))
    printf("b=%d L=%3d KV=%3d hq=%d hkv=%d D=%2d %-4s nan=%d: dQ %.2e dK %.2e dV %.2e\n", B, L, KV,
           Hq, Hkv, D, rrt_dtype_name(dt), c->nan, eq.rel, ek.rel, ev.rel);

  kout_free(&r1), kout_free(&r2), kout_free(&r3);
  rrt_free(ctx, in.q), rrt_free(ctx, in.o), rrt_free(ctx, in.dout), rrt_free(ctx, in.lse);
  for (int s = 0; s < NSTEP; s++) {
    rrt_free(ctx, in.k[s]), rrt_free(ctx, in.v[s]);
    free(k[s]), free(v[s]), free(sk[s]), free(sv[s]);
  }
  rrt_free(ctx, mlo), rrt_free(ctx, mhi);
  free(q), free(dout), free(sq), free(sdout), free(kc), free(vc), free(o), free(lse), free(dq);
  free(dk), free(dv), free(o_st), free(so), free(flse), free(p.lo), free(p.hi);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  if (argc < 2 || rrt_backend_parse(argv[1], &cfg.backend) != RRT_SUCCESS) {
    fprintf(stderr, "usage: %s cpu|emu|cuda [full|small]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const int small = argc > 2 && strcmp(argv[2], "small") == 0;
  rrt_ctx_t ctx = NULL;
  rrt_status cst = rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx);
  if (cst == RRT_ERR_NO_DEVICE || cst == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP; /* cuda asked for, no GPU here */
  }
  CHECK(cst == RRT_SUCCESS);
  if (ctx) {
    const tcase *cs = small ? small_cases : full_cases;
    const int n =
        small ? (int)(sizeof small_cases / sizeof *cs) : (int)(sizeof full_cases / sizeof *cs);
    for (int i = 0; i < n; i++)
      check_case(ctx, &cs[i], 7000u + (unsigned)i);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* Ring attention backward end to end: forward then backward over the ring
 * on the backend of RINGRT_BACKEND, against the naive float64 reference of
 * attn_ref_bwd.h on the GLOBAL problem (every key and query of the whole
 * sequence, in natural order, independent of layouts and schedules). Every
 * rank checks its own rows of dQ, dK and dV. Every layout, causal and not,
 * GQA and MQA, odd head_dim, f32/bf16/f16; and the masks of
 * test_attn_masks.c: uneven lengths, shards shorter than P, sliding windows
 * (the ring stops early: the final transfer is point-to-point), packed
 * documents of lengths 1, 3, 17 and one spanning every rank.
 *
 * Determinism (issue 10, item 2), on the dense shapes: forward and backward
 * run twice on one plan and once more on new plans (the one-shot entry
 * points); all five outputs must be bitwise equal.
 *
 * Softmax variants (issue 34): soft-capping and sinks, each alone and both,
 * on a subset of the shapes (GQA/MQA, every dtype, a window, documents,
 * every layout, causal and not), dsinks against the reference's too and in
 * the bitwise repeats. The emu set has a bf16 shape the tensor-core kernels
 * take (head_dim a multiple of 16).
 *
 * Arguments: "full" (cpu), "small" (emu: tiny shapes), "errors" (bad
 * arguments are errors on every rank; the plan stays usable), "lib" (with
 * RINGRT_ATTN_KERNEL=cudnn: the library path of attn_cudnn.h, on emu its
 * stand-in; the bf16/f16 cases it takes, and the masks it cannot express
 * refused at plan creation on every rank). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "attn_ref_bwd.h"
#include "ringrt/attn.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* seq = 2 * P * chunk (every layout splits it evenly) unless `seq` is set;
 * `docs`: the document mix of doc_mix(); causal comes from the loop unless
 * `causal` is 1 (the windows are defined with it). */
typedef struct cfg {
  int batch, chunk, hq, hkv, dim;
  rrt_dtype dt;
  int64_t seq;
  int causal, left, right, docs;
} cfg;

#define DENSE 0, 0, -1, -1, 0
static const cfg full_cfgs[] = {
    {1, 9, 2, 2, 40, RRT_DTYPE_F32, DENSE},  /* odd head_dim */
    {2, 7, 4, 2, 72, RRT_DTYPE_F32, DENSE},  /* batch 2, GQA 2, odd head_dim */
    {1, 40, 2, 1, 64, RRT_DTYPE_F32, DENSE}, /* MQA, several key tiles per block */
    {1, 8, 4, 1, 64, RRT_DTYPE_BF16, DENSE}, /* MQA */
    {2, 6, 2, 1, 40, RRT_DTYPE_F16, DENSE},
};
static const cfg small_cfgs[] = {
    {1, 3, 2, 1, 40, RRT_DTYPE_F32, DENSE},
    {1, 3, 2, 2, 72, RRT_DTYPE_BF16, DENSE},
    {2, 2, 2, 1, 32, RRT_DTYPE_F16, DENSE},
};
/* Masks (both backends, tiny): uneven, S < P, windows, documents. */
static const cfg mask_cfgs[] = {
    {2, 0, 2, 1, 16, RRT_DTYPE_F32, 13, 0, -1, -1, 0},  /* uneven, causal and not */
    {1, 0, 2, 1, 16, RRT_DTYPE_BF16, 13, 0, -1, -1, 0}, /* uneven bf16 */
    {1, 0, 2, 1, 16, RRT_DTYPE_F32, 2, 1, -1, -1, 0},   /* shorter than P: empty shards */
    {1, 0, 2, 1, 16, RRT_DTYPE_F32, 24, 1, 4, 0, 0},    /* causal window: early stop */
    {1, 0, 2, 1, 16, RRT_DTYPE_F32, 13, 0, 3, 5, 0},    /* two-sided window */
    {1, 0, 2, 1, 16, RRT_DTYPE_F32, 0, 1, -1, -1, 1},   /* documents, causal */
    {1, 0, 2, 1, 16, RRT_DTYPE_F32, 0, 0, 2, 1, 1},     /* documents with a window */
};

/* Documents of lengths 1, 3, `big` and 17 (seq 17P + 1), `big` spanning
 * every rank's contiguous shard (as test_attn_masks.c). */
static int64_t doc_mix(int P, int64_t cu[5]) {
  const int64_t big = P > 1 ? 17 * P - 20 : 8;
  const int64_t len[4] = {1, 3, big, 17};
  cu[0] = 0;
  for (int i = 0; i < 4; i++)
    cu[i + 1] = cu[i] + len[i];
  return cu[4];
}

/* Tolerances on max |got - ref| / max |ref| of each gradient over the
 * global tensor. The reference uses the same stored inputs and the O the
 * kernels stored (delta as they must compute it), so what counts is the
 * kernels' f32 arithmetic and the final rounding:
 *   f32:  f32 sums over at most a few hundred terms, with cancellation in
 *         dS = P (dP - delta): 2.5e-7 measured (emu); allow 2e-5;
 *   bf16: the final rounding alone is up to 2^-8 relative to the element
 *         (3.9e-3 of max |ref|), 3.6e-3 measured; kernels that round P or dS
 *         to bf16 for tensor-core products add less (errors average out
 *         over the sums): allow 1e-2;
 *   f16:  the same with 2^-11 (4.9e-4), 4.3e-4 measured: allow 2e-3. */
static double tol_grad(rrt_dtype dt) {
  return dt == RRT_DTYPE_F32 ? 2e-5 : dt == RRT_DTYPE_BF16 ? 1e-2 : 2e-3;
}

/* The library path rounds each item's result to the storage type before
 * the f32 merge or sum (attn_cudnn.h): one more rounding of at most u of
 * each item's part (u = 2^-8 bf16, 2^-11 f16). A row or key of these tests
 * gets at most 2P = 6 items, and an item's part is at most the largest
 * |ref| in these shapes (no cancellation beyond it), so the extra error is
 * below 6u of max |ref|: bf16 2.3e-2, f16 2.9e-3 on top of tol_grad's. */
/* dsinks: each row's term exp(sink - lse) * delta, with lse and delta the
 * kernels' f32 values from the same stored inputs and O as the
 * reference's (lse within REF_TOL_LSE = 5e-5, so exp within ~5e-5
 * relative; delta an f32 sum over head_dim), summed in f64: the error is
 * below 1e-4 of the sum of the terms' magnitudes, for every dtype. */
#define TOL_DSINKS 1e-4

static double tol_lib(rrt_dtype dt) {
  const double u = dt == RRT_DTYPE_BF16 ? 0x1p-8 : 0x1p-11;
  return tol_grad(dt) + 6 * u;
}

static int lib_mode;                      /* "lib": the library path's tolerance */
static rrt_cp_comm cp_mode = RRT_CP_RING; /* "cp": the context-parallel mode under test */

/* The softmax variant of the next problems (issue 34): soft-cap (0 off)
 * and sinks (sink h = 1 + 1.5 h, about the rows' LSE, so it matters). The
 * scaled scores of these inputs are mostly within +-2: a cap of 1.5 bends
 * them well into tanh's curve. */
static struct {
  double cap;
  int sinks;
} variant;
static float sink_value(int h) { return 1.0f + 1.5f * (float)h; }

/* ---- the problem of one configuration ------------------------------------ */

typedef struct prob {
  rrt_attn_desc d;
  int64_t cu[5];   /* the documents, when any */
  int64_t kv_rows; /* the longest shard: rows of the travelling K/V blocks */
  int P, r;
  int64_t L;    /* this rank's rows */
  int64_t *pos; /* their global positions */
  size_t nq, nkv, nl, es;
  void *hq, *hk, *hv, *hdo; /* host shards in storage dtype */
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv;
  float *lse;
  float *sinks, *dsinks; /* backend memory, [heads_q], when the variant has sinks */
} prob;

static void *dev_copy(rrt_ctx_t ctx, const void *h, size_t bytes) {
  void *p = NULL;
  CHECK_OK(rrt_malloc(ctx, bytes, &p));
  if (h) CHECK_OK(rrt_memcpy_to_backend(ctx, p, h, bytes));
  return p;
}

static const float qamp = 2.0f; /* sharper softmax than uniform [-1, 1] would give */

static void prob_make(prob *pr, rrt_ctx_t ctx, const cfg *c, int layout, int causal,
                      uint64_t seed) {
  memset(pr, 0, sizeof *pr);
  pr->P = rrt_ctx_size(ctx);
  pr->r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.batch = c->batch;
  d.seq = c->docs ? doc_mix(pr->P, pr->cu) : c->seq ? c->seq : 2LL * pr->P * c->chunk;
  d.window_left = c->left;
  d.window_right = c->right;
  if (c->docs) d.cu_seqlens = pr->cu, d.num_docs = 4;
  d.heads_q = c->hq;
  d.heads_kv = c->hkv;
  d.head_dim = c->dim;
  d.causal = causal;
  d.layout = (rrt_attn_layout)layout;
  d.dtype = c->dt;
  d.softcap = variant.cap;
  d.sinks = variant.sinks;
  d.cp_comm = cp_mode;
  pr->d = d;
  if (c->docs) pr->d.cu_seqlens = pr->cu; /* the copy's own array */
  pr->pos = ref_positions(&pr->d, pr->P, pr->r, &pr->L);
  CHECK(pr->pos != NULL);
  for (int r = 0; r < pr->P; r++)
    pr->kv_rows = ref_len(&pr->d, pr->P, r) > pr->kv_rows ? ref_len(&pr->d, pr->P, r) : pr->kv_rows;
  pr->es = ref_es(c->dt);
  pr->nq = (size_t)(d.batch * pr->L * c->hq * c->dim);
  pr->nkv = (size_t)(d.batch * pr->L * c->hkv * c->dim);
  pr->nl = (size_t)(d.batch * c->hq * pr->L);
  pr->hq = ref_shard(&pr->d, pr->P, pr->r, 0, c->hq, seed, qamp);
  pr->hk = ref_shard(&pr->d, pr->P, pr->r, 1, c->hkv, seed, 1.0f);
  pr->hv = ref_shard(&pr->d, pr->P, pr->r, 2, c->hkv, seed, 1.0f);
  pr->hdo = ref_shard(&pr->d, pr->P, pr->r, 3, c->hq, seed, 1.0f);
  pr->q = dev_copy(ctx, pr->hq, pr->nq * pr->es);
  pr->k = dev_copy(ctx, pr->hk, pr->nkv * pr->es);
  pr->v = dev_copy(ctx, pr->hv, pr->nkv * pr->es);
  pr->dout = dev_copy(ctx, pr->hdo, pr->nq * pr->es);
  pr->o = dev_copy(ctx, NULL, pr->nq * pr->es);
  pr->dq = dev_copy(ctx, NULL, pr->nq * pr->es);
  pr->dk = dev_copy(ctx, NULL, pr->nkv * pr->es);
  pr->dv = dev_copy(ctx, NULL, pr->nkv * pr->es);
  pr->lse = dev_copy(ctx, NULL, pr->nl * sizeof(float));
  if (variant.sinks) {
    float hs[64];
    for (int h = 0; h < c->hq; h++)
      hs[h] = sink_value(h);
    pr->sinks = dev_copy(ctx, hs, (size_t)c->hq * sizeof(float));
    pr->dsinks = dev_copy(ctx, NULL, (size_t)c->hq * sizeof(float));
  }
}

static void prob_free(prob *pr, rrt_ctx_t ctx) {
  void *dev[] = {pr->q,  pr->k,  pr->v,   pr->o,     pr->dout,  pr->dq,
                 pr->dk, pr->dv, pr->lse, pr->sinks, pr->dsinks};
  for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
    rrt_free(ctx, dev[i]);
  free(pr->hq);
  free(pr->hk);
  free(pr->hv);
  free(pr->hdo);
  free(pr->pos);
}

/* Host copies of the five outputs of one run. */
typedef struct outs {
  void *o, *dq, *dk, *dv;
  float *lse;
  float dsinks[64]; /* [heads_q] with sinks */
} outs;

static void outs_get(rrt_ctx_t ctx, const prob *pr, outs *x) {
  x->o = malloc(pr->nq * pr->es);
  x->dq = malloc(pr->nq * pr->es);
  x->dk = malloc(pr->nkv * pr->es);
  x->dv = malloc(pr->nkv * pr->es);
  x->lse = malloc(pr->nl * sizeof(float));
  CHECK_OK(rrt_memcpy_to_host(ctx, x->o, pr->o, pr->nq * pr->es));
  CHECK_OK(rrt_memcpy_to_host(ctx, x->dq, pr->dq, pr->nq * pr->es));
  CHECK_OK(rrt_memcpy_to_host(ctx, x->dk, pr->dk, pr->nkv * pr->es));
  CHECK_OK(rrt_memcpy_to_host(ctx, x->dv, pr->dv, pr->nkv * pr->es));
  CHECK_OK(rrt_memcpy_to_host(ctx, x->lse, pr->lse, pr->nl * sizeof(float)));
  memset(x->dsinks, 0, sizeof x->dsinks);
  if (pr->dsinks)
    CHECK_OK(rrt_memcpy_to_host(ctx, x->dsinks, pr->dsinks, (size_t)pr->d.heads_q * sizeof(float)));
}

static int outs_equal(const prob *pr, const outs *a, const outs *b) {
  return memcmp(a->o, b->o, pr->nq * pr->es) == 0 && memcmp(a->dq, b->dq, pr->nq * pr->es) == 0 &&
         memcmp(a->dk, b->dk, pr->nkv * pr->es) == 0 &&
         memcmp(a->dv, b->dv, pr->nkv * pr->es) == 0 &&
         memcmp(a->lse, b->lse, pr->nl * sizeof(float)) == 0 &&
         memcmp(a->dsinks, b->dsinks, sizeof a->dsinks) == 0;
}

static void outs_free(outs *x) {
  free(x->o);
  free(x->dq);
  free(x->dk);
  free(x->dv);
  free(x->lse);
}

/* Garbage in every output first: the run must overwrite all of it. */
static void run_fwd_bwd(rrt_ctx_t ctx, rrt_attn_plan_t plan, const prob *pr) {
  void *dst[] = {pr->o, pr->dq, pr->dk, pr->dv};
  size_t n[] = {pr->nq, pr->nq, pr->nkv, pr->nkv};
  for (int i = 0; i < 4; i++)
    CHECK_OK(rrt_memset(ctx, dst[i], 0x7f, n[i] * pr->es));
  if (pr->d.sinks) { /* no one-shot entry points: a new plan stands for them */
    rrt_attn_plan_t own = NULL;
    if (!plan) CHECK_OK(rrt_attn_plan_create(ctx, &pr->d, &own));
    CHECK_OK(rrt_memset(ctx, pr->dsinks, 0x7f, (size_t)pr->d.heads_q * sizeof(float)));
    CHECK_OK(
        rrt_attn_plan_run_sinks(plan ? plan : own, pr->q, pr->k, pr->v, pr->sinks, pr->o, pr->lse));
    CHECK_OK(rrt_attn_plan_run_bwd_sinks(plan ? plan : own, pr->q, pr->k, pr->v, pr->o, pr->lse,
                                         pr->dout, pr->sinks, pr->dq, pr->dk, pr->dv, pr->dsinks));
    rrt_attn_plan_destroy(own);
  } else if (plan) {
    CHECK_OK(rrt_attn_plan_run(plan, pr->q, pr->k, pr->v, pr->o, pr->lse));
    CHECK_OK(rrt_attn_plan_run_bwd(plan, pr->q, pr->k, pr->v, pr->o, pr->lse, pr->dout, pr->dq,
                                   pr->dk, pr->dv));
  } else {
    CHECK_OK(rrt_attn_fwd(ctx, &pr->d, pr->q, pr->k, pr->v, pr->o, pr->lse));
    CHECK_OK(rrt_attn_bwd(ctx, &pr->d, pr->q, pr->k, pr->v, pr->o, pr->lse, pr->dout, pr->dq,
                          pr->dk, pr->dv));
  }
}

/* ---- the global reference ------------------------------------------------- */

/* Visibility of global positions (query i, key j): the mask's definition. */
static int visible(const void *arg, int64_t i, int64_t j) { return ref_visible(arg, i, j); }

/* The O every rank stored, gathered into natural order (double), so the
 * reference's delta is the one the kernels must compute. */
static double *gather_o(const prob *pr, const void *o_host) {
  const rrt_attn_desc *d = &pr->d;
  const int64_t row = (int64_t)d->heads_q * d->head_dim;
  int *counts = malloc(sizeof(int) * (size_t)pr->P), *displs = malloc(sizeof(int) * (size_t)pr->P);
  int mine = (int)(pr->nq * pr->es);
  MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < pr->P; r++) {
    displs[r] = total;
    total += counts[r];
  }
  char *all = malloc((size_t)total + 1);
  MPI_Allgatherv(o_host, mine, MPI_BYTE, all, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
  double *g = malloc(sizeof(double) * (size_t)(d->batch * d->seq * row));
  for (int r = 0; r < pr->P; r++) {
    int64_t Lr;
    CHECK_OK(rrt_attn_shard_len(d, pr->P, r, &Lr));
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(Lr + 1));
    CHECK_OK(rrt_attn_shard_positions(d, pr->P, r, pos));
    const char *src = all + displs[r];
    for (int64_t b = 0; b < d->batch; b++)
      for (int64_t l = 0; l < Lr; l++)
        for (int64_t x = 0; x < row; x++)
          g[(b * d->seq + pos[l]) * row + x] =
              rrt_am_load(src, (b * Lr + l) * row + x, (int)d->dtype);
    free(pos);
  }
  free(all);
  free(counts);
  free(displs);
  return g;
}

/* Global tensor `tensor` of batch entry b as the kernels stored it. */
static double *global_in(const prob *pr, int tensor, int heads, uint64_t seed, float amp,
                         int64_t b) {
  const rrt_attn_desc *d = &pr->d;
  const int64_t D = d->head_dim;
  double *x = malloc(sizeof(double) * (size_t)(d->seq * heads * D));
  for (int64_t j = 0; j < d->seq; j++)
    for (int64_t h = 0; h < heads; h++)
      for (int64_t e = 0; e < D; e++)
        x[(j * heads + h) * D + e] = ref_val(d, tensor, heads, seed, amp, b, j, h, e);
  return x;
}

typedef struct grad_err {
  double dq, dk, dv, o; /* max |got - ref| / max |ref| */
  double dsinks;        /* max over heads of |got - ref| / sum of |terms| (0 without sinks) */
  double lse;           /* max |got - ref| of this rank's LSE */
} grad_err;

/* max |got - ref| of this rank's rows of one gradient (NaN counts as inf). */
static double rows_err(const prob *pr, const void *got, const double *ref, int64_t b, int heads,
                       double err) {
  const int64_t row = (int64_t)heads * pr->d.head_dim;
  for (int64_t l = 0; l < pr->L; l++)
    for (int64_t x = 0; x < row; x++) {
      double g = rrt_am_load(got, (b * pr->L + l) * row + x, (int)pr->d.dtype);
      double e = fabs(g - ref[pr->pos[l] * row + x]);
      if (!(e <= err)) err = e == e ? e : HUGE_VAL;
    }
  return err;
}

static grad_err compare(const prob *pr, const outs *x, uint64_t seed) {
  const rrt_attn_desc *d = &pr->d;
  const int D = d->head_dim, Hq = d->heads_q, Hkv = d->heads_kv;
  const int64_t S = d->seq;
  const size_t nqe = (size_t)(S * Hq * D), nke = (size_t)(S * Hkv * D);
  double *og = gather_o(pr, x->o);
  double *o = malloc(sizeof(double) * nqe), *lse = malloc(sizeof(double) * (size_t)(S * Hq));
  double *dq = malloc(sizeof(double) * nqe), *dk = malloc(sizeof(double) * nke),
         *dv = malloc(sizeof(double) * nke);
  double abs_q = 0, abs_k = 0, abs_v = 0, abs_o = 0, eq = 0, ek = 0, ev = 0, eo = 0, es = 0, el = 0;
  double sinks[64], dsinks[128] = {0};
  for (int h = 0; h < Hq; h++)
    sinks[h] = sink_value(h);
  for (int64_t b = 0; b < d->batch; b++) {
    double *q = global_in(pr, 0, Hq, seed, qamp, b), *k = global_in(pr, 1, Hkv, seed, 1.0f, b),
           *v = global_in(pr, 2, Hkv, seed, 1.0f, b), *dout = global_in(pr, 3, Hq, seed, 1.0f, b);
    const ref_bwd_problem rp = {S,
                                S,
                                Hq,
                                Hkv,
                                D,
                                d->scale > 0 ? d->scale : 1.0 / sqrt((double)D),
                                q,
                                k,
                                v,
                                dout,
                                og + (size_t)b * nqe,
                                visible,
                                d,
                                d->softcap,
                                d->sinks ? sinks : NULL};
    CHECK(ref_attn_bwd_sinks(&rp, o, lse, dq, dk, dv, dsinks) == 0);
    /* the forward too: the stored O against the reference's (NaN: inf) */
    abs_o = fmax(abs_o, ref_bwd_absmax(o, nqe));
    for (size_t x = 0; x < nqe; x++) {
      const double e = fabs(og[(size_t)b * nqe + x] - o[x]);
      if (!(e <= eo)) eo = e == e ? e : HUGE_VAL;
    }
    abs_q = fmax(abs_q, ref_bwd_absmax(dq, nqe));
    abs_k = fmax(abs_k, ref_bwd_absmax(dk, nke));
    abs_v = fmax(abs_v, ref_bwd_absmax(dv, nke));
    for (int h = 0; h < Hq; h++)
      for (int64_t l = 0; l < pr->L; l++) {
        const double e = fabs(x->lse[(b * Hq + h) * pr->L + l] - lse[h * S + pr->pos[l]]);
        if (!(e <= el)) el = e == e ? e : HUGE_VAL;
      }
    eq = rows_err(pr, x->dq, dq, b, Hq, eq);
    ek = rows_err(pr, x->dk, dk, b, Hkv, ek);
    ev = rows_err(pr, x->dv, dv, b, Hkv, ev);
    free(q);
    free(k);
    free(v);
    free(dout);
  }
  for (int h = 0; d->sinks && h < Hq; h++) {
    const double e = fabs(x->dsinks[h] - dsinks[h]) / dsinks[Hq + h];
    if (!(e <= es)) es = e == e ? e : HUGE_VAL;
  }
  free(og);
  free(o);
  free(lse);
  free(dq);
  free(dk);
  free(dv);
  return (grad_err){eq / abs_q, ek / abs_k, ev / abs_v, eo / abs_o, es, el};
}

/* ---- one configuration ------------------------------------------------------ */

/* Bytes an all-to-all backward sends from this rank: to every other rank j
 * its query heads' Q, O, dO (storage) and LSE (f32) and the K/V heads it
 * uses of this rank's rows; back to every owner j of rows, dQ of this
 * rank's heads (storage) and dK/dV of its K/V heads (f32). */
static double a2a_bwd_bytes(const prob *pr) {
  const rrt_attn_desc *d = &pr->d;
  const int P = pr->P, hq = d->heads_q / P, g = d->heads_q / d->heads_kv;
  int gl = hq, t = g; /* gcd(hq, g): the local group */
  while (t) {
    int u = gl % t;
    gl = t;
    t = u;
  }
  const int hkv = hq / gl;
  const double hb = (double)d->head_dim * (double)pr->es, fb = d->head_dim * 4.0;
  double bytes = 0;
  for (int j = 0; j < P; j++) {
    if (j == pr->r) continue;
    bytes += (double)(d->batch * pr->L) * (3 * hq * hb + 2 * hkv * hb + hq * 4.0);
    bytes += (double)(d->batch * ref_len(d, P, j)) * (hq * hb + 2 * hkv * fb);
  }
  return bytes;
}

static void check_stats(rrt_attn_plan_t plan, const prob *pr) {
  rrt_attn_stats st;
  CHECK_OK(rrt_attn_plan_stats(plan, &st));
  if (cp_mode != RRT_CP_RING) {
    /* all-gather: P-1 blocks out, then (steps-1) f32 dK|dV parts */
    const double kv_elems = (double)(pr->d.batch * pr->kv_rows * pr->d.heads_kv * pr->d.head_dim);
    const double ag =
        (pr->P - 1) * 2.0 * kv_elems * (double)pr->es + (st.steps - 1) * 2.0 * kv_elems * 4.0;
    char text[2048];
    CHECK_OK(rrt_attn_plan_explain(plan, text, sizeof text));
    const int a2a = strstr(text, "-> a2a") != NULL;
    CHECK_MSG(a2a || strstr(text, "-> allgather") || strstr(text, "-> ring"), "explain: %s", text);
    if (a2a)
      CHECK_MSG(st.bytes_sent == a2a_bwd_bytes(pr), "a2a bytes_sent %.0f, expected %.0f",
                st.bytes_sent, a2a_bwd_bytes(pr));
    else if (strstr(text, "-> allgather"))
      CHECK_MSG(st.bytes_sent == ag, "allgather bytes_sent %.0f, expected %.0f", st.bytes_sent, ag);
    CHECK(st.backward == 1 && st.total_s > 0 && st.comm_s >= 0);
    if (pr->r == 0 && getenv("RRT_TEST_VERBOSE")) printf("%s", text);
    return;
  }
  /* steps that ran: the K/V shift after every one but the last, the dK/dV
   * hand-off before every one but the first, and the transfer home */
  const int n = st.steps;
  const double kv_elems = (double)(pr->d.batch * pr->kv_rows * pr->d.heads_kv * pr->d.head_dim);
  const double kv = 2.0 * kv_elems * (double)pr->es, dkv = 2.0 * kv_elems * 4.0;
  CHECK(st.backward == 1 && n >= 1 && n <= pr->P);
  CHECK_MSG(st.bytes_sent == (n > 1 ? (n - 1) * kv + n * dkv : 0.0), "bytes_sent %.0f",
            st.bytes_sent);
  CHECK(st.flops >= 0 && st.total_s > 0); /* an empty shard does no work */
  CHECK(st.handoff_s >= 0 && st.handoff_exposed_s <= st.handoff_s + 1e-12);
  CHECK(st.hidden_share >= 0.0 && st.hidden_share <= 1.0);
}

static void run_cfg(rrt_ctx_t ctx, const cfg *c, int layout, int causal, uint64_t seed,
                    int repeat) {
  prob pr;
  prob_make(&pr, ctx, c, layout, causal, seed);
  rrt_attn_plan_t plan = NULL;
  CHECK_OK(rrt_attn_plan_create(ctx, &pr.d, &plan));
  outs first, again;
  run_fwd_bwd(ctx, plan, &pr);
  outs_get(ctx, &pr, &first);
  check_stats(plan, &pr);
  grad_err e = compare(&pr, &first, seed);
  const double tol = lib_mode ? tol_lib(c->dt) : tol_grad(c->dt);
  CHECK_MSG(e.dq <= tol && e.dk <= tol && e.dv <= tol && e.o <= tol && e.dsinks <= TOL_DSINKS &&
                e.lse <= REF_TOL_LSE,
            "%s P=%d b=%d S=%lld hq=%d hkv=%d D=%d %s causal=%d softcap=%g sinks=%d: dQ %.3g dK "
            "%.3g dV %.3g O %.3g (tol %.3g) dsinks %.3g (tol %.3g) LSE %.3g",
            rrt_attn_layout_name(pr.d.layout), pr.P, c->batch, (long long)pr.d.seq, c->hq, c->hkv,
            c->dim, rrt_dtype_name(c->dt), causal, pr.d.softcap, pr.d.sinks, e.dq, e.dk, e.dv, e.o,
            tol, e.dsinks, TOL_DSINKS, e.lse);
  if (pr.r == 0 && getenv("RRT_TEST_VERBOSE"))
    printf("%-10s P=%d S=%4lld hq=%d hkv=%d D=%3d %-4s causal=%d cap=%g sinks=%d dQ %.2e dK %.2e "
           "dV %.2e O %.2e dsinks %.2e\n",
           rrt_attn_layout_name(pr.d.layout), pr.P, (long long)pr.d.seq, c->hq, c->hkv, c->dim,
           rrt_dtype_name(c->dt), causal, pr.d.softcap, pr.d.sinks, e.dq, e.dk, e.dv, e.o,
           e.dsinks);
  /* all-gather runs the ring's items in the ring's order: the same bits */
  if (cp_mode == RRT_CP_ALLGATHER) {
    rrt_attn_plan_t ring = NULL;
    pr.d.cp_comm = RRT_CP_RING;
    CHECK_OK(rrt_attn_plan_create(ctx, &pr.d, &ring));
    run_fwd_bwd(ctx, ring, &pr);
    outs_get(ctx, &pr, &again);
    CHECK_MSG(outs_equal(&pr, &first, &again), "%s P=%d %s causal=%d: allgather differs from ring",
              rrt_attn_layout_name(pr.d.layout), pr.P, rrt_dtype_name(c->dt), causal);
    outs_free(&again);
    rrt_attn_plan_destroy(ring);
    pr.d.cp_comm = cp_mode;
  }
  /* determinism: the same plan again, then new plans */
  for (int rep = 0; rep < 2 * repeat; rep++) {
    run_fwd_bwd(ctx, rep == 0 ? plan : NULL, &pr);
    outs_get(ctx, &pr, &again);
    CHECK_MSG(outs_equal(&pr, &first, &again), "%s P=%d %s causal=%d: run %d differs",
              rrt_attn_layout_name(pr.d.layout), pr.P, rrt_dtype_name(c->dt), causal, rep + 2);
    outs_free(&again);
  }
  outs_free(&first);
  rrt_attn_plan_destroy(plan);
  prob_free(&pr, ctx);
}

/* ---- bad arguments ----------------------------------------------------------- */

static void expect_fail(rrt_ctx_t ctx, rrt_status st, int at_fault, const char *what) {
  CHECK_MSG(at_fault ? st == RRT_ERR_INVALID_ARG
                     : (st == RRT_ERR_INVALID_ARG || st == RRT_ERR_REMOTE),
            "%s: status %s", what, rrt_status_string(st));
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "rrt_attn_plan_run_bwd") != NULL, "%s: message '%s'",
            what, rrt_ctx_last_error(ctx));
  if (rrt_ctx_rank(ctx) == 0 && getenv("RRT_TEST_VERBOSE"))
    printf("%s -> %s\n", what, rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
}

static void run_errors(rrt_ctx_t ctx) {
  const cfg c = {1, 2, 2, 1, 16, RRT_DTYPE_F32, DENSE};
  prob pr;
  prob_make(&pr, ctx, &c, RRT_ATTN_ZIGZAG, 1, 7);
  const int last = pr.r == pr.P - 1;
  rrt_attn_plan_t plan = NULL;
  CHECK_OK(rrt_attn_plan_create(ctx, &pr.d, &plan));
  CHECK_OK(rrt_attn_plan_run(plan, pr.q, pr.k, pr.v, pr.o, pr.lse));
  rrt_status st =
      rrt_attn_plan_run_bwd(plan, pr.q, pr.k, pr.v, pr.o, NULL, pr.dout, pr.dq, pr.dk, pr.dv);
  expect_fail(ctx, st, 1, "NULL lse everywhere");
  st = rrt_attn_plan_run_bwd(plan, pr.q, pr.k, pr.v, pr.o, pr.lse, pr.dout, last ? NULL : pr.dq,
                             pr.dk, pr.dv);
  expect_fail(ctx, st, last, "NULL dq on the last rank");
  CHECK(rrt_attn_plan_run_bwd(NULL, pr.q, pr.k, pr.v, pr.o, pr.lse, pr.dout, pr.dq, pr.dk, pr.dv) ==
        RRT_ERR_INVALID_ARG);
  /* the plan is still usable, and right */
  outs x;
  run_fwd_bwd(ctx, plan, &pr);
  outs_get(ctx, &pr, &x);
  grad_err e = compare(&pr, &x, 7);
  CHECK(e.dq <= tol_grad(c.dt) && e.dk <= tol_grad(c.dt) && e.dv <= tol_grad(c.dt));
  outs_free(&x);
  rrt_attn_plan_destroy(plan);
  prob_free(&pr, ctx);
}

/* Forced cudnn on a plan whose mask cuDNN cannot express: plan creation
 * fails on every rank, saying so. */
static void expect_lib_refused(rrt_ctx_t ctx, const cfg *c, int layout, int causal, uint64_t seed) {
  prob pr;
  prob_make(&pr, ctx, c, layout, causal, seed);
  rrt_attn_plan_t plan = NULL;
  CHECK(rrt_attn_plan_create(ctx, &pr.d, &plan) == RRT_ERR_INVALID_ARG && !plan);
  const char *why = variant.cap > 0 ? "no soft-capping" : "cuDNN's masks";
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), why) != NULL, "message '%s'", rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  prob_free(&pr, ctx);
}

/* "lib" (under RINGRT_ATTN_KERNEL=cudnn): every bf16/f16 case of the small
 * and mask sets on every layout, except the plans whose masks cuDNN cannot
 * express (a window, documents, causal on the striped layout over several
 * ranks): those must fail at plan creation on every rank with a message
 * that says so. Under another kernel choice the same cases all run, with
 * the in-tree tolerance: with RRT_TEST_VERBOSE, the paired errors that
 * docs/attn.md compares. */
static void run_lib(rrt_ctx_t ctx) {
  const int n = (int)(sizeof small_cfgs / sizeof *small_cfgs),
            nm = (int)(sizeof mask_cfgs / sizeof *mask_cfgs);
  const char *kernel = getenv("RINGRT_ATTN_KERNEL");
  lib_mode = kernel && strcmp(kernel, "cudnn") == 0;
  for (int i = 0; i < n + nm; i++) {
    const cfg *c = i < n ? &small_cfgs[i] : &mask_cfgs[i - n];
    if (c->dt == RRT_DTYPE_F32) continue;
    for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
      for (int causal = c->causal; causal <= 1; causal++) {
        if (!lib_mode || !(causal && layout == RRT_ATTN_STRIPE && rrt_ctx_size(ctx) > 1)) {
          run_cfg(ctx, c, layout, causal, 2000u + (unsigned)i, i < n);
          continue;
        }
        expect_lib_refused(ctx, c, layout, causal, 2000u + (unsigned)i);
      }
  }
  /* a window: refused too */
  const cfg w = {1, 0, 2, 1, 16, RRT_DTYPE_BF16, 24, 1, 4, 0, 0};
  if (lib_mode) expect_lib_refused(ctx, &w, RRT_ATTN_CONTIGUOUS, 1, 7);
  /* softmax variants: sinks never reach the kernels (the library path
   * runs them); cuDNN has no soft-capping: refused when forced */
  variant.sinks = 1;
  run_cfg(ctx, &small_cfgs[1], RRT_ATTN_ZIGZAG, 1, 2001, 1);
  variant.sinks = 0;
  variant.cap = 1.5;
  if (lib_mode)
    expect_lib_refused(ctx, &small_cfgs[1], RRT_ATTN_ZIGZAG, 1, 2001);
  else
    run_cfg(ctx, &small_cfgs[1], RRT_ATTN_ZIGZAG, 1, 2001, 0);
  variant.cap = 0.0;
}

/* The softmax variants (issue 34) on a few shapes: GQA and MQA, every
 * dtype, a window and documents; cap and sinks together everywhere, each
 * alone on the first shape (zigzag only: the layouts' handling of both is
 * the same as together); the dense shapes repeat bit for bit. emu (slow:
 * a few shapes, the striped layout on the first only): a bf16 and an f16
 * shape of the tensor-core kernels (head_dim 32), f32 on the SIMT ones. */
static void run_variants(rrt_ctx_t ctx, int small) {
  static const cfg full_v[] = {
      {2, 7, 4, 2, 72, RRT_DTYPE_F32, DENSE},          /* batch 2, GQA 2 */
      {1, 8, 4, 1, 64, RRT_DTYPE_BF16, DENSE},         /* MQA, the bf16 kernel */
      {2, 6, 2, 1, 40, RRT_DTYPE_F16, DENSE},          /* f16 */
      {1, 0, 2, 1, 16, RRT_DTYPE_F32, 24, 1, 4, 0, 0}, /* causal window */
      {1, 0, 2, 1, 16, RRT_DTYPE_BF16, 0, 0, 2, 1, 1}, /* documents with a window */
  };
  static const cfg small_v[] = {
      {1, 3, 2, 1, 32, RRT_DTYPE_BF16, DENSE},          /* tensor cores, GQA 2 */
      {2, 2, 2, 2, 32, RRT_DTYPE_F16, DENSE},           /* tensor cores, batch 2 */
      {1, 3, 2, 1, 40, RRT_DTYPE_F32, DENSE},           /* SIMT */
      {1, 0, 2, 1, 16, RRT_DTYPE_F32, 0, 1, -1, -1, 1}, /* documents, causal */
  };
  const cfg *cs = small ? small_v : full_v;
  const int n = small ? (int)(sizeof small_v / sizeof *cs) : (int)(sizeof full_v / sizeof *cs);
  static const double caps[3] = {1.5, 1.5, 0.0};
  static const int sinks[3] = {1, 0, 1};
  for (int vi = 0; vi < 3; vi++)
    for (int i = 0; i < (vi == 0 ? n : 1); i++) {
      const cfg *c = &cs[i];
      variant.cap = caps[vi];
      variant.sinks = sinks[vi];
      const int layouts = small && i > 0 ? RRT_ATTN_STRIPE : RRT_ATTN_LAYOUT_COUNT;
      const int repeat = c->seq == 0 && !c->docs && (!small || i == 0);
      for (int layout = 0; layout < layouts; layout++)
        for (int causal = c->causal; causal <= 1; causal++)
          if (vi == 0 || layout == RRT_ATTN_ZIGZAG)
            run_cfg(ctx, c, layout, causal, 3000u + (unsigned)i, repeat);
    }
  variant.cap = 0.0;
  variant.sinks = 0;
}

/* "cp": the all-to-all and all-gather modes (and auto) against the same
 * float64 reference: heads_q 12 splits over 1-4 ranks; heads_kv 4 splits
 * over 2 and 4 ranks and is replicated over 3; 6 over 4 replicated with
 * local groups of one; MQA replicated everywhere; the masks of
 * mask_cfgs. */
static const cfg cp_cfgs[] = {
    {1, 5, 12, 4, 16, RRT_DTYPE_F32, DENSE},           /* GQA 3 */
    {2, 3, 12, 1, 24, RRT_DTYPE_BF16, DENSE},          /* MQA, batch 2 */
    {1, 4, 12, 6, 8, RRT_DTYPE_F16, DENSE},            /* GQA 2 */
    {1, 0, 12, 4, 8, RRT_DTYPE_F32, 13, 0, -1, -1, 0}, /* uneven */
    {1, 0, 12, 4, 8, RRT_DTYPE_F32, 24, 1, 4, 0, 0},   /* causal window */
    {1, 0, 12, 4, 8, RRT_DTYPE_F32, 13, 0, 3, 5, 0},   /* two-sided window */
    {1, 0, 12, 4, 8, RRT_DTYPE_F32, 0, 0, -1, -1, 1},  /* documents */
    {1, 0, 12, 4, 8, RRT_DTYPE_F32, 0, 0, 2, 1, 1},    /* documents with a window */
};

/* The mode's errors: heads_q not divisible by P for a2a names both numbers;
 * a cp_comm that differs between ranks fails on every rank. */
static void cp_errors(rrt_ctx_t ctx) {
  const int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 4LL * P;
  d.heads_q = P + 1;
  d.heads_kv = 1;
  d.head_dim = 8;
  d.cp_comm = RRT_CP_A2A;
  rrt_attn_plan_t plan = NULL;
  char want[96];
  snprintf(want, sizeof want, "heads_q %d is not a multiple of the %d ranks", P + 1, P);
  if (P > 1) {
    CHECK(rrt_attn_plan_create(ctx, &d, &plan) == RRT_ERR_INVALID_ARG && !plan);
    CHECK_MSG(strstr(rrt_ctx_last_error(ctx), want) != NULL, "message '%s'",
              rrt_ctx_last_error(ctx));
    rrt_ctx_clear_error(ctx);
  }
  d.heads_q = 2 * P;
  d.cp_comm = r == P - 1 ? RRT_CP_ALLGATHER : RRT_CP_RING;
  rrt_status st = rrt_attn_plan_create(ctx, &d, &plan);
  if (P > 1) {
    CHECK(st == RRT_ERR_INVALID_ARG && !plan);
    CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "cp_comm is") != NULL, "message '%s'",
              rrt_ctx_last_error(ctx));
    rrt_ctx_clear_error(ctx);
  } else {
    CHECK_OK(st);
    rrt_attn_plan_destroy(plan);
  }
  /* sinks with a2a: refused (its backward has no sinks' gradient yet) */
  d.cp_comm = RRT_CP_A2A;
  d.sinks = 1;
  CHECK(rrt_attn_plan_create(ctx, &d, &plan) == RRT_ERR_UNSUPPORTED && !plan);
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "a2a does not take sinks") != NULL, "message '%s'",
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  d.sinks = 0;
  /* a name the parser does not know */
  rrt_cp_comm cp;
  CHECK(rrt_cp_comm_parse("a2a+ring", &cp) == RRT_SUCCESS && cp == RRT_CP_A2A_RING);
  CHECK(rrt_cp_comm_parse("ulysses", &cp) == RRT_ERR_INVALID_ARG);
}

/* small (emu): the first dense shape and the documents, a2a and allgather. */
static void run_cp(rrt_ctx_t ctx, int small) {
  static const rrt_cp_comm modes[] = {RRT_CP_A2A, RRT_CP_ALLGATHER, RRT_CP_AUTO};
  static const cfg small_cp[] = {
      {1, 2, 4, 2, 8, RRT_DTYPE_F32, DENSE},
      {1, 0, 4, 1, 8, RRT_DTYPE_BF16, 0, 0, 2, 1, 1},
  };
  const cfg *cfgs = small ? small_cp : cp_cfgs;
  const int n = small ? 2 : (int)(sizeof cp_cfgs / sizeof *cp_cfgs);
  for (size_t m = 0; m < sizeof modes / sizeof *modes - (size_t)small; m++) {
    cp_mode = modes[m];
    for (int i = 0; i < n; i++)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        for (int causal = cfgs[i].causal; causal <= 1; causal++)
          run_cfg(ctx, &cfgs[i], layout, causal, 3000u + (unsigned)i,
                  i < 3 && cp_mode != RRT_CP_AUTO);
  }
  /* soft-capping through the collective modes, sinks through the
   * all-gather (a2a refuses them: cp_errors) */
  variant.cap = 1.5;
  for (size_t m = 0; m < 2; m++) {
    cp_mode = modes[m];
    variant.sinks = cp_mode == RRT_CP_ALLGATHER;
    run_cfg(ctx, &cfgs[0], RRT_ATTN_ZIGZAG, 1, 3100u, 0);
  }
  variant.cap = 0.0;
  variant.sinks = 0;
  cp_mode = RRT_CP_RING;
  cp_errors(ctx);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *mode = argc > 1 ? argv[1] : "full";
  rrt_ctx_t ctx = NULL;
  rrt_status cst = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (cst == RRT_ERR_NO_DEVICE || cst == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP; /* cuda asked for, no GPU here */
  }
  CHECK_OK(cst);
  if (ctx && strcmp(mode, "errors") == 0) {
    run_errors(ctx);
  } else if (ctx && strncmp(mode, "cp", 2) == 0) {
    run_cp(ctx, strcmp(mode, "cp-small") == 0);
  } else if (ctx && strcmp(mode, "lib") == 0) {
    run_lib(ctx);
  } else if (ctx) {
    const int small = strcmp(mode, "small") == 0;
    const cfg *cs = small ? small_cfgs : full_cfgs;
    int n = small ? (int)(sizeof small_cfgs / sizeof *cs) : (int)(sizeof full_cfgs / sizeof *cs);
    const int nm = (int)(sizeof mask_cfgs / sizeof *mask_cfgs);
    /* the repeats on the dense shapes; emu: the masks on contiguous
     * shards (the early stop) and zigzag (documents cut per document) */
    for (int i = 0; i < n + nm; i++) {
      const cfg *c = i < n ? &cs[i] : &mask_cfgs[i - n];
      const int layouts = i >= n && small ? RRT_ATTN_STRIPE : RRT_ATTN_LAYOUT_COUNT;
      for (int layout = 0; layout < layouts; layout++)
        for (int causal = c->causal; causal <= 1; causal++)
          run_cfg(ctx, c, layout, causal, 2000u + (unsigned)i, i < n);
    }
    run_variants(ctx, small);
  }
  if (ctx) rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

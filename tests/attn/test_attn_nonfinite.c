/* NaN and Inf through the public API, on the backend of RINGRT_BACKEND, for
 * every layout, causal and not: a NaN in one query row, a NaN, +Inf or -Inf
 * in one element of K, a row whose every score is -Inf, and -Inf scores over
 * a whole block of keys (a row drops them when it sees other keys, and is
 * NaN when it sees no other). The reference is a float64 softmax written
 * literally (m = max, NaN when a score is; p = exp(s - m)); its NaN pattern
 * (which rows are NaN, in O and in LSE) must match exactly, for any rank
 * count, and the finite rows within the usual tolerance. Every rank checks
 * its own rows. The global sequence is the same for every rank count. */
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "ringrt/attn.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

enum { SEQ = 24, HQ = 2, HKV = 1, DIM = 16 };

enum {
  CASE_NONE,      /* no special value: the finite path around the others */
  CASE_Q_NAN,     /* Q[pos 9, head 0, d 3] = NaN */
  CASE_K_NAN,     /* K[pos 5, d 5] = NaN */
  CASE_K_PINF,    /* K[pos 14, d 2] = +inf: +inf scores (q > 0) and -inf (q < 0) */
  CASE_K_NINF,    /* K[pos 7, d 1] = -inf */
  CASE_ROW_NINF,  /* Q[pos 17, head 1, d 0] = -inf, K[:, d 0] > 0: all of row 17's scores -inf */
  CASE_BLOCK_NINF /* K[pos < 8, d 0] = -inf, Q[:, head 0, d 0] > 0: head 0 drops those keys */
};
static const char *const case_names[] = {"none",   "Q NaN",    "K NaN",     "K +inf",
                                         "K -inf", "row -inf", "block -inf"};
#define NCASES ((int)(sizeof case_names / sizeof *case_names))

/* Global Q [SEQ, HQ, DIM] and K, V [SEQ, HKV, DIM] (batch 1) of a case, f32. */
typedef struct global {
  float q[SEQ * HQ * DIM], k[SEQ * HKV * DIM], v[SEQ * HKV * DIM];
} global;

static void make_global(int c, global *g) {
  for (int i = 0; i < SEQ * HQ * DIM; i++)
    g->q[i] = 2.0f * rrt_attn_data_value(17, 0, (uint64_t)i);
  for (int i = 0; i < SEQ * HKV * DIM; i++) {
    g->k[i] = rrt_attn_data_value(17, 1, (uint64_t)i);
    g->v[i] = rrt_attn_data_value(17, 2, (uint64_t)i);
  }
  const float inf = HUGE_VALF;
  switch (c) {
  case CASE_Q_NAN: g->q[(9 * HQ + 0) * DIM + 3] = NAN; break;
  case CASE_K_NAN: g->k[5 * DIM + 5] = NAN; break;
  case CASE_K_PINF: g->k[14 * DIM + 2] = inf; break;
  case CASE_K_NINF: g->k[7 * DIM + 1] = -inf; break;
  case CASE_ROW_NINF:
    for (int j = 0; j < SEQ; j++)
      g->k[j * DIM] = fabsf(g->k[j * DIM]) + 0.1f;
    g->q[(17 * HQ + 1) * DIM] = -inf;
    break;
  case CASE_BLOCK_NINF:
    for (int j = 0; j < 8; j++)
      g->k[j * DIM] = -inf;
    for (int p = 0; p < SEQ; p++)
      g->q[p * HQ * DIM] = fabsf(g->q[p * HQ * DIM]) + 0.1f;
    break;
  default: break;
  }
}

/* Rank r's shard of a global [SEQ, heads, DIM] tensor, stored in dt. */
static void *shard(const rrt_attn_desc *d, int P, int r, const float *x, int heads) {
  const int64_t L = SEQ / P;
  const size_t row = (size_t)heads * DIM;
  void *s = malloc((size_t)L * row * ref_es(d->dtype));
  for (int64_t l = 0; l < L; l++) {
    const int64_t pos = rrt_attn_global_pos(d->layout, SEQ, P, r, l);
    for (size_t e = 0; e < row; e++)
      rrt_am_store(s, l * (int64_t)row + (int64_t)e, (int)d->dtype, x[pos * (int64_t)row + e]);
  }
  return s;
}

/* Stored value (rounded to the dtype) of a global element. */
static double stored(rrt_dtype dt, float x) {
  uint16_t u[1];
  if (dt == RRT_DTYPE_F32) return x;
  rrt_am_store(u, 0, (int)dt, x);
  return rrt_am_load(u, 0, (int)dt);
}

/* Literal float64 softmax of global row (pos, h): o[DIM], returns lse. */
static double ref_row(const rrt_attn_desc *d, const global *g, int64_t pos, int h, double *o) {
  const double scale = 1.0 / sqrt((double)DIM);
  const int64_t nk = d->causal ? pos + 1 : SEQ;
  double s[SEQ], mx = -HUGE_VAL, sum = 0.0;
  for (int64_t j = 0; j < nk; j++) {
    double t = 0.0;
    for (int e = 0; e < DIM; e++)
      t += stored(d->dtype, g->q[(pos * HQ + h) * DIM + e]) * stored(d->dtype, g->k[j * DIM + e]);
    s[j] = t * scale;
    if (s[j] != s[j] || mx != mx)
      mx = NAN;
    else if (s[j] > mx)
      mx = s[j];
  }
  for (int e = 0; e < DIM; e++)
    o[e] = 0.0;
  for (int64_t j = 0; j < nk; j++) {
    const double p = exp(s[j] - mx);
    sum += p;
    for (int e = 0; e < DIM; e++)
      o[e] += p * stored(d->dtype, g->v[j * DIM + e]);
  }
  for (int e = 0; e < DIM; e++)
    o[e] /= sum;
  return mx + log(sum);
}

/* Run one case and check this rank's rows; returns the NaN rows seen. */
static int run_case(rrt_ctx_t ctx, int c, int layout, int causal, rrt_dtype dt) {
  const int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = SEQ;
  d.heads_q = HQ;
  d.heads_kv = HKV;
  d.head_dim = DIM;
  d.causal = causal;
  d.layout = (rrt_attn_layout)layout;
  d.dtype = dt;
  global g;
  make_global(c, &g);
  const int64_t L = SEQ / P;
  const size_t es = ref_es(dt), nq = (size_t)L * HQ * DIM, nkv = (size_t)L * HKV * DIM;
  const size_t nl = (size_t)HQ * (size_t)L;
  void *hq = shard(&d, P, r, g.q, HQ), *hk = shard(&d, P, r, g.k, HKV),
       *hv = shard(&d, P, r, g.v, HKV);
  void *ho = malloc(nq * es), *q, *k, *v, *o;
  float *hl = malloc(nl * sizeof(float)), *lse;
  CHECK_OK(rrt_malloc(ctx, nq * es, &q));
  CHECK_OK(rrt_malloc(ctx, nkv * es, &k));
  CHECK_OK(rrt_malloc(ctx, nkv * es, &v));
  CHECK_OK(rrt_malloc(ctx, nq * es, &o));
  CHECK_OK(rrt_malloc(ctx, nl * sizeof(float), (void **)&lse));
  CHECK_OK(rrt_memcpy_to_backend(ctx, q, hq, nq * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, k, hk, nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, v, hv, nkv * es));
  CHECK_OK(rrt_attn_fwd(ctx, &d, q, k, v, o, lse));
  CHECK_OK(rrt_memcpy_to_host(ctx, ho, o, nq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, hl, lse, nl * sizeof(float)));

  int nan_rows = 0;
  double eo = 0.0, el = 0.0, ro[DIM];
  for (int h = 0; h < HQ; h++)
    for (int64_t l = 0; l < L; l++) {
      const int64_t pos = rrt_attn_global_pos(d.layout, SEQ, P, r, l);
      const double rl = ref_row(&d, &g, pos, h, ro), gl = hl[h * L + l];
      const int rnan = isnan(rl);
      int bad = rnan != isnan(gl);
      nan_rows += rnan;
      if (!rnan) el = fmax(el, fabs(gl - rl));
      for (int e = 0; e < DIM; e++) {
        const double go = rrt_am_load(ho, (l * HQ + h) * DIM + e, (int)dt);
        bad |= rnan != isnan(go);
        if (!rnan) eo = fmax(eo, fabs(go - ro[e]));
      }
      CHECK_MSG(!bad,
                "%s, %s causal=%d %s P=%d: row at position %lld head %d: reference %s, "
                "got LSE %g O[0] %g",
                case_names[c], rrt_attn_layout_name(d.layout), causal, rrt_dtype_name(dt), P,
                (long long)pos, h, rnan ? "NaN" : "finite", gl,
                rrt_am_load(ho, (l * HQ + h) * DIM, (int)dt));
    }
  CHECK_MSG(eo <= ref_tol_o(dt) && el <= REF_TOL_LSE,
            "%s, %s causal=%d %s P=%d: finite rows |dO| %.3g (tol %.3g) |dLSE| %.3g (tol %.3g)",
            case_names[c], rrt_attn_layout_name(d.layout), causal, rrt_dtype_name(dt), P, eo,
            ref_tol_o(dt), el, REF_TOL_LSE);
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, o);
  rrt_free(ctx, lse);
  free(hq);
  free(hk);
  free(hv);
  free(ho);
  free(hl);
  return nan_rows;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (ctx) {
    const rrt_dtype dts[2] = {RRT_DTYPE_F32, RRT_DTYPE_BF16};
    for (int c = 0; c < NCASES; c++)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        for (int causal = 0; causal <= 1; causal++)
          for (int t = 0; t < 2; t++) {
            int n = run_case(ctx, c, layout, causal, dts[t]), total = n;
            MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            /* each special case makes some rows NaN; causal, some stay finite */
            CHECK_MSG((c == CASE_NONE) == (total == 0) && (!causal || total < SEQ * HQ),
                      "%s, %s causal=%d: %d NaN rows of %d", case_names[c],
                      rrt_attn_layout_name((rrt_attn_layout)layout), causal, total, SEQ * HQ);
            if (rrt_ctx_rank(ctx) == 0 && layout == 0 && t == 0 && getenv("RRT_TEST_VERBOSE"))
              printf("%-10s causal=%d: %d NaN rows of %d\n", case_names[c], causal, total,
                     SEQ * HQ);
          }
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

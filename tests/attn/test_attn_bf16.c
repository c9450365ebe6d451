/* bf16 storage on the cpu backend, under the vector variant RINGRT_CPU_ISA
 * picks (avx512bf16 runs the vdpbf16ps kernel, emulated where the CPU lacks
 * it; the others convert to f32 for the f32 kernel), against
 *   (1) the naive double reference on the same bf16 inputs, and
 *   (2) the f32 path on the same inputs widened to f32 (dtype F32),
 * for every layout, causal and not, GQA/MQA, odd head_dim, several key
 * tiles, batch 2; and NaN propagation where the bf16 kernel runs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "kernels/cpu/attn_fwd_bf16.h"
#include "ringrt/attn.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* |O_bf16 - O_f32| on the same inputs: P rounded to bf16 (<= 2^-9 relative
 * each, so <= 2^-9 max|V| = 2^-9 on O) plus O rounded to bf16 (<= 2^-9 |O|,
 * |O| <= 1: averages of V in [-1, 1]) plus f32 noise (~1e-6): 2^-8 + 1e-6.
 * LSE comes from exact bf16 x bf16 products summed in f32 in another order:
 * about 1e-6 relative on values of a few units. */
#define TOL_O_VS_F32 (1.0 / 256 + 1e-5)
#define TOL_LSE_VS_F32 2e-5

typedef struct cfg {
  int batch, chunk, hq, hkv, dim;
} cfg;

static const cfg cfgs[] = {
    {1, 37, 2, 2, 64}, /* lengths not tile multiples, odd k_begin in zigzag/stripe */
    {2, 20, 4, 2, 32}, /* batch 2, GQA */
    {1, 33, 4, 1, 40}, /* MQA, head_dim not a multiple of 16 */
    {1, 19, 2, 1, 33}, /* odd head_dim: the last pair is half padding */
    {1, 150, 1, 1, 64} /* several key tiles per block (BK = 256) */
};

typedef struct run_out {
  void *o;
  float *lse;
} run_out;

/* One forward on host inputs (storage dtype d->dtype) into host outputs. */
static run_out run(rrt_ctx_t ctx, const rrt_attn_desc *d, const void *hq, const void *hk,
                   const void *hv, size_t nq, size_t nkv, size_t nl) {
  size_t es = ref_es(d->dtype);
  void *q, *k, *v, *o;
  float *lse;
  CHECK_OK(rrt_malloc(ctx, nq * es, &q));
  CHECK_OK(rrt_malloc(ctx, nkv * es, &k));
  CHECK_OK(rrt_malloc(ctx, nkv * es, &v));
  CHECK_OK(rrt_malloc(ctx, nq * es, &o));
  CHECK_OK(rrt_malloc(ctx, nl * sizeof(float), (void **)&lse));
  CHECK_OK(rrt_memcpy_to_backend(ctx, q, hq, nq * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, k, hk, nkv * es));
  CHECK_OK(rrt_memcpy_to_backend(ctx, v, hv, nkv * es));
  CHECK_OK(rrt_attn_fwd(ctx, d, q, k, v, o, lse));
  run_out r = {malloc(nq * es), malloc(nl * sizeof(float))};
  CHECK_OK(rrt_memcpy_to_host(ctx, r.o, o, nq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, r.lse, lse, nl * sizeof(float)));
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, o);
  rrt_free(ctx, lse);
  return r;
}

static float *widen(const uint16_t *x, size_t n) {
  float *y = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    y[i] = rrt_bf16_to_f32(x[i]);
  return y;
}

static void run_cfg(rrt_ctx_t ctx, const cfg *c, int layout, int causal, uint64_t seed) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.batch = c->batch;
  d.seq = 2LL * P * c->chunk;
  d.heads_q = c->hq;
  d.heads_kv = c->hkv;
  d.head_dim = c->dim;
  d.causal = causal;
  d.layout = (rrt_attn_layout)layout;
  d.dtype = RRT_DTYPE_BF16;
  const float qamp = 2.0f;
  const int64_t L = d.seq / P;
  const size_t nq = (size_t)(d.batch * L * c->hq * c->dim);
  const size_t nkv = (size_t)(d.batch * L * c->hkv * c->dim), nl = (size_t)(d.batch * c->hq * L);
  uint16_t *hq = ref_shard(&d, P, r, 0, c->hq, seed, qamp);
  uint16_t *hk = ref_shard(&d, P, r, 1, c->hkv, seed, 1.0f);
  uint16_t *hv = ref_shard(&d, P, r, 2, c->hkv, seed, 1.0f);
  run_out b = run(ctx, &d, hq, hk, hv, nq, nkv, nl);

  rrt_attn_desc df = d;
  df.dtype = RRT_DTYPE_F32;
  float *fq = widen(hq, nq), *fk = widen(hk, nkv), *fv = widen(hv, nkv);
  run_out f = run(ctx, &df, fq, fk, fv, nq, nkv, nl);

  ref_err e = ref_compare(&d, P, r, seed, qamp, b.o, b.lse);
  double o_vs = 0, l_vs = 0;
  for (size_t i = 0; i < nq; i++) {
    double x = fabs((double)rrt_bf16_to_f32(((uint16_t *)b.o)[i]) - ((float *)f.o)[i]);
    o_vs = x <= o_vs ? o_vs : x == x ? x : HUGE_VAL;
  }
  for (size_t i = 0; i < nl; i++) {
    double x = fabs((double)b.lse[i] - f.lse[i]);
    l_vs = x <= l_vs ? l_vs : x == x ? x : HUGE_VAL;
  }
  CHECK_MSG(e.o_abs <= ref_tol_o(RRT_DTYPE_BF16) && e.lse_abs <= REF_TOL_LSE &&
                o_vs <= TOL_O_VS_F32 && l_vs <= TOL_LSE_VS_F32,
            "%s P=%d b=%d S=%lld hq=%d hkv=%d D=%d causal=%d: vs double |dO| %.3g (tol %.3g) "
            "|dLSE| %.3g (tol %.3g); vs f32 path |dO| %.3g (tol %.3g) |dLSE| %.3g (tol %.3g)",
            rrt_attn_layout_name(d.layout), P, c->batch, (long long)d.seq, c->hq, c->hkv, c->dim,
            causal, e.o_abs, ref_tol_o(RRT_DTYPE_BF16), e.lse_abs, REF_TOL_LSE, o_vs, TOL_O_VS_F32,
            l_vs, TOL_LSE_VS_F32);
  if (r == 0 && getenv("RRT_TEST_VERBOSE"))
    printf("%-10s P=%d S=%4lld hq=%d hkv=%d D=%3d causal=%d ref |dO| %.2e |dLSE| %.2e, f32 |dO| "
           "%.2e |dLSE| %.2e\n",
           rrt_attn_layout_name(d.layout), P, (long long)d.seq, c->hq, c->hkv, c->dim, causal,
           e.o_abs, e.lse_abs, o_vs, l_vs);
  free(hq);
  free(hk);
  free(hv);
  free(fq);
  free(fk);
  free(fv);
  free(b.o);
  free(b.lse);
  free(f.o);
  free(f.lse);
}

/* A NaN in one K element at global key position j: every row that sees
 * key j (all rows; causal: positions >= j) gets NaN in O and LSE for the
 * query heads of that KV head; every other row stays finite. */
static void nan_case(rrt_ctx_t ctx, int layout, int causal) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 2LL * P * 24;
  d.heads_q = 2;
  d.heads_kv = 1;
  d.head_dim = 32;
  d.causal = causal;
  d.layout = (rrt_attn_layout)layout;
  d.dtype = RRT_DTYPE_BF16;
  const int64_t L = d.seq / P, D = d.head_dim, jnan = d.seq / 2 + 1;
  const size_t nq = (size_t)(L * d.heads_q * D), nkv = (size_t)(L * D),
               nl = (size_t)(d.heads_q * L);
  uint16_t *hq = ref_shard(&d, P, r, 0, d.heads_q, 7, 1.0f);
  uint16_t *hk = ref_shard(&d, P, r, 1, 1, 7, 1.0f);
  uint16_t *hv = ref_shard(&d, P, r, 2, 1, 7, 1.0f);
  for (int64_t l = 0; l < L; l++)
    if (rrt_attn_global_pos(d.layout, d.seq, P, r, l) == jnan) hk[l * D + 3] = 0x7fc0; /* NaN */
  run_out b = run(ctx, &d, hq, hk, hv, nq, nkv, nl);
  int wrong = 0;
  for (int64_t l = 0; l < L; l++) {
    int64_t pos = rrt_attn_global_pos(d.layout, d.seq, P, r, l);
    int sees = !causal || pos >= jnan;
    for (int h = 0; h < d.heads_q; h++) {
      float lse = b.lse[h * L + l];
      int o_nan = 0, o_finite = 1;
      for (int64_t e = 0; e < D; e++) {
        float x = rrt_bf16_to_f32(((uint16_t *)b.o)[(l * d.heads_q + h) * D + e]);
        o_nan += x != x;
        o_finite &= isfinite(x);
      }
      if (sees ? !(o_nan == D && lse != lse) : !(o_finite && isfinite(lse))) wrong++;
    }
  }
  CHECK_MSG(wrong == 0, "NaN in K (%s causal=%d P=%d): %d rows wrong",
            rrt_attn_layout_name(d.layout), causal, P, wrong);
  free(hq);
  free(hk);
  free(hv);
  free(b.o);
  free(b.lse);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  const char *isa = getenv("RINGRT_CPU_ISA");
  const int forced = isa && strcmp(isa, "avx512bf16") == 0;
  const int kernel =
      forced || ((!isa || !*isa || strcmp(isa, "auto") == 0) && rrt_attn_cpu_bf16_native());
  if (ctx && rrt_ctx_rank(ctx) == 0)
    printf("RINGRT_CPU_ISA=%s: bf16 storage runs %s\n", isa ? isa : "(unset)",
           !kernel                      ? "the f32 kernel on converted inputs"
           : rrt_attn_cpu_bf16_native() ? "the vdpbf16ps kernel"
                                        : "the bf16 kernel with vdpbf16ps emulated (no "
                                          "avx512_bf16 on this CPU)");
  if (ctx) {
    const int n = (int)(sizeof cfgs / sizeof *cfgs);
    for (int i = 0; i < n; i++)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        for (int causal = 0; causal <= 1; causal++)
          run_cfg(ctx, &cfgs[i], layout, causal, 2000u + (unsigned)i);
    /* the f32 kernel's NaN handling is its own (and its tests'); here the bf16 kernel's */
    if (kernel)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        for (int causal = 0; causal <= 1; causal++)
          nan_case(ctx, layout, causal);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

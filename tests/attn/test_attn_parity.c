/* Ring attention against a naive double reference, on the backend of
 * RINGRT_BACKEND, for every layout, causal and not, over a list of shapes
 * (GQA ratios 1, 2, 4 and MQA; head_dim 32, 64, 80, 128; local lengths that
 * are not multiples of the tiles; batch > 1; f32, bf16, f16). Every rank
 * checks its own rows. Argument: "full" (cpu) or "small" (emu: tiny shapes). */
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "ringrt/ringrt.h"
#include "ringrt/attn.h"
#include "test_util.h"

typedef struct cfg {
  int batch, chunk, hq, hkv, dim;
  rrt_dtype dt;
} cfg;

/* seq = 2 * P * chunk: splits for every layout; local length 2 * chunk. */
static const cfg full_cfgs[] = {
    {1, 37, 2, 2, 64, RRT_DTYPE_F32},  /* ratio 1, length not a tile multiple */
    {2, 20, 4, 2, 32, RRT_DTYPE_F32},  /* batch 2, ratio 2 */
    {1, 33, 4, 1, 80, RRT_DTYPE_F32},  /* MQA, odd head_dim */
    {1, 24, 8, 2, 128, RRT_DTYPE_F32}, /* ratio 4 */
    {1, 150, 1, 1, 64, RRT_DTYPE_F32}, /* several key tiles per block */
    {2, 21, 4, 2, 64, RRT_DTYPE_BF16},  {1, 27, 4, 1, 80, RRT_DTYPE_F16},
    {1, 16, 2, 2, 128, RRT_DTYPE_BF16},
};
static const cfg small_cfgs[] = {
    {1, 6, 2, 1, 32, RRT_DTYPE_F32},
    {2, 5, 2, 2, 80, RRT_DTYPE_BF16},
    {1, 9, 2, 1, 64, RRT_DTYPE_F16},
};

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
  d.dtype = c->dt;
  const float qamp = 2.0f; /* sharper softmax than uniform [-1, 1] would give */
  int64_t L = d.seq / P;
  size_t es = ref_es(c->dt);
  size_t nq = (size_t)(d.batch * L * c->hq * c->dim), nkv = (size_t)(d.batch * L * c->hkv * c->dim);
  size_t nl = (size_t)(d.batch * c->hq * L);
  void *hq = ref_shard(&d, P, r, 0, c->hq, seed, qamp);
  void *hk = ref_shard(&d, P, r, 1, c->hkv, seed, 1.0f);
  void *hv = ref_shard(&d, P, r, 2, c->hkv, seed, 1.0f);
  void *ho = malloc(nq * es);
  float *hl = malloc(nl * sizeof(float));
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
  /* a plan run twice must give the same answer (buffers are reused) */
  rrt_attn_plan_t plan = NULL;
  CHECK_OK(rrt_attn_plan_create(ctx, &d, &plan));
  for (int rep = 0; rep < 2; rep++) {
    CHECK_OK(rrt_memset(ctx, o, 0x7f, nq * es)); /* garbage that must be overwritten */
    CHECK_OK(rrt_attn_plan_run(plan, q, k, v, o, lse));
    CHECK_OK(rrt_memcpy_to_host(ctx, ho, o, nq * es));
    CHECK_OK(rrt_memcpy_to_host(ctx, hl, lse, nl * sizeof(float)));
    ref_err e = ref_compare(&d, P, r, seed, qamp, ho, hl);
    CHECK_MSG(e.o_abs <= ref_tol_o(c->dt) && e.lse_abs <= REF_TOL_LSE,
              "%s P=%d b=%d S=%lld hq=%d hkv=%d D=%d %s causal=%d: |dO| %.3g (tol %.3g) |dLSE| "
              "%.3g (tol %.3g)",
              rrt_attn_layout_name(d.layout), P, c->batch, (long long)d.seq, c->hq, c->hkv, c->dim,
              rrt_dtype_name(c->dt), causal, e.o_abs, ref_tol_o(c->dt), e.lse_abs, REF_TOL_LSE);
    if (r == 0 && rep == 0 && getenv("RRT_TEST_VERBOSE"))
      printf("%-10s P=%d S=%4lld hq=%d hkv=%d D=%3d %-4s causal=%d |dO| %.2e |dLSE| %.2e\n",
             rrt_attn_layout_name(d.layout), P, (long long)d.seq, c->hq, c->hkv, c->dim,
             rrt_dtype_name(c->dt), causal, e.o_abs, e.lse_abs);
  }
  rrt_attn_stats stt;
  CHECK_OK(rrt_attn_plan_stats(plan, &stt));
  CHECK(stt.steps == P);
  CHECK(stt.bytes_sent == (double)(P - 1) * 2.0 * (double)(nkv * es));
  CHECK(stt.hidden_share >= 0.0 && stt.hidden_share <= 1.0);
  rrt_attn_plan_destroy(plan);
  /* the one-shot entry point without LSE gives the same output */
  void *ho2 = malloc(nq * es);
  CHECK_OK(rrt_attn_fwd(ctx, &d, q, k, v, o, NULL));
  CHECK_OK(rrt_memcpy_to_host(ctx, ho2, o, nq * es));
  CHECK(memcmp(ho, ho2, nq * es) == 0);
  free(ho2);
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
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int small = argc > 1 && strcmp(argv[1], "small") == 0;
  rrt_ctx_t ctx = NULL;
  rrt_status cst = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (cst == RRT_ERR_NO_DEVICE || cst == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP; /* cuda asked for, no GPU here */
  }
  CHECK(cst == RRT_SUCCESS);
  if (ctx) {
    const cfg *cs = small ? small_cfgs : full_cfgs;
    int n = small ? (int)(sizeof small_cfgs / sizeof *cs) : (int)(sizeof full_cfgs / sizeof *cs);
    for (int i = 0; i < n; i++)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        for (int causal = 0; causal <= 1; causal++)
          run_cfg(ctx, &cs[i], layout, causal, 1000u + (unsigned)i);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* The emu (or cuda) backend gives the cpu backend's answer on the same
 * inputs, on multi-rank runs: both contexts live in this process on the
 * same ranks. The two paths differ in order of f32 operations (BLAS tiles
 * vs 4-lane dot products, fused vs separate merge), not in the algorithm.
 * Argument: emu or cuda (exit 77 without a GPU). */
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "ringrt/ringrt.h"
#include "ringrt/attn.h"
#include "test_util.h"

static rrt_ctx_t make_ctx(rrt_backend b, rrt_status *st) {
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  cfg.backend = b;
  cfg.bind = 0;
  rrt_ctx_t ctx = NULL;
  *st = rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx);
  return ctx;
}

static void run(rrt_ctx_t ctx, const rrt_attn_desc *d, void *const in[3], void *o, float *lse) {
  int P = rrt_ctx_size(ctx);
  int64_t L = d->seq / P;
  size_t es = ref_es(d->dtype);
  size_t nq = (size_t)(d->batch * L * d->heads_q * d->head_dim);
  size_t nkv = (size_t)(d->batch * L * d->heads_kv * d->head_dim);
  size_t nl = (size_t)(d->batch * d->heads_q * L);
  void *b[3], *bo;
  float *bl;
  size_t n[3] = {nq, nkv, nkv};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(rrt_malloc(ctx, n[i] * es, &b[i]));
    CHECK_OK(rrt_memcpy_to_backend(ctx, b[i], in[i], n[i] * es));
  }
  CHECK_OK(rrt_malloc(ctx, nq * es, &bo));
  CHECK_OK(rrt_malloc(ctx, nl * sizeof(float), (void **)&bl));
  CHECK_OK(rrt_attn_fwd(ctx, d, b[0], b[1], b[2], bo, bl));
  CHECK_OK(rrt_memcpy_to_host(ctx, o, bo, nq * es));
  CHECK_OK(rrt_memcpy_to_host(ctx, lse, bl, nl * sizeof(float)));
  for (int i = 0; i < 3; i++)
    rrt_free(ctx, b[i]);
  rrt_free(ctx, bo);
  rrt_free(ctx, bl);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_backend other = argc > 1 && strcmp(argv[1], "cuda") == 0 ? RRT_BACKEND_CUDA : RRT_BACKEND_EMU;
  rrt_status st;
  rrt_ctx_t cx = make_ctx(other, &st);
  if (st == RRT_ERR_NO_DEVICE || st == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP;
  }
  CHECK_OK(st);
  rrt_ctx_t cc = make_ctx(RRT_BACKEND_CPU, &st);
  CHECK_OK(st);
  int P = 0, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const struct {
    int chunk, hq, hkv, dim, layout, causal;
    rrt_dtype dt;
  } cases[] = {
      {7, 2, 1, 48, RRT_ATTN_ZIGZAG, 1, RRT_DTYPE_F32},
      {8, 2, 2, 64, RRT_ATTN_STRIPE, 1, RRT_DTYPE_BF16},
      {5, 1, 1, 80, RRT_ATTN_CONTIGUOUS, 0, RRT_DTYPE_F16},
      {6, 2, 1, 32, RRT_ATTN_CONTIGUOUS, 1, RRT_DTYPE_F32},
  };
  for (size_t c = 0; cx && cc && c < sizeof cases / sizeof cases[0]; c++) {
    rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
    d.batch = 1;
    d.seq = 2LL * P * cases[c].chunk;
    d.heads_q = cases[c].hq;
    d.heads_kv = cases[c].hkv;
    d.head_dim = cases[c].dim;
    d.layout = (rrt_attn_layout)cases[c].layout;
    d.causal = cases[c].causal;
    d.dtype = cases[c].dt;
    int64_t L = d.seq / P;
    size_t es = ref_es(d.dtype), nq = (size_t)(L * d.heads_q * d.head_dim),
           nl = (size_t)(d.heads_q * L);
    void *in[3] = {ref_shard(&d, P, r, 0, d.heads_q, 7u + c, 2.0f),
                   ref_shard(&d, P, r, 1, d.heads_kv, 7u + c, 1.0f),
                   ref_shard(&d, P, r, 2, d.heads_kv, 7u + c, 1.0f)};
    void *o1 = malloc(nq * es), *o2 = malloc(nq * es);
    float *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
    run(cc, &d, in, o1, l1);
    run(cx, &d, in, o2, l2);
    /* f32: reordered f32 sums, ~1e-6; half storage: the two f32 results
     * may round to neighbouring values, one unit in the last place of
     * |O| <= 1 (bf16 2^-7, f16 2^-10) */
    double tol = d.dtype == RRT_DTYPE_F32 ? 1e-5 : d.dtype == RRT_DTYPE_BF16 ? 7.9e-3 : 9.8e-4;
    double eo = 0, el = 0;
    for (size_t i = 0; i < nq; i++) {
      double a = rrt_am_load(o1, (int64_t)i, (int)d.dtype),
             b = rrt_am_load(o2, (int64_t)i, (int)d.dtype);
      double e = fabs(a - b);
      if (!(e <= eo)) eo = e == e ? e : HUGE_VAL;
    }
    for (size_t i = 0; i < nl; i++) {
      double e = fabs((double)l1[i] - l2[i]);
      if (!(e <= el)) el = e == e ? e : HUGE_VAL;
    }
    CHECK_MSG(eo <= tol && el <= 2e-5,
              "case %zu (%s %s causal %d D %d): |O diff| %.3g (tol %.3g) |LSE diff| %.3g", c,
              rrt_attn_layout_name(d.layout), rrt_dtype_name(d.dtype), d.causal, d.head_dim, eo,
              tol, el);
    for (int i = 0; i < 3; i++)
      free(in[i]);
    free(o1);
    free(o2);
    free(l1);
    free(l2);
  }
  rrt_ctx_destroy(cc);
  rrt_ctx_destroy(cx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* Ring attention forward for any length and any mask, against the naive
 * double reference (attn_ref.h: positions from rrt_attn_shard_positions,
 * the mask from its definition), on the backend of RINGRT_BACKEND, for
 * every layout: uneven lengths (S = 13), empty shards (S < P), sliding
 * windows ((4, 0) causal, (3, 5) not), packed documents of lengths 1, 3,
 * 17 and one spanning every rank (causal, and with a window), batch 2,
 * bf16. Also the steps that run: a causal window over contiguous shards
 * stops after 2 steps, and the bytes sent follow. Every rank checks its own
 * rows. Tiny shapes; the emu backend runs the cases that cover its code. */
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "ringrt/attn.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

typedef struct mcase {
  const char *name;
  int64_t seq, batch;
  int causal, left, right, docs; /* docs: the document mix below */
  rrt_dtype dt;
  int emu; /* also on the emulator (slow: the cases that cover its code) */
} mcase;

static const mcase cases[] = {
    {"uneven", 13, 2, 0, -1, -1, 0, RRT_DTYPE_F32, 1}, /* batch 2: the strided copy */
    {"uneven causal", 13, 1, 1, -1, -1, 0, RRT_DTYPE_F32, 0},
    {"uneven causal bf16", 13, 2, 1, -1, -1, 0, RRT_DTYPE_BF16, 0},
    {"shorter than P", 2, 1, 1, -1, -1, 0, RRT_DTYPE_F32, 1},
    {"window (4,0) causal", 24, 1, 1, 4, 0, 0, RRT_DTYPE_F32, 1},
    {"window (3,5)", 13, 1, 0, 3, 5, 0, RRT_DTYPE_F32, 1},
    {"documents causal", 0, 1, 1, -1, -1, 1, RRT_DTYPE_F32, 1},
    {"documents window (2,1)", 0, 1, 0, 2, 1, 1, RRT_DTYPE_F32, 0},
    /* bf16/f16 with head_dim 16: the tensor-core forward kernel on emu */
    {"window (3,5) bf16", 13, 1, 0, 3, 5, 0, RRT_DTYPE_BF16, 1},
    {"documents causal f16", 0, 1, 1, -1, -1, 1, RRT_DTYPE_F16, 1},
};

/* Documents of lengths 1, 3, `big` and 17 (seq 17P + 1): `big` covers
 * [4, 17P - 16), from rank 0's contiguous shard into the last rank's, which
 * starts at floor((P-1)(17P+1)/P) = 17P - 17. */
static int64_t doc_mix(int P, int64_t cu[5]) {
  const int64_t big = P > 1 ? 17 * P - 20 : 8;
  const int64_t len[4] = {1, 3, big, 17};
  cu[0] = 0;
  for (int i = 0; i < 4; i++)
    cu[i + 1] = cu[i] + len[i];
  return cu[4];
}

static rrt_attn_desc desc_of(const mcase *c, int P, int layout, int64_t cu[5]) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.batch = c->batch;
  d.seq = c->docs ? doc_mix(P, cu) : c->seq;
  d.heads_q = 2;
  d.heads_kv = 1;
  d.head_dim = 16;
  d.causal = c->causal;
  d.window_left = c->left;
  d.window_right = c->right;
  d.layout = (rrt_attn_layout)layout;
  d.dtype = c->dt;
  if (c->docs) d.cu_seqlens = cu, d.num_docs = 4;
  return d;
}

static void *to_backend(rrt_ctx_t ctx, const void *h, size_t bytes) {
  void *p = NULL;
  CHECK_OK(rrt_malloc(ctx, bytes, &p));
  CHECK_OK(rrt_memcpy_to_backend(ctx, p, h, bytes));
  return p;
}

/* Steps and bytes of the run: at most P steps; K/V of the longest shard
 * sent on every step but the last; a causal window narrower than every
 * contiguous shard needs only the own and the previous block. */
static void check_stats(rrt_attn_plan_t plan, const rrt_attn_desc *d, const mcase *c, int P) {
  rrt_attn_stats stt;
  CHECK_OK(rrt_attn_plan_stats(plan, &stt));
  int64_t kv = 0;
  for (int r = 0; r < P; r++)
    kv = ref_len(d, P, r) > kv ? ref_len(d, P, r) : kv;
  const double kv_bytes =
      2.0 * (double)(d->batch * kv * d->heads_kv * d->head_dim) * (double)ref_es(d->dtype);
  CHECK(stt.steps >= 1 && stt.steps <= P);
  CHECK(stt.bytes_sent == (double)(stt.steps - 1) * kv_bytes);
  if (d->layout == RRT_ATTN_CONTIGUOUS && c->causal && c->left >= 0 && !c->docs &&
      d->seq / P > c->left)
    CHECK_MSG(stt.steps == (P > 1 ? 2 : 1), "%s P %d: %d steps run", c->name, P, stt.steps);
}

static void run_case(rrt_ctx_t ctx, const mcase *c, int layout, uint64_t seed) {
  const int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  int64_t cu[5];
  rrt_attn_desc d = desc_of(c, P, layout, cu);
  const int64_t L = ref_len(&d, P, r);
  const size_t es = ref_es(d.dtype), nq = (size_t)(d.batch * L * d.heads_q * d.head_dim);
  const size_t nkv = (size_t)(d.batch * L * d.heads_kv * d.head_dim);
  const size_t nl = (size_t)(d.batch * d.heads_q * L);
  const float qamp = 2.0f;
  void *hq = ref_shard(&d, P, r, 0, d.heads_q, seed, qamp);
  void *hk = ref_shard(&d, P, r, 1, d.heads_kv, seed, 1.0f);
  void *hv = ref_shard(&d, P, r, 2, d.heads_kv, seed, 1.0f);
  void *q = to_backend(ctx, hq, nq * es), *k = to_backend(ctx, hk, nkv * es);
  void *v = to_backend(ctx, hv, nkv * es), *o = NULL;
  float *lse = NULL, *hl = malloc(nl * sizeof(float) + 1);
  void *ho = malloc(nq * es + 1);
  CHECK_OK(rrt_malloc(ctx, nq * es, &o));
  CHECK_OK(rrt_malloc(ctx, nl * sizeof(float), (void **)&lse));
  rrt_attn_plan_t plan = NULL;
  CHECK_OK(rrt_attn_plan_create(ctx, &d, &plan));
  for (int rep = 0; rep < 2 && plan; rep++) { /* the second run reuses the ring buffers */
    CHECK_OK(rrt_memset(ctx, o, 0x7f, nq * es));
    CHECK_OK(rrt_attn_plan_run(plan, q, k, v, o, lse));
    CHECK_OK(rrt_memcpy_to_host(ctx, ho, o, nq * es));
    CHECK_OK(rrt_memcpy_to_host(ctx, hl, lse, nl * sizeof(float)));
    ref_err e = ref_compare(&d, P, r, seed, qamp, ho, hl);
    CHECK_MSG(e.o_abs <= ref_tol_o(d.dtype) && e.lse_abs <= REF_TOL_LSE,
              "%s, %s, P %d rank %d (%lld rows): |dO| %.3g (tol %.3g) |dLSE| %.3g (tol %.3g)",
              c->name, rrt_attn_layout_name(d.layout), P, r, (long long)L, e.o_abs,
              ref_tol_o(d.dtype), e.lse_abs, REF_TOL_LSE);
  }
  if (plan) check_stats(plan, &d, c, P);
  rrt_attn_plan_destroy(plan);
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
  rrt_ctx_t ctx = NULL;
  rrt_status cst = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (cst == RRT_ERR_NO_DEVICE || cst == RRT_ERR_UNSUPPORTED) {
    MPI_Finalize();
    return RRT_TEST_SKIP; /* cuda asked for, no GPU here */
  }
  CHECK(cst == RRT_SUCCESS);
  if (ctx) {
    const int emu = rrt_ctx_backend(ctx) == RRT_BACKEND_EMU;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
      for (int layout = 0; layout < RRT_ATTN_LAYOUT_COUNT; layout++)
        if (!emu || cases[i].emu) run_case(ctx, &cases[i], layout, 2000u + (unsigned)i);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

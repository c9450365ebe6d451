/* Invalid ring attention inputs are errors on every rank, never hangs: bad
 * descriptors everywhere, a bad descriptor on one rank only, descriptors
 * that differ between ranks, a NULL tensor on one rank. After each failure
 * the context still runs a valid problem (no rank was left mid-exchange). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "ringrt/ringrt.h"
#include "ringrt/attn.h"
#include "test_util.h"

static rrt_attn_desc good(int P) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 4LL * P;
  d.heads_q = 2;
  d.heads_kv = 1;
  d.head_dim = 16;
  d.causal = 1;
  d.layout = RRT_ATTN_ZIGZAG;
  return d;
}

/* A valid run right after: shows every rank left the failed call cleanly. */
static void still_works(rrt_ctx_t ctx) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  rrt_attn_desc d = good(P);
  size_t nq = 4 * 2 * 16, nkv = 4 * 16;
  void *q, *k, *v, *o;
  float *lse;
  CHECK_OK(rrt_malloc(ctx, nq * 4, &q));
  CHECK_OK(rrt_malloc(ctx, nkv * 4, &k));
  CHECK_OK(rrt_malloc(ctx, nkv * 4, &v));
  CHECK_OK(rrt_malloc(ctx, nq * 4, &o));
  CHECK_OK(rrt_malloc(ctx, 2 * 4 * 4, (void **)&lse));
  void *hq = ref_shard(&d, P, r, 0, 2, 5, 1.0f), *hk = ref_shard(&d, P, r, 1, 1, 5, 1.0f),
       *hv = ref_shard(&d, P, r, 2, 1, 5, 1.0f);
  CHECK_OK(rrt_memcpy_to_backend(ctx, q, hq, nq * 4));
  CHECK_OK(rrt_memcpy_to_backend(ctx, k, hk, nkv * 4));
  CHECK_OK(rrt_memcpy_to_backend(ctx, v, hv, nkv * 4));
  CHECK_OK(rrt_attn_fwd(ctx, &d, q, k, v, o, lse));
  float ho[4 * 2 * 16], hl[8];
  CHECK_OK(rrt_memcpy_to_host(ctx, ho, o, sizeof ho));
  CHECK_OK(rrt_memcpy_to_host(ctx, hl, lse, sizeof hl));
  ref_err e = ref_compare(&d, P, r, 5, 1.0f, ho, hl);
  CHECK(e.o_abs <= ref_tol_o(d.dtype) && e.lse_abs <= REF_TOL_LSE);
  free(hq);
  free(hk);
  free(hv);
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, o);
  rrt_free(ctx, lse);
}

/* Every rank must fail; the rank(s) at fault with `own`, others with own or
 * REMOTE; the message holds `needle` when given. */
static void expect_fail_with(rrt_ctx_t ctx, const rrt_attn_desc *d, int at_fault, const char *what,
                             const char *needle) {
  rrt_attn_plan_t p = NULL;
  rrt_status st = rrt_attn_plan_create(ctx, d, &p);
  CHECK_MSG(st != RRT_SUCCESS && p == NULL, "%s: plan_create returned %s", what,
            rrt_status_string(st));
  CHECK_MSG(at_fault ? st == RRT_ERR_INVALID_ARG
                     : (st == RRT_ERR_INVALID_ARG || st == RRT_ERR_REMOTE),
            "%s: status %s", what, rrt_status_string(st));
  CHECK_MSG(strlen(rrt_ctx_last_error(ctx)) > 0, "%s: no message", what);
  CHECK_MSG(!needle || strstr(rrt_ctx_last_error(ctx), needle), "%s: message '%s' lacks '%s'", what,
            rrt_ctx_last_error(ctx), needle);
  if (rrt_ctx_rank(ctx) == 0 && getenv("RRT_TEST_VERBOSE"))
    printf("%s -> %s\n", what, rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  still_works(ctx);
}

static void expect_fail(rrt_ctx_t ctx, const rrt_attn_desc *d, int at_fault, const char *what) {
  expect_fail_with(ctx, d, at_fault, what, NULL);
}

/* Windows and documents that no rank can run (any length is valid). */
static void bad_masks(rrt_ctx_t ctx, int P) {
  rrt_attn_desc d = good(P);
  d.window_left = -2;
  expect_fail_with(ctx, &d, 1, "window_left -2", "window (-2, -1)");
  int64_t cu[4] = {0, 3, 2, 4LL * P}; /* decreasing at index 2 */
  d = good(P);
  d.cu_seqlens = cu, d.num_docs = 3;
  expect_fail_with(ctx, &d, 1, "cu_seqlens decreasing", "cu_seqlens[2] = 2");
  cu[2] = 4LL * P - 1, cu[3] = 4LL * P + 1; /* last != seq */
  expect_fail(ctx, &d, 1, "cu_seqlens last != seq");
  cu[3] = 4LL * P;
  d.batch = 2;
  expect_fail(ctx, &d, 1, "documents with batch 2");
  d.batch = 1, d.num_docs = 0;
  expect_fail(ctx, &d, 1, "cu_seqlens with num_docs 0");
}

/* Each rank valid, but the windows, the document offsets or the scale
 * differ. */
static void differing_masks(rrt_ctx_t ctx, int P, int r) {
  rrt_attn_desc d = good(P);
  if (r == 1) d.window_left = 3;
  expect_fail(ctx, &d, 0, "window_left differs between ranks");
  int64_t cu[3] = {0, r == P - 1 ? 3 : 2, 4LL * P};
  d = good(P);
  d.cu_seqlens = cu, d.num_docs = 2;
  expect_fail_with(ctx, &d, 0, "cu_seqlens[1] differs", "cu_seqlens[1] is");
  d = good(P);
  d.scale = r == 0 ? 0.25 : 0.5;
  expect_fail_with(ctx, &d, 0, "scale differs", "scale is 0.");
  d = good(P);
  d.softcap = r == 0 ? 30.0 : 50.0;
  expect_fail_with(ctx, &d, 0, "softcap differs", "softcap is ");
  d = good(P);
  d.sinks = r == P - 1;
  expect_fail_with(ctx, &d, 0, "sinks differ", "sinks is ");
}

/* A run whose sink arguments do not match the plan: an error on every
 * rank naming the entry point to use, and the plan stays usable. */
static void sink_runs(rrt_ctx_t ctx, int P, int r, void *buf) {
  rrt_attn_desc d = good(P);
  rrt_attn_plan_t p = NULL, ps = NULL;
  CHECK_OK(rrt_attn_plan_create(ctx, &d, &p));
  d.sinks = 1;
  CHECK_OK(rrt_attn_plan_create(ctx, &d, &ps));
  const float *sk = (const float *)buf;
  rrt_status st = rrt_attn_plan_run_sinks(p, buf, buf, buf, sk, buf, NULL);
  CHECK_MSG(st == RRT_ERR_INVALID_ARG && strstr(rrt_ctx_last_error(ctx), "has no sinks"),
            "run_sinks on a plan without sinks: %s '%s'", rrt_status_string(st),
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  st = rrt_attn_plan_run(ps, buf, buf, buf, buf, NULL);
  CHECK_MSG(st == RRT_ERR_INVALID_ARG && strstr(rrt_ctx_last_error(ctx), "run_sinks"),
            "plain run of a plan with sinks: %s '%s'", rrt_status_string(st),
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  st = rrt_attn_plan_run_sinks(ps, buf, buf, buf, r == P - 1 ? NULL : sk, buf, NULL);
  CHECK_MSG(st != RRT_SUCCESS, "NULL sinks on the last rank accepted");
  rrt_ctx_clear_error(ctx);
  float *lse = (float *)buf;
  st = rrt_attn_plan_run_bwd_sinks(ps, buf, buf, buf, buf, lse, buf, sk, buf, buf, buf, NULL);
  CHECK_MSG(st == RRT_ERR_INVALID_ARG && strstr(rrt_ctx_last_error(ctx), "dsinks"),
            "NULL dsinks: %s '%s'", rrt_status_string(st), rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  CHECK_OK(rrt_attn_plan_run_sinks(ps, buf, buf, buf, sk, buf, NULL)); /* still usable */
  rrt_attn_plan_destroy(p);
  rrt_attn_plan_destroy(ps);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (ctx) {
    int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
    rrt_attn_desc d;
    still_works(ctx);

    d = good(P);
    d.heads_kv = 3; /* 2 % 3 != 0 */
    expect_fail(ctx, &d, 1, "heads_q % heads_kv");
    bad_masks(ctx, P);
    d = good(P);
    d.head_dim = 300;
    expect_fail(ctx, &d, 1, "head_dim 300");
    d = good(P);
    d.dtype = RRT_DTYPE_I32;
    expect_fail(ctx, &d, 1, "dtype i32");
    d = good(P);
    d.magic = 0;
    expect_fail(ctx, &d, 1, "uninitialised descriptor");
    d = good(P);
    d.batch = 0;
    expect_fail(ctx, &d, 1, "batch 0");
    /* scale: exactly 0 is the default 1/sqrt(head_dim); negative, inf, NaN are errors */
    const double bad_scales[] = {-0.125, -HUGE_VAL, HUGE_VAL, NAN};
    for (int i = 0; i < 4; i++) {
      d = good(P);
      d.scale = bad_scales[i];
      char what[64];
      snprintf(what, sizeof what, "scale %g", bad_scales[i]);
      expect_fail(ctx, &d, 1, what);
      char msg[256];
      CHECK(rrt_attn_desc_check(&d, P, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
      CHECK_MSG(strstr(msg, "scale"), "%s: message '%s' does not name the scale", what, msg);
    }
    d = good(P);
    d.scale = 0.0;
    CHECK_OK(rrt_attn_desc_check(&d, P, NULL, 0));
    /* softcap: 0 is off; negative, inf, NaN are errors naming the value */
    const double bad_caps[] = {-30.0, -HUGE_VAL, HUGE_VAL, NAN};
    for (int i = 0; i < 4; i++) {
      d = good(P);
      d.softcap = bad_caps[i];
      char what[64];
      snprintf(what, sizeof what, "softcap %g", bad_caps[i]);
      expect_fail(ctx, &d, 1, what);
      char msg[256];
      CHECK(rrt_attn_desc_check(&d, P, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
      CHECK_MSG(strstr(msg, what), "%s: message '%s' does not name the value", what, msg);
    }
    d = good(P);
    d.sinks = 2;
    expect_fail(ctx, &d, 1, "sinks 2");
    /* one rank only is wrong: the others must fail too */
    d = good(P);
    if (r == P - 1) d.heads_kv = 3;
    expect_fail(ctx, &d, r == P - 1, "bad on the last rank only");
    if (P > 1) {
      /* each rank valid on its own, but they disagree */
      d = good(P);
      if (r == 0) d.seq = 8LL * P;
      expect_fail(ctx, &d, 0, "seq differs between ranks");
      d = good(P);
      if (r == 1) d.causal = 0;
      expect_fail(ctx, &d, 0, "causal differs between ranks");
      differing_masks(ctx, P, r);
    }
    /* NULL tensor on one rank at run time */
    d = good(P);
    rrt_attn_plan_t p = NULL;
    CHECK_OK(rrt_attn_plan_create(ctx, &d, &p));
    void *buf;
    CHECK_OK(rrt_malloc(ctx, 4 * 2 * 16 * 4, &buf));
    CHECK_OK(rrt_memset(ctx, buf, 0, 4 * 2 * 16 * 4));
    rrt_status st = rrt_attn_plan_run(p, r == 0 ? NULL : buf, buf, buf, buf, NULL);
    CHECK_MSG(st != RRT_SUCCESS, "NULL q on rank 0 accepted: %s", rrt_status_string(st));
    rrt_ctx_clear_error(ctx);
    CHECK_OK(rrt_attn_plan_run(p, buf, buf, buf, buf, NULL)); /* the plan is still usable */
    rrt_attn_plan_destroy(p);
    sink_runs(ctx, P, r, buf);
    rrt_free(ctx, buf);
    still_works(ctx);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

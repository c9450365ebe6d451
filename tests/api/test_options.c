/* Option structs from programs built against an older header: each struct
 * is passed with a `size` that ends before its last fields and garbage
 * (0xA5 bytes) after that; the library must use the fields within the size
 * and the defaults for the rest. The garbage is chosen so that reading it
 * would fail or change the result (negative counts, a huge timeout, an
 * unknown dtype), and each case has a control that passes the same bytes
 * with the full size. Sizes below the identification fields, above the
 * library's struct or between two fields are errors on every rank naming
 * the struct. Public API only, linked to libringrt.so. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

#define GARBAGE 0xA5

/* What an older caller's struct looks like to the library: `size` bytes of
 * real fields, then whatever happens to follow in memory. */
static void make_short(void *s, size_t full_size, size_t size) {
  memset((char *)s + size, GARBAGE, full_size - size);
  memcpy(s, &size, sizeof size);
}

static void set_size(void *s, size_t size) { memcpy(s, &size, sizeof size); }

static int contains(const char *text, const char *what) { return strstr(text, what) != NULL; }

/* ---- rrt_ctx_config ------------------------------------------------------- */

static double env_timeout(void) {
  const char *t = getenv("RINGRT_TIMEOUT");
  return t && atof(t) > 0 ? atof(t) : 600.0;
}

static void check_ctx_config(void) {
  rrt_ctx_t ctx = NULL;
  rrt_ctx_config full = RRT_CTX_CONFIG_INITIALIZER;
  full.backend = RRT_BACKEND_CPU;
  full.timeout_s = 1234.5;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, &full, &ctx));
  CHECK(rrt_ctx_timeout(ctx) == 1234.5); /* control: a field within the size is read */
  rrt_ctx_destroy(ctx);

  /* an older header without timeout_s, bind, use_nccl; the bytes after its
   * size hold the control's 1234.5 (0xA5 would be a negative timeout, which
   * means "the default" anyway) */
  rrt_ctx_config old = full;
  set_size(&old, offsetof(rrt_ctx_config, timeout_s));
  ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, &old, &ctx));
  CHECK_MSG(rrt_ctx_timeout(ctx) == env_timeout(), "timeout %g, want the default %g",
            rrt_ctx_timeout(ctx), env_timeout());
  CHECK(rrt_ctx_backend(ctx) == RRT_BACKEND_CPU); /* within the size: the caller's */
  rrt_ctx_destroy(ctx);

  const size_t bad[] = {sizeof full + sizeof(size_t), sizeof(size_t),
                        offsetof(rrt_ctx_config, timeout_s) + 4};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rrt_ctx_config c = full;
    set_size(&c, bad[i]);
    ctx = NULL;
    CHECK_MSG(rrt_ctx_create(MPI_COMM_WORLD, &c, &ctx) == RRT_ERR_INVALID_ARG && !ctx,
              "size %zu accepted", bad[i]);
  }
  rrt_ctx_config newer = full;
  newer.version = RRT_CTX_CONFIG_VERSION + 1;
  ctx = NULL;
  CHECK(rrt_ctx_create(MPI_COMM_WORLD, &newer, &ctx) == RRT_ERR_INVALID_ARG && !ctx);
}

/* ---- rrt_attn_desc -------------------------------------------------------- */

static rrt_attn_desc attn_desc(int P) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 4LL * P;
  d.heads_q = 2;
  d.heads_kv = 1;
  d.head_dim = 16;
  d.causal = 1;
  d.layout = RRT_ATTN_ZIGZAG;
  return d;
}

/* Forward output of this rank for deterministic inputs. */
static rrt_status attn_run(rrt_ctx_t ctx, const rrt_attn_desc *d, float *o_host) {
  enum { NQ = 4 * 2 * 16, NKV = 4 * 16 };
  float hq[NQ], hk[NKV], hv[NKV];
  int r = rrt_ctx_rank(ctx);
  for (int i = 0; i < NQ; i++)
    hq[i] = (float)sin(0.1 * i + r);
  for (int i = 0; i < NKV; i++)
    hk[i] = (float)cos(0.2 * i + r), hv[i] = (float)sin(0.3 * i - r);
  void *q = NULL, *k = NULL, *v = NULL, *o = NULL;
  rrt_status st = rrt_malloc(ctx, sizeof hq, &q);
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, sizeof hk, &k);
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, sizeof hv, &v);
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, sizeof hq, &o);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, q, hq, sizeof hq);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, k, hk, sizeof hk);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, v, hv, sizeof hv);
  if (st == RRT_SUCCESS) st = rrt_attn_fwd(ctx, d, q, k, v, o, NULL);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_host(ctx, o_host, o, sizeof hq);
  rrt_free(ctx, q), rrt_free(ctx, k), rrt_free(ctx, v), rrt_free(ctx, o);
  return st;
}

static void check_attn_desc(rrt_ctx_t ctx) {
  int P = rrt_ctx_size(ctx);
  rrt_attn_desc full = attn_desc(P);
  float o_full[4 * 2 * 16], o_old[4 * 2 * 16];
  CHECK_OK(attn_run(ctx, &full, o_full));

  rrt_attn_desc old = full; /* an older header without dtype: f32 by default */
  make_short(&old, sizeof old, offsetof(rrt_attn_desc, dtype));
  char msg[256];
  CHECK_OK(rrt_attn_desc_check(&old, P, msg, sizeof msg));
  CHECK(rrt_attn_flops(&old) == rrt_attn_flops(&full));
  CHECK_OK(attn_run(ctx, &old, o_old));
  CHECK(memcmp(o_full, o_old, sizeof o_full) == 0);
  /* a version 2 header (no softcap, no sinks): both off, the same bits */
  rrt_attn_desc v2 = full;
  v2.version = 2;
  make_short(&v2, sizeof v2, offsetof(rrt_attn_desc, softcap));
  CHECK_OK(rrt_attn_desc_check(&v2, P, msg, sizeof msg));
  CHECK_OK(attn_run(ctx, &v2, o_old));
  CHECK(memcmp(o_full, o_old, sizeof o_full) == 0);
  /* control: the same garbage inside the size is an unknown dtype */
  rrt_attn_desc garbage = old;
  set_size(&garbage, sizeof garbage);
  CHECK(rrt_attn_desc_check(&garbage, P, msg, sizeof msg) == RRT_ERR_INVALID_ARG);

  rrt_attn_desc big = full;
  set_size(&big, sizeof big + sizeof(size_t));
  CHECK(rrt_attn_desc_check(&big, P, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  char sizes[64];
  snprintf(sizes, sizeof sizes, "%zu bytes, larger than the %zu", sizeof big + sizeof(size_t),
           sizeof big);
  CHECK_MSG(contains(msg, "rrt_attn_desc.size") && contains(msg, sizes), "message: %s", msg);
  rrt_attn_desc tiny = full;
  set_size(&tiny, sizeof(size_t));
  CHECK(rrt_attn_desc_check(&tiny, P, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(contains(msg, "rrt_attn_desc.size") && contains(msg, "smaller"), "message: %s", msg);
  rrt_attn_plan_t plan = NULL;
  CHECK(rrt_attn_plan_create(ctx, &big, &plan) == RRT_ERR_INVALID_ARG && !plan);
  CHECK_MSG(contains(rrt_ctx_last_error(ctx), "rrt_attn_desc"), "last error: %s",
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
}

/* ---- rrt_ilu0_options ----------------------------------------------------- */

/* P copies of [[0, 1], [1, 1]] on the diagonal, one block a rank: both
 * pivots of a block are zero and boosted to boost_value. */
static rrt_status pivot_matrix(rrt_ctx_t ctx, rrt_sparse_t *A) {
  int r = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  int64_t rowptr[3] = {0, 2, 4}, c = 2LL * r;
  int64_t cols[4] = {c, c + 1, c, c + 1};
  double vals[4] = {0.0, 1.0, 1.0, 1.0};
  return rrt_sparse_create(ctx, 2LL * P, c, 2, rowptr, cols, vals, A);
}

/* u_00 of this rank's block after factoring with `opt`; NaN on failure. */
static double boosted_pivot(rrt_sparse_t A, const rrt_ilu0_options *opt) {
  rrt_ilu0_t M = NULL;
  double vals[4] = {NAN, NAN, NAN, NAN};
  CHECK_OK(rrt_ilu0_create(A, opt, &M));
  if (M) {
    CHECK_OK(rrt_ilu0_factor(M));
    CHECK_OK(rrt_ilu0_get_factors(M, vals));
  }
  rrt_ilu0_destroy(M);
  return vals[0];
}

static void check_ilu0_options(rrt_ctx_t ctx) {
  rrt_sparse_t A = NULL;
  CHECK_OK(pivot_matrix(ctx, &A));
  if (!A) return;
  rrt_ilu0_options full = RRT_ILU0_OPTIONS_INITIALIZER;
  full.boost = 1;
  full.boost_tol = 0.0;
  full.boost_value = 7.0;
  CHECK(boosted_pivot(A, &full) == 7.0); /* control */
  rrt_ilu0_options old = full;           /* an older header without boost_value, factors_f32 */
  make_short(&old, sizeof old, offsetof(rrt_ilu0_options, boost_value));
  double u00 = boosted_pivot(A, &old);
  CHECK_MSG(u00 == 1.0, "boosted pivot %g, want the default boost_value 1", u00);

  rrt_ilu0_options big = full;
  set_size(&big, sizeof big + sizeof(size_t));
  rrt_ilu0_t M = NULL;
  CHECK(rrt_ilu0_create(A, &big, &M) == RRT_ERR_INVALID_ARG && !M);
  CHECK_MSG(contains(rrt_ctx_last_error(ctx), "rrt_ilu0_options"), "last error: %s",
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  rrt_sparse_destroy(A);
}

/* ---- rrt_krylov_options --------------------------------------------------- */

/* The 1D Laplacian tridiag(-1, 2, -1) of order 8P, 8 rows a rank. */
static rrt_status laplace1d(rrt_ctx_t ctx, rrt_sparse_t *A) {
  int r = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  int64_t n = 8LL * P, r0 = 8LL * r, rowptr[9], cols[24];
  double vals[24];
  int64_t e = 0;
  for (int64_t i = 0; i < 8; i++) {
    rowptr[i] = e;
    for (int64_t j = r0 + i - 1; j <= r0 + i + 1; j++)
      if (j >= 0 && j < n) cols[e] = j, vals[e++] = j == r0 + i ? 2.0 : -1.0;
  }
  rowptr[8] = e;
  return rrt_sparse_create(ctx, n, r0, 8, rowptr, cols, vals, A);
}

static rrt_status krylov_run(rrt_sparse_t A, const rrt_krylov_options *opt,
                             rrt_krylov_result *res) {
  rrt_ctx_t ctx = rrt_sparse_ctx(A);
  double hb[8], *b = NULL, *x = NULL;
  for (int i = 0; i < 8; i++)
    hb[i] = 1.0 + 0.25 * i;
  memset(res, 0, sizeof *res);
  rrt_status st = rrt_malloc(ctx, sizeof hb, (void **)&b);
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, sizeof hb, (void **)&x);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, b, hb, sizeof hb);
  if (st == RRT_SUCCESS) st = rrt_memset(ctx, x, 0, sizeof hb);
  if (st == RRT_SUCCESS) st = rrt_krylov_solve(A, NULL, opt, b, x, res);
  rrt_free(ctx, b), rrt_free(ctx, x);
  return st;
}

static void check_krylov_options(rrt_ctx_t ctx) {
  rrt_sparse_t A = NULL;
  CHECK_OK(laplace1d(ctx, &A));
  if (!A) return;
  rrt_krylov_options old = RRT_KRYLOV_OPTIONS_INITIALIZER;
  old.method = RRT_KRYLOV_CG;
  old.rtol = 1e-10;
  /* an older header without maxit, restart, progress: as garbage they
   * would be negative, and the solve an error */
  make_short(&old, sizeof old, offsetof(rrt_krylov_options, maxit));
  rrt_krylov_result res;
  CHECK_OK(krylov_run(A, &old, &res));
  CHECK_MSG(res.converged && res.iterations > 1, "converged %d after %d iterations", res.converged,
            res.iterations);
  rrt_krylov_result_free(&res);
  rrt_krylov_options garbage = old; /* control: the same bytes within the size */
  set_size(&garbage, sizeof garbage);
  CHECK(krylov_run(A, &garbage, &res) == RRT_ERR_INVALID_ARG);
  rrt_krylov_result_free(&res);
  rrt_krylov_options big = RRT_KRYLOV_OPTIONS_INITIALIZER;
  set_size(&big, sizeof big + sizeof(size_t));
  CHECK(krylov_run(A, &big, &res) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(contains(rrt_ctx_last_error(ctx), "rrt_krylov_options"), "last error: %s",
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
  rrt_krylov_result_free(&res);
  rrt_sparse_destroy(A);
}

/* ---- rrt_seacells_options ------------------------------------------------- */

static rrt_status seacells_run(rrt_ctx_t ctx, const rrt_seacells_options *opt, int *iterations) {
  const int64_t n = 120;
  const int dims = 3;
  int64_t first = 0, count = 0;
  rrt_status st = rrt_seacells_partition(ctx, n, &first, &count);
  if (st != RRT_SUCCESS) return st;
  double *x = malloc((size_t)(count + 1) * dims * sizeof(double));
  for (int64_t i = 0; i < count; i++)
    for (int k = 0; k < dims; k++) /* four clusters with a little spread */
      x[i * dims + k] = 10.0 * (double)((first + i) % 4 == k) + sin((double)(first + i) * (k + 1));
  rrt_seacells_t s = NULL;
  st = rrt_seacells_run(ctx, n, dims, x, opt, &s);
  *iterations = rrt_seacells_iterations(s);
  rrt_seacells_destroy(s);
  free(x);
  return st;
}

static void check_seacells_options(rrt_ctx_t ctx) {
  rrt_seacells_options old = RRT_SEACELLS_OPTIONS_INITIALIZER;
  old.n_metacells = 4;
  old.knn = 5;
  old.min_iter = 3;
  /* an older header without eps, fw_iter, verbose: as garbage they are
   * negative, and the run an error */
  make_short(&old, sizeof old, offsetof(rrt_seacells_options, eps));
  int iterations = 0;
  CHECK_MSG(seacells_run(ctx, &old, &iterations) == RRT_SUCCESS, "%s", rrt_ctx_last_error(ctx));
  CHECK_MSG(iterations >= 3, "%d iterations, min_iter is 3", iterations);
  rrt_seacells_options garbage = old; /* control */
  set_size(&garbage, sizeof garbage);
  CHECK(seacells_run(ctx, &garbage, &iterations) == RRT_ERR_INVALID_ARG);
  rrt_seacells_options big = RRT_SEACELLS_OPTIONS_INITIALIZER;
  set_size(&big, sizeof big + sizeof(size_t));
  CHECK(seacells_run(ctx, &big, &iterations) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(contains(rrt_ctx_last_error(ctx), "rrt_seacells_options"), "last error: %s",
            rrt_ctx_last_error(ctx));
  rrt_ctx_clear_error(ctx);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  check_ctx_config();
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  cfg.backend = RRT_BACKEND_CPU;
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx));
  if (ctx) {
    check_attn_desc(ctx);
    check_ilu0_options(ctx);
    check_krylov_options(ctx);
    check_seacells_options(ctx);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* Collectives against references computed here from the known
 * contributions of every rank: allreduce (sum/min/max x f32/f64/i32/i64,
 * in and out of place; values chosen so float sums are exact in any order,
 * hence compared bit for bit), min-loc (ties across ranks resolving to the
 * lowest index, NaNs that never win, -0 == +0), allgather, allgatherv with
 * empty contributions and gaps that must stay untouched, bcast from a
 * non-zero root, barrier, and argument errors. */
#include "comm/transport_mpi.h"
#include "transport_test.h"

#define GEN_F(r, i) ((double)(((i)*7 + (r)*13) % 23) - 11.0 + 0.5 * (r))
#define GEN_I32(r, i) ((int32_t)(((i)*7 + (r)*13) % 23) - 11 + (r)*1000)
#define GEN_I64(r, i) (((int64_t)(r) + 1) * 3000000000LL * (((i) % 2) ? -1 : 1) + (int64_t)(i))

#define DEFINE_REDUCE_TEST(T, DT, GEN)                                                             \
  static void test_reduce_##T(rrt_ctx_t ctx, size_t n, int in_place) {                             \
    int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);                                           \
    T *h = malloc(n * sizeof(T)), *ref = malloc(n * sizeof(T)), *out = malloc(n * sizeof(T));      \
    for (int op = RRT_OP_SUM; op <= RRT_OP_MAX; op++) {                                            \
      for (size_t i = 0; i < n; i++) {                                                             \
        h[i] = (T)GEN(rank, (int64_t)i);                                                           \
        ref[i] = (T)GEN(0, (int64_t)i);                                                            \
        for (int r = 1; r < P; r++) {                                                              \
          T v = (T)GEN(r, (int64_t)i);                                                             \
          if (op == RRT_OP_SUM) ref[i] += v;                                                       \
          if (op == RRT_OP_MIN && v < ref[i]) ref[i] = v;                                          \
          if (op == RRT_OP_MAX && v > ref[i]) ref[i] = v;                                          \
        }                                                                                          \
      }                                                                                            \
      void *send = tt_upload(ctx, h, n * sizeof(T)), *recv = send;                                 \
      if (!in_place) CHECK_OK(rrt_malloc(ctx, n * sizeof(T), &recv));                              \
      CHECK_OK(rrt_allreduce(ctx, send, recv, n, DT, (rrt_op)op));                                 \
      memset(out, 0, n * sizeof(T));                                                               \
      CHECK_OK(rrt_memcpy_to_host(ctx, out, recv, n * sizeof(T)));                                 \
      size_t bad = n;                                                                              \
      for (size_t i = 0; i < n && bad == n; i++)                                                   \
        if (memcmp(&out[i], &ref[i], sizeof(T)) != 0) bad = i;                                     \
      CHECK_MSG(bad == n, "%s op %d n %zu in_place %d: element %zu differs", #T, op, n, in_place,  \
                bad);                                                                              \
      if (!in_place) {                                                                             \
        memset(out, 0, n * sizeof(T));                                                             \
        CHECK_OK(rrt_memcpy_to_host(ctx, out, send, n * sizeof(T)));                               \
        CHECK_MSG(memcmp(out, h, n * sizeof(T)) == 0, "%s: send buffer modified", #T);             \
        CHECK_OK(rrt_free(ctx, recv));                                                             \
      }                                                                                            \
      CHECK_OK(rrt_free(ctx, send));                                                               \
    }                                                                                              \
    free(h);                                                                                       \
    free(ref);                                                                                     \
    free(out);                                                                                     \
  }

DEFINE_REDUCE_TEST(float, RRT_DTYPE_F32, GEN_F)
DEFINE_REDUCE_TEST(double, RRT_DTYPE_F64, GEN_F)
DEFINE_REDUCE_TEST(int32_t, RRT_DTYPE_I32, GEN_I32)
DEFINE_REDUCE_TEST(int64_t, RRT_DTYPE_I64, GEN_I64)

/* ---- min-loc --------------------------------------------------------------- */

#define NLOC 7

/* Entry k of rank r's contribution. */
static rrt_minloc loc_gen(int k, int r, int P) {
  switch (k) {
  case 0: return (rrt_minloc){1.0, 100 - r}; /* all tie: highest rank's index wins */
  case 1: return (rrt_minloc){r == P - 1 ? NAN : 5.0 + r, r};  /* NaN on the last rank never wins */
  case 2: return (rrt_minloc){r == P / 2 ? 7.0 : NAN, 10 + r}; /* only one non-NaN */
  case 3: return (rrt_minloc){-(double)(r % 2), 1000 + (P - r)}; /* ties among odd ranks */
  case 4: return (rrt_minloc){(r % 2) ? -0.0 : 0.0, 50 - r};     /* -0 == +0: a tie */
  case 5: return (rrt_minloc){NAN, 20 + (r * 7) % 5};            /* all NaN: lowest index */
  default: return (rrt_minloc){-1e300 * (r + 1), r};             /* plain minimum: last rank */
  }
}

/* Independent reference: scan all contributions, keeping the best by the
 * documented rule (written as a filter, not as the library's comparator). */
static rrt_minloc loc_ref(int k, int P) {
  int any_number = 0;
  for (int r = 0; r < P; r++)
    any_number |= !isnan(loc_gen(k, r, P).value);
  double best = INFINITY;
  if (any_number)
    for (int r = 0; r < P; r++) {
      double v = loc_gen(k, r, P).value;
      if (!isnan(v) && v < best) best = v;
    }
  rrt_minloc out = {NAN, INT64_MAX};
  for (int r = 0; r < P; r++) {
    rrt_minloc c = loc_gen(k, r, P);
    int candidate = any_number ? (!isnan(c.value) && c.value == best) : 1;
    if (candidate && c.index < out.index) out = c;
  }
  return out;
}

static void test_minloc(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  rrt_minloc v[NLOC];
  for (int k = 0; k < NLOC; k++)
    v[k] = loc_gen(k, rank, P);
  CHECK_OK(rrt_allreduce_minloc(ctx, v, NLOC));
  for (int k = 0; k < NLOC; k++) {
    rrt_minloc ref = loc_ref(k, P);
    int same_value = (isnan(ref.value) && isnan(v[k].value)) || ref.value == v[k].value;
    CHECK_MSG(same_value && ref.index == v[k].index,
              "min-loc entry %d: got (%g, %lld), expected (%g, %lld)", k, v[k].value,
              (long long)v[k].index, ref.value, (long long)ref.index);
  }
  /* Hand-derived expectations for the tie and NaN rules. */
  CHECK(v[0].index == 100 - (P - 1));
  CHECK(P == 1 ? isnan(v[1].value) : (v[1].value == 5.0 && v[1].index == 0));
  CHECK(v[2].value == 7.0 && v[2].index == 10 + P / 2);
  CHECK(isnan(v[5].value));
  CHECK_OK(rrt_allreduce_minloc(ctx, NULL, 0));
}

/* ---- gathers and broadcast ------------------------------------------------- */

static unsigned char gpat(int r, size_t i) { return (unsigned char)(r * 41 + (int)i * 3 + 5); }

static void test_allgather(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  const size_t b = 5;
  unsigned char h[5], *all = malloc(b * (size_t)P);
  for (size_t i = 0; i < b; i++)
    h[i] = gpat(rank, i);
  void *send = tt_upload(ctx, h, b), *recv = NULL;
  CHECK_OK(rrt_malloc(ctx, b * (size_t)P, &recv));
  CHECK_OK(rrt_allgather(ctx, send, recv, b));
  CHECK_OK(rrt_memcpy_to_host(ctx, all, recv, b * (size_t)P));
  for (int r = 0; r < P; r++)
    for (size_t i = 0; i < b; i++)
      CHECK_MSG(all[(size_t)r * b + i] == gpat(r, i), "allgather block %d byte %zu", r, i);
  CHECK_OK(rrt_allgather(ctx, NULL, NULL, 0));
  CHECK_OK(rrt_free(ctx, send));
  CHECK_OK(rrt_free(ctx, recv));
  free(all);
}

/* Even ranks other than 0 contribute nothing; blocks are separated by one-byte gaps
 * (and laid out in reverse rank order) that must keep their sentinel. */
static void test_allgatherv(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  size_t *cnt = malloc((size_t)P * sizeof(size_t)), *dsp = malloc((size_t)P * sizeof(size_t));
  size_t total = 0;
  for (int r = P - 1; r >= 0; r--) {
    cnt[r] = (r % 2 == 0 && r > 0) ? 0 : 2 * (size_t)r + 1;
    dsp[r] = total;
    total += cnt[r] + 1;
  }
  unsigned char *h = malloc(cnt[rank] + 1), *all = malloc(total);
  for (size_t i = 0; i < cnt[rank]; i++)
    h[i] = gpat(rank, i);
  void *send = cnt[rank] ? tt_upload(ctx, h, cnt[rank]) : NULL, *recv = NULL;
  CHECK_OK(rrt_malloc(ctx, total, &recv));
  CHECK_OK(rrt_memset(ctx, recv, 0xEE, total));
  CHECK_OK(rrt_allgatherv(ctx, send, cnt[rank], recv, cnt, dsp));
  CHECK_OK(rrt_memcpy_to_host(ctx, all, recv, total));
  for (int r = 0; r < P; r++) {
    for (size_t i = 0; i < cnt[r]; i++)
      CHECK_MSG(all[dsp[r] + i] == gpat(r, i), "allgatherv block %d byte %zu", r, i);
    CHECK_MSG(all[dsp[r] + cnt[r]] == 0xEE, "allgatherv gap after block %d overwritten", r);
  }
  /* Wrong own count: a local argument error. */
  CHECK(rrt_allgatherv(ctx, send, cnt[rank] + 1, recv, cnt, dsp) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(rrt_ctx_last_error(ctx), "rrt_allgatherv") != NULL);
  CHECK(rrt_allgatherv(ctx, send, cnt[rank], recv, NULL, dsp) == RRT_ERR_INVALID_ARG);
  if (send) CHECK_OK(rrt_free(ctx, send));
  CHECK_OK(rrt_free(ctx, recv));
  free(cnt);
  free(dsp);
  free(h);
  free(all);
}

static void test_bcast(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx), root = P - 1;
  const size_t b = 1003;
  unsigned char *h = malloc(b);
  for (size_t i = 0; i < b; i++)
    h[i] = rank == root ? gpat(root, i) : 0;
  void *d = tt_upload(ctx, h, b);
  CHECK_OK(rrt_bcast(ctx, d, b, root));
  CHECK_OK(rrt_memcpy_to_host(ctx, h, d, b));
  size_t bad = b;
  for (size_t i = 0; i < b && bad == b; i++)
    if (h[i] != gpat(root, i)) bad = i;
  CHECK_MSG(bad == b, "bcast from root %d: byte %zu", root, bad);
  CHECK_OK(rrt_bcast(ctx, NULL, 0, 0));
  CHECK(rrt_bcast(ctx, d, b, P) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(rrt_ctx_last_error(ctx), "root") != NULL);
  CHECK(rrt_bcast(ctx, d, b, -1) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_bcast(ctx, NULL, b, 0) == RRT_ERR_INVALID_ARG);
  CHECK_OK(rrt_free(ctx, d));
  free(h);
}

/* The path taken above INT_MAX bytes (one broadcast per block, each block
 * one derived datatype of whole pieces plus a remainder), forced on small
 * buffers by shrinking the limits: counts above 4 bytes are "too large",
 * pieces are 8 bytes. Sizes 5 + 9r cover no whole piece, pieces plus
 * remainders, and (r = 3) whole pieces only. Host memory: MPI transport. */
static void test_large_count_path(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  rrt_mpi_limits lim = {4, 8};
  size_t *cnt = malloc((size_t)P * sizeof(size_t)), *dsp = malloc((size_t)P * sizeof(size_t));
  size_t total = 0;
  for (int r = 0; r < P; r++) {
    cnt[r] = 5 + 9 * (size_t)r;
    dsp[r] = total;
    total += cnt[r] + 2;
  }
  unsigned char *send = malloc(cnt[rank]), *all = malloc(total);
  for (size_t i = 0; i < cnt[rank]; i++)
    send[i] = gpat(rank, i);
  memset(all, 0xEE, total);
  CHECK_OK(rrt_mpi_allgatherv_ex(ctx, send, cnt[rank], all, cnt, dsp, lim));
  for (int r = 0; r < P; r++) {
    size_t bad = cnt[r];
    for (size_t i = 0; i < cnt[r] && bad == cnt[r]; i++)
      if (all[dsp[r] + i] != gpat(r, i)) bad = i;
    CHECK_MSG(bad == cnt[r], "large-count allgatherv block %d byte %zu", r, bad);
    CHECK_MSG(all[dsp[r] + cnt[r]] == 0xEE && all[dsp[r] + cnt[r] + 1] == 0xEE,
              "large-count allgatherv: gap after block %d overwritten", r);
  }
  const size_t sizes[2] = {1003, 16};
  for (int k = 0; k < 2; k++) {
    unsigned char *b = calloc(sizes[k], 1);
    if (rank == P - 1)
      for (size_t i = 0; i < sizes[k]; i++)
        b[i] = gpat(P - 1, i);
    CHECK_OK(rrt_mpi_bcast_ex(ctx, b, sizes[k], P - 1, lim));
    size_t bad = sizes[k];
    for (size_t i = 0; i < sizes[k] && bad == sizes[k]; i++)
      if (b[i] != gpat(P - 1, i)) bad = i;
    CHECK_MSG(bad == sizes[k], "large-count bcast of %zu bytes: byte %zu", sizes[k], bad);
    free(b);
  }
  free(cnt);
  free(dsp);
  free(send);
  free(all);
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;

  const size_t counts[] = {1, 1000};
  for (int k = 0; k < 2; k++)
    for (int in_place = 0; in_place < 2; in_place++) {
      test_reduce_float(ctx, counts[k], in_place);
      test_reduce_double(ctx, counts[k], in_place);
      test_reduce_int32_t(ctx, counts[k], in_place);
      test_reduce_int64_t(ctx, counts[k], in_place);
    }
  CHECK_OK(rrt_allreduce(ctx, NULL, NULL, 0, RRT_DTYPE_F64, RRT_OP_SUM));
  char byte = 0;
  CHECK(rrt_allreduce(ctx, &byte, &byte, 1, RRT_DTYPE_U8, RRT_OP_SUM) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(rrt_ctx_last_error(ctx), "u8") != NULL);
  CHECK(rrt_allreduce(ctx, &byte, &byte, 1, RRT_DTYPE_F32, (rrt_op)9) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_allreduce(ctx, NULL, &byte, 1, RRT_DTYPE_F32, RRT_OP_SUM) == RRT_ERR_INVALID_ARG);

  test_minloc(ctx);
  test_allgather(ctx);
  test_allgatherv(ctx);
  test_bcast(ctx);
  if (ctx->transport == RRT_TRANSPORT_MPI) test_large_count_path(ctx);
  CHECK_OK(rrt_barrier(ctx));

  CHECK(rrt_dtype_size(RRT_DTYPE_F64) == 8 && rrt_dtype_size(RRT_DTYPE_BF16) == 2);
  CHECK(strcmp(rrt_dtype_name(RRT_DTYPE_I64), "i64") == 0);
  return tt_finish(ctx);
}

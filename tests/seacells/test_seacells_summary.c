/* rrt_seacells_summarize (the metacell x gene summary) against a serial
 * loop over all cells, at any rank count: hard sums (exact: integer counts
 * summed in cell order) and soft weighted means (the library sums in the
 * same cell order; 1e-14 relative), CSR and dense input, the per-metacell
 * sizes, majority labels and purities on every rank, and the sparsify rule
 * on cells whose smallest weight falls below min_weight; rows_done is
 * called once and the rows are not read after it. Then the errors:
 * a metacell out of range on the last rank (INVALID_ARG there, REMOTE on
 * the others) and ranks that disagree on the number of columns
 * (INVALID_ARG on every rank) fail on every rank, with the message. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

enum { N = 61, G = 6, M = 5, TOP = 3, NCAT = 3 };

static double value(int64_t i, int g) {
  return (i * 7 + g * 3) % 5 == 0 ? 0.0 : (double)((i + g) % 4 + 1);
}

/* Cell i's soft slots: three metacells; every 4th cell has a weight below
 * 0.05 that sparsify drops. */
static void slots(int64_t i, int64_t *j, double *w) {
  for (int t = 0; t < TOP; t++)
    j[t] = (i + t) % M;
  int drop = i % 4 == 0;
  w[0] = drop ? 0.9 : 0.5, w[1] = drop ? 0.06 : 0.3, w[2] = drop ? 0.04 : 0.2;
}

static int64_t hard_of(int64_t i) { return i % 11 == 0 ? -1 : (i * 3) % M; }
static int32_t label_of(int64_t i) { return i % 13 == 0 ? -1 : (int32_t)(i % NCAT); }

/* The serial summary: rows[M][G], size, majority, purity. */
static void serial(int soft, double rows[M][G], double *size, int32_t *major, double *purity) {
  double hist[M][NCAT];
  memset(hist, 0, sizeof hist);
  memset(rows, 0, sizeof(double) * M * G);
  memset(size, 0, sizeof(double) * M);
  for (int64_t i = 0; i < N; i++) {
    int64_t j[TOP];
    double w[TOP];
    int k = 1;
    if (soft) {
      slots(i, j, w);
      k = w[2] < 0.05 ? 2 : 3;
      double sum = 0.0;
      for (int t = 0; t < k; t++)
        sum += w[t];
      for (int t = 0; t < k; t++)
        w[t] /= sum;
    } else {
      j[0] = hard_of(i), w[0] = 1.0;
      if (j[0] < 0) continue;
    }
    for (int t = 0; t < k; t++) {
      for (int g = 0; g < G; g++)
        rows[j[t]][g] += soft ? w[t] * value(i, g) : value(i, g);
      size[j[t]] += soft ? w[t] : 1.0;
      if (label_of(i) >= 0) hist[j[t]][label_of(i)] += w[t];
    }
  }
  for (int j = 0; j < M; j++) {
    for (int g = 0; soft && size[j] > 0 && g < G; g++)
      rows[j][g] /= size[j];
    double tot = 0.0, best = 0.0;
    major[j] = -1;
    for (int c = 0; c < NCAT; c++) {
      tot += hist[j][c];
      if (hist[j][c] > best) best = hist[j][c], major[j] = c;
    }
    purity[j] = tot > 0 ? best / tot : NAN;
  }
}

/* rows_done: counts its calls (once per call, success or failure) and
 * spoils the rows it is given, so a read after it would change the sums. */
static int done_calls = 0;
typedef struct spoil {
  double *a, *b;
  size_t n;
} spoil;
static void count_done(void *arg) {
  done_calls++;
  spoil *sp = arg;
  for (size_t k = 0; sp && k < sp->n; k++)
    sp->a[k] = sp->b[k] = NAN;
}

#define CLOSE(a, b) (fabs((a) - (b)) <= 1e-14 * (fabs(b) > 1.0 ? fabs(b) : 1.0))

static void check_case(rrt_ctx_t ctx, int64_t first, int64_t count, int soft, int sparse) {
  /* this rank's rows, dense and CSR */
  double *dense = calloc((size_t)(count * G + 1), sizeof(double));
  double *val = calloc((size_t)(count * G + 1), sizeof(double));
  int32_t *col = calloc((size_t)(count * G + 1), sizeof(int32_t));
  int64_t *ptr = calloc((size_t)count + 1, sizeof(int64_t));
  int64_t *mj = calloc((size_t)(count * TOP + 1), sizeof(int64_t));
  double *mw = calloc((size_t)(count * TOP + 1), sizeof(double));
  int32_t *lab = calloc((size_t)count + 1, sizeof(int32_t));
  for (int64_t i = 0; i < count; i++) {
    int64_t gi = first + i;
    ptr[i + 1] = ptr[i];
    for (int g = 0; g < G; g++) {
      dense[i * G + g] = value(gi, g);
      if (value(gi, g) != 0.0) col[ptr[i + 1]] = g, val[ptr[i + 1]++] = value(gi, g);
    }
    if (soft) {
      slots(gi, mj + i * TOP, mw + i * TOP);
      /* the slots in another order: the library sorts them */
      int64_t tj = mj[i * TOP];
      double tw = mw[i * TOP];
      mj[i * TOP] = mj[i * TOP + 2], mw[i * TOP] = mw[i * TOP + 2];
      mj[i * TOP + 2] = tj, mw[i * TOP + 2] = tw;
    } else {
      mj[i] = hard_of(gi);
    }
    lab[i] = label_of(gi);
  }
  rrt_seacells_matrix x = {count, G, sparse ? ptr : NULL, sparse ? col : NULL,
                           sparse ? val : dense};
  rrt_seacells_summary_options o = RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER;
  spoil sp = {dense, val, (size_t)(count * G)};
  o.soft = soft, o.n_labels = NCAT, o.rows_done = count_done, o.rows_done_arg = &sp;
  done_calls = 0;
  rrt_seacells_summary_t s = NULL;
  CHECK_OK(rrt_seacells_summarize(ctx, M, &x, soft ? TOP : 1, mj, soft ? mw : NULL, lab, &o, &s));
  CHECK_MSG(done_calls == 1, "rows_done called %d times", done_calls);
  double rows[M][G], size[M], purity[M];
  int32_t major[M];
  serial(soft, rows, size, major, purity);
  const double *gs = NULL, *gp = NULL;
  const int32_t *gm = NULL;
  rrt_seacells_summary_rows r;
  memset(&r, 0, sizeof r);
  if (s) {
    CHECK_OK(rrt_seacells_summary_metacells(s, &gs, &gm, &gp));
    CHECK_OK(rrt_seacells_summary_local_rows(s, &r));
  }
  int bad = 0;
  for (int j = 0; gs && j < M; j++)
    bad += !CLOSE(gs[j], size[j]) || gm[j] != major[j] ||
           !(CLOSE(gp[j], purity[j]) || (isnan(gp[j]) && isnan(purity[j])));
  CHECK_MSG(bad == 0, "soft %d sparse %d: %d metacells' size/majority/purity differ", soft, sparse,
            bad);
  CHECK(!s || r.sparse == sparse);
  int64_t want_rows = 0;
  for (int64_t j = r.first; j < r.last; j++)
    want_rows += size[j] > 0;
  CHECK_MSG(!s || r.rows == want_rows, "%lld rows, want %lld", (long long)r.rows,
            (long long)want_rows);
  for (int64_t k = 0; s && k < r.rows && k < want_rows; k++) {
    int64_t j = r.metacell[k];
    double got[G];
    memset(got, 0, sizeof got);
    if (sparse)
      for (int64_t e = r.ptr[k]; e < r.ptr[k + 1]; e++)
        got[r.col[e]] = r.val[e];
    else
      memcpy(got, r.val + k * G, sizeof got);
    for (int g = 0; g < G; g++)
      bad += soft ? !CLOSE(got[g], rows[j][g]) : got[g] != rows[j][g];
  }
  CHECK_MSG(bad == 0, "soft %d sparse %d: %d values differ from the serial loop", soft, sparse,
            bad);
  rrt_seacells_summary_destroy(s);
  free(dense), free(val), free(col), free(ptr), free(mj), free(mw), free(lab);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (!ctx) return test_result();
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  int64_t first = 0, count = 0;
  CHECK_OK(rrt_seacells_partition(ctx, N, &first, &count));
  for (int soft = 0; soft < 2; soft++)
    for (int sparse = 0; sparse < 2; sparse++)
      check_case(ctx, first, count, soft, sparse);

  /* errors, agreed on every rank */
  double one[G] = {1, 2, 3, 4, 5, 6};
  int64_t j = rank == P - 1 ? M : 0;
  rrt_seacells_matrix x = {1, G, NULL, NULL, one};
  rrt_seacells_summary_options o = RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER;
  rrt_seacells_summary_t s = NULL;
  o.rows_done = count_done, o.rows_done_arg = NULL, done_calls = 0;
  rrt_status st = rrt_seacells_summarize(ctx, M, &x, 1, &j, NULL, NULL, &o, &s);
  CHECK_MSG(done_calls == 1, "rows_done called %d times on an error", done_calls);
  rrt_status want = rank == P - 1 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE;
  CHECK_MSG(st == want && !s, "metacell out of range: %s", rrt_status_string(st));
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "metacell 5 is outside -1..4") != NULL, "message: %s",
            rrt_ctx_last_error(ctx));
  j = 0;
  x.cols = rank == 0 && P > 1 ? G - 1 : G;
  st = rrt_seacells_summarize(ctx, M, &x, 1, &j, NULL, NULL, &o, &s);
  if (P > 1) {
    CHECK_MSG(st == RRT_ERR_INVALID_ARG && !s, "different cols: %s", rrt_status_string(st));
    CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "different cols") != NULL, "message: %s",
              rrt_ctx_last_error(ctx));
  } else {
    CHECK_OK(st);
  }
  rrt_seacells_summary_destroy(s);
  o.magic = 0;
  CHECK(rrt_seacells_summarize(ctx, M, &x, 1, &j, NULL, NULL, &o, &s) == RRT_ERR_INVALID_ARG);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

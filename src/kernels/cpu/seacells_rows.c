/* Sparse rows formed in one pass (see rrt_sc_cpu_rows in kernels/cpu/seacells.h).
 *
 * The SEACells products form every row once per Frank-Wolfe step. Counting
 * first and filling at known offsets formed each row twice; here each
 * thread forms a contiguous range of rows once, into a buffer of its own
 * (thread 0 straight into the output, which is where its rows start), and
 * the other threads' buffers are copied behind it. A row's values do not
 * depend on the threads; only where it is written does. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/seacells.h"

typedef struct seg {
  int32_t *col;
  double *val;
  int64_t n, cap;
  int64_t at; /* where its entries go in the output */
} seg;

static int seg_reserve(int32_t **col, double **val, int64_t *cap, int64_t need) {
  if (need <= *cap) return 0;
  int64_t c = *cap ? *cap : 1024;
  while (c < need)
    c *= 2;
  int32_t *nc = realloc(*col, (size_t)c * sizeof(int32_t));
  if (!nc) return 1;
  *col = nc;
  double *nv = realloc(*val, (size_t)c * sizeof(double));
  if (!nv) return 1;
  *val = nv;
  *cap = c;
  return 0;
}

/* Rows between two looks at the shared entry count (the budget check;
 * one atomic a row was measurable on the per-step products). */
#define RRT_SC_ROWS_TALLY 256

/* Rows [r0, r1) into s (appended); ptr[r + 1] gets each row's length. Stops
 * with 2 once the entries of all threads pass max_nnz, 1 when out of memory. */
static int form_range(int64_t r0, int64_t r1, int m, rrt_sc_row_fn row, const void *arg,
                      int64_t max_nnz, int64_t *total, int64_t *ptr, seg *s) {
  unsigned char *mark = calloc((size_t)m, 1);
  double *acc = malloc((size_t)m * sizeof(double));
  int32_t *list = malloc((size_t)m * sizeof(int32_t));
  int rc = !mark || !acc || !list;
  int64_t untallied = 0;
  for (int64_t r = r0; r < r1 && !rc; r++) {
    int nt = row(arg, r, mark, acc, list);
    ptr[r + 1] = nt;
    if (seg_reserve(&s->col, &s->val, &s->cap, s->n + nt)) rc = 1;
    for (int u = 0; u < nt; u++) {
      if (!rc) s->col[s->n + u] = list[u], s->val[s->n + u] = acc[list[u]];
      mark[list[u]] = 0;
    }
    s->n += nt;
    untallied += nt;
    if (max_nnz == INT64_MAX || ((r - r0 + 1) % RRT_SC_ROWS_TALLY && r + 1 < r1)) continue;
    int64_t now;
#pragma omp atomic capture
    now = *total += untallied;
    untallied = 0;
    if (!rc && now > max_nnz) rc = 2;
  }
  free(mark), free(acc), free(list);
  return rc;
}

/* Thread t's rows into place: ptr over [r0, r1) from their lengths to
 * offsets (its entries start at seg t's `at`), and its entries copied
 * behind the threads before it (thread 0's already are in place). */
static void place_range(int64_t r0, int64_t r1, int t, const seg *segs, int64_t *ptr) {
  int64_t at = segs[t].at;
  for (int64_t r = r0; r < r1; r++)
    ptr[r + 1] = at += ptr[r + 1];
  if (t == 0 || segs[t].n == 0) return;
  memcpy(segs[0].col + segs[t].at, segs[t].col, (size_t)segs[t].n * sizeof(int32_t));
  memcpy(segs[0].val + segs[t].at, segs[t].val, (size_t)segs[t].n * sizeof(double));
}

/* Each thread forms a contiguous range of rows, then (once all are formed
 * and the output has room) places its own: no serial pass over the rows. */
rrt_status rrt_sc_cpu_rows(int64_t nrows, int m, int parallel, rrt_sc_row_fn row, const void *arg,
                           int64_t max_nnz, int64_t *ptr, int32_t **col, double **val,
                           int64_t *cap) {
  int nth = parallel ? omp_get_max_threads() : 1;
  seg *segs = calloc((size_t)nth, sizeof(seg));
  int64_t *bound = malloc((size_t)(nth + 1) * sizeof(int64_t));
  int64_t total = 0;
  int rc = !segs || !bound;
  if (!rc) {
    segs[0] = (seg){*col, *val, 0, *cap, 0};
#pragma omp parallel num_threads(nth) if (nth > 1)
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
      for (int u = 0; u <= nth; u++) /* threads past nt get empty ranges */
        bound[u] = nrows * (u < nt ? u : nt) / nt;
      int trc = form_range(bound[t], bound[t + 1], m, row, arg, max_nnz, &total, ptr, &segs[t]);
      if (trc) {
#pragma omp critical
        rc = rc > trc ? rc : trc;
      }
#pragma omp barrier
#pragma omp single
      {
        int64_t at = 0;
        for (int u = 0; u < nth; u++)
          segs[u].at = at, at += segs[u].n;
        if (!rc && at > max_nnz) rc = 2;
        if (!rc && seg_reserve(&segs[0].col, &segs[0].val, &segs[0].cap, at + 1)) rc = 1;
      }
      if (!rc) place_range(bound[t], bound[t + 1], t, segs, ptr);
    }
    *col = segs[0].col, *val = segs[0].val, *cap = segs[0].cap; /* possibly moved */
  }
  ptr[0] = 0;
  for (int t = 1; segs && t < nth; t++)
    free(segs[t].col), free(segs[t].val);
  free(segs), free(bound);
  return rc == 0 ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

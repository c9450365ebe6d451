/* SEACells products with the implicit K = M M: rows of M (local or ghost),
 * rows of K on demand, M Y as a by-cell index, and freeing those stores. Storing K would cost its
 * 2-hop rows, which grow with the in-degree of hub cells (superlinearly in
 * n); M and its ghost rows are O(n k). */
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"

void rrt_sc_m_row(const rrt_sc_run *s, int32_t l, const int32_t **col, const double **val,
                  int64_t *len) {
  const rrt_sc_csr *a = &s->mrow;
  int64_t i;
  if (l >= s->c0 && l < s->c0 + s->nl) {
    i = l - s->c0;
  } else {
    const rrt_sc_ghosts *g = &s->ghost;
    int64_t lo = 0, hi = g->count - 1;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (g->cell[mid] < l)
        lo = mid + 1;
      else
        hi = mid;
    }
    i = lo;
    a = &g->rows;
  }
  *col = a->col + a->ptr[i];
  *val = a->val + a->ptr[i];
  *len = a->ptr[i + 1] - a->ptr[i];
}

static int i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* Sort a short list in place (rows of M Y hold a few archetypes; the
 * 2-hop K rows may be long). */
static void sort_i32(int32_t *v, int64_t n) {
  if (n > 24) {
    qsort(v, (size_t)n, sizeof(int32_t), i32_cmp);
    return;
  }
  for (int64_t a = 1; a < n; a++) {
    int32_t x = v[a];
    int64_t b = a;
    while (b > 0 && v[b - 1] > x)
      v[b] = v[b - 1], b--;
    v[b] = x;
  }
}

int64_t rrt_sc_k_row(const rrt_sc_run *s, int64_t i, double *acc, char *mark, int32_t *list,
                     double *vals) {
  int64_t cnt = 0;
  for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
    const int32_t *lc;
    const double *lv;
    int64_t len;
    rrt_sc_m_row(s, s->mrow.col[p], &lc, &lv, &len);
    double mil = s->mrow.val[p];
    for (int64_t q = 0; q < len; q++) {
      int32_t c = lc[q];
      if (!mark[c]) mark[c] = 1, acc[c] = 0.0, list[cnt++] = c;
      acc[c] = acc[c] + mil * lv[q];
    }
  }
  sort_i32(list, cnt);
  for (int64_t q = 0; q < cnt; q++)
    vals[q] = acc[list[q]], mark[list[q]] = 0;
  return cnt;
}

void rrt_sc_csr_free(rrt_sc_csr *a) {
  free(a->ptr);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof *a);
}

void rrt_sc_yidx_free(rrt_sc_yidx *y) {
  free(y->first), free(y->cnt), free(y->ent_j), free(y->ent_w), free(y->rows);
  memset(y, 0, sizeof *y);
}

/* Row l of M Y: its distinct columns into list (count returned), and with
 * acc non-NULL their values, summed over M row l in ascending column order. */
static int64_t mprod_row(const rrt_sc_run *s, int32_t l, const int32_t *yfirst, const int32_t *ycnt,
                         const int32_t *yj, const double *yw, char *mark, int32_t *list,
                         double *acc) {
  const int32_t *lc;
  const double *lv;
  int64_t len, nt = 0;
  rrt_sc_m_row(s, l, &lc, &lv, &len);
  for (int64_t q = 0; q < len; q++) {
    int32_t c = lc[q];
    for (int32_t e = yfirst[c]; e < yfirst[c] + ycnt[c]; e++) {
      int32_t j = yj[e];
      if (!mark[j]) {
        mark[j] = 1, list[nt++] = j;
        if (acc) acc[j] = 0.0;
      }
      if (acc) acc[j] = acc[j] + lv[q] * yw[e];
    }
  }
  for (int64_t t = 0; t < nt; t++)
    mark[list[t]] = 0;
  return nt;
}

/* Two passes over the rows (count, then fill at known offsets), so that the
 * entries are allocated once at their exact size and the rows can be
 * formed in parallel; each row's values do not depend on the threads. */
rrt_status rrt_sc_mprod(rrt_sc_run *s, const int32_t *yfirst, const int32_t *ycnt,
                        const int32_t *yj, const double *yw, rrt_sc_yidx *y) {
  int64_t nrows = s->nl + s->ghost.count;
  if (!y->first) {
    y->first = calloc((size_t)s->n + 1, sizeof(int32_t));
    y->cnt = calloc((size_t)s->n + 1, sizeof(int32_t));
    y->rows = malloc((size_t)(nrows + 1) * sizeof(int32_t));
    if (!y->first || !y->cnt || !y->rows) {
      rrt_sc_yidx_free(y);
      return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: M Y index");
    }
  }
  for (int64_t r = 0; r < y->nrows; r++)
    y->first[y->rows[r]] = 0, y->cnt[y->rows[r]] = 0;
  for (int64_t r = 0; r < nrows; r++)
    y->rows[r] = r < s->nl ? (int32_t)(s->c0 + r) : s->ghost.cell[r - s->nl];
  y->nrows = nrows;
  int m = s->m, fail = 0;
  for (int pass = 0; pass < 2 && !fail; pass++) {
#pragma omp parallel if (nrows >= 4096) /* small: one thread (see kernels/cpu/seacells.c) */
    {
      char *mark = calloc((size_t)m, 1);
      int32_t *list = malloc((size_t)m * sizeof(int32_t));
      double *acc = pass ? malloc((size_t)m * sizeof(double)) : NULL;
      if (!mark || !list || (pass && !acc)) {
#pragma omp atomic write
        fail = 1;
      }
#pragma omp for schedule(dynamic, 256)
      for (int64_t r = 0; r < nrows; r++) {
        if (!mark || !list || (pass && !acc)) continue;
        int32_t l = y->rows[r];
        int64_t nt = mprod_row(s, l, yfirst, ycnt, yj, yw, mark, list, acc);
        if (pass == 0) {
          y->cnt[l] = (int32_t)nt;
          continue;
        }
        sort_i32(list, nt);
        for (int64_t t = 0; t < nt; t++) {
          y->ent_j[y->first[l] + t] = list[t];
          y->ent_w[y->first[l] + t] = acc[list[t]];
        }
      }
      free(mark), free(list), free(acc);
    }
    if (pass == 1 || fail) break;
    int64_t tot = 0;
    for (int64_t r = 0; r < nrows; r++) {
      y->first[y->rows[r]] = (int32_t)tot;
      tot += y->cnt[y->rows[r]];
      if (tot > INT32_MAX)
        return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "seacells", "M Y has more than 2^31 entries");
    }
    y->nent = tot;
    if (tot > y->cap || tot < y->cap / 4) { /* exact, with headroom for the next call */
      int64_t cap = tot + tot / 8 + 64;
      free(y->ent_j), free(y->ent_w);
      y->ent_j = malloc((size_t)cap * sizeof(int32_t));
      y->ent_w = malloc((size_t)cap * sizeof(double));
      y->cap = cap;
      if (!y->ent_j || !y->ent_w) fail = 1;
    }
  }
  if (fail)
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: M Y entries");
  return RRT_SUCCESS;
}

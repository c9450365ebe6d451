/* SEACells products with the implicit K = M M: rows of M (local or ghost),
 * rows of K on demand, M Y as a by-cell index, and freeing those stores. Storing K would cost its
 * 2-hop rows, which grow with the in-degree of hub cells (superlinearly in
 * n); M and its ghost rows are O(n k). */
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"

int64_t rrt_sc_ghost_index(const rrt_sc_ghosts *g, int32_t c) {
  int64_t lo = 0, hi = g->count;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (g->cell[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->count && g->cell[lo] == c ? lo : -1;
}

int64_t rrt_sc_m_src(const rrt_sc_run *s, int32_t l) {
  if (l >= s->c0 && l < s->c0 + s->nl) return l - s->c0;
  return s->nl + rrt_sc_ghost_index(&s->ghost, l);
}

void rrt_sc_m_row_at(const rrt_sc_run *s, int64_t src, const int32_t **col, const double **val,
                     int64_t *len) {
  const rrt_sc_csr *a = src < s->nl ? &s->mrow : &s->ghost.rows;
  int64_t i = src < s->nl ? src : src - s->nl;
  *col = a->col + a->ptr[i];
  *val = a->val + a->ptr[i];
  *len = a->ptr[i + 1] - a->ptr[i];
}

void rrt_sc_m_row(const rrt_sc_run *s, int32_t l, const int32_t **col, const double **val,
                  int64_t *len) {
  rrt_sc_m_row_at(s, rrt_sc_m_src(s, l), col, val, len);
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
  rrt_sc_sort_i32(list, cnt);
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
  free(y->first), free(y->cnt), free(y->ent_j), free(y->ent_w), free(y->rows), free(y->src),
      free(y->ptr);
  memset(y, 0, sizeof *y);
}

/* Row r of M Y (cell rows[r]): its distinct columns ascending in list
 * (count returned) with their values in acc, each summed over M row l in
 * ascending column order. */
typedef struct mprod_arg {
  const rrt_sc_run *s;
  const int64_t *src;
  const int32_t *yfirst, *ycnt, *yj;
  const double *yw;
} mprod_arg;

static int mprod_row(const void *arg, int64_t r, unsigned char *mark, double *acc, int32_t *list) {
  const mprod_arg *a = arg;
  const int32_t *lc;
  const double *lv;
  int64_t len;
  rrt_sc_m_row_at(a->s, a->src[r], &lc, &lv, &len);
  int nt = rrt_sc_sparse_row(0, len, lc, lv, a->yfirst, a->ycnt, a->yj, a->yw, mark, acc, list);
  rrt_sc_sort_marked(list, nt, mark, a->s->m);
  return nt;
}

/* The rows are formed once each (rrt_sc_cpu_rows), in parallel; each row's
 * values do not depend on the threads. */
rrt_status rrt_sc_mprod(rrt_sc_run *s, const int32_t *yfirst, const int32_t *ycnt,
                        const int32_t *yj, const double *yw, rrt_sc_yidx *y) {
  int64_t nrows = s->nl + s->ghost.count;
  if (!y->first) { /* the first product: the rows held and where they lie */
    y->first = calloc((size_t)s->n + 1, sizeof(int32_t));
    y->cnt = calloc((size_t)s->n + 1, sizeof(int32_t));
    y->rows = malloc((size_t)(nrows + 1) * sizeof(int32_t));
    y->src = malloc((size_t)(nrows + 1) * sizeof(int64_t));
    y->ptr = malloc((size_t)(nrows + 1) * sizeof(int64_t));
    if (!y->first || !y->cnt || !y->rows || !y->src || !y->ptr) {
      rrt_sc_yidx_free(y);
      return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: M Y index");
    }
    for (int64_t r = 0; r < nrows; r++) {
      y->rows[r] = s->row_order ? s->row_order[r]
                   : r < s->nl  ? (int32_t)(s->c0 + r)
                                : s->ghost.cell[r - s->nl];
      y->src[r] = rrt_sc_m_src(s, y->rows[r]);
    }
  }
  for (int64_t r = 0; r < y->nrows; r++) /* the last product's rows */
    y->first[y->rows[r]] = 0, y->cnt[y->rows[r]] = 0;
  y->nrows = nrows;
  int64_t *ptr = y->ptr;
  const mprod_arg a = {s, y->src, yfirst, ycnt, yj, yw};
  rrt_status st = rrt_sc_cpu_rows(nrows, s->m, nrows >= RRT_SC_PAR_MIN, mprod_row, &a, INT32_MAX,
                                  ptr, &y->ent_j, &y->ent_w, &y->cap);
  if (st == RRT_SUCCESS) {
    for (int64_t r = 0; r < nrows; r++)
      y->first[y->rows[r]] = (int32_t)ptr[r], y->cnt[y->rows[r]] = (int32_t)(ptr[r + 1] - ptr[r]);
    y->nent = ptr[nrows];
  } else {
    y->nrows = 0; /* nothing set to reset */
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells",
                   "out of memory: M Y entries (or more than 2^31 of them)");
  }
  return st;
}

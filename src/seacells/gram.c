/* The k x k products of the Frank-Wolfe updates (T1a = B^T K B = (M B)^T
 * (M B), T1b = A A^T) as sparse rows: G = sum over cells c of y_c y_c^T,
 * where y_c is cell c's sparse row (archetypes ascending). An archetype
 * pair has an entry only when some cell holds both, so G has as many
 * entries as the archetypes' cells overlap, never k^2 (a dense k x k array
 * is 1.4 GB at 13,333 metacells, and its fill and walk grew with k per
 * cell). Entry (j, l) is summed over the cells in ascending order, the
 * order of the dense loop it replaces, so the bits are those of
 * sum_c y_cj y_cl taken cell by cell; G is symmetric bit for bit. */
#include <stdlib.h>

#include "seacells/internal.h"
#include "comm/error.h"

/* Row j of G into acc/list (count returned, columns in first-touch order):
 * the cells holding j are cells[ct[j] .. ct[j+1]), each with the position
 * of its j entry (at[..]), so y_cj is val[at]. */
static int64_t gram_row(int32_t j, const int64_t *cptr, const int32_t *col, const double *val,
                        const int64_t *ct, const int32_t *tcell, const int64_t *tpos, char *mark,
                        int32_t *list, double *acc) {
  int64_t nt = 0;
  for (int64_t q = ct[j]; q < ct[j + 1]; q++) {
    int32_t c = tcell[q];
    double v = val[tpos[q]];
    for (int64_t e = cptr[c]; e < cptr[c + 1]; e++) {
      int32_t l = col[e];
      if (!mark[l]) mark[l] = 1, acc[l] = 0.0, list[nt++] = l;
      acc[l] = acc[l] + v * val[e];
    }
  }
  for (int64_t t = 0; t < nt; t++)
    mark[list[t]] = 0;
  return nt;
}

static int i32_cmp(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return a < b ? -1 : a > b;
}

/* By-archetype index of the cells' rows (ascending cells per archetype). */
static int transpose(int64_t ncells, int m, const int64_t *cptr, const int32_t *col, int64_t **ct,
                     int32_t **tcell, int64_t **tpos) {
  int64_t nz = cptr[ncells];
  *ct = calloc((size_t)m + 1, sizeof(int64_t));
  *tcell = malloc((size_t)(nz + 1) * sizeof(int32_t));
  *tpos = malloc((size_t)(nz + 1) * sizeof(int64_t));
  int64_t *fill = calloc((size_t)m + 1, sizeof(int64_t));
  if (!*ct || !*tcell || !*tpos || !fill) {
    free(fill);
    return 1;
  }
  for (int64_t e = 0; e < nz; e++)
    (*ct)[col[e] + 1]++;
  for (int j = 0; j < m; j++)
    (*ct)[j + 1] += (*ct)[j];
  for (int64_t c = 0; c < ncells; c++) /* cells ascending within each archetype */
    for (int64_t e = cptr[c]; e < cptr[c + 1]; e++) {
      int64_t p = (*ct)[col[e]] + fill[col[e]]++;
      (*tcell)[p] = (int32_t)c, (*tpos)[p] = e;
    }
  free(fill);
  return 0;
}

rrt_status rrt_sc_gram(rrt_sc_run *s, int64_t ncells, const int64_t *cptr, const int32_t *col,
                       const double *val, rrt_sc_csr *g) {
  int m = s->m, fail = 0;
  int64_t *ct = NULL, *tpos = NULL;
  int32_t *tcell = NULL;
  rrt_sc_csr_free(g);
  g->rows = m;
  g->ptr = calloc((size_t)m + 1, sizeof(int64_t));
  if (!g->ptr || transpose(ncells, m, cptr, col, &ct, &tcell, &tpos)) fail = 1;
  /* two passes (count, then fill at known offsets): exact size, rows in parallel */
  for (int pass = 0; pass < 2 && !fail; pass++) {
#pragma omp parallel if (m >= 256)
    {
      char *mark = calloc((size_t)m, 1);
      int32_t *list = malloc((size_t)m * sizeof(int32_t));
      double *acc = malloc((size_t)m * sizeof(double));
      if (!mark || !list || !acc) {
#pragma omp atomic write
        fail = 1;
      }
#pragma omp for schedule(dynamic, 16)
      for (int32_t j = 0; j < m; j++) {
        if (!mark || !list || !acc) continue;
        int64_t nt = gram_row(j, cptr, col, val, ct, tcell, tpos, mark, list, acc);
        if (pass == 0) {
          g->ptr[j + 1] = nt;
          continue;
        }
        qsort(list, (size_t)nt, sizeof(int32_t), i32_cmp);
        for (int64_t t = 0; t < nt; t++)
          g->col[g->ptr[j] + t] = list[t], g->val[g->ptr[j] + t] = acc[list[t]];
      }
      free(mark), free(list), free(acc);
    }
    if (pass == 0 && !fail) {
      for (int j = 0; j < m; j++)
        g->ptr[j + 1] += g->ptr[j];
      g->col = malloc((size_t)(g->ptr[m] + 1) * sizeof(int32_t));
      g->val = malloc((size_t)(g->ptr[m] + 1) * sizeof(double));
      if (!g->col || !g->val) fail = 1;
    }
  }
  free(ct), free(tcell), free(tpos);
  if (fail) {
    rrt_sc_csr_free(g);
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells",
                     "out of memory: %d x %d sparse product", m, m);
  }
  return RRT_SUCCESS;
}

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
#include "kernels/cpu/seacells.h"
#include "comm/error.h"

/* Row j of G for rrt_sc_cpu_rows (columns ascending): the cells holding j
 * are cells[ct[j] .. ct[j+1]), each with the position of its j entry
 * (at[..]), so y_cj is val[at]. */
typedef struct gram_arg {
  int m;
  const int64_t *cptr, *ct, *tpos;
  const int32_t *col, *tcell;
  const double *val;
} gram_arg;

static int gram_row(const void *arg, int64_t j, unsigned char *mark, double *acc, int32_t *list) {
  const gram_arg *g = arg;
  int nt = 0;
  for (int64_t q = g->ct[j]; q < g->ct[j + 1]; q++) {
    int32_t c = g->tcell[q];
    double v = g->val[g->tpos[q]];
    for (int64_t e = g->cptr[c]; e < g->cptr[c + 1]; e++) {
      int32_t l = g->col[e];
      if (!mark[l]) mark[l] = 1, acc[l] = 0.0, list[nt++] = l;
      acc[l] = acc[l] + v * g->val[e];
    }
  }
  rrt_sc_sort_marked(list, nt, mark, g->m);
  return nt;
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
  int m = s->m;
  int64_t *ct = NULL, *tpos = NULL, cap = 0;
  int32_t *tcell = NULL;
  rrt_sc_csr_free(g);
  g->rows = m;
  g->ptr = malloc(((size_t)m + 1) * sizeof(int64_t));
  rrt_status st = RRT_ERR_OUT_OF_MEMORY;
  if (g->ptr && !transpose(ncells, m, cptr, col, &ct, &tcell, &tpos)) {
    const gram_arg a = {m, cptr, ct, tpos, col, tcell, val};
    /* in parallel once there is work for it (a row's bits do not depend
     * on the threads) */
    st = rrt_sc_cpu_rows(m, m, cptr[ncells] >= RRT_SC_PAR_MIN, gram_row, &a, INT64_MAX, g->ptr,
                         &g->col, &g->val, &cap);
  }
  free(ct), free(tcell), free(tpos);
  if (st != RRT_SUCCESS) {
    rrt_sc_csr_free(g);
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells",
                     "out of memory: %d x %d sparse product", m, m);
  }
  return RRT_SUCCESS;
}

/* The k x k products of the Frank-Wolfe updates (T1a = B^T K B = (M B)^T
 * (M B), T1b = A A^T) as sparse rows: G = sum over cells c of y_c y_c^T,
 * where y_c is cell c's sparse row (archetypes ascending). An archetype
 * pair has an entry only when some cell holds both, so G has as many
 * entries as the archetypes' cells overlap, never k^2 (a dense k x k array
 * is 1.4 GB at 13,333 metacells, and its fill and walk grew with k per
 * cell). Entry (j, l) is summed over the cells in ascending order, the
 * order of the dense loop it replaces, so the bits are those of
 * sum_c y_cj y_cl taken cell by cell; G is symmetric bit for bit.
 *
 * The cells' rows are replicated (every rank has them all), so each rank
 * forms a contiguous share of G's rows and an allgatherv replicates G:
 * a row's bits do not depend on who forms it, and the work per rank falls
 * with the rank count instead of every rank forming all m rows. */
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "kernels/cpu/seacells.h"
#include "comm/error.h"
#include "comm/host_coll.h"

/* Row j of G for rrt_sc_cpu_rows (columns ascending): the cells holding j
 * are cells[ct[j] .. ct[j+1]), each with the position of its j entry
 * (at[..]), so y_cj is val[at]. */
typedef struct gram_arg {
  int m, j0; /* row r of this rank's share is row j0 + r of G */
  const int64_t *cptr, *ct, *tpos;
  const int32_t *col, *tcell;
  const double *val;
} gram_arg;

static int gram_row(const void *arg, int64_t r, unsigned char *mark, double *acc, int32_t *list) {
  const gram_arg *g = arg;
  const int64_t j = g->j0 + r;
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

/* This rank's share of G's rows, [*j0, *j1): split where the cells' entries
 * of the rows so far (ct, the same on every rank) cross rank/size of them,
 * a proxy of each row's work. */
static void row_share(const rrt_sc_run *s, const int64_t *ct, int *j0, int *j1) {
  int m = s->m;
  int64_t tot = ct[m];
  int b[2] = {0, m};
  for (int e = 0; e < 2; e++) {
    int64_t cut = tot * (s->rank + e) / s->size;
    if (s->rank + e == 0 || s->rank + e == s->size) continue;
    int j = 0;
    while (j < m && ct[j] < cut)
      j++;
    b[e] = j;
  }
  *j0 = b[0], *j1 = b[1];
}

/* Every rank's rows of G into g (ptr: m + 1, held): the row lengths, then
 * the columns and values, in rank order, which is row order. st: how this
 * rank's rows went (all ranks agree first, so none waits on a failed one). */
static rrt_status gather_rows(rrt_sc_run *s, rrt_status st, int nrows, const int64_t *ptr,
                              const int32_t *col, const double *val, rrt_sc_csr *g) {
  int64_t *lens = malloc(((size_t)nrows + 1) * sizeof(int64_t)), *all = NULL;
  if (st == RRT_SUCCESS && !lens)
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: k x k row lengths");
  for (int r = 0; st == RRT_SUCCESS && r < nrows; r++)
    lens[r] = ptr[r + 1] - ptr[r];
  st = rrt_agree(s->ctx, st);
  size_t tot = 0;
  if (st == RRT_SUCCESS)
    st = rrt_host_allgatherv_alloc(s->ctx, lens, (size_t)nrows * sizeof(int64_t), (void **)&all,
                                   NULL, &tot);
  if (st == RRT_SUCCESS && tot != (size_t)s->m * sizeof(int64_t))
    st = rrt_error(s->ctx, RRT_ERR_INTERNAL, "seacells",
                   "k x k product: %zu row lengths for %d rows", tot / sizeof(int64_t), s->m);
  if (st == RRT_SUCCESS) {
    g->ptr[0] = 0;
    for (int j = 0; j < s->m; j++)
      g->ptr[j + 1] = g->ptr[j] + all[j];
    int64_t nz = ptr[nrows];
    st = rrt_host_allgatherv_alloc(s->ctx, col, (size_t)nz * sizeof(int32_t), (void **)&g->col,
                                   NULL, NULL);
    if (st == RRT_SUCCESS)
      st = rrt_host_allgatherv_alloc(s->ctx, val, (size_t)nz * sizeof(double), (void **)&g->val,
                                     NULL, NULL);
  }
  free(lens), free(all);
  return st;
}

rrt_status rrt_sc_gram(rrt_sc_run *s, int64_t ncells, const int64_t *cptr, const int32_t *col,
                       const double *val, rrt_sc_csr *g) {
  int m = s->m, j0 = 0, j1 = m;
  int64_t *ct = NULL, *tpos = NULL, *ptr = NULL, cap = 0;
  int32_t *tcell = NULL, *mcol = NULL;
  double *mval = NULL;
  rrt_sc_csr_free(g);
  g->rows = m;
  g->ptr = malloc(((size_t)m + 1) * sizeof(int64_t));
  ptr = malloc(((size_t)m + 1) * sizeof(int64_t));
  rrt_status st = RRT_ERR_OUT_OF_MEMORY;
  if (g->ptr && ptr && !transpose(ncells, m, cptr, col, &ct, &tcell, &tpos)) {
    row_share(s, ct, &j0, &j1);
    const gram_arg a = {m, j0, cptr, ct, tpos, col, tcell, val};
    /* in parallel once there is work for it (a row's bits do not depend
     * on the threads) */
    st = rrt_sc_cpu_rows(j1 - j0, m, cptr[ncells] >= RRT_SC_PAR_MIN, gram_row, &a, INT64_MAX, ptr,
                         &mcol, &mval, &cap);
  }
  if (st != RRT_SUCCESS)
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells",
                   "out of memory: %d x %d sparse product", m, m);
  if (s->size == 1 && st == RRT_SUCCESS) { /* the rows are all here */
    memcpy(g->ptr, ptr, ((size_t)m + 1) * sizeof(int64_t));
    g->col = mcol, g->val = mval;
    mcol = NULL, mval = NULL;
  } else if (s->size > 1) {
    st = gather_rows(s, st, j1 - j0, ptr, mcol, mval, g);
  }
  free(ct), free(tcell), free(tpos), free(ptr), free(mcol), free(mval);
  if (st != RRT_SUCCESS) rrt_sc_csr_free(g);
  return st;
}

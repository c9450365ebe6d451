/* A given kernel M (the reference's add_precomputed_kernel_matrix) in
 * place of the built one: this rank's CSR rows are validated and copied,
 * then finished as a built kernel is (ghost rows, K's diagonal, the
 * locality order). The drivers take K = M M^T as M M, so M must be
 * symmetric bit for bit; that is checked on the ghost rows, which hold
 * every remote row a local row references. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "ringrt/transport.h"

static const char *op = "rrt_seacells_create_with_kernel";

/* This rank's rows: count x n, ptr from 0 and non-decreasing, columns
 * ascending in 0..n-1, finite values. */
static rrt_status check_rows(rrt_sc_run *s, const rrt_seacells_matrix *m) {
  if (!m) return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "the kernel's rows are NULL");
  if (m->rows != s->nl || m->cols != s->n)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                     "this rank's kernel rows are %lld x %lld, expected %lld x %lld",
                     (long long)m->rows, (long long)m->cols, (long long)s->nl, (long long)s->n);
  if (s->nl > 0 && (!m->ptr || !m->col || !m->val))
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "the kernel must be CSR (ptr, col, val)");
  if (s->nl > 0 && m->ptr[0] != 0)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "ptr[0] = %lld", (long long)m->ptr[0]);
  for (int64_t i = 0; i < s->nl; i++) {
    if (m->ptr[i + 1] < m->ptr[i])
      return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "row %lld: ptr decreases",
                       (long long)(s->c0 + i));
    for (int64_t p = m->ptr[i]; p < m->ptr[i + 1]; p++) {
      if (m->col[p] < 0 || m->col[p] >= s->n || (p > m->ptr[i] && m->col[p] <= m->col[p - 1]))
        return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                         "row %lld: column %d out of range or not ascending",
                         (long long)(s->c0 + i), (int)m->col[p]);
      if (!isfinite(m->val[p]))
        return rrt_error(s->ctx, RRT_ERR_NUMERIC, op, "M[%lld, %d] is %g", (long long)(s->c0 + i),
                         (int)m->col[p], m->val[p]);
    }
  }
  return RRT_SUCCESS;
}

static rrt_status copy_rows(rrt_sc_run *s, const rrt_seacells_matrix *m) {
  int64_t nnz = s->nl > 0 ? m->ptr[s->nl] : 0;
  s->mrow.rows = s->nl;
  s->mrow.ptr = malloc((size_t)(s->nl + 1) * sizeof(int64_t));
  s->mrow.col = malloc((size_t)(nnz + 1) * sizeof(int32_t));
  s->mrow.val = malloc((size_t)(nnz + 1) * sizeof(double));
  if (!s->mrow.ptr || !s->mrow.col || !s->mrow.val)
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, op, "%lld kernel entries", (long long)nnz);
  s->mrow.ptr[0] = 0;
  for (int64_t i = 0; i < s->nl; i++)
    s->mrow.ptr[i + 1] = m->ptr[i + 1];
  if (nnz) {
    memcpy(s->mrow.col, m->col, (size_t)nnz * sizeof(int32_t));
    memcpy(s->mrow.val, m->val, (size_t)nnz * sizeof(double));
  }
  return RRT_SUCCESS;
}

/* M[j, i] == M[i, j] (the same bits) for every local entry (i, j). */
static rrt_status check_symmetric(rrt_sc_run *s) {
  for (int64_t i = 0; i < s->nl; i++) {
    int32_t gi = (int32_t)(s->c0 + i);
    for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
      const int32_t *col;
      const double *val;
      int64_t len, lo = 0;
      rrt_sc_m_row(s, s->mrow.col[p], &col, &val, &len);
      for (int64_t hi = len; lo < hi;) { /* first column >= gi */
        int64_t mid = lo + (hi - lo) / 2;
        if (col[mid] < gi)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo == len || col[lo] != gi || val[lo] != s->mrow.val[p])
        return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                         "the kernel is not symmetric: M[%d, %d] = %.17g, M[%d, %d] = %.17g "
                         "(K = M M^T is taken as M M)",
                         (int)gi, (int)s->mrow.col[p], s->mrow.val[p], (int)s->mrow.col[p], (int)gi,
                         lo < len && col[lo] == gi ? val[lo] : 0.0);
    }
  }
  return RRT_SUCCESS;
}

rrt_status rrt_sc_use_kernel(rrt_sc_run *s, const rrt_seacells_matrix *m) {
  rrt_status st = check_rows(s, m);
  if (st == RRT_SUCCESS) st = copy_rows(s, m);
  st = rrt_agree(s->ctx, st);
  if (st == RRT_SUCCESS) st = rrt_agree(s->ctx, rrt_sc_finish_graph(s));
  if (st == RRT_SUCCESS) st = rrt_agree(s->ctx, check_symmetric(s));
  return st;
}

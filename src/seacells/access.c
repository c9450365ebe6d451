/* SEACells state read out of a handle, for fronts that rebuild the
 * reference's matrices (the Python SEACells class: A_, B_, kernel_matrix):
 * copies in CSR/CSC form, sized by a first call with NULL arrays. */
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"

rrt_status rrt_seacells_local_cells(rrt_seacells_t h, int64_t *first, int64_t *count) {
  if (!h || !first || !count) return RRT_ERR_INVALID_ARG;
  *first = h->s.c0;
  *count = h->s.nl;
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_local_a(rrt_seacells_t h, int64_t *ptr, int32_t *metacell, double *weight) {
  if (!h || !ptr) return RRT_ERR_INVALID_ARG;
  const rrt_sc_run *s = &h->s;
  ptr[0] = 0;
  for (int64_t i = 0; i < s->nl; i++) {
    int nz = s->initialized ? s->a_nnz[i] : 0; /* before A0 every column is empty */
    ptr[i + 1] = ptr[i] + nz;
    if (metacell) memcpy(metacell + ptr[i], s->a_idx + i * s->capa, (size_t)nz * sizeof(int32_t));
    if (weight) memcpy(weight + ptr[i], s->a_w + i * s->capa, (size_t)nz * sizeof(double));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_b(rrt_seacells_t h, int64_t *ptr, int32_t *cell, double *weight) {
  if (!h || !ptr) return RRT_ERR_INVALID_ARG;
  const rrt_sc_bmat *b = &h->s.b;
  ptr[0] = 0;
  for (int j = 0; j < b->m; j++) {
    int nz = h->s.initialized ? b->nnz[j] : 0;
    ptr[j + 1] = ptr[j] + nz;
    if (cell) memcpy(cell + ptr[j], b->cell + (size_t)j * b->cap, (size_t)nz * sizeof(int32_t));
    if (weight) memcpy(weight + ptr[j], b->w + (size_t)j * b->cap, (size_t)nz * sizeof(double));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_local_kernel(rrt_seacells_t h, int64_t *ptr, int32_t *col, double *val) {
  if (!h || !ptr) return RRT_ERR_INVALID_ARG;
  const rrt_sc_csr *mr = &h->s.mrow;
  int64_t nnz = mr->ptr ? mr->ptr[h->s.nl] : 0;
  for (int64_t i = 0; i <= h->s.nl; i++)
    ptr[i] = mr->ptr ? mr->ptr[i] : 0;
  if (col && nnz) memcpy(col, mr->col, (size_t)nnz * sizeof(int32_t));
  if (val && nnz) memcpy(val, mr->val, (size_t)nnz * sizeof(double));
  return RRT_SUCCESS;
}

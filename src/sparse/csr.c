/* Distributed CSR: validation, ghost columns, the SpMV halo, SpMV. */
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_impl.h"
#include "comm/error.h"
#include "comm/host_coll.h"

#define OP "rrt_sparse_create"

void rrt_sparse_partition(int64_t n, const int64_t *rowptr, int nparts, int64_t *offsets) {
  rrt_partition_nnz(n, rowptr, nparts, offsets);
}

int64_t rrt_sparse_n(rrt_sparse_t A) { return A->n; }
int64_t rrt_sparse_row_begin(rrt_sparse_t A) { return A->row_begin; }
int64_t rrt_sparse_local_rows(rrt_sparse_t A) { return A->nloc; }
int64_t rrt_sparse_local_nnz(rrt_sparse_t A) { return A->nnz; }
int64_t rrt_sparse_global_nnz(rrt_sparse_t A) { return A->nnz_global; }
rrt_ctx_t rrt_sparse_ctx(rrt_sparse_t A) { return A->ctx; }

void rrt_sparse_local_csr(rrt_sparse_t A, const int64_t **rowptr, const int64_t **cols,
                          const double **vals) {
  if (rowptr) *rowptr = A->rowptr;
  if (cols) *cols = A->col;
  if (vals) *vals = A->val;
}

int64_t rrt_sparse_ext_index(const struct rrt_sparse *A, int64_t g) {
  if (g >= A->row_begin && g < A->row_begin + A->nloc) return g - A->row_begin;
  int64_t lo = 0, hi = A->nghost;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (A->ghost[mid] < g)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < A->nghost && A->ghost[lo] == g) ? A->nloc + lo : -1;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Local validation: a message naming the first bad row, else success. */
static rrt_status validate(rrt_ctx_t ctx, int64_t n, int64_t row_begin, int64_t nrows,
                           const int64_t *rowptr, const int64_t *cols, const double *vals) {
  if (n < 0 || row_begin < 0 || nrows < 0 || row_begin + nrows > n || !rowptr ||
      (nrows && (!cols || !vals)))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "bad block: n %lld, row_begin %lld, nrows %lld",
                     (long long)n, (long long)row_begin, (long long)nrows);
  if (rowptr[0] != 0)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "rowptr[0] is %lld, not 0",
                     (long long)rowptr[0]);
  for (int64_t i = 0; i < nrows; i++) {
    if (rowptr[i + 1] < rowptr[i])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "rowptr decreases at global row %lld",
                       (long long)(row_begin + i));
    for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
      if (cols[p] < 0 || cols[p] >= n)
        return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                         "global row %lld: column %lld out of range [0, %lld)",
                         (long long)(row_begin + i), (long long)cols[p], (long long)n);
      if (p > rowptr[i] && cols[p] <= cols[p - 1])
        return rrt_error(
            ctx, RRT_ERR_INVALID_ARG, OP,
            "global row %lld: columns not sorted strictly increasing (%lld after %lld)",
            (long long)(row_begin + i), (long long)cols[p], (long long)cols[p - 1]);
    }
  }
  if (rowptr[nrows] > INT32_MAX / 2)
    return rrt_error(ctx, RRT_ERR_UNSUPPORTED, OP, "more than 2^30 local nonzeros");
  return RRT_SUCCESS;
}

rrt_status rrt_sparse_create(rrt_ctx_t ctx, int64_t n, int64_t row_begin, int64_t nrows,
                             const int64_t *rowptr, const int64_t *cols, const double *vals,
                             rrt_sparse_t *out) {
  *out = NULL;
  rrt_status st = rrt_agree(ctx, validate(ctx, n, row_begin, nrows, rowptr, cols, vals));
  if (st) return st;
  struct rrt_sparse *A = calloc(1, sizeof(*A));
  if (!A) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
  A->ctx = ctx;
  A->rank = ctx->rank;
  A->size = ctx->size;
  A->n = n;
  A->row_begin = row_begin;
  A->nloc = nrows;
  A->nnz = rowptr[nrows];
  int P = ctx->size;
  int64_t mine[2] = {row_begin, nrows}, *all = malloc(2 * (size_t)P * sizeof(int64_t));
  int64_t *req = NULL, *rdata = NULL;
  int32_t *dest = NULL, *rsrc = NULL, *pi = NULL, *pp = NULL;
  int64_t *pk = NULL;
  rrt_msg_plan sp = {0}, rp = {0};
  A->offsets = malloc(((size_t)P + 1) * sizeof(int64_t));
  A->rowptr = malloc(((size_t)nrows + 1) * sizeof(int64_t));
  A->col = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  A->val = malloc(((size_t)A->nnz + 1) * sizeof(double));
  A->col_ext = malloc(((size_t)A->nnz + 1) * sizeof(int32_t));
  A->ghost = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  if (!all || !A->offsets || !A->rowptr || !A->col || !A->val || !A->col_ext || !A->ghost) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
    goto fail;
  }
  memcpy(A->rowptr, rowptr, ((size_t)nrows + 1) * sizeof(int64_t));
  memcpy(A->col, cols, (size_t)A->nnz * sizeof(int64_t));
  memcpy(A->val, vals, (size_t)A->nnz * sizeof(double));
  RRT_CHECK_GOTO(rrt_allgather(ctx, mine, all, sizeof(mine)), st, fail);
  A->offsets[0] = 0;
  for (int p = 0; p < P; p++) {
    if (all[2 * p] != A->offsets[p]) {
      st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                     "row blocks are not contiguous in rank order: rank %d starts at %lld, "
                     "expected %lld",
                     p, (long long)all[2 * p], (long long)A->offsets[p]);
      goto fail;
    }
    A->offsets[p + 1] = A->offsets[p] + all[2 * p + 1];
  }
  if (A->offsets[P] != n) {
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "row blocks cover %lld rows of %lld",
                   (long long)A->offsets[P], (long long)n);
    goto fail;
  }
  RRT_CHECK_GOTO(rrt_allreduce(ctx, &A->nnz, &A->nnz_global, 1, RRT_DTYPE_I64, RRT_OP_SUM), st,
                 fail);
  /* ghosts: remote columns, sorted, unique */
  int64_t ng = 0;
  for (int64_t p = 0; p < A->nnz; p++)
    if (cols[p] < row_begin || cols[p] >= row_begin + nrows) A->ghost[ng++] = cols[p];
  qsort(A->ghost, (size_t)ng, sizeof(int64_t), cmp_i64);
  int64_t w = 0;
  for (int64_t g = 0; g < ng; g++)
    if (g == 0 || A->ghost[g] != A->ghost[g - 1]) A->ghost[w++] = A->ghost[g];
  A->nghost = w;
  if (A->nloc + A->nghost > INT32_MAX / 2) {
    st = rrt_error(ctx, RRT_ERR_UNSUPPORTED, OP, "more than 2^30 local plus ghost rows");
    goto fail;
  }
  A->ghost_owner = malloc(((size_t)w + 1) * sizeof(int32_t));
  dest = malloc(((size_t)w + 1) * sizeof(int32_t));
  if (!A->ghost_owner || !dest) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
    goto fail;
  }
  for (int64_t g = 0; g < w; g++)
    A->ghost_owner[g] = dest[g] = rrt_partition_owner(A->offsets, P, A->ghost[g]);
  for (int64_t p = 0; p < A->nnz; p++)
    A->col_ext[p] = (int32_t)rrt_sparse_ext_index(A, cols[p]);
  /* SpMV halo: ask owners for the ghosts; both sides sort by global index */
  int64_t nr = 0;
  RRT_CHECK_GOTO(rrt_host_exchange_records(ctx, w, dest, A->ghost, 1, &nr, &rdata, &rsrc), st, fail);
  pi = malloc(((size_t)(nr > w ? nr : w) + 1) * sizeof(int32_t));
  pp = malloc(((size_t)(nr > w ? nr : w) + 1) * sizeof(int32_t));
  pk = malloc(((size_t)(nr > w ? nr : w) + 1) * sizeof(int64_t));
  if (!pi || !pp || !pk) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
    goto fail;
  }
  for (int64_t t = 0; t < nr; t++)
    pp[t] = rsrc[t], pi[t] = (int32_t)(rdata[t] - row_begin), pk[t] = rdata[t];
  RRT_CHECK_GOTO(rrt_msg_plan_build(nr, pp, pi, NULL, pk, &sp), st, fail);
  for (int64_t g = 0; g < w; g++)
    pp[g] = A->ghost_owner[g], pi[g] = (int32_t)(A->nloc + g), pk[g] = A->ghost[g];
  RRT_CHECK_GOTO(rrt_msg_plan_build(w, pp, pi, NULL, pk, &rp), st, fail);
  RRT_CHECK_GOTO(rrt_halo_init(ctx, &A->halo, &sp, &rp, 0, NULL), st, fail);
  /* backend copies */
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)nrows + 1) * sizeof(int64_t), (void **)&A->d_rowptr), st,
                 fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)A->nnz + 1) * sizeof(int32_t), (void **)&A->d_col_ext),
                 st, fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)A->nnz + 1) * sizeof(double), (void **)&A->d_val), st,
                 fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)(nrows + w) + 1) * sizeof(double), (void **)&A->d_xext),
                 st, fail);
  RRT_CHECK_GOTO(
      rrt_memcpy_to_backend(ctx, A->d_rowptr, A->rowptr, ((size_t)nrows + 1) * sizeof(int64_t)), st,
      fail);
  RRT_CHECK_GOTO(
      rrt_memcpy_to_backend(ctx, A->d_col_ext, A->col_ext, (size_t)A->nnz * sizeof(int32_t)), st,
      fail);
  RRT_CHECK_GOTO(rrt_memcpy_to_backend(ctx, A->d_val, A->val, (size_t)A->nnz * sizeof(double)), st,
                 fail);
  A->spmv_flops = 2.0 * (double)A->nnz_global;
  free(all), free(req), free(rdata), free(dest), free(rsrc), free(pi), free(pp), free(pk);
  *out = A;
  return RRT_SUCCESS;
fail:
  free(all), free(req), free(rdata), free(dest), free(rsrc), free(pi), free(pp), free(pk);
  rrt_msg_plan_free(&sp), rrt_msg_plan_free(&rp);
  rrt_sparse_destroy(A);
  return st;
}

rrt_status rrt_sparse_destroy(rrt_sparse_t A) {
  if (!A) return RRT_SUCCESS;
  rrt_ctx_t ctx = A->ctx;
  rrt_halo_free(ctx, &A->halo);
  rrt_free(ctx, A->d_rowptr), rrt_free(ctx, A->d_col_ext), rrt_free(ctx, A->d_val);
  rrt_free(ctx, A->d_xext);
  free(A->offsets), free(A->rowptr), free(A->col), free(A->val), free(A->col_ext);
  free(A->ghost), free(A->ghost_owner);
  free(A);
  return RRT_SUCCESS;
}

rrt_status rrt_sparse_set_values(rrt_sparse_t A, const double *vals) {
  memcpy(A->val, vals, (size_t)A->nnz * sizeof(double));
  return rrt_memcpy_to_backend(A->ctx, A->d_val, A->val, (size_t)A->nnz * sizeof(double));
}

rrt_status rrt_sparse_spmv(rrt_sparse_t A, const double *x, double *y) {
  rrt_ctx_t ctx = A->ctx;
  double t0 = rrt_phase_begin(ctx);
  /* x goes into the local part of the extended vector, ghosts arrive behind it */
  RRT_CHECK(rrt_vec_copy(ctx, A->d_xext, x, A->nloc));
  RRT_CHECK(rrt_halo_post(ctx, &A->halo, 0, x));
  RRT_CHECK(rrt_halo_wait_all(ctx, &A->halo, A->d_xext));
  RRT_CHECK(RRT_ILU_DISPATCH(
      ctx, rrt_ilu0_cpu_spmv(A->nloc, A->d_rowptr, A->d_col_ext, A->d_val, A->d_xext, y),
      rrt_k_ilu0_spmv, A->nloc, A->d_rowptr, A->d_col_ext, A->d_val, A->d_xext, y));
  return rrt_phase_end(ctx, "sparse.spmv", t0);
}

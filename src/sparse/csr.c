/* Distributed CSR: validation, row blocks, backend copies, SpMV. The ghost
 * columns and the SpMV halo are built in ghosts.c. */
#include "sparse/csr.h"

#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/user_stream.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "sched/ilu0_levels.h"

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

rrt_status rrt_sparse_copy(const struct rrt_sparse *A, double *dst, const double *src, int64_t n) {
  if (dst == src || n == 0) return RRT_SUCCESS;
  rrt_ctx_t ctx = A->ctx;
  RRT_CHECK(ctx->dev->memcpy_async(dst, src, (size_t)n * sizeof(double), RRT_COPY_D2D,
                                   ctx->compute_stream));
  return ctx->dev->stream_sync(ctx->compute_stream);
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

/* Every rank must pass the same global n: agreed before anything else, so
 * a rank with another n fails every rank at once (with this rank's n and
 * the range seen) instead of pairing mismatched collectives later. */
static rrt_status agree_n(rrt_ctx_t ctx, int64_t n) {
  int64_t mine[2] = {n, ~n}, all[2]; /* max of ~n is ~(min of n), without overflow */
  RRT_CHECK(rrt_host_allreduce_named(ctx, OP, mine, all, 2, RRT_DTYPE_I64, RRT_OP_MAX));
  if (all[0] != ~all[1])
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                     "the ranks pass different global n (from %lld to %lld; this rank %lld): "
                     "every rank must pass the same n",
                     (long long)~all[1], (long long)all[0], (long long)n);
  return RRT_SUCCESS;
}

/* The handle with a host copy of the local rows and the backend's kernels. */
static rrt_status alloc_local(rrt_ctx_t ctx, int64_t n, int64_t row_begin, int64_t nrows,
                              const int64_t *rowptr, const int64_t *cols, const double *vals,
                              struct rrt_sparse **out) {
  struct rrt_sparse *A = calloc(1, sizeof(*A));
  *out = A;
  if (!A) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
  A->ctx = ctx;
  A->k = rrt_ilu0_kernels_for(ctx->backend);
  if (!A->k)
    return rrt_error(ctx, RRT_ERR_UNSUPPORTED, OP, "no sparse kernels for backend %d in this build",
                     (int)ctx->backend);
  A->rank = ctx->rank;
  A->size = ctx->size;
  A->n = n;
  A->row_begin = row_begin;
  A->nloc = nrows;
  A->nnz = rowptr[nrows];
  A->offsets = malloc(((size_t)ctx->size + 1) * sizeof(int64_t));
  A->rowptr = malloc(((size_t)nrows + 1) * sizeof(int64_t));
  A->col = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  A->val = malloc(((size_t)A->nnz + 1) * sizeof(double));
  if (!A->offsets || !A->rowptr || !A->col || !A->val)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
  memcpy(A->rowptr, rowptr, ((size_t)nrows + 1) * sizeof(int64_t));
  memcpy(A->col, cols, (size_t)A->nnz * sizeof(int64_t));
  memcpy(A->val, vals, (size_t)A->nnz * sizeof(double));
  return RRT_SUCCESS;
}

/* Row-block offsets from every rank's (row_begin, nrows): the blocks must
 * be contiguous in rank order and cover all n rows. Collective. */
static rrt_status row_blocks(struct rrt_sparse *A) {
  rrt_ctx_t ctx = A->ctx;
  int P = ctx->size;
  int64_t mine[2] = {A->row_begin, A->nloc};
  int64_t *all = malloc(2 * (size_t)P * sizeof(int64_t));
  size_t *layout = malloc(2 * (size_t)P * sizeof(size_t));
  rrt_status st = RRT_SUCCESS;
  if (!all || !layout) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
    goto done;
  }
  for (int p = 0; p < P; p++)
    layout[p] = sizeof(mine), layout[P + p] = (size_t)p * sizeof(mine);
  RRT_CHECK_GOTO(rrt_host_allgatherv(ctx, mine, sizeof(mine), all, layout, layout + P), st, done);
  A->offsets[0] = 0;
  for (int p = 0; p < P; p++) {
    if (all[2 * p] != A->offsets[p]) {
      st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                     "row blocks are not contiguous in rank order: rank %d starts at %lld, "
                     "expected %lld",
                     p, (long long)all[2 * p], (long long)A->offsets[p]);
      goto done;
    }
    A->offsets[p + 1] = A->offsets[p] + all[2 * p + 1];
  }
  if (A->offsets[P] != A->n) {
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "row blocks cover %lld rows of %lld",
                   (long long)A->offsets[P], (long long)A->n);
    goto done;
  }
  st = rrt_host_allreduce(ctx, &A->nnz, &A->nnz_global, 1, RRT_DTYPE_I64, RRT_OP_SUM);
done:
  free(all), free(layout);
  return st;
}

/* The SpMV's backend views of the rows, and the extended x. Where backend
 * memory is host memory (cpu, emu) the kernels read the host rows
 * themselves, as the ILU's structure (ilu/setup.c: rrt_ilu0_share): the
 * second copy was a third of rrt_sparse_create (its allocation and page
 * faults). The extended x is always backend memory: the halo receives
 * into it through the transport. */
static rrt_status upload_rows(struct rrt_sparse *A) {
  rrt_ctx_t ctx = A->ctx;
  size_t nrows = (size_t)A->nloc, nnz = (size_t)A->nnz;
  RRT_CHECK(rrt_malloc(ctx, (nrows + (size_t)A->nghost + 1) * sizeof(double), (void **)&A->d_xext));
  if (!ctx->dev->is_cuda) {
    A->d_rowptr = A->rowptr, A->d_col_ext = A->col_ext, A->d_val = A->val;
    return RRT_SUCCESS;
  }
  RRT_CHECK(rrt_malloc(ctx, (nrows + 1) * sizeof(int64_t), (void **)&A->d_rowptr));
  RRT_CHECK(rrt_malloc(ctx, (nnz + 1) * sizeof(int32_t), (void **)&A->d_col_ext));
  RRT_CHECK(rrt_malloc(ctx, (nnz + 1) * sizeof(double), (void **)&A->d_val));
  RRT_CHECK(rrt_memcpy_to_backend(ctx, A->d_rowptr, A->rowptr, (nrows + 1) * sizeof(int64_t)));
  RRT_CHECK(rrt_memcpy_to_backend(ctx, A->d_col_ext, A->col_ext, nnz * sizeof(int32_t)));
  return rrt_memcpy_to_backend(ctx, A->d_val, A->val, nnz * sizeof(double));
}

rrt_status rrt_sparse_create(rrt_ctx_t ctx, int64_t n, int64_t row_begin, int64_t nrows,
                             const int64_t *rowptr, const int64_t *cols, const double *vals,
                             rrt_sparse_t *out) {
  *out = NULL;
  rrt_status st = agree_n(ctx, n);
  if (st == RRT_SUCCESS)
    st = rrt_agree(ctx, validate(ctx, n, row_begin, nrows, rowptr, cols, vals));
  if (st) return st;
  struct rrt_sparse *A = NULL;
  RRT_CHECK_GOTO(alloc_local(ctx, n, row_begin, nrows, rowptr, cols, vals, &A), st, fail);
  RRT_CHECK_GOTO(row_blocks(A), st, fail);
  RRT_CHECK_GOTO(rrt_sparse_build_ghosts(A), st, fail);
  RRT_CHECK_GOTO(upload_rows(A), st, fail);
  A->spmv_flops = 2.0 * (double)A->nnz_global;
  *out = A;
  return RRT_SUCCESS;
fail:
  rrt_sparse_destroy(A);
  return st;
}

rrt_status rrt_sparse_destroy(rrt_sparse_t A) {
  if (!A) return RRT_SUCCESS;
  rrt_ctx_t ctx = A->ctx;
  rrt_halo_free(ctx, &A->halo);
  if ((void *)A->d_rowptr != (void *)A->rowptr) rrt_free(ctx, A->d_rowptr);
  if ((void *)A->d_col_ext != (void *)A->col_ext) rrt_free(ctx, A->d_col_ext);
  if ((void *)A->d_val != (void *)A->val) rrt_free(ctx, A->d_val);
  rrt_free(ctx, A->d_xext);
  free(A->offsets), free(A->rowptr), free(A->col), free(A->val), free(A->col_ext);
  free(A->ghost), free(A->ghost_owner);
  free(A);
  return RRT_SUCCESS;
}

rrt_status rrt_sparse_set_values(rrt_sparse_t A, const double *vals) {
  memcpy(A->val, vals, (size_t)A->nnz * sizeof(double));
  if ((void *)A->d_val == (void *)A->val) return RRT_SUCCESS; /* shared (upload_rows) */
  return rrt_memcpy_to_backend(A->ctx, A->d_val, A->val, (size_t)A->nnz * sizeof(double));
}

static rrt_status spmv(rrt_sparse_t A, const double *x, double *y) {
  rrt_ctx_t ctx = A->ctx;
  double t0 = rrt_phase_begin(ctx);
  /* x goes into the local part of the extended vector, ghosts arrive behind
   * it; a rank without ghosts reads x itself (no copy: the copy was a tenth
   * of a one-rank SpMV's traffic) unless y is x, but still sends what
   * others need */
  int copy = A->nghost > 0 || x == y;
  const double *xext = copy ? A->d_xext : x;
  if (copy) RRT_CHECK(rrt_sparse_copy(A, A->d_xext, x, A->nloc));
  RRT_CHECK(rrt_halo_post(ctx, &A->halo, 0, x));
  RRT_CHECK(rrt_halo_wait_all(ctx, &A->halo, A->d_xext));
  RRT_CHECK(A->k->spmv(ctx->compute_stream, A->nloc, A->d_rowptr, A->d_col_ext, A->d_val, xext, y));
  return rrt_phase_end(ctx, "sparse.spmv", t0);
}

rrt_status rrt_sparse_spmv(rrt_sparse_t A, const double *x, double *y) {
  RRT_CHECK(rrt_user_stream_enter(A->ctx, "rrt_sparse_spmv"));
  return rrt_user_stream_leave(A->ctx, "rrt_sparse_spmv", spmv(A, x, y));
}

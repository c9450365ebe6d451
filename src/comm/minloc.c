/* rrt_allreduce_minloc: element-wise min-loc over ranks on HOST memory for
 * every backend (the SEACells argmin over cells), over the MPI engine with a
 * user-defined reduction whose ties go to the lowest global index. */
#include <math.h>
#include <stddef.h>

#include "comm/error.h"
#include "comm/transport_mpi.h"

/* Min-loc order: a non-NaN value beats NaN; a smaller value wins; equal
 * values (and two NaNs) go to the lower index. This is a total order on
 * (value, index) pairs, so the reduction is commutative and associative and
 * the answer does not depend on rank count or reduction tree. */
static int minloc_better(const rrt_minloc *a, const rrt_minloc *b) {
  int an = isnan(a->value), bn = isnan(b->value);
  if (an != bn) return bn;
  if (!an && a->value != b->value) return a->value < b->value;
  return a->index < b->index;
}

static void minloc_reduce(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const rrt_minloc *a = in;
  rrt_minloc *b = inout;
  for (int i = 0; i < *len; i++)
    if (minloc_better(&a[i], &b[i])) b[i] = a[i];
}

rrt_status rrt_allreduce_minloc(rrt_ctx_t ctx, rrt_minloc *inout, size_t count) {
  const char *op = "rrt_allreduce_minloc";
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "the context is NULL");
  if (count && !inout)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "inout is NULL with count %zu", count);
  if (count == 0) return RRT_SUCCESS;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  rrt_status st = RRT_SUCCESS;
  int lens[2] = {1, 1};
  MPI_Aint displs[2] = {offsetof(rrt_minloc, value), offsetof(rrt_minloc, index)};
  MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT64_T}, pair, t;
  int rc = MPI_Type_create_struct(2, lens, displs, types, &pair);
  if (rc == MPI_SUCCESS) {
    /* Extent = sizeof, so arrays of the C struct (with its padding) line up. */
    rc = MPI_Type_create_resized(pair, 0, (MPI_Aint)sizeof(rrt_minloc), &t);
    MPI_Type_free(&pair);
  }
  if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&t);
  if (rc != MPI_SUCCESS) {
    st = rrt_error(ctx, RRT_ERR_MPI, req->op, "cannot build the min-loc datatype (MPI error %d)",
                   rc);
    goto fail;
  }
  RRT_CHECK_GOTO(rrt_request_keep_type(req, t), st, fail);
  if (MPI_Op_create(minloc_reduce, 1, &req->mpi_op) != MPI_SUCCESS) {
    req->mpi_op = MPI_OP_NULL;
    st = rrt_error(ctx, RRT_ERR_MPI, req->op, "cannot create the min-loc reduction");
    goto fail;
  }
  RRT_CHECK_GOTO(rrt_mpi_post_reduce(req, inout, inout, count, sizeof(rrt_minloc), t, req->mpi_op),
                 st, fail);
  return rrt_request_wait_release(req);
fail:
  rrt_request_release(req);
  return st;
}

/* A communicator-only context (see boot.h). */
#include "comm/boot.h"

#include <stdlib.h>

#include "comm/error.h"
#include "comm/request.h"

/* Both duplicates in one request, so one deadline covers them. They are
 * written to the context only once complete: the wait's roll-call answer
 * must not touch a communicator that does not exist yet. */
rrt_status rrt_boot_dup(rrt_ctx_t ctx, MPI_Comm parent, const char *op) {
  MPI_Comm comm = MPI_COMM_NULL, roll = MPI_COMM_NULL;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  rrt_status st = RRT_SUCCESS;
  if (!rrt_request_add_mpi(req, -1, RRT_DIR_COLL) || !rrt_request_add_mpi(req, -1, RRT_DIR_COLL))
    st = RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS && MPI_Comm_idup(parent, &comm, &req->mpi[0]) != MPI_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_MPI, op, "MPI_Comm_idup failed");
  if (st == RRT_SUCCESS && MPI_Comm_idup(parent, &roll, &req->mpi[1]) != MPI_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_MPI, op, "MPI_Comm_idup failed");
  RRT_CHECK(rrt_request_wait_posted(req, st));
  ctx->comm = comm;
  ctx->roll_comm = roll;
  MPI_Comm_rank(comm, &ctx->rank);
  MPI_Comm_size(comm, &ctx->size);
  return RRT_SUCCESS;
}

rrt_status rrt_boot_create(MPI_Comm parent, double timeout_s, const char *op, rrt_ctx_t *out) {
  *out = NULL;
  rrt_ctx_t ctx = calloc(1, sizeof *ctx);
  if (!ctx) return rrt_error(NULL, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate a context");
  ctx->comm = ctx->roll_comm = MPI_COMM_NULL;
  ctx->device = -1;
  MPI_Comm_rank(parent, &ctx->rank);
  MPI_Comm_size(parent, &ctx->size);
  char err[256];
  /* A malformed variable is reported by the real context; here it only
   * means the default deadline. */
  if (rrt_env_read(&ctx->env, err, sizeof err) != RRT_SUCCESS)
    ctx->env.timeout_s = RRT_DEFAULT_TIMEOUT_S;
  ctx->timeout_s = timeout_s > 0 ? timeout_s : ctx->env.timeout_s;
  rrt_status st = rrt_boot_dup(ctx, parent, op);
  if (st != RRT_SUCCESS) {
    free(ctx);
    return st;
  }
  *out = ctx;
  return RRT_SUCCESS;
}

/* The NCCL communicator of a cuda context: the library opened (only now,
 * when the cuda backend sets up NCCL; comm/nccl_lib.c), unique id from rank 0 over the
 * host collectives (so the exchange honours RINGRT_TIMEOUT), non-blocking
 * ncclCommInitRankConfig polled under the context timeout, and
 * ncclCommAbort on error or timeout. While the communicator lives it is the
 * context's abort hook, so rrt_fatal_abort aborts it before MPI_Abort. */
#include "comm/nccl_init.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/nccl_lib.h"

static void pause_briefly(void) {
  struct timespec ts = {0, 200000}; /* 200 us */
  nanosleep(&ts, NULL);
}

/* The abort hook: called from rrt_fatal_abort with operations possibly in
 * flight, so the communicator is aborted, never finalised. */
static void abort_comm(void *arg) { rrt_nccl_fini((rrt_ctx_t)arg, 1); }

/* Rank 0 makes the unique id; every rank learns it (or that it failed). */
static rrt_status share_unique_id(rrt_ctx_t ctx, ncclUniqueId *id) {
  const char *op = "rrt_ctx_create";
  ncclResult_t r = ncclSuccess;
  if (ctx->rank == 0) r = ctx->nccl->ncclGetUniqueId(id);
  int32_t ok = r == ncclSuccess, allok = 0;
  RRT_CHECK(rrt_host_allreduce_named(ctx, op, &ok, &allok, 1, RRT_DTYPE_I32, RRT_OP_MIN));
  if (!allok)
    return rrt_error(ctx, RRT_ERR_NCCL, op, "ncclGetUniqueId on rank 0: %s",
                     ok ? "failed on rank 0" : ctx->nccl->ncclGetErrorString(r));
  return rrt_host_bcast_named(ctx, op, id, sizeof *id, 0);
}

/* The table of NCCL functions on the context (every rank agrees on the
 * outcome afterwards, so a rank without NCCL ends every rank). */
static rrt_status open_library(rrt_ctx_t ctx) {
  char err[1024];
  ctx->nccl = calloc(1, sizeof *ctx->nccl);
  if (!ctx->nccl)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_ctx_create", "allocating the NCCL table");
  if (rrt_nccl_lib_open(ctx->nccl, ctx->env.nccl_library, err, sizeof err) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_NCCL, "rrt_ctx_create", "%s", err);
  return RRT_SUCCESS;
}

rrt_status rrt_nccl_init(rrt_ctx_t ctx) {
  RRT_CHECK(open_library(ctx));
  ncclUniqueId id;
  RRT_CHECK(share_unique_id(ctx, &id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ctx->nccl->ncclCommInitRankConfig(&comm, ctx->size, id, ctx->rank, &config);
  double t0 = MPI_Wtime();
  ncclResult_t state = r;
  while (r == ncclSuccess || r == ncclInProgress) {
    if (!comm) break;
    r = ctx->nccl->ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess || state != ncclInProgress) break;
    if (MPI_Wtime() - t0 > ctx->timeout_s) {
      ctx->nccl->ncclCommAbort(comm);
      return rrt_error(ctx, RRT_ERR_TIMEOUT, "rrt_ctx_create",
                       "ncclCommInitRankConfig did not finish within %.0f s (RINGRT_TIMEOUT)",
                       ctx->timeout_s);
    }
    pause_briefly();
  }
  if (r != ncclSuccess || state != ncclSuccess) {
    ncclResult_t bad = r != ncclSuccess ? r : state;
    const char *last = comm ? ctx->nccl->ncclGetLastError(comm) : "";
    if (comm) ctx->nccl->ncclCommAbort(comm);
    return rrt_error(ctx, RRT_ERR_NCCL, "rrt_ctx_create", "ncclCommInitRankConfig: %s %s",
                     ctx->nccl->ncclGetErrorString(bad), last ? last : "");
  }
  ctx->nccl_comm = comm;
  ctx->abort_hook = abort_comm;
  ctx->abort_arg = ctx;
  return RRT_SUCCESS;
}

void rrt_nccl_fini(rrt_ctx_t ctx, int abort) {
  ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
  if (!comm) return;
  ctx->nccl_comm = NULL;
  ctx->abort_hook = NULL;
  ctx->abort_arg = NULL;
  if (abort) {
    ctx->nccl->ncclCommAbort(comm);
    return;
  }
  /* Non-blocking communicator: finalize, wait for it, then destroy. */
  ncclResult_t state = ctx->nccl->ncclCommFinalize(comm);
  double t0 = MPI_Wtime();
  while (state == ncclInProgress || state == ncclSuccess) {
    if (ctx->nccl->ncclCommGetAsyncError(comm, &state) != ncclSuccess) break;
    if (state != ncclInProgress || MPI_Wtime() - t0 > ctx->timeout_s) break;
    pause_briefly();
  }
  if (state != ncclSuccess) {
    ctx->nccl->ncclCommAbort(comm);
    return;
  }
  ctx->nccl->ncclCommDestroy(comm);
}

void rrt_nccl_release(rrt_ctx_t ctx) {
  free(ctx->nccl); /* the library itself stays loaded: comm/nccl_lib.c */
  ctx->nccl = NULL;
}

const char *rrt_nccl_describe(rrt_ctx_t ctx, char *version, size_t len) {
  if (!ctx->nccl || !ctx->nccl->handle) return "";
  rrt_nccl_lib_version(ctx->nccl, version, len);
  return ctx->nccl->path;
}

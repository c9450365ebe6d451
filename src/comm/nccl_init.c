/* The NCCL communicator of a cuda context: unique id from rank 0 over the
 * host collectives (so the exchange honours RINGRT_TIMEOUT), non-blocking
 * ncclCommInitRankConfig polled under the context timeout, and
 * ncclCommAbort on error or timeout. While the communicator lives it is the
 * context's abort hook, so rrt_fatal_abort aborts it before MPI_Abort. */
#include "comm/nccl_init.h"

#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"

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
  if (ctx->rank == 0) r = ncclGetUniqueId(id);
  int32_t ok = r == ncclSuccess, allok = 0;
  RRT_CHECK(rrt_host_allreduce_named(ctx, op, &ok, &allok, 1, RRT_DTYPE_I32, RRT_OP_MIN));
  if (!allok)
    return rrt_error(ctx, RRT_ERR_NCCL, op, "ncclGetUniqueId on rank 0: %s",
                     ok ? "failed on rank 0" : ncclGetErrorString(r));
  return rrt_host_bcast_named(ctx, op, id, sizeof *id, 0);
}

rrt_status rrt_nccl_init(rrt_ctx_t ctx) {
  ncclUniqueId id;
  RRT_CHECK(share_unique_id(ctx, &id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, ctx->size, id, ctx->rank, &config);
  double t0 = MPI_Wtime();
  ncclResult_t state = r;
  while (r == ncclSuccess || r == ncclInProgress) {
    if (!comm) break;
    r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess || state != ncclInProgress) break;
    if (MPI_Wtime() - t0 > ctx->timeout_s) {
      ncclCommAbort(comm);
      return rrt_error(ctx, RRT_ERR_TIMEOUT, "rrt_ctx_create",
                       "ncclCommInitRankConfig did not finish within %.0f s (RINGRT_TIMEOUT)",
                       ctx->timeout_s);
    }
    pause_briefly();
  }
  if (r != ncclSuccess || state != ncclSuccess) {
    ncclResult_t bad = r != ncclSuccess ? r : state;
    const char *last = comm ? ncclGetLastError(comm) : "";
    if (comm) ncclCommAbort(comm);
    return rrt_error(ctx, RRT_ERR_NCCL, "rrt_ctx_create", "ncclCommInitRankConfig: %s %s",
                     ncclGetErrorString(bad), last ? last : "");
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
    ncclCommAbort(comm);
    return;
  }
  /* Non-blocking communicator: finalize, wait for it, then destroy. */
  ncclResult_t state = ncclCommFinalize(comm);
  double t0 = MPI_Wtime();
  while (state == ncclInProgress || state == ncclSuccess) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) break;
    if (state != ncclInProgress || MPI_Wtime() - t0 > ctx->timeout_s) break;
    pause_briefly();
  }
  if (state != ncclSuccess) {
    ncclCommAbort(comm);
    return;
  }
  ncclCommDestroy(comm);
}

void rrt_nccl_version(char *buf, size_t len) {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) {
    snprintf(buf, len, "unknown");
    return;
  }
  /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch. */
  snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

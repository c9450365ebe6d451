/* The NCCL communicator of a cuda context: unique id from rank 0 over MPI,
 * non-blocking ncclCommInitRankConfig polled under the context timeout, and
 * ncclCommAbort on error or timeout. */
#include <nccl.h>
#include <stdio.h>
#include <time.h>

#include "comm/ctx.h"
#include "comm/error.h"

static void pause_briefly(void) {
  struct timespec ts = {0, 200000}; /* 200 us */
  nanosleep(&ts, NULL);
}

rrt_status rrt_nccl_init(rrt_ctx_t ctx) {
  ncclUniqueId id;
  ncclResult_t r = ncclSuccess;
  if (ctx->rank == 0) r = ncclGetUniqueId(&id);
  int ok = r == ncclSuccess, allok = 0;
  MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_MIN, ctx->comm);
  if (!allok)
    return rrt_error(ctx, RRT_ERR_NCCL, "rrt_ctx_create", "ncclGetUniqueId on rank 0: %s",
                     ok ? "failed on rank 0" : ncclGetErrorString(r));
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, ctx->comm);

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  r = ncclCommInitRankConfig(&comm, ctx->size, id, ctx->rank, &config);
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
  return RRT_SUCCESS;
}

void rrt_nccl_fini(rrt_ctx_t ctx, int abort) {
  ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
  if (!comm) return;
  ctx->nccl_comm = NULL;
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

/* Error messages kept on the context, and the fatal abort of a stuck job. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"

rrt_status rrt_error(rrt_ctx_t ctx, rrt_status status, const char *op, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char why[320];
  if (rrt_launch_note_take(why, sizeof why)) { /* a failed launch says what the runtime said */
    size_t used = strlen(msg);
    snprintf(msg + used, sizeof msg - used, " [%s]", why);
  }
  if (ctx) {
    snprintf(ctx->last_error, sizeof ctx->last_error, "rank %d: %s: %s (%s)", ctx->rank, op, msg,
             rrt_status_string(status));
    if (ctx->env.verbose) fprintf(stderr, "ringrt: %s\n", ctx->last_error);
  } else {
    int rank = -1, init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "ringrt: rank %d: %s: %s (%s)\n", rank, op, msg, rrt_status_string(status));
  }
  return status;
}

void rrt_fatal_abort(rrt_ctx_t ctx, rrt_status status, const char *op, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int rank = ctx ? ctx->rank : -1;
  fprintf(stderr, "ringrt: FATAL rank %d: %s: %s (%s); aborting the job\n", rank, op, msg,
          rrt_status_string(status));
  fflush(stderr);
  /* The owner of state that must be aborted, not destroyed (the NCCL
   * communicator), goes first; cleared before the call so a failure inside
   * the hook that aborts again cannot recurse. */
  if (ctx && ctx->abort_hook) {
    void (*hook)(void *) = ctx->abort_hook;
    ctx->abort_hook = NULL;
    hook(ctx->abort_arg);
  }
  MPI_Abort(ctx ? ctx->comm : MPI_COMM_WORLD, RRT_FATAL_EXIT_CODE);
  exit(RRT_FATAL_EXIT_CODE); /* MPI_Abort should not return */
}

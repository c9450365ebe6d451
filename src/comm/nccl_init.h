/* Internal: the NCCL communicator of a cuda context (comm/nccl_init.c,
 * built with NCCL only). */
#ifndef RRT_COMM_NCCL_INIT_H
#define RRT_COMM_NCCL_INIT_H

#include <stddef.h>

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Create ctx->nccl_comm (collective over the context; unique id from rank
 *  0) and install the context's abort hook, which aborts the communicator. */
rrt_status rrt_nccl_init(rrt_ctx_t ctx);
/** Finalise and destroy the communicator (abort != 0: ncclCommAbort) and
 *  clear the abort hook. */
void rrt_nccl_fini(rrt_ctx_t ctx, int abort);
/** Free the context's NCCL table (after rrt_nccl_fini; safe without one). */
void rrt_nccl_release(rrt_ctx_t ctx);
/** The path of the NCCL library the context loaded, and its version
 *  ("2.21.5") into `version`; "" and `version` untouched without one. */
const char *rrt_nccl_describe(rrt_ctx_t ctx, char *version, size_t len);

#ifdef __cplusplus
}
#endif
#endif

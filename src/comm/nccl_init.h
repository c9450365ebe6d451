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
/** "2.21.5": the NCCL library in use. */
void rrt_nccl_version(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif

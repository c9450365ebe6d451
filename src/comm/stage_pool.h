/* Internal: the pinned host staging buffers of the staged transport (cuda
 * without NCCL), kept on the context and reused from one operation to the
 * next, so that a ring step or a Krylov iteration does not pay for a
 * cudaMallocHost/cudaFreeHost pair (each a device-wide synchronisation). A
 * buffer is lent to one request at a time and handed back when the request
 * is released; the context frees them all when it is destroyed. */
#ifndef RRT_COMM_STAGE_POOL_H
#define RRT_COMM_STAGE_POOL_H

#include <stddef.h>

#include "ringrt/status.h"

struct rrt_ctx;

/** Buffers a context keeps: a ring step has at most two operations in
 *  flight per ring (forward K/V, backward dK/dV), a halo exchange one. */
#define RRT_STAGE_POOL_SLOTS 8

typedef struct rrt_stage_pool {
  struct {
    void *ptr;
    size_t bytes;
    int busy;
  } slot[RRT_STAGE_POOL_SLOTS];
} rrt_stage_pool;

/** A pinned buffer of at least `bytes` (> 0), lent until rrt_stage_put: a
 *  free one big enough, else a free slot's buffer replaced by a bigger one,
 *  else (every slot busy) one of its own. */
rrt_status rrt_stage_get(struct rrt_ctx *ctx, size_t bytes, void **ptr);

/** Hand a buffer from rrt_stage_get back (NULL is fine). */
void rrt_stage_put(struct rrt_ctx *ctx, void *ptr);

/** Free every buffer (context destruction; none may still be lent). */
void rrt_stage_pool_release(struct rrt_ctx *ctx);

#endif

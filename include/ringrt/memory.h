/* ringrt: memory where the context's backend computes.
 *
 * cpu and emu: host memory. cuda: device memory of the context's GPU. Every
 * buffer passed to a transport or a workload lives there. Copies are
 * synchronous with respect to the host (they wait for the compute stream).
 */
#ifndef RINGRT_MEMORY_H
#define RINGRT_MEMORY_H

#include <stddef.h>

#include "ringrt/export.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Allocate `bytes` of backend memory (zero bytes gives a valid, unique pointer). */
RRT_API rrt_status rrt_malloc(rrt_ctx_t ctx, size_t bytes, void **ptr);
/** Free backend memory from rrt_malloc (NULL is fine). */
RRT_API rrt_status rrt_free(rrt_ctx_t ctx, void *ptr);
/** Copy host -> backend memory. */
RRT_API rrt_status rrt_memcpy_to_backend(rrt_ctx_t ctx, void *dst, const void *host_src,
                                         size_t bytes);
/** Copy backend -> host memory. */
RRT_API rrt_status rrt_memcpy_to_host(rrt_ctx_t ctx, void *host_dst, const void *src, size_t bytes);
/** Set backend memory to a byte value. */
RRT_API rrt_status rrt_memset(rrt_ctx_t ctx, void *dst, int value, size_t bytes);
/** Wait until all work the context queued (compute and comm streams) is done. */
RRT_API rrt_status rrt_synchronize(rrt_ctx_t ctx);

#ifdef __cplusplus
}
#endif
#endif

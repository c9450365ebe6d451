/* Public memory API (ringrt/memory.h) on top of the context's device layer.
 * Copies and memsets go on the compute stream and wait for it, so they are
 * ordered after queued kernels and complete when the call returns. */
#include "ringrt/memory.h"

#include "comm/ctx.h"
#include "comm/error.h"

static rrt_status check_ctx(rrt_ctx_t ctx, const char *op) {
  if (!ctx || !ctx->dev) return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "context is NULL");
  return RRT_SUCCESS;
}

rrt_status rrt_malloc(rrt_ctx_t ctx, size_t bytes, void **ptr) {
  RRT_CHECK(check_ctx(ctx, "rrt_malloc"));
  if (!ptr) return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_malloc", "ptr is NULL");
  rrt_status st = ctx->dev->alloc(ptr, bytes);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, "rrt_malloc", "%zu bytes on the %s device layer: %s", bytes,
                     ctx->dev->name, rrt_status_string(st));
  return RRT_SUCCESS;
}

rrt_status rrt_free(rrt_ctx_t ctx, void *ptr) {
  RRT_CHECK(check_ctx(ctx, "rrt_free"));
  if (!ptr) return RRT_SUCCESS;
  /* cudaFree waits for the device; on the emu layer the queued work that
   * may still use the buffer runs first (the context's streams are the only
   * streams there). */
  rrt_status st = RRT_SUCCESS;
  if (ctx->dev->queues && !ctx->dev->is_cuda) st = rrt_synchronize(ctx);
  if (st != RRT_SUCCESS) return st;
  st = ctx->dev->free(ptr);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, "rrt_free", "%p: %s", ptr, rrt_status_string(st));
  return RRT_SUCCESS;
}

static rrt_status copy(rrt_ctx_t ctx, const char *op, void *dst, const void *src, size_t bytes,
                       rrt_copy_kind kind) {
  RRT_CHECK(check_ctx(ctx, op));
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst || !src)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s pointer is NULL for %zu bytes",
                     dst ? "source" : "destination", bytes);
  rrt_status st = ctx->dev->memcpy_async(dst, src, bytes, kind, ctx->compute_stream);
  if (st == RRT_SUCCESS) st = ctx->dev->stream_sync(ctx->compute_stream);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, op, "%zu bytes: %s", bytes, rrt_status_string(st));
  return RRT_SUCCESS;
}

rrt_status rrt_memcpy_to_backend(rrt_ctx_t ctx, void *dst, const void *host_src, size_t bytes) {
  return copy(ctx, "rrt_memcpy_to_backend", dst, host_src, bytes, RRT_COPY_H2D);
}

rrt_status rrt_memcpy_to_host(rrt_ctx_t ctx, void *host_dst, const void *src, size_t bytes) {
  return copy(ctx, "rrt_memcpy_to_host", host_dst, src, bytes, RRT_COPY_D2H);
}

rrt_status rrt_memset(rrt_ctx_t ctx, void *dst, int value, size_t bytes) {
  RRT_CHECK(check_ctx(ctx, "rrt_memset"));
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst) return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_memset", "pointer is NULL");
  rrt_status st = ctx->dev->memset_async(dst, value, bytes, ctx->compute_stream);
  if (st == RRT_SUCCESS) st = ctx->dev->stream_sync(ctx->compute_stream);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, "rrt_memset", "%zu bytes: %s", bytes, rrt_status_string(st));
  return RRT_SUCCESS;
}

rrt_status rrt_synchronize(rrt_ctx_t ctx) {
  RRT_CHECK(check_ctx(ctx, "rrt_synchronize"));
  rrt_status st = ctx->dev->stream_sync(ctx->compute_stream);
  if (st == RRT_SUCCESS) st = ctx->dev->stream_sync(ctx->comm_stream);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, "rrt_synchronize", "stream synchronisation failed: %s",
                     rrt_status_string(st));
  return RRT_SUCCESS;
}

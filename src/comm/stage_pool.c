/* Pinned staging buffers reused per context (comm/stage_pool.h). */
#include "comm/stage_pool.h"

#include "comm/ctx.h"
#include "comm/error.h"

rrt_status rrt_stage_get(rrt_ctx_t ctx, size_t bytes, void **ptr) {
  rrt_stage_pool *pool = &ctx->stage_pool;
  int spare = -1;
  *ptr = NULL;
  for (int i = 0; i < RRT_STAGE_POOL_SLOTS; i++) {
    if (pool->slot[i].busy) continue;
    if (pool->slot[i].ptr && pool->slot[i].bytes >= bytes) {
      pool->slot[i].busy = 1;
      *ptr = pool->slot[i].ptr;
      return RRT_SUCCESS;
    }
    if (spare < 0) spare = i;
  }
  if (spare < 0) return ctx->dev->alloc_host_pinned(ptr, bytes); /* all lent: its own */
  /* Grow by half again so that slowly growing sizes settle quickly. */
  size_t want = bytes + bytes / 2 > bytes ? bytes + bytes / 2 : bytes;
  if (pool->slot[spare].ptr) ctx->dev->free_host_pinned(pool->slot[spare].ptr);
  pool->slot[spare].ptr = NULL;
  pool->slot[spare].bytes = 0;
  RRT_CHECK(ctx->dev->alloc_host_pinned(&pool->slot[spare].ptr, want));
  pool->slot[spare].bytes = want;
  pool->slot[spare].busy = 1;
  *ptr = pool->slot[spare].ptr;
  return RRT_SUCCESS;
}

void rrt_stage_put(rrt_ctx_t ctx, void *ptr) {
  if (!ptr) return;
  for (int i = 0; i < RRT_STAGE_POOL_SLOTS; i++) {
    if (ctx->stage_pool.slot[i].ptr == ptr) {
      ctx->stage_pool.slot[i].busy = 0;
      return;
    }
  }
  ctx->dev->free_host_pinned(ptr); /* one of its own */
}

void rrt_stage_pool_release(rrt_ctx_t ctx) {
  for (int i = 0; i < RRT_STAGE_POOL_SLOTS; i++) {
    if (ctx->stage_pool.slot[i].ptr) ctx->dev->free_host_pinned(ctx->stage_pool.slot[i].ptr);
    ctx->stage_pool.slot[i].ptr = NULL;
    ctx->stage_pool.slot[i].bytes = 0;
    ctx->stage_pool.slot[i].busy = 0;
  }
}

/* rrt_ctx_set_stream and the ordering of ringrt's streams with the
 * caller's (comm/user_stream.h). One event serves every wait: a stream wait
 * takes the event's most recent record at the time it is enqueued, so the
 * event can be recorded again at once. */
#include "comm/user_stream.h"

#include "comm/ctx.h"
#include "comm/error.h"

rrt_status rrt_ctx_set_stream(rrt_ctx_t ctx, void *stream) {
  const char *op = "rrt_ctx_set_stream";
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "ctx is NULL");
  if (ctx->user_depth > 0)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "called while a call on the context runs");
  if (stream && !ctx->dev->is_cuda)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                     "stream %p given, but the %s backend has no CUDA streams (only NULL, "
                     "no caller's stream, is accepted)",
                     stream, rrt_backend_name(ctx->backend));
  if (stream && !ctx->user_event) {
    rrt_status st = ctx->dev->event_create(&ctx->user_event);
    if (st != RRT_SUCCESS)
      return rrt_error(ctx, st, op, "creating the event that orders the caller's stream");
  }
  ctx->user_stream = stream;
  return RRT_SUCCESS;
}

void *rrt_ctx_stream(rrt_ctx_t ctx) { return ctx ? ctx->user_stream : NULL; }

/* `to` waits for the work queued on `from` so far. */
static rrt_status order(rrt_ctx_t ctx, rrt_stream to, rrt_stream from) {
  RRT_CHECK(ctx->dev->event_record(ctx->user_event, from));
  return ctx->dev->stream_wait_event(to, ctx->user_event);
}

rrt_status rrt_user_stream_enter(rrt_ctx_t ctx, const char *op) {
  if (ctx->user_depth++ > 0 || !ctx->user_stream) return RRT_SUCCESS;
  rrt_status st = order(ctx, ctx->compute_stream, ctx->user_stream);
  if (st == RRT_SUCCESS && ctx->comm_stream != ctx->compute_stream)
    st = order(ctx, ctx->comm_stream, ctx->user_stream);
  if (st == RRT_SUCCESS) return RRT_SUCCESS;
  ctx->user_depth--;
  return rrt_error(ctx, st, op, "ordering ringrt's streams after the caller's stream %p failed",
                   ctx->user_stream);
}

rrt_status rrt_user_stream_leave(rrt_ctx_t ctx, const char *op, rrt_status st) {
  if (--ctx->user_depth > 0 || !ctx->user_stream) return st;
  rrt_status ls = order(ctx, ctx->user_stream, ctx->compute_stream);
  if (ls == RRT_SUCCESS && ctx->comm_stream != ctx->compute_stream)
    ls = order(ctx, ctx->user_stream, ctx->comm_stream);
  if (ls == RRT_SUCCESS || st != RRT_SUCCESS) return st;
  return rrt_error(ctx, ls, op, "ordering the caller's stream %p after ringrt's streams failed",
                   ctx->user_stream);
}

void rrt_user_stream_release(rrt_ctx_t ctx) {
  if (ctx->user_event) ctx->dev->event_destroy(ctx->user_event);
  ctx->user_event = NULL;
  ctx->user_stream = NULL;
}

/* Internal: the caller's CUDA stream of a context (rrt_ctx_set_stream).
 *
 * Every public call that queues device work brackets it: enter orders
 * ringrt's compute and comm streams after the work queued on the caller's
 * stream so far, leave orders the caller's stream after everything queued on
 * ringrt's streams. Both are event records and stream waits, never a host
 * wait. Calls nest (a Krylov solve calls SpMV and the ILU apply): only the
 * outermost pair orders anything. Without a caller's stream both do nothing. */
#ifndef RRT_COMM_USER_STREAM_H
#define RRT_COMM_USER_STREAM_H

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Order ringrt's streams after the caller's. On failure (recorded under
 *  `op`) the call must not run and leave must not be called. */
rrt_status rrt_user_stream_enter(rrt_ctx_t ctx, const char *op);
/** Order the caller's stream after ringrt's streams; returns `st` (the
 *  call's status), or the ordering's error when the call succeeded. */
rrt_status rrt_user_stream_leave(rrt_ctx_t ctx, const char *op, rrt_status st);
/** Release the ordering event (context destruction). */
void rrt_user_stream_release(rrt_ctx_t ctx);

#ifdef __cplusplus
}
#endif
#endif

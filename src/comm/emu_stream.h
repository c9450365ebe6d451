/* Internal: streams and events of the emu device layer (comm/emu_stream.c).
 *
 * On a GPU, work queued on a stream runs later, streams run concurrently,
 * and only events order one stream after another; host code that forgets a
 * stream synchronisation or an event wait is wrong there whatever it gives
 * when every call finishes its work before returning. The emu streams keep
 * those rules, deterministically, so that such a fault gives a wrong answer
 * in CI instead of passing:
 *   - a stream queues copies, memsets, kernel launches, event records and
 *     event waits, and runs them in order;
 *   - a deferred stream (the comm stream, or any stream after
 *     rrt_emu_stream_set_eager(s, 0)) runs its work only when something
 *     needs it: a synchronisation of the stream or of an event recorded on
 *     it, an event query (it runs the work up to the event, then answers
 *     done), or a queued wait of another stream that reaches it;
 *   - an eager stream (the default) runs its work as soon as it is queued,
 *     except behind a wait for an event whose work has not run: then it
 *     queues everything after that wait until a synchronisation needs it or
 *     a later enqueue finds the event done.
 * So transfers on the comm stream land as late as the rules allow, and
 * compute runs as early as they allow: a kernel that reads a buffer without
 * waiting for the transfer into it reads the old contents. With
 * RINGRT_EMU_STREAMS=defer the context's compute stream is deferred too
 * (comm/context.c): then a host read of a result without its
 * synchronisation sees the old bytes, while a missing event wait may go
 * unseen (the host's synchronisations run the streams in a benign order);
 * the tests run both. Copies from
 * device memory into host memory land when the stream runs them too, so a
 * host read without a synchronisation sees the old bytes on a deferred
 * stream. A copy from host memory reads its source when queued (as CUDA does
 * from pageable memory, which may be reused once the call returns).
 *
 * The first failure of a stream's work (a kernel fault) is returned by the
 * next synchronisation with the stream (stream or event synchronise, event
 * query), once, as CUDA reports a kernel's error at the next synchronising
 * call. Streams and events belong to one host thread at a time, as the
 * context that owns them does. */
#ifndef RRT_COMM_EMU_STREAM_H
#define RRT_COMM_EMU_STREAM_H

#include <stddef.h>

#include "comm/device.h"

#ifdef __cplusplus
extern "C" {
#endif

rrt_status rrt_emu_stream_create(rrt_stream *stream, int high_priority);
rrt_status rrt_emu_stream_destroy(rrt_stream stream);
rrt_status rrt_emu_stream_sync(rrt_stream stream);
rrt_status rrt_emu_memcpy(void *dst, const void *src, size_t bytes, rrt_copy_kind kind,
                          rrt_stream stream);
rrt_status rrt_emu_memset(void *dst, int value, size_t bytes, rrt_stream stream);
rrt_status rrt_emu_event_create(rrt_event *event);
rrt_status rrt_emu_event_destroy(rrt_event event);
rrt_status rrt_emu_event_record(rrt_event event, rrt_stream stream);
rrt_status rrt_emu_event_query(rrt_event event, int *done);
rrt_status rrt_emu_event_sync(rrt_event event);
rrt_status rrt_emu_stream_wait_event(rrt_stream stream, rrt_event event);
rrt_status rrt_emu_event_elapsed_ms(rrt_event start, rrt_event end, float *ms);

/** Eager (1) or deferred (0) execution of a stream's work (see above);
 *  switching to eager runs what can run now. */
rrt_status rrt_emu_stream_set_eager(rrt_stream stream, int eager);

/** Operations queued on `stream` that have not run yet (tests). */
size_t rrt_emu_stream_pending(rrt_stream stream);

#ifdef __cplusplus
}
#endif
#endif

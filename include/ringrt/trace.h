/* ringrt: per-phase timers and the Chrome trace.
 *
 * Every context keeps totals per named phase (always on, cheap) and, once
 * tracing is enabled, a list of intervals per track. rrt_trace_write()
 * gathers every rank's intervals into one Chrome trace JSON (one process per
 * rank, one thread per track) that opens in Perfetto or chrome://tracing.
 */
#ifndef RINGRT_TRACE_H
#define RINGRT_TRACE_H

#include "ringrt/export.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The track an interval belongs to: host code, the compute stream, the comm stream. */
typedef enum rrt_track {
  RRT_TRACK_HOST = 0,
  RRT_TRACK_COMPUTE,
  RRT_TRACK_COMM,
  RRT_TRACK_COUNT
} rrt_track;

/** Wall clock in seconds (MPI_Wtime). */
RRT_API double rrt_time_now(void);

/** Start recording intervals for the trace (timers run regardless). */
RRT_API rrt_status rrt_trace_enable(rrt_ctx_t ctx, int on);

/** Record a finished interval [t0, t1] (rrt_time_now() seconds) on a track;
 *  also adds t1 - t0 to the phase total of `name`. `name` is copied. */
RRT_API rrt_status rrt_trace_add(rrt_ctx_t ctx, rrt_track track, const char *name, double t0,
                                 double t1);

/** Host-side phase: begin returns the start time; end records the interval. */
RRT_API double rrt_phase_begin(rrt_ctx_t ctx);
RRT_API rrt_status rrt_phase_end(rrt_ctx_t ctx, const char *name, double t_begin);

/** Accumulated seconds and count of a phase on this rank (0 if never seen). */
RRT_API double rrt_phase_seconds(rrt_ctx_t ctx, const char *name, int *count);
/** Reset all phase totals and recorded intervals on this rank. */
RRT_API void rrt_phase_reset(rrt_ctx_t ctx);

/** Collective: gather every rank's intervals and write one Chrome trace JSON
 *  to `path` from rank 0. Does nothing useful if tracing was never enabled
 *  (writes an empty trace). The file is written to a temporary next to
 *  `path` and renamed over it after a complete write: a failure (reported
 *  on every rank, naming the file and the OS error) leaves an existing
 *  `path` untouched. */
RRT_API rrt_status rrt_trace_write(rrt_ctx_t ctx, const char *path);

#ifdef __cplusplus
}
#endif
#endif

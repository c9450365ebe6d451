/* Internal: what the trace keeps per context (comm/trace.c records it,
 * comm/trace_write.c writes it). */
#ifndef RRT_COMM_TRACE_STATE_H
#define RRT_COMM_TRACE_STATE_H

#include <stddef.h>

#define RRT_NAME_LEN 48

typedef struct rrt_phase_total {
  char name[RRT_NAME_LEN];
  double seconds;
  int count;
} rrt_phase_total;

typedef struct rrt_interval {
  char name[RRT_NAME_LEN];
  int track;
  double t0, t1; /* seconds since the trace origin */
} rrt_interval;

struct rrt_trace_state {
  double origin; /* rrt_time_now() when the context was created */
  int enabled;
  rrt_phase_total *phases;
  int nphases, cap_phases;
  rrt_interval *intervals;
  size_t nintervals, cap_intervals;
};

#endif

/* Message plans, pure data without MPI: which items go to (or come from)
 * which rank after which level. The halo exchange of src/comm/halo.h moves
 * values along them; the ILU(0) analysis and the SpMV ghosts build them. */
#ifndef RRT_SCHED_MSG_PLAN_H
#define RRT_SCHED_MSG_PLAN_H

#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Messages of a communication plan, sorted by (level, peer); within a
 *  message the items are sorted by key (the global row), so the sender's and
 *  the receiver's lists line up without telling each other. */
typedef struct rrt_msg_plan {
  int nmsg;
  int32_t *level; /* level after which the message goes (0: no levels) */
  int32_t *peer;
  int64_t *ptr; /* nmsg + 1 offsets into idx */
  int32_t *idx; /* local rows (send plans) or ghost slots (receive plans) */
} rrt_msg_plan;

/** Build a plan from `count` items (peer, idx, level or NULL for 0, key). */
rrt_status rrt_msg_plan_build(int64_t count, const int32_t *peer, const int32_t *idx,
                              const int32_t *level, const int64_t *key, rrt_msg_plan *out);
void rrt_msg_plan_free(rrt_msg_plan *p);

#ifdef __cplusplus
}
#endif
#endif

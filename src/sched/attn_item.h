/* One rectangle of ring attention work (see ring_schedule.h). Kept free of
 * other includes so kernel sources (nvcc and emulator builds) can use it
 * without pulling in MPI. */
#ifndef RRT_SCHED_ATTN_ITEM_H
#define RRT_SCHED_ATTN_ITEM_H

#include <stdint.h>

/** One rectangle of work. Local query row q_begin + i has global position
 *  q_pos0 + i * q_stride; local key row k_begin + j has k_pos0 + j * k_stride. */
typedef struct rrt_attn_item {
  int64_t q_begin, q_len, q_pos0, q_stride;
  int64_t k_begin, k_len, k_pos0, k_stride;
  int causal; /**< 1: apply key_pos <= query_pos; 0: every pair is visible */
} rrt_attn_item;

#endif

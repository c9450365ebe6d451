/* One rectangle of ring attention work (see ring_schedule.h). Kept free of
 * other includes so kernel sources (nvcc and emulator builds) can use it
 * without pulling in MPI. */
#ifndef RRT_SCHED_ATTN_ITEM_H
#define RRT_SCHED_ATTN_ITEM_H

#include <stdint.h>

/** One rectangle of work. Local query row q_begin + i has global position
 *  q_pos0 + i * q_stride; local key row k_begin + j has k_pos0 + j * k_stride
 *  (strides >= 1: positions increase with the local index).
 *
 *  masked = 0: every pair of the rectangle is visible.
 *  masked = 1: query row q (local index on this rank) sees the keys whose
 *  global positions lie in [row_lo[q], row_hi[q]] (inclusive), the row mask
 *  of the plan (rrt_attn_kmask). Both bounds are nondecreasing in q's
 *  position, so within an item the visible keys of row i are one range of
 *  local key indices, [jb(i), je(i)), whose ends never decrease with i
 *  (rrt_attn_item_keys in kernels/attn_math.h computes it). */
typedef struct rrt_attn_item {
  int64_t q_begin, q_len, q_pos0, q_stride;
  int64_t k_begin, k_len, k_pos0, k_stride;
  int masked;
} rrt_attn_item;

/** The row mask of a plan: per local query row, the inclusive range of
 *  global key positions it may see (causal, window and document bounds
 *  folded together). Backend memory (device memory for cuda); q_rows
 *  entries each. NULL when no item of the plan is masked. */
typedef struct rrt_attn_kmask {
  const int64_t *lo, *hi;
} rrt_attn_kmask;

#endif

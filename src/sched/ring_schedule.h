/* Ring attention schedule: pure functions from sizes to the work of one
 * (rank, step). No MPI, no memory: unit-tested on their own.
 *
 * Step s on rank r holds the K/V block of rank (r - s) mod P. The work of a
 * step is a short list of items, each a rectangle of (local query rows) x
 * (local key rows) of the two shards, either fully visible or to be masked
 * by global positions (key <= query). Rectangles the causal mask hides
 * entirely are not listed: they are skipped, never computed.
 *
 * Positions inside an item are affine in the local index (true for every
 * layout), so kernels mask and skip tiles with two integers per side. */
#ifndef RRT_SCHED_RING_SCHEDULE_H
#define RRT_SCHED_RING_SCHEDULE_H

#include <stdint.h>

#include "ringrt/attn.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRT_RING_MAX_ITEMS 4

/** The work of one (rank, step). */
typedef struct rrt_ring_step {
  int kv_src; /**< rank whose K/V block this step uses: (rank - step) mod P */
  int nitems; /**< 0 when the whole step is masked (contiguous causal, later source) */
  rrt_attn_item items[RRT_RING_MAX_ITEMS];
  int64_t pairs; /**< (query, key) pairs the mask keeps, per batch and head */
} rrt_ring_step;

/** Plan step `step` (0..nranks-1) of `rank`. RRT_ERR_INVALID_ARG when the
 *  sizes do not split as the layout requires or indices are out of range. */
rrt_status rrt_ring_step_plan(rrt_attn_layout layout, int causal, int64_t seq, int nranks, int rank,
                              int step, rrt_ring_step *out);

/** Pairs of an item that the mask keeps (q_len * k_len when not causal). */
int64_t rrt_attn_item_pairs(const rrt_attn_item *item);

#ifdef __cplusplus
}
#endif
#endif

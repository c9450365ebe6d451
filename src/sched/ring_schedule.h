/* Ring attention schedule: pure functions from sizes to the work of one
 * (rank, step). No MPI, no backend memory: unit-tested on their own.
 *
 * A rank's shard is a list of segments: runs of local rows whose global
 * positions are affine in the local index and lie in one document (one
 * segment per document piece of the rank; the layouts of ringrt/attn.h).
 * Step s on rank r holds the K/V block of rank (r - s) mod P; its work is
 * the (query segment) x (key segment of the source) pairs of the same
 * document in which some query row sees some key, each trimmed to the rows
 * and keys that see anything: an item (attn_item.h), fully visible
 * (masked = 0) or masked by the plan's row mask. Pairs that nothing sees
 * are not listed: skipped, never computed.
 *
 * The row mask of a query at position i in document [ds, de): keys in
 * [max(ds, i - left), min(de - 1, i + right)], left/right the window
 * (-1: unlimited, so ds / de - 1), causal forcing right = 0. Both ends are
 * nondecreasing in i, and every row sees itself. */
#ifndef RRT_SCHED_RING_SCHEDULE_H
#define RRT_SCHED_RING_SCHEDULE_H

#include <stdint.h>

#include "ringrt/attn.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Local rows [begin, begin + len) at positions pos0 + i * stride, inside
 *  document doc. */
typedef struct rrt_attn_seg {
  int64_t begin, len, pos0, stride, doc;
} rrt_attn_seg;

/** The whole problem's layout and mask, for every rank. */
typedef struct rrt_ring_sched {
  rrt_attn_layout layout;
  int P;
  int64_t seq;
  int causal;
  int64_t left, right; /* effective window, -1 unlimited (causal: right = 0) */
  int64_t ndocs;
  int64_t *cu;      /* ndocs + 1 offsets (dense: {0, seq}), owned */
  int64_t *seg_off; /* rank r's segments: segs[seg_off[r] .. seg_off[r + 1]) */
  rrt_attn_seg *segs;
  int64_t *len;    /* shard length of every rank */
  int64_t kv_rows; /* the longest shard */
  int masked;      /* some pair is hidden (causal, window or documents) */
} rrt_ring_sched;

/** The work of one (rank, step). */
typedef struct rrt_ring_step {
  int kv_src;           /**< rank whose K/V block this step uses: (rank - step) mod P */
  int nitems;           /**< 0 when the whole step is masked */
  rrt_attn_item *items; /**< nitems items, malloc'd (rrt_ring_step_free) */
  int64_t pairs;        /**< (query, key) pairs the mask keeps, per batch and head */
} rrt_ring_step;

/** The schedule of a descriptor that passed rrt_attn_desc_check (its
 *  cu_seqlens are copied). RRT_ERR_INVALID_ARG on bad sizes,
 *  RRT_ERR_OUT_OF_MEMORY. */
rrt_status rrt_ring_sched_create(const rrt_attn_desc *desc, int nranks, rrt_ring_sched **out);
void rrt_ring_sched_destroy(rrt_ring_sched *s);

/** Global positions of `rank`'s shard rows (s->len[rank] entries). */
void rrt_ring_sched_positions(const rrt_ring_sched *s, int rank, int64_t *pos);
/** The row mask of `rank`: inclusive key positions [lo[q], hi[q]] of each
 *  local query row q (s->len[rank] entries each). */
void rrt_ring_sched_row_mask(const rrt_ring_sched *s, int rank, int64_t *lo, int64_t *hi);

/** The row mask of one query: document `doc`, position `pos`. */
void rrt_ring_sched_bounds(const rrt_ring_sched *s, int64_t doc, int64_t pos, int64_t *lo,
                           int64_t *hi);

/** Plan step `step` (0..P-1) of `rank`; out->items is malloc'd (NULL when
 *  there are none). RRT_ERR_INVALID_ARG for indices out of range. */
rrt_status rrt_ring_step_plan(const rrt_ring_sched *s, int rank, int step, rrt_ring_step *out);
void rrt_ring_step_free(rrt_ring_step *st);

/** Ring steps that run: 1 + the last step on which any rank has an item
 *  (the same on every rank; >= 1). */
int rrt_ring_sched_nsteps(const rrt_ring_sched *s);

/** (query, key) pairs of the whole problem that the mask keeps, per batch
 *  and head, from the definition (no schedule). */
double rrt_attn_mask_pairs(const rrt_attn_desc *desc);

#ifdef __cplusplus
}
#endif
#endif

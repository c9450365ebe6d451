/* ILU(0) schedules, pure functions without MPI: the nonzero-balanced row
 * partition, the orderings (RCM, greedy multicolour), the level analysis of
 * L and U (one sweep; repeated sweeps with levels of remote rows filled in
 * between give the distributed analysis). The message plans it sends rows
 * along are in sched/msg_plan.h. */
#ifndef RRT_SCHED_ILU0_LEVELS_H
#define RRT_SCHED_ILU0_LEVELS_H

#include <stdint.h>

#include "ringrt/status.h"
#include "sched/msg_plan.h" /* the plans of the distributed analysis */

#ifdef __cplusplus
extern "C" {
#endif

/** Contiguous row blocks with about equal nonzeros: offsets[0] = 0,
 *  offsets[nparts] = n, non-decreasing. Part p gets the rows whose nonzero
 *  midpoint falls in [p, p+1) * nnz / nparts (deterministic). */
void rrt_partition_nnz(int64_t n, const int64_t *rowptr, int nparts, int64_t *offsets);

/** Owner of global row g under `offsets` (binary search). */
int rrt_partition_owner(const int64_t *offsets, int nparts, int64_t g);

/** Symmetrised pattern of a square matrix whose rows have sorted columns,
 *  diagonal dropped, columns sorted and unique: *sptr (n+1) and *scol
 *  malloc'd. O(nnz). */
rrt_status rrt_graph_symmetrize(int64_t n, const int64_t *rowptr, const int64_t *col,
                                int64_t **sptr, int64_t **scol);

/** Reverse Cuthill-McKee of the symmetrised graph (sptr/scol from
 *  rrt_graph_symmetrize): pos[old] = new index. Each component starts at a
 *  pseudo-peripheral node; ties go to the lower index (deterministic). */
rrt_status rrt_order_rcm(int64_t n, const int64_t *sptr, const int64_t *scol, int64_t *pos);

/** Greedy colouring in natural order (smallest colour unused by coloured
 *  neighbours), then rows sorted by (colour, index): pos[old] = new index.
 *  Returns the number of colours in *ncolors. */
rrt_status rrt_order_multicolor(int64_t n, const int64_t *sptr, const int64_t *scol, int64_t *pos,
                                int *ncolors);

/** One level sweep over local rows. Row i (local index, columns given as
 *  "extended" indices: < nloc local rows, >= nloc remote rows) depends on the
 *  columns whose position is below pos_ext[i] (upper = 0: L) or above it
 *  (upper = 1: U). `order` lists the local rows by increasing position for L
 *  and decreasing for U, so one sweep finishes every row whose remote
 *  dependencies are known. level_ext: 0 = unknown, else level >= 1 (filled
 *  for local rows). Returns the number of local rows still unknown. */
int64_t rrt_level_sweep(int64_t nloc, const int32_t *order, const int64_t *rowptr,
                        const int32_t *ext_col, const int64_t *pos_ext, int upper,
                        int32_t *level_ext);

#ifdef __cplusplus
}
#endif
#endif

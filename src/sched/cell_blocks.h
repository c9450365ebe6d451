/* Cell blocks: which rank owns which cells, and the fixed reduction blocks.
 *
 * Cells are cut into reduction blocks of `block` consecutive cells whose
 * boundaries depend only on n and the block size, never on the number of
 * ranks. Each rank owns a contiguous run of whole blocks (as even as the
 * block count allows). A sum over cells is then taken per block, in cell
 * order, and the block partials are added in block order: the result is the
 * same bits for any rank count. Pure function of sizes; no MPI. */
#ifndef RRT_SCHED_CELL_BLOCKS_H
#define RRT_SCHED_CELL_BLOCKS_H

#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRT_CELL_BLOCK_DEFAULT 64

typedef struct rrt_cell_blocks {
  int64_t n;       /* cells */
  int64_t block;   /* cells per reduction block (the last may be short) */
  int64_t nblocks; /* ceil(n / block) */
  int nranks;
  int64_t *cell_start; /* nranks + 1 entries: rank r owns [cell_start[r], cell_start[r+1]) */
  int64_t *blk_start;  /* nranks + 1 entries: rank r owns blocks [blk_start[r], blk_start[r+1]) */
} rrt_cell_blocks;

/** Plan n cells over nranks with reduction blocks of `block` cells (<= 0:
 *  RRT_CELL_BLOCK_DEFAULT). Ranks may own no cell when n is small. */
rrt_status rrt_cell_blocks_create(int64_t n, int nranks, int64_t block, rrt_cell_blocks *plan);
void rrt_cell_blocks_destroy(rrt_cell_blocks *plan);

/** Rank owning global cell `cell` (binary search over cell_start). */
int rrt_cell_blocks_owner(const rrt_cell_blocks *plan, int64_t cell);

#ifdef __cplusplus
}
#endif
#endif

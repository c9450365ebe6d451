/* Contiguous cell blocks over ranks (see cell_blocks.h). */
#include "sched/cell_blocks.h"

#include <stdlib.h>
#include <string.h>

rrt_status rrt_cell_blocks_create(int64_t n, int nranks, int64_t block, rrt_cell_blocks *plan) {
  memset(plan, 0, sizeof *plan);
  if (n < 0 || nranks < 1) return RRT_ERR_INVALID_ARG;
  if (block <= 0) block = RRT_CELL_BLOCK_DEFAULT;
  plan->n = n;
  plan->block = block;
  plan->nblocks = (n + block - 1) / block;
  plan->nranks = nranks;
  plan->cell_start = malloc((size_t)(nranks + 1) * sizeof(int64_t));
  plan->blk_start = malloc((size_t)(nranks + 1) * sizeof(int64_t));
  if (!plan->cell_start || !plan->blk_start) {
    rrt_cell_blocks_destroy(plan);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int r = 0; r <= nranks; r++) {
    int64_t b = plan->nblocks * r / nranks; /* even share of whole blocks */
    int64_t c = b * block;
    plan->blk_start[r] = b;
    plan->cell_start[r] = c < n ? c : n;
  }
  return RRT_SUCCESS;
}

void rrt_cell_blocks_destroy(rrt_cell_blocks *plan) {
  if (!plan) return;
  free(plan->cell_start);
  free(plan->blk_start);
  plan->cell_start = plan->blk_start = NULL;
}

int rrt_cell_blocks_owner(const rrt_cell_blocks *plan, int64_t cell) {
  int lo = 0, hi = plan->nranks - 1;
  while (lo < hi) { /* last rank whose start <= cell, skipping empty ranks */
    int mid = (lo + hi + 1) / 2;
    if (plan->cell_start[mid] <= cell)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

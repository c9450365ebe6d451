/* The fixed-order sum of SEACells: per-cell values are summed per fixed
 * global block of cells (sched/cell_blocks.h) in cell order, the block
 * partials gathered in block order and summed in that order on every rank.
 * Blocks do not depend on the rank count, so neither do the bits. */
#include <stdlib.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "seacells/internal.h"

rrt_status rrt_sc_block_sum(rrt_sc_run *s, const double *vals, double *sum) {
  const rrt_cell_blocks *pl = &s->plan;
  int64_t b0 = pl->blk_start[s->rank], b1 = pl->blk_start[s->rank + 1];
  double *part = malloc((size_t)(b1 - b0 + 1) * sizeof(double)), *all = NULL;
  if (!part) return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "block partials");
  for (int64_t b = b0; b < b1; b++) {
    int64_t lo = b * pl->block - s->c0, hi = (b + 1) * pl->block - s->c0;
    if (hi > s->nl) hi = s->nl;
    double acc = 0.0;
    for (int64_t i = lo; i < hi; i++)
      acc = acc + vals[i];
    part[b - b0] = acc;
  }
  size_t total = 0;
  rrt_status st = rrt_host_allgatherv_alloc(s->ctx, part, (size_t)(b1 - b0) * sizeof(double),
                                            (void **)&all, NULL, &total);
  if (st == RRT_SUCCESS) {
    double acc = 0.0; /* blocks arrive in rank order = block order */
    for (size_t b = 0; b < total / sizeof(double); b++)
      acc = acc + all[b];
    *sum = acc;
  }
  free(part);
  free(all);
  return st;
}

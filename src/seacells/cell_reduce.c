/* Reductions over all cells whose result does not depend on the rank
 * count: the fixed-order sum (per-cell values summed per fixed global block
 * of cells, sched/cell_blocks.h, in cell order; the block partials gathered
 * in block order and summed in that order on every rank) and the argmax
 * with ties on the lowest cell. */
#include <math.h>
#include <stdlib.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/seacells_math.h"
#include "ringrt/transport.h"
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

/* Global argmax of local scores (lowest cell on ties) via min-loc of -score. */
rrt_status rrt_sc_argmax(rrt_sc_run *s, const double *score, int64_t *best) {
  rrt_minloc ml = {INFINITY, INT64_MAX};
  for (int64_t i = 0; i < s->nl; i++)
    if (rrt_sc_argmin_better(-score[i], s->c0 + i, ml.value, ml.index))
      ml.value = -score[i], ml.index = s->c0 + i;
  RRT_CHECK(rrt_allreduce_minloc(s->ctx, &ml, 1));
  *best = ml.index;
  return RRT_SUCCESS;
}

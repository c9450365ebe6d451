/* A locality order of the rows a rank holds (see rrt_sc_locality_order in
 * internal.h).
 *
 * The per-step products gather, for every local cell, the rows of its
 * neighbours (M Bg rows to form K Bg rows, K Bg rows by archetype column).
 * Cells arrive in whatever order the input has, usually unrelated to the
 * cell states, so those neighbours lie anywhere in memory and each gather
 * misses the caches once the rows outgrow them (the B update's time per
 * unit of work grew about 2x from 20k to 100k cells). A breadth-first order
 * over the kNN graph puts neighbours within a few BFS layers of each other.
 * Only where rows are stored and the order cells are visited change; every
 * sum keeps its order, so the bits do not. */
#include <stdlib.h>

#include "seacells/internal.h"
#include "comm/error.h"

rrt_status rrt_sc_locality_order(rrt_sc_run *s) {
  int64_t nl = s->nl, ng = s->ghost.count;
  s->order = malloc((size_t)(nl + 1) * sizeof(int32_t));
  s->row_order = malloc((size_t)(nl + ng + 1) * sizeof(int32_t));
  unsigned char *seen = calloc((size_t)(nl + ng + 1), 1); /* local cells, then ghosts */
  if (!s->order || !s->row_order || !seen) {
    free(seen);
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: cell order");
  }
  int64_t head = 0, tail = 0, rows = 0, seed = 0;
  while (head < nl) {
    if (head == tail) { /* a new component: its lowest unvisited cell */
      while (seen[seed])
        seed++;
      seen[seed] = 1, s->order[tail++] = (int32_t)seed;
    }
    int64_t i = s->order[head++];
    s->row_order[rows++] = (int32_t)(s->c0 + i);
    for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
      int32_t c = s->mrow.col[p];
      if (c >= s->c0 && c < s->c0 + nl) {
        if (!seen[c - s->c0]) seen[c - s->c0] = 1, s->order[tail++] = (int32_t)(c - s->c0);
        continue;
      }
      int64_t g = rrt_sc_ghost_index(&s->ghost, c); /* a ghost row: stored after its first reader */
      if (g >= 0 && !seen[nl + g]) seen[nl + g] = 1, s->row_order[rows++] = c;
    }
  }
  for (int64_t g = 0; g < ng; g++) /* ghosts no local row reads (none expected) */
    if (!seen[nl + g]) s->row_order[rows++] = s->ghost.cell[g];
  free(seen);
  return RRT_SUCCESS;
}

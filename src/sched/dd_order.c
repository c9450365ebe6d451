/* Domain-decomposition ordering, pure parts (see dd_order.h). */
#include "sched/dd_order.h"

#include <stdlib.h>

int32_t rrt_dd_part(int64_t mid2, int64_t nnz, int32_t k) {
  if (nnz <= 0) return 0;
  /* floor(mid2 * k / (2 nnz)) without forming mid2 * k (mid2 <= 2 nnz) */
  int64_t d = 2 * nnz, q = mid2 / d, r = mid2 % d;
  int64_t part = q * k + r * k / d;
  return part < k - 1 ? (int32_t)part : k - 1;
}

void rrt_dd_mark_interface(int64_t nloc, const int64_t *rowptr, const int32_t *ext_col,
                           const int32_t *sub, int32_t *iface) {
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
      int32_t e = ext_col[p];
      if (sub[e] != sub[i]) iface[i] = iface[e] = 1;
    }
}

rrt_status rrt_dd_color_greedy(int64_t n, const int64_t *sptr, const int64_t *scol, int32_t *color,
                               int *ncolors) {
  /* mark[c] == i: colour c is taken by a lower neighbour of i */
  int64_t *mark = malloc(((size_t)n + 2) * sizeof(int64_t));
  if (!mark) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t c = 0; c < n + 2; c++)
    mark[c] = -1;
  int nc = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t p = sptr[i]; p < sptr[i + 1]; p++)
      if (scol[p] < i) mark[color[scol[p]]] = i;
    int32_t c = 0;
    while (mark[c] == i)
      c++;
    color[i] = c;
    if (c + 1 > nc) nc = c + 1;
  }
  free(mark);
  *ncolors = nc;
  return RRT_SUCCESS;
}

/* ILU(0) schedules (see ilu0_levels.h). */
#include "sched/ilu0_levels.h"

#include <stdlib.h>
#include <string.h>

#include "sched/dd_order.h" /* rrt_dd_color_greedy: the same colouring */

void rrt_partition_nnz(int64_t n, const int64_t *rowptr, int nparts, int64_t *offsets) {
  int64_t nnz = rowptr[n];
  offsets[0] = 0;
  int64_t i = 0;
  for (int p = 1; p < nparts; p++) {
    /* Row i goes to part p-1 while its midpoint (2*rowptr[i] + len) / 2 is
     * below p * nnz / nparts; compare in integers (x 2 nparts). */
    while (i < n && (rowptr[i] + rowptr[i + 1]) * (int64_t)nparts < 2 * (int64_t)p * nnz)
      i++;
    offsets[p] = i;
  }
  offsets[nparts] = n;
}

int rrt_partition_owner(const int64_t *offsets, int nparts, int64_t g) {
  int lo = 0, hi = nparts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= g)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* The pattern of A + A^T without the diagonal, rows sorted and unique, in O(nnz): the
 * transpose built by a counting pass comes out with sorted rows (rows are
 * scanned in order), and row i of the result merges the sorted rows i of A
 * and of A^T. */
rrt_status rrt_graph_symmetrize(int64_t n, const int64_t *rowptr, const int64_t *col,
                                int64_t **sptr_out, int64_t **scol_out) {
  int64_t nnz = rowptr[n];
  int64_t *tptr = calloc((size_t)n + 2, sizeof(int64_t));
  int64_t *tcol = malloc(((size_t)nnz + 1) * sizeof(int64_t));
  int64_t *sptr = malloc(((size_t)n + 1) * sizeof(int64_t));
  int64_t *scol = malloc((2 * (size_t)nnz + 1) * sizeof(int64_t));
  if (!tptr || !tcol || !sptr || !scol) {
    free(tptr), free(tcol), free(sptr), free(scol);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t p = 0; p < nnz; p++)
    tptr[col[p] + 2]++;
  for (int64_t i = 0; i < n; i++)
    tptr[i + 2] += tptr[i + 1];
  for (int64_t i = 0; i < n; i++) /* tptr[c + 1]: fill pointer of row c of A^T */
    for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++)
      tcol[tptr[col[p] + 1]++] = i;
  int64_t w = 0;
  for (int64_t i = 0; i < n; i++) {
    sptr[i] = w;
    int64_t p = rowptr[i], pe = rowptr[i + 1], q = tptr[i], qe = tptr[i + 1], last = -1;
    while (p < pe || q < qe) {
      int64_t c = q >= qe || (p < pe && col[p] <= tcol[q]) ? col[p++] : tcol[q++];
      if (c != i && c != last) scol[w++] = c;
      last = c;
    }
  }
  sptr[n] = w;
  free(tptr), free(tcol);
  *sptr_out = sptr;
  *scol_out = scol;
  return RRT_SUCCESS;
}

/* BFS from `root` over unvisited nodes, appending to queue[*qn...]; neighbours
 * in increasing (degree, index). Returns the index in queue where it started. */
static int64_t bfs(int64_t root, const int64_t *sptr, const int64_t *scol, char *seen,
                   int64_t *queue, int64_t *qn, int64_t *tmp) {
  int64_t start = *qn, head = *qn;
  queue[(*qn)++] = root;
  seen[root] = 1;
  while (head < *qn) {
    int64_t u = queue[head++], k = 0;
    for (int64_t p = sptr[u]; p < sptr[u + 1]; p++)
      if (!seen[scol[p]]) seen[scol[p]] = 1, tmp[k++] = scol[p];
    /* insertion sort by (degree, index): neighbour lists are short */
    for (int64_t a = 1; a < k; a++) {
      int64_t x = tmp[a], dx = sptr[x + 1] - sptr[x], b = a;
      while (b > 0) {
        int64_t y = tmp[b - 1], dy = sptr[y + 1] - sptr[y];
        if (dy < dx || (dy == dx && y < x)) break;
        tmp[b] = y;
        b--;
      }
      tmp[b] = x;
    }
    for (int64_t a = 0; a < k; a++)
      queue[(*qn)++] = tmp[a];
  }
  return start;
}

rrt_status rrt_order_rcm(int64_t n, const int64_t *sptr, const int64_t *scol, int64_t *pos) {
  char *seen = calloc((size_t)n + 1, 1);
  int64_t *queue = malloc(((size_t)n + 1) * sizeof(int64_t));
  int64_t *tmp = malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!seen || !queue || !tmp) {
    free(seen), free(queue), free(tmp);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  int64_t qn = 0;
  for (int64_t s = 0; s < n; s++) {
    if (seen[s]) continue;
    /* Component of s: pick its minimum-degree node, then walk to a
     * pseudo-peripheral node (last node of a BFS, a few rounds). */
    int64_t root = s, q0 = qn;
    bfs(s, sptr, scol, seen, queue, &qn, tmp);
    for (int64_t a = q0; a < qn; a++) {
      int64_t x = queue[a];
      if (sptr[x + 1] - sptr[x] < sptr[root + 1] - sptr[root]) root = x;
    }
    for (int round = 0; round < 2; round++) {
      for (int64_t a = q0; a < qn; a++)
        seen[queue[a]] = 0;
      qn = q0;
      bfs(root, sptr, scol, seen, queue, &qn, tmp);
      int64_t last = queue[qn - 1];
      if (last == root) break;
      root = last;
    }
    for (int64_t a = q0; a < qn; a++)
      seen[queue[a]] = 0;
    qn = q0;
    bfs(root, sptr, scol, seen, queue, &qn, tmp);
  }
  for (int64_t a = 0; a < n; a++)
    pos[queue[a]] = n - 1 - a; /* reversed */
  free(seen), free(queue), free(tmp);
  return RRT_SUCCESS;
}

rrt_status rrt_order_multicolor(int64_t n, const int64_t *sptr, const int64_t *scol, int64_t *pos,
                                int *ncolors) {
  int32_t *color = malloc(((size_t)n + 1) * sizeof(int32_t));
  int nc = 0;
  if (!color || rrt_dd_color_greedy(n, sptr, scol, color, &nc) != RRT_SUCCESS) {
    free(color);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  /* counting sort by colour, stable in index */
  int64_t *start = calloc((size_t)nc + 1, sizeof(int64_t));
  if (!start) {
    free(color);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t i = 0; i < n; i++)
    start[color[i] + 1]++;
  for (int c = 0; c < nc; c++)
    start[c + 1] += start[c];
  for (int64_t i = 0; i < n; i++)
    pos[i] = start[color[i]]++;
  *ncolors = nc;
  free(start), free(color);
  return RRT_SUCCESS;
}

int64_t rrt_level_sweep(int64_t nloc, const int32_t *order, const int64_t *rowptr,
                        const int32_t *ext_col, const int64_t *pos_ext, int upper,
                        int32_t *level_ext) {
  int64_t unknown = 0;
  for (int64_t t = 0; t < nloc; t++) {
    int32_t i = order[t];
    if (level_ext[i]) continue;
    int64_t pi = pos_ext[i];
    int32_t lev = 0;
    int ready = 1;
    for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
      int32_t e = ext_col[p];
      int64_t pe = pos_ext[e];
      if (upper ? pe <= pi : pe >= pi) continue;
      if (!level_ext[e]) {
        ready = 0;
        break;
      }
      if (level_ext[e] > lev) lev = level_ext[e];
    }
    if (ready)
      level_ext[i] = lev + 1;
    else
      unknown++;
  }
  return unknown;
}

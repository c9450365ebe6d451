/* rrt_seacells_local_assignments on A columns with more weights than any
 * fixed bound (100 archetypes, as --fw-iter above 64 gives): the top
 * weights against a naive full sort of each column (weight descending,
 * archetype ascending), ties included, and the hard assignment equal to the
 * first. The columns are synthetic (the selection is what is tested), so no
 * MPI and no run. */
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "test_util.h"

enum { CELLS = 4, NNZ = 100, TOP = 7 };

typedef struct entry {
  double w;
  int32_t idx;
} entry;

static int by_rank(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->w != y->w) return x->w > y->w ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int main(void) {
  struct rrt_seacells h;
  memset(&h, 0, sizeof h);
  rrt_sc_run *s = &h.s;
  static int32_t idx[CELLS * NNZ];
  static double w[CELLS * NNZ];
  static int nnz[CELLS];
  s->nl = CELLS, s->capa = NNZ, s->a_idx = idx, s->a_w = w, s->a_nnz = nnz;
  srand(7);
  for (int i = 0; i < CELLS; i++) {
    nnz[i] = i == 3 ? 3 : NNZ; /* the last cell has fewer weights than TOP: padding */
    for (int e = 0; e < nnz[i]; e++) {
      idx[i * NNZ + e] = 2 * e + 1;            /* ascending archetypes */
      w[i * NNZ + e] = (rand() % 1000) * 1e-4; /* small weights: many ties */
    }
  }
  /* the largest weights only beyond entry 64, with a tie between two of them */
  w[0 * NNZ + 90] = 0.5, w[0 * NNZ + 70] = 0.5, w[0 * NNZ + 99] = 0.4;
  w[1 * NNZ + 65] = 0.9;

  int64_t assign[CELLS], top_idx[CELLS * TOP];
  double top_w[CELLS * TOP];
  CHECK_OK(rrt_seacells_local_assignments(&h, TOP, assign, top_idx, top_w));
  int bad = 0;
  for (int i = 0; i < CELLS; i++) {
    entry col[NNZ];
    for (int e = 0; e < nnz[i]; e++)
      col[e] = (entry){w[i * NNZ + e], idx[i * NNZ + e]};
    qsort(col, (size_t)nnz[i], sizeof col[0], by_rank);
    for (int t = 0; t < TOP; t++) {
      int64_t want_i = t < nnz[i] ? col[t].idx : -1;
      double want_w = t < nnz[i] ? col[t].w : 0.0;
      bad += top_idx[i * TOP + t] != want_i || top_w[i * TOP + t] != want_w;
    }
    bad += assign[i] != col[0].idx;
  }
  CHECK_MSG(bad == 0, "%d top weights or hard assignments differ from the full sort", bad);
  CHECK_MSG(top_idx[0] == 141 && top_idx[1] == 181 && top_idx[2] == 199,
            "cell 0: top archetypes %lld %lld %lld, want 141 181 199 (tie: lower first)",
            (long long)top_idx[0], (long long)top_idx[1], (long long)top_idx[2]);
  return test_result();
}

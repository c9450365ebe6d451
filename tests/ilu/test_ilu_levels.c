/* Schedules without MPI: level counts against known values (2D 5-point
 * natural: 2N-1; 3D 7-point: 3N-2; multicolour on the 2D grid: 2), the
 * level sweep against the definition, orderings are permutations, the
 * nonzero-balanced partition, message plans line up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/sparse_gen.h"
#include "sched/ilu0_levels.h"
#include "test_util.h"

/* Serial levels with positions pos (NULL: natural) through the library sweep. */
static int sweep_levels(const rrt_csr *a, const int64_t *pos, int upper, int32_t *lev) {
  int64_t n = a->nrows;
  int32_t *col = malloc(((size_t)a->nnz + 1) * sizeof(int32_t));
  int32_t *order = calloc((size_t)n + 1, sizeof(int32_t));
  int64_t *p = calloc((size_t)n + 1, sizeof(int64_t));
  for (int64_t e = 0; e < a->nnz; e++)
    col[e] = (int32_t)a->col[e];
  for (int64_t i = 0; i < n; i++)
    p[i] = pos ? pos[i] : i;
  for (int64_t i = 0; i < n; i++)
    order[upper ? n - 1 - p[i] : p[i]] = (int32_t)i;
  memset(lev, 0, (size_t)n * sizeof(int32_t));
  int64_t left = rrt_level_sweep(n, order, a->rowptr, col, p, upper, lev);
  CHECK(left == 0);
  int mx = 0;
  for (int64_t i = 0; i < n; i++)
    mx = lev[i] > mx ? lev[i] : mx;
  free(col), free(order), free(p);
  return mx;
}

/* Levels straight from the definition, by fixed-point iteration. */
static int naive_levels(const rrt_csr *a, const int64_t *pos, int32_t *lev) {
  int64_t n = a->nrows;
  for (int64_t i = 0; i < n; i++)
    lev[i] = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
        int64_t k = a->col[p];
        if ((pos ? pos[k] : k) < (pos ? pos[i] : i) && lev[k] + 1 > lev[i])
          lev[i] = lev[k] + 1, changed = 1;
      }
  }
  int mx = 0;
  for (int64_t i = 0; i < n; i++)
    mx = lev[i] > mx ? lev[i] : mx;
  return mx;
}

static rrt_csr gen(const char *spec) {
  rrt_gen_spec s;
  char err[128];
  rrt_csr a;
  CHECK(rrt_gen_parse(spec, &s, err, sizeof(err)) == 0);
  CHECK(rrt_gen_block(&s, 0, rrt_gen_order(&s), &a) == RRT_SUCCESS);
  return a;
}

static int is_perm(const int64_t *pos, int64_t n) {
  char *seen = calloc((size_t)n, 1);
  int ok = 1;
  for (int64_t i = 0; i < n; i++) {
    if (pos[i] < 0 || pos[i] >= n || seen[pos[i]])
      ok = 0;
    else
      seen[pos[i]] = 1;
  }
  free(seen);
  return ok;
}

int main(void) {
  int32_t *lev = malloc(100000 * sizeof(int32_t)), *lev2 = malloc(100000 * sizeof(int32_t));
  for (int N = 1; N <= 20; N += 3) {
    char spec[64];
    snprintf(spec, sizeof(spec), "laplace2d:%d", N);
    rrt_csr a = gen(spec);
    CHECK_MSG(sweep_levels(&a, NULL, 0, lev) == 2 * N - 1, "%s L levels", spec);
    CHECK_MSG(sweep_levels(&a, NULL, 1, lev) == 2 * N - 1, "%s U levels", spec);
    CHECK(naive_levels(&a, NULL, lev2) == 2 * N - 1);
    sweep_levels(&a, NULL, 0, lev);
    CHECK(memcmp(lev, lev2, (size_t)a.nrows * sizeof(int32_t)) == 0);
    int64_t *sp, *sc, *pos = malloc((size_t)a.nrows * sizeof(int64_t));
    int nc = 0;
    CHECK(rrt_graph_symmetrize(a.nrows, a.rowptr, a.col, &sp, &sc) == RRT_SUCCESS);
    CHECK(rrt_order_multicolor(a.nrows, sp, sc, pos, &nc) == RRT_SUCCESS);
    CHECK(is_perm(pos, a.nrows));
    CHECK_MSG(nc == (N > 1 ? 2 : 1), "%s colours %d", spec, nc);
    CHECK_MSG(sweep_levels(&a, pos, 0, lev) == (N > 1 ? 2 : 1), "%s multicolour levels", spec);
    CHECK(rrt_order_rcm(a.nrows, sp, sc, pos) == RRT_SUCCESS);
    CHECK(is_perm(pos, a.nrows));
    sweep_levels(&a, pos, 0, lev);
    int mx = naive_levels(&a, pos, lev2);
    CHECK(memcmp(lev, lev2, (size_t)a.nrows * sizeof(int32_t)) == 0);
    CHECK(mx >= 1);
    free(sp), free(sc), free(pos);
    rrt_csr_free(&a);
  }
  for (int N = 1; N <= 9; N += 2) {
    char spec[64];
    snprintf(spec, sizeof(spec), "laplace3d:%d", N);
    rrt_csr a = gen(spec);
    CHECK_MSG(sweep_levels(&a, NULL, 0, lev) == 3 * N - 2, "%s levels", spec);
    CHECK_MSG(sweep_levels(&a, NULL, 1, lev) == 3 * N - 2, "%s U levels", spec);
    rrt_csr_free(&a);
  }
  /* convection-diffusion: non-symmetric values, the 5-point pattern */
  {
    rrt_csr a = gen("convdiff2d:9,100");
    CHECK(a.nnz == 5 * 81 - 4 * 9);
    CHECK(sweep_levels(&a, NULL, 0, lev) == 17);
    CHECK(a.val[a.rowptr[40]] != a.val[a.rowptr[40 + 1] - 1]); /* south != north */
    rrt_csr_free(&a);
  }
  /* partition: contiguous, covers all, about equal nonzeros */
  {
    int64_t rp[101];
    rp[0] = 0;
    for (int i = 0; i < 100; i++)
      rp[i + 1] = rp[i] + (i < 10 ? 50 : 1); /* heavy head */
    int64_t off[5];
    rrt_partition_nnz(100, rp, 4, off);
    CHECK(off[0] == 0 && off[4] == 100);
    for (int p = 0; p < 4; p++)
      CHECK(off[p] <= off[p + 1]);
    for (int p = 0; p < 4; p++) {
      int64_t nz = rp[off[p + 1]] - rp[off[p]];
      CHECK_MSG(nz >= 590 / 4 - 50 && nz <= 590 / 4 + 50, "part %d has %lld nonzeros", p,
                (long long)nz);
    }
    CHECK(rrt_partition_owner(off, 4, 0) == 0);
    CHECK(rrt_partition_owner(off, 4, 99) == 3);
    CHECK(rrt_partition_owner(off, 4, off[2]) == 2);
  }
  /* message plans: sorted by (level, peer), items by key, both sides alike */
  {
    int32_t peer[6] = {2, 1, 2, 1, 0, 2}, idx[6] = {10, 11, 12, 13, 14, 15},
            level[6] = {1, 1, 1, 0, 3, 1};
    int64_t key[6] = {50, 40, 30, 20, 10, 5};
    rrt_msg_plan p;
    CHECK(rrt_msg_plan_build(6, peer, idx, level, key, &p) == RRT_SUCCESS);
    CHECK(p.nmsg == 4);
    CHECK(p.level[0] == 0 && p.peer[0] == 1 && p.idx[0] == 13);
    CHECK(p.level[1] == 1 && p.peer[1] == 1 && p.idx[p.ptr[1]] == 11);
    CHECK(p.level[2] == 1 && p.peer[2] == 2 && p.ptr[3] - p.ptr[2] == 3);
    CHECK(p.idx[p.ptr[2]] == 15 && p.idx[p.ptr[2] + 1] == 12 && p.idx[p.ptr[2] + 2] == 10);
    CHECK(p.level[3] == 3 && p.peer[3] == 0);
    rrt_msg_plan_free(&p);
  }
  free(lev), free(lev2);
  return test_result();
}

/* RCM and multicolour without the pattern on every rank: the positions
 * rrt_ilu0_create computes where the rows live (multicolour) or on rank 0
 * (RCM) must equal the serial ordering of the whole matrix, for every rank
 * count and for an uneven partition as well as the balanced one.
 * References: multicolour, a naive greedy colouring written here (lower
 * neighbours from a dense symmetrised adjacency), rows sorted by (colour,
 * index); RCM, the serial sched/ functions on the whole pattern (their
 * symmetrised graph checked against a dense one here). Also the
 * multicolour levels: 2 on a 5-point grid. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "ilu_ref.h"
#include "sched/ilu0_levels.h"
#include "test_util.h"

/* Serial greedy colouring in natural order on a dense symmetrised
 * adjacency (small n only), then positions by (colour, index). */
static void ref_multicolor(const rrt_csr *a, int64_t *pos) {
  int64_t n = a->nrows;
  char *adj = calloc((size_t)n * (size_t)n, 1);
  int64_t *color = malloc((size_t)n * sizeof(int64_t)), nc = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      adj[i * n + a->col[p]] = adj[a->col[p] * n + i] = 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t c = 0;
    for (int clash = 1; clash; c += clash) {
      clash = 0;
      for (int64_t j = 0; j < i && !clash; j++)
        clash = adj[i * n + j] && color[j] == c;
    }
    color[i] = c;
    if (c + 1 > nc) nc = c + 1;
  }
  int64_t next = 0;
  for (int64_t c = 0; c < nc; c++)
    for (int64_t i = 0; i < n; i++)
      if (color[i] == c) pos[i] = next++;
  free(adj), free(color);
}

/* rrt_graph_symmetrize (which the serial RCM reads) against a dense
 * symmetrised adjacency: every row sorted, unique, without the diagonal. */
static void check_symmetrize(const char *name, const rrt_csr *a) {
  int64_t n = a->nrows, *sp = NULL, *sc = NULL, bad = 0;
  char *adj = calloc((size_t)n * (size_t)n, 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      if (a->col[p] != i) adj[i * n + a->col[p]] = adj[a->col[p] * n + i] = 1;
  CHECK(rrt_graph_symmetrize(n, a->rowptr, a->col, &sp, &sc) == RRT_SUCCESS);
  for (int64_t i = 0; i < n; i++) {
    int64_t q = sp[i];
    for (int64_t j = 0; j < n; j++)
      if (adj[i * n + j]) bad += q >= sp[i + 1] || sc[q++] != j;
    bad += q != sp[i + 1];
  }
  CHECK_MSG(bad == 0, "%s: symmetrised pattern differs in %lld places", name, (long long)bad);
  free(adj), free(sp), free(sc);
}

static void ref_rcm(const rrt_csr *a, int64_t *pos) {
  int64_t *sp = NULL, *sc = NULL;
  CHECK(rrt_graph_symmetrize(a->nrows, a->rowptr, a->col, &sp, &sc) == RRT_SUCCESS);
  CHECK(rrt_order_rcm(a->nrows, sp, sc, pos) == RRT_SUCCESS);
  free(sp), free(sc);
}

/* Rows of rank r: balanced by nonzeros, or uneven (rank r gets about
 * (r + 1) / sum shares, the last rank the rest). */
static rrt_status distribute(rrt_ctx_t ctx, const rrt_csr *a, int uneven, rrt_sparse_t *A) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  int64_t *off = malloc(((size_t)P + 1) * sizeof(int64_t)), n = a->nrows;
  rrt_sparse_partition(n, a->rowptr, P, off);
  if (uneven) {
    int64_t w = (int64_t)P * (P + 1) / 2, acc = 0;
    for (int p = 0; p < P; p++)
      off[p] = n * acc / w, acc += p + 1;
    off[P] = n;
  }
  int64_t r0 = off[r], r1 = off[r + 1];
  int64_t *rp = malloc(((size_t)(r1 - r0) + 1) * sizeof(int64_t));
  for (int64_t i = r0; i <= r1; i++)
    rp[i - r0] = a->rowptr[i] - a->rowptr[r0];
  rrt_status st =
      rrt_sparse_create(ctx, n, r0, r1 - r0, rp, a->col + a->rowptr[r0], a->val + a->rowptr[r0], A);
  free(rp), free(off);
  return st;
}

/* A structurally unsymmetric matrix: the diagonal, a ring (i, i+1) and
 * long couplings (i, 7i+3 mod n) one way only, so the symmetrised graph
 * needs entries held by other ranks. */
static rrt_csr unsymmetric(int64_t n) {
  rrt_csr a = {n,
               n,
               0,
               malloc(((size_t)n + 1) * sizeof(int64_t)),
               malloc(3 * (size_t)n * sizeof(int64_t)),
               malloc(3 * (size_t)n * sizeof(double))};
  a.rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t c[3] = {i, (i + 1) % n, (7 * i + 3) % n};
    for (int s = 1; s < 3; s++) /* sort the three */
      for (int t = s; t > 0 && c[t] < c[t - 1]; t--) {
        int64_t x = c[t];
        c[t] = c[t - 1], c[t - 1] = x;
      }
    for (int s = 0; s < 3; s++)
      if (s == 0 || c[s] != c[s - 1])
        a.col[a.nnz] = c[s], a.val[a.nnz] = c[s] == i ? 4.0 : -1.0, a.nnz++;
    a.rowptr[i + 1] = a.nnz;
  }
  return a;
}

static void check(rrt_ctx_t ctx, const char *name, const rrt_csr *a, rrt_ilu_ordering ord,
                  int uneven) {
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  CHECK_OK(distribute(ctx, a, uneven, &A));
  rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
  opt.ordering = ord;
  rrt_status st = rrt_ilu0_create(A, &opt, &M);
  CHECK_MSG(st == RRT_SUCCESS, "%s (%s): create: %s", name, rrt_ilu_ordering_name(ord),
            rrt_ctx_last_error(ctx));
  if (st == RRT_SUCCESS) {
    int64_t n = a->nrows, bad = 0;
    int64_t *pos = ref_all_positions(M, A), *ref = malloc((size_t)n * sizeof(int64_t));
    if (ord == RRT_ILU_ORDER_RCM)
      ref_rcm(a, ref);
    else
      ref_multicolor(a, ref);
    for (int64_t i = 0; i < n; i++)
      bad += pos[i] != ref[i];
    CHECK_MSG(bad == 0, "%s (%s, %s partition, %d ranks): %lld positions differ from serial", name,
              rrt_ilu_ordering_name(ord), uneven ? "uneven" : "balanced", rrt_ctx_size(ctx),
              (long long)bad);
    int N = 0, nl = 0, nu = 0;
    rrt_ilu0_levels(M, &nl, &nu);
    if (ord == RRT_ILU_ORDER_MULTICOLOR && sscanf(name, "laplace2d:%d", &N) == 1)
      CHECK_MSG(nl == 2 && nu == 2, "%s multicolour levels %d/%d", name, nl, nu);
    free(pos), free(ref);
  }
  rrt_ilu0_destroy(M);
  rrt_sparse_destroy(A);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  int rc = ref_ctx(&ctx);
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  static const char *names[] = {
      "laplace2d:17", "laplace3d:6",     "convdiff2d:12,40", "gk_ani1_nonsymm.mtx",
      "ss_cage5.mtx", "gk_1138_bus.mtx", "unsymmetric",      NULL};
  for (int k = 0; names[k]; k++) {
    rrt_csr a = {0};
    char err[512];
    if (!strcmp(names[k], "unsymmetric"))
      a = unsymmetric(301);
    else if (ref_load(names[k], &a, err, sizeof(err))) {
      CHECK_MSG(0, "cannot load %s: %s", names[k], err);
      continue;
    }
    check_symmetrize(names[k], &a);
    for (int uneven = 0; uneven < 2; uneven++) {
      check(ctx, names[k], &a, RRT_ILU_ORDER_MULTICOLOR, uneven);
      check(ctx, names[k], &a, RRT_ILU_ORDER_RCM, uneven);
    }
    rrt_csr_free(&a);
  }
  rrt_ctx_destroy(ctx);
  rc = test_result();
  MPI_Finalize();
  return rc;
}

/* The domain-decomposition orderings (dd, dd-color): the permutation equals
 * a naive serial classification written here (interface = a row coupled to
 * another subdomain in the symmetrised pattern; interiors first in index
 * order, then the interface in index order, or sorted by a greedy colour),
 * and the factors and the apply are bitwise those of the serial IKJ ILU(0)
 * (or ILU(k), k = 1, 2, on the naive level-of-fill pattern) of that
 * permutation. With dd_blocks = 2 or 3 the reference does not depend on the
 * rank count, so passing at np 1, 2 and 3 means the same bits for all;
 * subdomains split over ranks (dd_blocks 2 at 3 ranks) once deadlocked.
 * On several cpu ranks the schedule must let the interiors run without any
 * remote row (white box: the halos of the handle). Bad dd_blocks are an
 * error on every rank. Usage: test_ilu_dd [small] (small: the emu subset). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilu/handle.h"
#include "ilu_ref.h"
#include "sched/dd_order.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* Subdomain of every row: the k-way split rrt_sparse_partition gives. */
static int32_t *subdomains(const rrt_csr *a, int k) {
  int64_t *off = malloc(((size_t)k + 1) * sizeof(int64_t));
  int32_t *sub = malloc(((size_t)a->nrows + 1) * sizeof(int32_t));
  rrt_sparse_partition(a->nrows, a->rowptr, k, off);
  for (int p = 0; p < k; p++)
    for (int64_t i = off[p]; i < off[p + 1]; i++)
      sub[i] = p;
  free(off);
  return sub;
}

/* Greedy colour of every interface row: the smallest colour no interface
 * neighbour of lower index has (neighbours: row i of A and of A^T). */
static int32_t *interface_colors(const rrt_csr *a, const char *iface) {
  int64_t n = a->nrows;
  rrt_csr t;
  int64_t *r = malloc(((size_t)a->nnz + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      r[p] = i;
  rrt_csr_from_triplets(n, n, a->nnz, a->col, r, a->val, &t); /* A^T */
  int32_t *color = malloc(((size_t)n + 1) * sizeof(int32_t));
  char *used = malloc((size_t)n + 2);
  for (int64_t i = 0; i < n; i++) {
    color[i] = -1;
    if (!iface[i]) continue;
    memset(used, 0, (size_t)n + 2);
    const rrt_csr *both[2] = {a, &t};
    for (int s = 0; s < 2; s++)
      for (int64_t p = both[s]->rowptr[i]; p < both[s]->rowptr[i + 1]; p++) {
        int64_t j = both[s]->col[p];
        if (j < i && iface[j]) used[color[j]] = 1;
      }
    while (used[++color[i]]) {
    }
  }
  free(r), free(used);
  rrt_csr_free(&t);
  return color;
}

/* The expected positions: interiors in index order, then the interface in
 * index order (color: by colour, then index). */
static int64_t *expected_positions(const rrt_csr *a, int k, int color) {
  int64_t n = a->nrows, next = 0;
  int32_t *sub = subdomains(a, k);
  char *iface = calloc((size_t)n + 1, 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      if (sub[i] != sub[a->col[p]]) iface[i] = iface[a->col[p]] = 1;
  int32_t *col = color ? interface_colors(a, iface) : NULL;
  int64_t *pos = malloc(((size_t)n + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; i++)
    if (!iface[i]) pos[i] = next++;
  for (int32_t c = 0; next < n; c++) /* without colours: one pass */
    for (int64_t i = 0; i < n; i++)
      if (iface[i] && (!col || col[i] == c)) pos[i] = next++;
  free(sub), free(iface), free(col);
  return pos;
}

static int bits_equal(double a, double b) { return memcmp(&a, &b, sizeof(double)) == 0; }

/* Factors (pattern and values) and one apply against the serial IKJ
 * reference of pos on the naive ILU(k) pattern (k = levels); returns the
 * number of differing entries on this rank. */
static int64_t compare_with_reference(rrt_ctx_t ctx, rrt_ilu0_t M, rrt_sparse_t A, const rrt_csr *a,
                                      const int64_t *pos, int levels) {
  int64_t n = a->nrows, nloc = rrt_sparse_local_rows(A), r0 = rrt_sparse_row_begin(A), bad = 0;
  rrt_csr pa = ref_permute(a, pos), b = ref_fill(&pa, levels);
  rrt_csr_free(&pa);
  if (ref_ilu0(&b) >= 0) {
    rrt_csr_free(&b);
    return -1; /* the test's matrices have ILU(k) */
  }
  int64_t nnz = rrt_ilu0_factor_nnz(M), want = 0;
  int64_t *rp = malloc(((size_t)nloc + 1) * 8), *cols = malloc(((size_t)nnz + 1) * 8);
  double *f = malloc(((size_t)nnz + 1) * sizeof(double));
  CHECK_OK(rrt_ilu0_get_factor_pattern(M, rp, cols));
  CHECK_OK(rrt_ilu0_factor(M));
  CHECK_OK(rrt_ilu0_get_factors(M, f));
  for (int64_t i = 0; i < nloc; i++)
    want += b.rowptr[pos[r0 + i] + 1] - b.rowptr[pos[r0 + i]];
  bad += want != rp[nloc]; /* the pattern: as many entries, each in the reference's */
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
      const double *ref = ref_entry(&b, pos[r0 + i], pos[cols[p]]);
      bad += !ref || !bits_equal(*ref, f[p]);
    }
  free(rp), free(cols);
  double *r = malloc((size_t)n * sizeof(double)), *rb = malloc((size_t)n * sizeof(double));
  double *zb = malloc((size_t)n * sizeof(double)), *loc = malloc(((size_t)nloc + 1) * 8), *dr, *dz;
  for (int64_t i = 0; i < n; i++)
    r[i] = 1.0 + (double)((i * 7919) % 13) / 8.0, rb[pos[i]] = r[i];
  ref_apply(&b, rb, zb);
  rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dr);
  rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dz);
  rrt_memcpy_to_backend(ctx, dr, r + r0, (size_t)nloc * sizeof(double));
  CHECK_OK(rrt_ilu0_apply(M, dr, dz));
  rrt_memcpy_to_host(ctx, loc, dz, (size_t)nloc * sizeof(double));
  for (int64_t i = 0; i < nloc; i++)
    bad += !bits_equal(loc[i], zb[pos[r0 + i]]);
  rrt_free(ctx, dr), rrt_free(ctx, dz);
  free(f), free(r), free(rb), free(zb), free(loc);
  rrt_csr_free(&b);
  return bad;
}

/* Several cpu ranks, one subdomain per rank (any levels of fill: fill never
 * joins two subdomains' interiors): the interiors need no remote
 * row (no L receive is needed before schedule level 2), the U interiors
 * send none (every U message leaves after level 1, the interface), and the
 * schedule has one level per phase. */
static void check_schedule(rrt_ilu0_t M, const char *what) {
  CHECK_MSG(M->coarse[0] > 1 && M->nsched[0] == M->nphase && M->nsched[1] == M->nphase,
            "%s: coarse %d/%d, schedule levels %d/%d, phases %d", what, M->coarse[0], M->coarse[1],
            M->nsched[0], M->nsched[1], M->nphase);
  const rrt_halo *lh[2] = {&M->hf, &M->hl};
  for (int h = 0; h < 2; h++)
    for (int m = 0; m < lh[h]->recv.nmsg; m++)
      CHECK_MSG(lh[h]->need[lh[h]->recv.level[m]] >= 2, "%s: an interior waits for a remote row",
                what);
  for (int m = 0; m < M->hu.send.nmsg; m++)
    CHECK_MSG(M->hu.send.level[m] < M->nphase, "%s: a U interior row is sent", what);
}

/* emu (and cuda), several ranks, one subdomain per rank: the sync-free
 * sweeps take schedule levels phase by phase and, within a phase, rank by
 * rank (nphase x P of them), so every message is needed after the level
 * that sends it (no receive posted ahead), the interiors need no remote
 * row, and a rank launches at most once per phase of a sweep. */
static void check_chain_schedule(rrt_ilu0_t M, int P, const char *what) {
  CHECK_MSG(M->chain && M->coarse[0] > 1 && M->nsched[0] == M->nphase * P &&
                M->nsched[1] == M->nphase * P,
            "%s: chain %d, coarse %d, schedule levels %d/%d, phases %d x %d ranks", what, M->chain,
            M->coarse[0], M->nsched[0], M->nsched[1], M->nphase, P);
  const rrt_halo *hs[3] = {&M->hf, &M->hl, &M->hu};
  for (int h = 0; h < 3; h++)
    for (int m = 0; m < hs[h]->recv.nmsg; m++) {
      int sent = hs[h]->recv.level[m], need = hs[h]->need[sent];
      CHECK_MSG(need > sent, "%s: a message of level %d is needed at level %d", what, sent, need);
      CHECK_MSG(h == 2 || need > P, "%s: an interior waits for a remote row", what);
    }
  int64_t lf = -1, la = -1;
  rrt_ilu0_launches(M, &lf, &la);
  CHECK_MSG(lf >= 1 && lf <= M->nphase && la >= 2 && la <= 2 * M->nphase,
            "%s: launches %lld/%lld for %d phases", what, (long long)lf, (long long)la, M->nphase);
}

static void check_case(rrt_ctx_t ctx, const char *name, const rrt_csr *a, rrt_ilu_ordering ord,
                       int blocks, int levels) {
  int P = rrt_ctx_size(ctx);
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  char what[160];
  snprintf(what, sizeof what, "%s %s dd_blocks %d ILU(%d)", name, rrt_ilu_ordering_name(ord),
           blocks, levels);
  CHECK_OK(ref_distribute(ctx, a, &A));
  rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
  opt.ordering = ord;
  opt.dd_blocks = blocks;
  opt.levels = levels;
  rrt_status st = rrt_ilu0_create(A, &opt, &M);
  CHECK_MSG(st == RRT_SUCCESS, "%s: create: %s", what, rrt_ctx_last_error(ctx));
  if (st == RRT_SUCCESS) {
    int64_t *want = expected_positions(a, blocks ? blocks : P, ord == RRT_ILU_ORDER_DD_COLOR);
    int64_t *got = ref_all_positions(M, A), wrong = 0;
    for (int64_t i = 0; i < a->nrows; i++)
      wrong += got[i] != want[i];
    CHECK_MSG(wrong == 0, "%s: %lld positions differ from the naive classification", what,
              (long long)wrong);
    int64_t bad = compare_with_reference(ctx, M, A, a, want, levels);
    CHECK_MSG(bad == 0, "%s: %lld factor/apply entries differ from the serial IKJ", what,
              (long long)bad);
    if (blocks == 0 && P > 1 && rrt_ctx_backend(ctx) == RRT_BACKEND_CPU) check_schedule(M, what);
    if (blocks == 0 && P > 1 && rrt_ctx_backend(ctx) != RRT_BACKEND_CPU &&
        !(getenv("RINGRT_ILU_SWEEP") && !strcmp(getenv("RINGRT_ILU_SWEEP"), "levels")))
      check_chain_schedule(M, P, what);
    free(want), free(got);
  }
  rrt_ilu0_destroy(M);
  rrt_sparse_destroy(A);
}

/* A lower-triangular pattern: row i references i-1 and i-3 only, so the
 * last rows of a subdomain are interface only because the next subdomain's
 * rows reference them (the owner must hear of it from the other rank). */
static rrt_csr lower_pattern(int64_t n) {
  int64_t *r = malloc(3 * (size_t)n * sizeof(int64_t)), *c = malloc(3 * (size_t)n * 8), m = 0;
  double *v = malloc(3 * (size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    r[m] = i, c[m] = i, v[m++] = 4.0 + (double)(i % 5);
    if (i >= 1) r[m] = i, c[m] = i - 1, v[m++] = -1.0;
    if (i >= 3) r[m] = i, c[m] = i - 3, v[m++] = -0.5;
  }
  rrt_csr a;
  rrt_csr_from_triplets(n, n, m, r, c, v, &a);
  free(r), free(c), free(v);
  return a;
}

/* dd_blocks out of range, or different on different ranks: an error on
 * every rank, before any work. */
static void check_bad_blocks(rrt_ctx_t ctx, const rrt_csr *a) {
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  CHECK_OK(ref_distribute(ctx, a, &A));
  rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
  opt.ordering = RRT_ILU_ORDER_DD;
  opt.dd_blocks = -1;
  CHECK(rrt_ilu0_create(A, &opt, &M) == RRT_ERR_INVALID_ARG && M == NULL);
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "dd_blocks -1") != NULL, "message '%s'",
            rrt_ctx_last_error(ctx));
  if (P > 1) {
    opt.dd_blocks = rank == 0 ? 2 : 3;
    CHECK(rrt_ilu0_create(A, &opt, &M) == RRT_ERR_INVALID_ARG && M == NULL);
    CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "differs between ranks") != NULL, "message '%s'",
              rrt_ctx_last_error(ctx));
  }
  rrt_sparse_destroy(A);
}

/* The subdomain each rank computes from a row alone equals the part of the
 * row in rrt_sparse_partition, exact boundaries and empty rows included. */
static void check_parts(void) {
  int64_t rp[61] = {0, 1, 3, 4}, n = 50;
  int32_t *sub;
  rrt_csr c = {.nrows = 3, .rowptr = rp};
  for (int k = 1; k <= 3; k++) { /* rp {0,1,3,4}, k = 2: row 1 sits on the boundary */
    sub = subdomains(&c, k);
    for (int64_t i = 0; i < 3; i++)
      CHECK_MSG(rrt_dd_part(rp[i] + rp[i + 1], rp[3], k) == sub[i], "k %d row %lld", k,
                (long long)i);
    free(sub);
  }
  for (int64_t i = 0; i < n; i++) /* lengths 0..4, some rows empty */
    rp[i + 1] = rp[i] + (i * 7) % 5;
  c.nrows = n;
  for (int k = 1; k <= 9; k++) {
    sub = subdomains(&c, k);
    for (int64_t i = 0; i < n; i++)
      CHECK_MSG(rrt_dd_part(rp[i] + rp[i + 1], rp[n], k) == sub[i], "k %d row %lld", k,
                (long long)i);
    free(sub);
  }
}

static void check_names(void) {
  rrt_ilu_ordering o = RRT_ILU_ORDER_NATURAL;
  CHECK(rrt_ilu_ordering_parse("dd", &o) == RRT_SUCCESS && o == RRT_ILU_ORDER_DD);
  CHECK(!strcmp(rrt_ilu_ordering_name(o), "dd"));
  CHECK(rrt_ilu_ordering_parse("dd-colour", &o) == RRT_SUCCESS && o == RRT_ILU_ORDER_DD_COLOR);
  CHECK(!strcmp(rrt_ilu_ordering_name(o), "dd-color"));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  int rc = ref_ctx(&ctx);
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  int small = argc > 1 && !strcmp(argv[1], "small");
  static const char *full[] = {"laplace2d:13",        "convdiff2d:11,40", "laplace3d:5",
                               "gk_ani1_nonsymm.mtx", "ss_494_bus.mtx",   NULL};
  static const char *emu[] = {"laplace2d:7", "ss_cage5.mtx", NULL};
  const char **list = small ? emu : full;
  check_names();
  check_parts();
  for (int k = 0; list[k]; k++) {
    rrt_csr a;
    char err[512];
    if (ref_load(list[k], &a, err, sizeof err)) {
      CHECK_MSG(0, "cannot load %s: %s", list[k], err);
      continue;
    }
    /* dd_blocks 2 at 3 ranks: a subdomain split over ranks, so a rank's
     * first coarse level (the interiors) reads a lower rank's rows, and a
     * later one a higher rank's rows of that level; the receives of one
     * level were waited for together and deadlocked (rank 1 waiting for
     * rank 2's interiors, rank 2 for rank 1's) */
    static const int blocks[] = {0, 2, 3};
    for (int b = 0; b < 3; b++) {
      check_case(ctx, list[k], &a, RRT_ILU_ORDER_DD, blocks[b], 0);
      check_case(ctx, list[k], &a, RRT_ILU_ORDER_DD_COLOR, blocks[b], 0);
    }
    /* ILU(k) keeps the coarse levels: fill couples interface rows of one
     * colour (through an earlier colour's row), on different ranks */
    for (int levels = 1; levels <= 2 && k < 2; levels++)
      for (int b = 0; b < 3; b++)
        check_case(ctx, list[k], &a, RRT_ILU_ORDER_DD_COLOR, blocks[b], levels);
    if (k < 2) check_case(ctx, list[k], &a, RRT_ILU_ORDER_DD, 2, 1);
    rrt_csr_free(&a);
  }
  rrt_csr low = lower_pattern(30);
  check_case(ctx, "lower(30)", &low, RRT_ILU_ORDER_DD, 0, 0);
  check_case(ctx, "lower(30)", &low, RRT_ILU_ORDER_DD_COLOR, 3, 0);
  check_case(ctx, "lower(30)", &low, RRT_ILU_ORDER_DD_COLOR, 2, 1);
  check_bad_blocks(ctx, &low);
  rrt_csr_free(&low);
  rrt_ctx_destroy(ctx);
  rc = test_result();
  MPI_Finalize();
  return rc;
}

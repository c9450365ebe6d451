/* ILU(k): the distributed factors are bitwise those of a serial ILU(k)
 * (a naive level-of-fill pattern here, then the serial IKJ reference of
 * ilu_ref.h on A padded with zeros at the fill) for k = 0-3, any rank count
 * and backend, in natural order and (as the ILU(k) of P A P^T) in the
 * other orderings; the apply bitwise the serial reference's; the transpose
 * apply against a serial transposed solve (to rounding) and bitwise a
 * one-rank run's; re-factoring after new values follows; the pivot boosts
 * (replace, add) bitwise the boosted serial reference.
 * Usage: test_iluk [small] (small: the emu subset). */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilu_ref.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

static int bits_equal(double a, double b) { return memcmp(&a, &b, sizeof(double)) == 0; }

/* z = L^-T U^-T r for the factored b (serial, column by column). */
static void ref_apply_t(const rrt_csr *b, const double *r, double *z) {
  int64_t n = b->nrows;
  double *y = malloc((size_t)n * sizeof(double));
  memcpy(y, r, (size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++) { /* U^T y = r: row i of U scatters y_i */
    y[i] /= *ref_entry(b, i, i);
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1]; p++)
      if (b->col[p] > i) y[b->col[p]] -= b->val[p] * y[i];
  }
  for (int64_t i = n - 1; i >= 0; i--) { /* L^T z = y: row i of L scatters z_i */
    z[i] = y[i];
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1]; p++)
      if (b->col[p] < i) y[b->col[p]] -= b->val[p] * z[i];
  }
  free(y);
}

/* The local rows of the factor pattern equal b's (b = the permuted
 * reference: row pos[i]), and the factors are bitwise b's. */
static int64_t compare_factors(rrt_ilu0_t M, int64_t r0, int64_t nloc, const rrt_csr *b,
                               const int64_t *pos) {
  int64_t nnz = rrt_ilu0_factor_nnz(M), bad = 0;
  int64_t *rp = malloc(((size_t)nloc + 1) * 8), *cols = malloc(((size_t)nnz + 1) * 8);
  double *f = malloc(((size_t)nnz + 1) * sizeof(double));
  CHECK_OK(rrt_ilu0_get_factor_pattern(M, rp, cols));
  CHECK_OK(rrt_ilu0_get_factors(M, f));
  int64_t ref_nnz = 0;
  for (int64_t i = 0; i < nloc; i++)
    ref_nnz += b->rowptr[pos[r0 + i] + 1] - b->rowptr[pos[r0 + i]];
  if (rp[nloc] != ref_nnz) bad = nnz + 1;
  for (int64_t i = 0; i < nloc && !bad; i++)
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
      const double *ref = ref_entry(b, pos[r0 + i], pos[cols[p]]);
      bad += !ref || !bits_equal(*ref, f[p]);
    }
  free(rp), free(cols), free(f);
  return bad;
}

/* rrt_ilu0_apply (transpose or not) of the global r; local result in loc. */
static void apply(rrt_ctx_t ctx, rrt_ilu0_t M, int t, const double *r, int64_t r0, int64_t nloc,
                  double *loc) {
  double *dr, *dz;
  rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dr);
  rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dz);
  rrt_memcpy_to_backend(ctx, dr, r + r0, (size_t)nloc * sizeof(double));
  CHECK_OK(t ? rrt_ilu0_apply_transpose(M, dr, dz) : rrt_ilu0_apply(M, dr, dz));
  rrt_memcpy_to_host(ctx, loc, dz, (size_t)nloc * sizeof(double));
  rrt_free(ctx, dr), rrt_free(ctx, dz);
}

/* The transpose apply of one rank (a context of its own, same backend). */
static double *one_rank_transpose(rrt_ctx_t self, const rrt_csr *a, const rrt_ilu0_options *opt,
                                  const double *r) {
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  double *z = malloc(((size_t)a->nrows + 1) * sizeof(double));
  CHECK_OK(ref_distribute(self, a, &A));
  CHECK_OK(rrt_ilu0_create(A, opt, &M));
  CHECK_OK(rrt_ilu0_factor(M));
  apply(self, M, 1, r, 0, a->nrows, z);
  rrt_ilu0_destroy(M), rrt_sparse_destroy(A);
  return z;
}

/* y[pos[i]] = x[i] (perm 1) or y[i] = x[pos[i]] (perm 0), n entries. */
static void permute(const int64_t *pos, int64_t n, const double *x, double *y, int perm) {
  for (int64_t i = 0; i < n; i++)
    if (perm)
      y[pos[i]] = x[i];
    else
      y[i] = x[pos[i]];
}

static void check_matrix(rrt_ctx_t ctx, rrt_ctx_t self, const char *name, int k,
                         rrt_ilu_ordering ord) {
  rrt_csr a;
  char err[512];
  if (ref_missing(name)) return;
  if (ref_load(name, &a, err, sizeof(err))) {
    CHECK_MSG(0, "cannot load %s: %s", name, err);
    return;
  }
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  CHECK_OK(ref_distribute(ctx, &a, &A));
  rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
  opt.levels = k, opt.ordering = ord, opt.dd_blocks = 3; /* dd: the same at any np */
  const char *oname = rrt_ilu_ordering_name(ord);
  CHECK_OK(rrt_ilu0_create(A, &opt, &M));
  int64_t *pos = ref_all_positions(M, A);
  int64_t n = a.nrows, nloc = rrt_sparse_local_rows(A), r0 = rrt_sparse_row_begin(A);
  double *r = malloc((size_t)n * sizeof(double)), *loc = malloc(((size_t)nloc + 1) * 8);
  double *zref = malloc((size_t)n * sizeof(double)), *rb = malloc((size_t)n * sizeof(double));
  double *zb = malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++)
    r[i] = 1.0 + (double)((i * 7919) % 13) / 8.0;
  for (int pass = 0; pass < 2; pass++) { /* pass 1: new values, re-factored */
    rrt_csr pa = ref_permute(&a, pos), b = ref_fill(&pa, k);
    rrt_csr_free(&pa);
    CHECK_MSG(ref_ilu0(&b) < 0, "%s: the reference has a zero pivot", name);
    CHECK_OK(rrt_ilu0_factor(M));
    int64_t bad = compare_factors(M, r0, nloc, &b, pos);
    CHECK_MSG(bad == 0, "%s ILU(%d) %s pass %d: %lld factor entries differ from the serial ILU(k)",
              name, k, oname, pass, (long long)bad);
    permute(pos, n, r, rb, 1); /* the references solve with P A P^T */
    ref_apply(&b, rb, zb);
    permute(pos, n, zb, zref, 0);
    apply(ctx, M, 0, r, r0, nloc, loc);
    for (int64_t i = 0; i < nloc; i++)
      bad += !bits_equal(loc[i], zref[r0 + i]);
    CHECK_MSG(bad == 0, "%s ILU(%d) %s: %lld apply entries differ", name, k, oname, (long long)bad);
    /* transpose: a serial scatter solve rounds differently; the factors
     * of these matrices are well conditioned (cond(L) cond(U) < 1e4), so
     * 1e-10 relative is far above rounding and far below any error */
    ref_apply_t(&b, rb, zb);
    permute(pos, n, zb, zref, 0);
    apply(ctx, M, 1, r, r0, nloc, loc);
    double num = 0, den = 0;
    for (int64_t i = 0; i < nloc; i++)
      num += (loc[i] - zref[r0 + i]) * (loc[i] - zref[r0 + i]), den += zref[r0 + i] * zref[r0 + i];
    double g[2] = {num, den};
    MPI_Allreduce(MPI_IN_PLACE, g, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK_MSG(sqrt(g[0]) <= 1e-10 * sqrt(g[1]), "%s ILU(%d) %s: transpose apply off by %.3e", name,
              k, oname, sqrt(g[0] / g[1]));
    rrt_csr_free(&b);
    if (pass == 1) break;
    if (self) { /* bitwise a one-rank run's */
      double *z1 = one_rank_transpose(self, &a, &opt, r);
      int64_t badt = 0;
      for (int64_t i = 0; i < nloc; i++)
        badt += !bits_equal(loc[i], z1[r0 + i]);
      CHECK_MSG(badt == 0, "%s ILU(%d) %s: %lld transpose entries differ from one rank's", name, k,
                oname, (long long)badt);
      free(z1);
    }
    for (int64_t p = 0; p < a.nnz; p++)
      a.val[p] *= a.col[p] == 0 ? 2.0 : 0.75;
    CHECK_OK(rrt_sparse_set_values(A, a.val + a.rowptr[r0]));
  }
  free(r), free(loc), free(zref), free(rb), free(zb), free(pos);
  rrt_ilu0_destroy(M);
  rrt_sparse_destroy(A);
  rrt_csr_free(&a);
}

/* The pivot boosts (replace, and add: PETSc's INBLOCKS) at k = 0 and 1:
 * factors and apply bitwise the serial reference boosted alike. tol 3.5
 * on a diagonal of 4 (pivots fall towards 2.4): most rows, on every rank,
 * in the middle of the elimination, are boosted. */
static void check_boost(rrt_ctx_t ctx, const char *name) {
  rrt_csr a;
  char err[512];
  if (ref_load(name, &a, err, sizeof(err))) {
    CHECK_MSG(0, "cannot load %s: %s", name, err);
    return;
  }
  int64_t n = a.nrows, *pos = malloc((size_t)n * sizeof(int64_t));
  double *r = malloc((size_t)n * sizeof(double)), *z = malloc((size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; i++)
    pos[i] = i, r[i] = 1.0 + (double)((i * 7919) % 13) / 8.0;
  for (int mode = RRT_ILU0_BOOST_REPLACE; mode <= RRT_ILU0_BOOST_ADD; mode++)
    for (int k = 0; k <= 1; k++) {
      rrt_sparse_t A = NULL;
      rrt_ilu0_t M = NULL;
      rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
      opt.levels = k, opt.boost = mode, opt.boost_tol = 3.5, opt.boost_value = 0.375;
      CHECK_OK(ref_distribute(ctx, &a, &A));
      CHECK_OK(rrt_ilu0_create(A, &opt, &M));
      CHECK_OK(rrt_ilu0_factor(M));
      int64_t nloc = rrt_sparse_local_rows(A), r0 = rrt_sparse_row_begin(A);
      rrt_csr b = ref_fill(&a, k);
      CHECK(ref_ilu0_boost(&b, mode, opt.boost_tol, opt.boost_value) < 0);
      int64_t bad = compare_factors(M, r0, nloc, &b, pos);
      double *loc = malloc(((size_t)nloc + 1) * sizeof(double));
      ref_apply(&b, r, z);
      apply(ctx, M, 0, r, r0, nloc, loc);
      for (int64_t i = 0; i < nloc; i++)
        bad += !bits_equal(loc[i], z[r0 + i]);
      CHECK_MSG(bad == 0, "%s ILU(%d) boost %d: %lld entries differ from the serial boosted ILU",
                name, k, mode, (long long)bad);
      free(loc);
      rrt_csr_free(&b);
      rrt_ilu0_destroy(M);
      rrt_sparse_destroy(A);
    }
  free(pos), free(r), free(z);
  rrt_csr_free(&a);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL, self = NULL;
  int rc = ref_ctx(&ctx);
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  if (rrt_ctx_size(ctx) > 1) CHECK_OK(rrt_ctx_create(MPI_COMM_SELF, NULL, &self));
  int small = argc > 1 && !strcmp(argv[1], "small");
  static const char *full[] = {"convdiff2d:11,40", "laplace2d:9", "gk_ani1_nonsymm.mtx",
                               "ss_cage5.mtx", NULL};
  static const char *emu[] = {"convdiff2d:6,30", "ss_cage5.mtx", NULL};
  for (const char **m = small ? emu : full; *m; m++)
    for (int k = 0; k <= 3; k++)
      check_matrix(ctx, self, *m, k, RRT_ILU_ORDER_NATURAL);
  /* the other orderings: ILU(k) of P A P^T, with the transpose apply */
  static const rrt_ilu_ordering others[] = {RRT_ILU_ORDER_RCM, RRT_ILU_ORDER_MULTICOLOR,
                                            RRT_ILU_ORDER_DD, RRT_ILU_ORDER_DD_COLOR};
  for (int o = 0; o < 4; o++)
    for (int k = 1; k <= 2; k++)
      check_matrix(ctx, self, small ? "convdiff2d:6,30" : "convdiff2d:11,40", k, others[o]);
  check_boost(ctx, small ? "laplace2d:6" : "laplace2d:13");
  rrt_ctx_destroy(self);
  rrt_ctx_destroy(ctx);
  rc = test_result();
  MPI_Finalize();
  return rc;
}

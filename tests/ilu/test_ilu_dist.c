/* The central promise: distributed ILU(0) factors are bitwise identical to a
 * serial IKJ ILU(0) of the same ordering, for any rank count and backend;
 * the triangular solves and SpMV too (same summation order). Matrices
 * without ILU(0) fail with RRT_ERR_SINGULAR naming the same row on every
 * rank. Usage: test_ilu_dist [small] (small: the emu subset). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ilu_ref.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

static int bits_equal(double a, double b) { return memcmp(&a, &b, sizeof(double)) == 0; }

/* One matrix, one ordering: factor (twice: again after scaling the values),
 * apply and SpMV, all against the serial reference. f32: the factors_f32
 * option (the f64 factors are unchanged; the apply equals the reference
 * apply with f32-rounded factors, and differs from the f64 one). */
/* Sweep launches on this rank: none on cpu (host loops); with sync-free
 * sweeps (emu, cuda) one per run of levels between messages, so one rank
 * factors in one launch and applies in two; level by level
 * (RINGRT_ILU_SWEEP=levels) one launch per level holding local rows. */
static void check_launches(rrt_ctx_t ctx, rrt_ilu0_t M, const char *name, int nl, int nu) {
  int64_t lf = -1, la = -1;
  rrt_ilu0_launches(M, &lf, &la);
  const char *sweep = getenv("RINGRT_ILU_SWEEP");
  int by_level = sweep && !strcmp(sweep, "levels");
  if (rrt_ctx_backend(ctx) == RRT_BACKEND_CPU)
    CHECK_MSG(lf == 0 && la == 0, "%s: cpu launches %lld/%lld", name, (long long)lf, (long long)la);
  else if (rrt_ctx_size(ctx) == 1)
    CHECK_MSG(by_level ? lf == nl && la == nl + nu : lf == 1 && la == 2,
              "%s: %s launches %lld/%lld (levels %d/%d)", name,
              by_level ? "per-level" : "sync-free", (long long)lf, (long long)la, nl, nu);
  else
    CHECK_MSG(lf >= 1 && lf <= nl && la >= 2 && la <= nl + nu,
              "%s: launches %lld/%lld (levels %d/%d)", name, (long long)lf, (long long)la, nl, nu);
}

static void check_matrix(rrt_ctx_t ctx, const char *name, rrt_ilu_ordering ord, int f32) {
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
  opt.ordering = ord;
  opt.factors_f32 = f32;
  rrt_status st = rrt_ilu0_create(A, &opt, &M);
  int64_t *pos = NULL;
  rrt_csr b = {0};
  int64_t zero = -2;
  if (st == RRT_SUCCESS) {
    /* level counts against known values, and the histogram covers every row */
    int nl = 0, nu = 0, N = 0;
    rrt_ilu0_levels(M, &nl, &nu);
    int64_t *h = malloc(((size_t)nl + (size_t)nu + 1) * sizeof(int64_t)), sum = 0;
    rrt_ilu0_level_histogram(M, 0, h);
    for (int l = 0; l < nl; l++)
      sum += h[l];
    CHECK_MSG(sum == a.nrows, "%s: L histogram covers %lld of %lld rows", name, (long long)sum,
              (long long)a.nrows);
    free(h);
    check_launches(ctx, M, name, nl, nu);
    if (sscanf(name, "laplace2d:%d", &N) == 1 && ord == RRT_ILU_ORDER_NATURAL)
      CHECK_MSG(nl == 2 * N - 1 && nu == 2 * N - 1, "%s: levels %d/%d", name, nl, nu);
    if (sscanf(name, "laplace2d:%d", &N) == 1 && ord == RRT_ILU_ORDER_MULTICOLOR)
      CHECK_MSG(nl == 2 && nu == 2, "%s multicolour: levels %d/%d", name, nl, nu);
    if (sscanf(name, "laplace3d:%d", &N) == 1)
      CHECK_MSG(nl == 3 * N - 2 && nu == 3 * N - 2, "%s: levels %d/%d", name, nl, nu);
    pos = ref_all_positions(M, A);
    b = ref_permute(&a, pos);
    zero = ref_ilu0(&b);
    st = rrt_ilu0_factor(M);
  }
  int64_t grow = -1;
  if (zero >= 0) { /* the reference row in b is position `zero`: its global row */
    for (int64_t i = 0; i < a.nrows; i++)
      if (pos[i] == zero) grow = i;
  } else if (st != RRT_SUCCESS) {
    /* failed at analysis: the first row without a stored diagonal entry */
    for (int64_t i = a.nrows - 1; i >= 0; i--)
      if (!ref_entry(&a, i, i)) grow = i;
    if (grow >= 0) zero = grow;
  }
  if (zero >= 0) {
    char want[64];
    snprintf(want, sizeof(want), "global row %lld ", (long long)grow);
    CHECK_MSG(st == RRT_ERR_SINGULAR, "%s (%s): expected singular at row %lld, got %s", name,
              rrt_ilu_ordering_name(ord), (long long)grow, rrt_status_string(st));
    CHECK_MSG(strstr(rrt_ctx_last_error(ctx), want) != NULL, "%s: message '%s' lacks '%s'", name,
              rrt_ctx_last_error(ctx), want);
  } else {
    CHECK_MSG(st == RRT_SUCCESS, "%s (%s): factor failed: %s", name, rrt_ilu_ordering_name(ord),
              rrt_ctx_last_error(ctx));
  }
  if (st == RRT_SUCCESS) {
    int64_t nloc = rrt_sparse_local_rows(A), r0 = rrt_sparse_row_begin(A);
    const int64_t *rp, *cols;
    rrt_sparse_local_csr(A, &rp, &cols, NULL);
    double *f = malloc(((size_t)rp[nloc] + 1) * sizeof(double));
    for (int pass = 0; pass < 2; pass++) {
      CHECK_OK(rrt_ilu0_get_factors(M, f));
      int64_t bad = 0;
      for (int64_t i = 0; i < nloc; i++)
        for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
          const double *ref = ref_entry(&b, pos[r0 + i], pos[cols[p]]);
          if (!ref || !bits_equal(*ref, f[p])) {
            if (bad++ < 3)
              fprintf(stderr, "%s (%s) pass %d: row %lld col %lld: %.17g != ref %.17g\n", name,
                      rrt_ilu_ordering_name(ord), pass, (long long)(r0 + i), (long long)cols[p],
                      f[p], ref ? *ref : -1.0);
          }
        }
      CHECK_MSG(bad == 0, "%s (%s) pass %d: %lld factor entries differ from the serial IKJ", name,
                rrt_ilu_ordering_name(ord), pass, (long long)bad);
      if (pass == 0) {
        /* apply and SpMV against the reference, bit for bit */
        int64_t n = a.nrows;
        double *r = malloc((size_t)n * sizeof(double)), *rb = malloc((size_t)n * sizeof(double));
        double *zb = malloc((size_t)n * sizeof(double)), *yref = malloc((size_t)n * sizeof(double));
        double *loc = malloc(((size_t)nloc + 1) * sizeof(double));
        double *dr, *dz;
        for (int64_t i = 0; i < n; i++)
          r[i] = 1.0 + (double)((i * 7919) % 13) / 8.0;
        for (int64_t i = 0; i < n; i++)
          rb[pos[i]] = r[i];
        double *z64 = malloc((size_t)n * sizeof(double));
        ref_apply(&b, rb, z64);
        if (f32)
          ref_apply_f32(&b, rb, zb);
        else
          memcpy(zb, z64, (size_t)n * sizeof(double));
        ref_spmv(&a, r, yref);
        rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dr);
        rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&dz);
        rrt_memcpy_to_backend(ctx, dr, r + r0, (size_t)nloc * sizeof(double));
        CHECK_OK(rrt_ilu0_apply(M, dr, dz));
        rrt_memcpy_to_host(ctx, loc, dz, (size_t)nloc * sizeof(double));
        int64_t badz = 0, bady = 0, diff64 = 0, gdiff64 = 0;
        for (int64_t i = 0; i < nloc; i++) {
          badz += !bits_equal(loc[i], zb[pos[r0 + i]]);
          diff64 += !bits_equal(loc[i], z64[pos[r0 + i]]);
        }
        MPI_Allreduce(&diff64, &gdiff64, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        CHECK_MSG(!f32 || gdiff64 > 0, "%s: the f32 apply equals the f64 one (f32 not used?)",
                  name);
        free(z64);
        CHECK_OK(rrt_sparse_spmv(A, dr, dz));
        rrt_memcpy_to_host(ctx, loc, dz, (size_t)nloc * sizeof(double));
        for (int64_t i = 0; i < nloc; i++)
          bady += !bits_equal(loc[i], yref[r0 + i]);
        CHECK_MSG(badz == 0, "%s (%s%s): %lld apply entries differ", name,
                  rrt_ilu_ordering_name(ord), f32 ? ", factors_f32" : "", (long long)badz);
        CHECK_MSG(bady == 0, "%s: %lld SpMV entries differ", name, (long long)bady);
        rrt_free(ctx, dr), rrt_free(ctx, dz);
        free(r), free(rb), free(zb), free(yref), free(loc);
        /* new values, same pattern: refactor must follow */
        const double *v;
        rrt_sparse_local_csr(A, NULL, NULL, &v);
        double *nv = malloc(((size_t)rp[nloc] + 1) * sizeof(double));
        for (int64_t p = 0; p < rp[nloc]; p++)
          nv[p] = v[p] * 0.75;
        CHECK_OK(rrt_sparse_set_values(A, nv));
        free(nv);
        for (int64_t p = 0; p < a.nnz; p++)
          a.val[p] *= 0.75;
        rrt_csr_free(&b);
        b = ref_permute(&a, pos);
        CHECK(ref_ilu0(&b) < 0);
        CHECK_OK(rrt_ilu0_factor(M));
      }
    }
    free(f);
  }
  rrt_ilu0_destroy(M);
  rrt_sparse_destroy(A);
  rrt_csr_free(&b);
  rrt_csr_free(&a);
  free(pos);
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
  static const char *full[] = {
      "gk_ani1.mtx",  "gk_ani1_nonsymm.mtx", "gk_isai_a.mtx",    "gk_trefethen20b.mtx",
      "ss_cage5.mtx", "ss_can24.mtx",        "ss_LFAT5.mtx",     "ss_494_bus.mtx",
      "gk_nos6.mtx",  "gk_1138_bus.mtx",     "gk_mahindas.mtx",  "pe_m0505.mtx",
      "laplace2d:13", "laplace3d:5",         "convdiff2d:11,40", NULL};
  static const char *emu[] = {
      "gk_ani1_nonsymm.mtx", "ss_cage5.mtx", "ss_can24.mtx",    "gk_trefethen20b.mtx",
      "pe_m0505.mtx",        "laplace2d:7",  "convdiff2d:6,30", NULL};
  const char **list = small ? emu : full;
  for (int k = 0; list[k]; k++)
    check_matrix(ctx, list[k], RRT_ILU_ORDER_NATURAL, 0);
  /* reorderings change the factors but the promise holds for each */
  static const char *reord_full[] = {"gk_ani1_nonsymm.mtx", "ss_494_bus.mtx", "laplace2d:13",
                                     "convdiff2d:11,40", NULL};
  static const char *reord_emu[] = {"ss_cage5.mtx", "laplace2d:7", NULL};
  const char **rl = small ? reord_emu : reord_full;
  for (int k = 0; rl[k]; k++) {
    check_matrix(ctx, rl[k], RRT_ILU_ORDER_RCM, 0);
    check_matrix(ctx, rl[k], RRT_ILU_ORDER_MULTICOLOR, 0);
  }
  /* f32 factors for the apply (levels and halos as above, other kernels) */
  check_matrix(ctx, small ? "convdiff2d:6,30" : "convdiff2d:11,40", RRT_ILU_ORDER_NATURAL, 1);
  /* (not the multicoloured Laplacian: its factors are exact in f32) */
  check_matrix(ctx, small ? "convdiff2d:6,30" : "convdiff2d:11,40", RRT_ILU_ORDER_MULTICOLOR, 1);
  if (!small) check_matrix(ctx, "gk_ani1_nonsymm.mtx", RRT_ILU_ORDER_NATURAL, 1);
  rrt_ctx_destroy(ctx);
  rc = test_result();
  MPI_Finalize();
  return rc;
}

/* The cpu Frank-Wolfe kernels that skip work by sign (the A solve's fast
 * path, kernels/cpu/seacells_asolve.c; the B argmin over K A^T cells,
 * kernels/cpu/seacells_bmin.c) against a naive dense computation written
 * here from the definitions, on random sparse operands built so that the
 * skipped cases happen: archetypes whose K A^T minimum is not negative (the
 * B scan to the first exact zero), archetypes without any K A^T cell, a
 * dense T1b row that leaves no zero (a full scan), a dense T1a row that
 * leaves no zero-gradient archetype (the A full path). Indices must agree
 * exactly (the ties that matter are exact zeros, lowest index first);
 * values to 1e-12 relative (the dense sums run in another order). The B
 * argmin must also give the bits of the walk over all archetypes
 * (rrt_sc_cpu_b_argmin), which sums in the same order. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/seacells.h"
#include "kernels/seacells_table.h"
#include "test_util.h"

#define N 240
#define M 32

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* A sparse matrix by cell (rows over N cells or M archetypes). */
typedef struct sp {
  int64_t ptr[N + 1];
  int32_t first[N], cnt[N], col[N * M];
  double val[N * M];
} sp;

/* Row r gets the columns with a nonzero in dense[r], ascending. */
static void from_dense(sp *s, const double *dense, int rows, int cols) {
  int64_t nz = 0;
  for (int r = 0; r < rows; r++) {
    s->ptr[r] = nz, s->first[r] = (int32_t)nz;
    for (int c = 0; c < cols; c++)
      if (dense[r * cols + c] != 0.0) s->col[nz] = c, s->val[nz++] = dense[r * cols + c];
    s->cnt[r] = (int32_t)(nz - s->ptr[r]);
  }
  s->ptr[rows] = nz;
}

static double *dmul(const double *a, const double *b, int r, int q, int c) {
  double *o = calloc((size_t)r * c, sizeof(double));
  for (int i = 0; i < r; i++)
    for (int l = 0; l < q; l++)
      for (int j = 0; j < c; j++)
        o[i * c + j] += a[i * q + l] * b[l * c + j];
  return o;
}

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * (fabs(b) > 1.0 ? fabs(b) : 1.0))

/* X: N x N, self and 4 random neighbours. */
static void make_x(double *x) {
  memset(x, 0, sizeof(double) * N * N);
  for (int i = 0; i < N; i++) {
    x[i * N + i] = 1.0;
    for (int e = 0; e < 4; e++)
      x[i * N + (int)(urand() * N)] = 0.1 + 0.9 * urand();
  }
}

/* T: M x M symmetric, positive diagonal, a few off-diagonal pairs; with
 * dense_row, row and column 0 full. */
static void make_kk(double *t, int dense_row) {
  memset(t, 0, sizeof(double) * M * M);
  for (int j = 0; j < M; j++) {
    t[j * M + j] = 0.5 + urand();
    for (int e = 0; e < 2; e++) {
      int l = (int)(urand() * M);
      double v = 0.05 + 0.2 * urand();
      t[j * M + l] = v, t[l * M + j] = v;
    }
  }
  if (dense_row)
    for (int j = 0; j < M; j++)
      t[j] = t[j * M] = t[j] != 0.0 ? t[j] : 0.01 + 0.01 * urand();
}

/* One B argmin case: Y = M Bg and H = M A^T by cell (dense N x M here). */
/* The kernels may form, store and visit per-cell rows in a locality order
 * (rrt_sc_locality_order): any order must give the same bits. Here a
 * stride through the cells (7 is prime to N). */
static const int32_t *stride_order(void) {
  static int32_t order[N];
  for (int r = 0; r < N; r++)
    order[r] = (int32_t)((r * 7) % N);
  return order;
}

static int b_case(const char *name, const double *x, const double *y, const double *h,
                  const double *t1b) {
  static sp X, Y, H, T;
  from_dense(&X, x, N, N), from_dense(&Y, y, N, M), from_dense(&H, h, N, M);
  from_dense(&T, t1b, M, M);
  rrt_sc_kk kk = {M, T.ptr, T.col, T.val};
  /* dense reference: g = 2 ((X Y) T1b - X H), argmin per archetype, lowest cell */
  double *kbg = dmul(x, y, N, N, M), *kat = dmul(x, h, N, N, M), *s = dmul(kbg, t1b, N, M, M);
  double want_v[M], v_sig[M], v_walk[M];
  int64_t want_i[M], i_sig[M], i_walk[M];
  for (int j = 0; j < M; j++) {
    want_v[j] = INFINITY, want_i[j] = -1;
    for (int i = 0; i < N; i++) {
      double g = 2.0 * (s[i * M + j] - kat[i * M + j]);
      if (g < want_v[j]) want_v[j] = g, want_i[j] = 100 + i;
    }
  }
  const int32_t *order = stride_order();
  double v_ord[M];
  int64_t i_ord[M];
  rrt_sc_rowset kat_rows = {0}, kat_ord = {0};
  int64_t *sptr = NULL;
  int32_t *scell = NULL;
  double *sval = NULL;
  CHECK(rrt_sc_cpu_xh_rows(N, M, NULL, X.ptr, X.col, X.val, H.first, H.cnt, H.col, H.val, INT64_MAX,
                           &kat_rows) == RRT_SUCCESS);
  CHECK(rrt_sc_cpu_xh_rows(N, M, order, X.ptr, X.col, X.val, H.first, H.cnt, H.col, H.val,
                           INT64_MAX, &kat_ord) == RRT_SUCCESS);
  CHECK(rrt_sc_cpu_kat_cells(N, M, &kat_rows, &sptr, &scell, &sval) == RRT_SUCCESS);
  rrt_sc_wide wide, wide_ord;
  rrt_sc_cpu_wide_make(N, M, NULL, sptr, scell, sval, &kk, &wide);
  rrt_sc_cpu_wide_make(N, M, order, sptr, scell, sval, &kk, &wide_ord);
  if (strstr(name, "wide"))
    CHECK_MSG(wide.nw >= 2 && wide_ord.nw == wide.nw,
              "%s: %d and %d archetypes cell-major: that pass is not tested", name, wide.nw,
              wide_ord.nw);
  CHECK(rrt_sc_cpu_b_argmin_signs(N, 100, M, NULL, NULL, X.ptr, X.col, X.val, Y.first, Y.cnt, Y.col,
                                  Y.val, &wide, sptr, scell, sval, &kk, v_sig,
                                  i_sig) == RRT_SUCCESS);
  int32_t *jorder = NULL;
  CHECK(rrt_sc_cpu_kat_order(N, M, order, sptr, scell, &jorder) == RRT_SUCCESS);
  CHECK(rrt_sc_cpu_b_argmin_signs(N, 100, M, order, jorder, X.ptr, X.col, X.val, Y.first, Y.cnt,
                                  Y.col, Y.val, &wide_ord, sptr, scell, sval, &kk, v_ord,
                                  i_ord) == RRT_SUCCESS);
  rrt_sc_cpu_b_argmin(N, 100, M, X.ptr, X.col, X.val, Y.first, Y.cnt, Y.col, Y.val, H.first, H.cnt,
                      H.col, H.val, NULL, &kk, v_walk, i_walk);
  int bad = 0, nonneg = 0;
  for (int j = 0; j < M; j++) {
    bad += i_sig[j] != want_i[j] || !REL(v_sig[j], want_v[j]);
    bad += i_sig[j] != i_walk[j] || memcmp(&v_sig[j], &v_walk[j], sizeof(double)) != 0;
    bad += i_ord[j] != i_walk[j] || memcmp(&v_ord[j], &v_walk[j], sizeof(double)) != 0;
    nonneg += want_v[j] >= 0.0;
  }
  CHECK_MSG(bad == 0, "%s: %d B argmin entries differ", name, bad);
  free(kbg), free(kat), free(s), free(sptr), free(scell), free(sval);
  rrt_sc_rowset_free(&kat_rows), rrt_sc_rowset_free(&kat_ord);
  rrt_sc_wide_free(&wide), rrt_sc_wide_free(&wide_ord);
  free(jorder);
  return nonneg;
}

static void test_b(void) {
  static double x[N * N], y[N * M], h[N * M], t1b[M * M];
  make_x(x);
  /* Y sparse (zeros exist); H weak or absent for the high archetypes, so
   * their K A^T minimum is not negative and the scan decides */
  memset(y, 0, sizeof y), memset(h, 0, sizeof h);
  for (int i = 0; i < N; i++) {
    if (urand() < 0.3) y[i * M + (int)(urand() * M)] = 0.2 + urand();
    for (int e = 0; e < 2; e++) {
      int j = (int)(urand() * M);
      if (j < 28) h[i * M + j] = j < 20 ? 0.5 + urand() : 1e-3 * urand();
    }
  }
  make_kk(t1b, 0);
  int nonneg = b_case("sparse Y", x, y, h, t1b);
  CHECK_MSG(nonneg >= 4, "only %d archetypes with a non-negative minimum: the scan is not tested",
            nonneg);
  /* archetype 0 in every cell's Y and a dense T1b row: s > 0 everywhere,
   * no exact zero, full scans */
  for (int i = 0; i < N; i++)
    y[i * M] = 0.01 + 0.01 * urand();
  make_kk(t1b, 1);
  nonneg = b_case("dense T1b row", x, y, h, t1b);
  CHECK_MSG(nonneg >= 4, "only %d archetypes with a non-negative minimum (dense row)", nonneg);
  /* archetypes 1 and 2 in every cell's H (as the zero-gradient archetypes
   * are in every A column): K A^T columns over all cells, evaluated
   * cell-major; 2's weights are tiny, so its minimum is not negative */
  for (int i = 0; i < N; i++)
    h[i * M + 1] = 0.3 + urand(), h[i * M + 2] = 1e-3 * urand();
  make_kk(t1b, 0);
  b_case("wide K A^T columns", x, y, h, t1b);
}

/* The A solve from a (first = 0) or from 0, against the dense loop; the
 * cells taken in a locality order (any order must give the same bits). */
static void a_case(const char *name, const double *x, const double *y, const double *t1a,
                   const double *a0, int first, int fw) {
  static sp X, Y, T;
  from_dense(&X, x, N, N), from_dense(&Y, y, N, M), from_dense(&T, t1a, M, M);
  rrt_sc_kk kk = {M, T.ptr, T.col, T.val};
  int capa = fw < M ? fw : M;
  int32_t *aidx = calloc((size_t)N * capa, sizeof(int32_t));
  double *aw = calloc((size_t)N * capa, sizeof(double));
  int *annz = calloc(N, sizeof(int));
  for (int i = 0; i < N && !first; i++)
    for (int j = 0; j < M; j++)
      if (a0[i * M + j] != 0.0 && annz[i] < capa)
        aidx[i * capa + annz[i]] = j, aw[i * capa + annz[i]++] = a0[i * M + j];
  double *t2 = dmul(x, y, N, N, M);
  CHECK_OK(rrt_sc_cpu_a_solve(N, stride_order(), M, fw, capa, X.ptr, X.col, X.val, Y.first, Y.cnt,
                              Y.col, Y.val, &kk, first, aidx, aw, annz));
  int bad = 0;
  for (int i = 0; i < N; i++) {
    double a[M] = {0}, u[M] = {0};
    for (int j = 0; j < M && !first; j++)
      a[j] = a0[i * M + j];
    for (int j = 0; j < M; j++)
      for (int l = 0; l < M; l++)
        u[j] += t1a[l * M + j] * a[l];
    for (int t = 0; t < fw; t++) {
      int amin = 0;
      for (int j = 1; j < M; j++)
        if (2.0 * (u[j] - t2[i * M + j]) < 2.0 * (u[amin] - t2[i * M + amin])) amin = j;
      double f = 2.0 / (t + 2.0);
      for (int j = 0; j < M; j++) {
        a[j] = f == 1.0 ? (j == amin) : a[j] + f * ((j == amin) - a[j]);
        u[j] = f == 1.0 ? t1a[amin * M + j] : u[j] + f * (t1a[amin * M + j] - u[j]);
      }
    }
    int nz = 0;
    for (int j = 0; j < M; j++)
      if (a[j] != 0.0 && nz < capa) {
        bad += nz >= annz[i] || aidx[i * capa + nz] != j || !REL(aw[i * capa + nz], a[j]);
        nz++;
      }
    bad += nz != annz[i];
  }
  CHECK_MSG(bad == 0, "%s: %d A entries differ", name, bad);
  free(aidx), free(aw), free(annz), free(t2);
}

static void test_a(void) {
  static double x[N * N], y[N * M], t1a[M * M], a0[N * M];
  make_x(x);
  memset(y, 0, sizeof y), memset(a0, 0, sizeof a0);
  for (int i = 0; i < N; i++) {
    if (urand() < 0.5) y[i * M + (int)(urand() * M)] = 0.2 + urand();
    for (int e = 0; e < 3; e++)
      a0[i * M + (int)(urand() * M)] = 0.1 + urand();
  }
  make_kk(t1a, 0);
  a_case("from 0", x, y, t1a, a0, 1, 12);
  a_case("from a", x, y, t1a, a0, 0, 12);
  a_case("from a, more steps than archetypes", x, y, t1a, a0, 0, 40);
  /* a dense T1a row in every start column: no zero-gradient archetype at
   * the first step (the full path) */
  make_kk(t1a, 1);
  for (int i = 0; i < N; i++)
    a0[i * M] = 0.05;
  a_case("dense T1a row", x, y, t1a, a0, 0, 12);
}

static int i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* The int32 sorts (quicksort, its heapsort fallback, the insertion sort of
 * short lists) against libc's qsort on random, duplicated, sorted,
 * reversed, organ-pipe and constant lists of sizes around the cut-offs. */
static void test_sort(void) {
  static const int64_t sizes[] = {0, 1, 2, 24, 25, 26, 63, 64, 65, 1000, 4099};
  enum { NMAX = 4099 };
  static int32_t v[NMAX], h[NMAX], ref[NMAX];
  for (int pat = 0; pat < 6; pat++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
      int64_t n = sizes[z];
      for (int64_t i = 0; i < n; i++)
        v[i] = pat == 0   ? (int32_t)(urand() * 2e9) - 1000000000
               : pat == 1 ? (int32_t)(urand() * 7)
               : pat == 2 ? (int32_t)i
               : pat == 3 ? (int32_t)(n - i)
               : pat == 4 ? (int32_t)(i < n / 2 ? i : n - i)
                          : 5;
      memcpy(ref, v, (size_t)n * sizeof(int32_t));
      memcpy(h, v, (size_t)n * sizeof(int32_t));
      qsort(ref, (size_t)n, sizeof(int32_t), i32_cmp);
      rrt_sc_sort_i32(v, n);
      rrt_sc_heapsort_i32(h, n);
      int ok = !memcmp(v, ref, (size_t)n * sizeof(int32_t)) &&
               !memcmp(h, ref, (size_t)n * sizeof(int32_t));
      if (!ok) printf("sort: pattern %d, n = %lld: differs from qsort\n", pat, (long long)n);
      CHECK(ok);
    }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  test_sort();
  test_b();
  test_a();
  if (rrt_test_rank_() == 0) printf("sparse FW kernels against the dense loops: done\n");
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

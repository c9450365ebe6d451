/* Test helpers of the ILU(0) area: a small serial IKJ ILU(0) reference (the
 * independent source of truth the distributed factors must equal bit for
 * bit), the naive ILU(k) pattern it runs on for levels of fill, serial
 * triangular solves and SpMV in the same summation order, and the
 * distribution of a global CSR over the ranks. */
#ifndef RRT_TESTS_ILU_REF_H
#define RRT_TESTS_ILU_REF_H

#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/mmio.h"
#include "io/sparse_gen.h"
#include "ringrt/ringrt.h"

/* B = P A P^T with pos[old] = new; columns sorted. */
static inline rrt_csr ref_permute(const rrt_csr *a, const int64_t *pos) {
  int64_t *r = malloc(((size_t)a->nnz + 1) * sizeof(int64_t));
  int64_t *c = malloc(((size_t)a->nnz + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < a->nrows; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      r[p] = pos[i], c[p] = pos[a->col[p]];
  rrt_csr b;
  rrt_csr_from_triplets(a->nrows, a->ncols, a->nnz, r, c, a->val, &b);
  free(r), free(c);
  return b;
}

/* Serial IKJ ILU(0) in place on b (natural order of b), each pivot
 * boosted as rrt_ilu0_options.boost says (0: not; 1: |u_ii| <= tol ->
 * value; 2: -> u_ii + value). Returns -1 on success, else the first row
 * (of b) with a zero pivot. */
static inline int64_t ref_ilu0_boost(rrt_csr *b, int boost, double tol, double value) {
  int64_t n = b->nrows, first_zero = -1;
  int64_t *where = malloc(((size_t)n + 1) * sizeof(int64_t)); /* column -> entry in row i */
  int64_t *diag = malloc(((size_t)n + 1) * sizeof(int64_t));
  for (int64_t j = 0; j < n; j++)
    where[j] = -1, diag[j] = -1;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1]; p++) {
      where[b->col[p]] = p;
      if (b->col[p] == i) diag[i] = p;
    }
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1] && b->col[p] < i; p++) {
      int64_t k = b->col[p];
      double l = b->val[p] / b->val[diag[k]];
      b->val[p] = l;
      for (int64_t q = diag[k] + 1; q < b->rowptr[k + 1]; q++)
        if (where[b->col[q]] >= 0) {
          double prod = l * b->val[q];
          b->val[where[b->col[q]]] = b->val[where[b->col[q]]] - prod;
        }
    }
    if (boost && diag[i] >= 0 && fabs(b->val[diag[i]]) <= tol)
      b->val[diag[i]] = boost == 2 ? b->val[diag[i]] + value : value;
    if (first_zero < 0 && diag[i] >= 0 && b->val[diag[i]] == 0.0) first_zero = i;
    if (first_zero < 0 && diag[i] < 0) first_zero = i;
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1]; p++)
      where[b->col[p]] = -1;
  }
  free(where), free(diag);
  return first_zero;
}

/* Serial IKJ ILU(0) without a boost (ref_ilu0_boost). */
static inline int64_t ref_ilu0(rrt_csr *b) { return ref_ilu0_boost(b, 0, 0.0, 0.0); }

/* z = U^-1 L^-1 r for the factored b, in the library's documented order:
 * L terms in increasing column, U terms in decreasing column, then times
 * the correctly rounded reciprocal of the pivot. */
static inline void ref_apply(const rrt_csr *b, const double *r, double *z) {
  int64_t n = b->nrows;
  double *y = malloc(((size_t)n + 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    double s = r[i];
    for (int64_t p = b->rowptr[i]; p < b->rowptr[i + 1] && b->col[p] < i; p++) {
      double prod = b->val[p] * y[b->col[p]];
      s = s - prod;
    }
    y[i] = s;
  }
  for (int64_t i = n - 1; i >= 0; i--) {
    double s = y[i], d = 0.0;
    for (int64_t p = b->rowptr[i + 1] - 1; p >= b->rowptr[i]; p--) {
      if (b->col[p] == i) d = b->val[p];
      if (b->col[p] > i) {
        double prod = b->val[p] * z[b->col[p]];
        s = s - prod;
      }
    }
    double dinv = 1.0 / d;
    z[i] = s * dinv;
  }
  free(y);
}

/* The factors_f32 apply: the same solves with every factor value rounded to
 * f32 (and widened back; the pivot's reciprocal is that of the f32 pivot). */
static inline void ref_apply_f32(const rrt_csr *b, const double *r, double *z) {
  rrt_csr c = *b;
  c.val = malloc(((size_t)b->nnz + 1) * sizeof(double));
  for (int64_t p = 0; p < b->nnz; p++)
    c.val[p] = (double)(float)b->val[p];
  ref_apply(&c, r, z);
  free(c.val);
}

static inline void ref_spmv(const rrt_csr *a, const double *x, double *y) {
  for (int64_t i = 0; i < a->nrows; i++) {
    double s = 0.0;
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
      double prod = a->val[p] * x[a->col[p]];
      s = s + prod;
    }
    y[i] = s;
  }
}

/* Entry (i, j) of a CSR, or NULL. */
static inline const double *ref_entry(const rrt_csr *a, int64_t i, int64_t j) {
  int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (a->col[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < a->rowptr[i + 1] && a->col[lo] == j ? &a->val[lo] : NULL;
}

/* 1 (and a line saying so) when `name` is a Matrix Market file that is not
 * there: a machine that was handed the tree without the shared data (a GPU
 * node) skips that matrix instead of failing the test. */
static inline int ref_missing(const char *name) {
  if (!strchr(name, '.')) return 0;
  char path[1024];
  snprintf(path, sizeof(path), "%s/matrices/%s", RINGRT_SHARED_DATA, name);
  if (access(path, F_OK) == 0) return 0;
  printf("SKIPPED %s: data file %s is missing\n", name, path);
  return 1;
}

/* Global problem: a Matrix Market file (name under RINGRT_SHARED_DATA/matrices)
 * or a generator spec ("laplace2d:8"). */
static inline int ref_load(const char *name, rrt_csr *a, char *err, size_t errlen) {
  rrt_gen_spec spec;
  char gerr[256];
  if (!strchr(name, '.') && rrt_gen_parse(name, &spec, gerr, sizeof(gerr)) == 0)
    return rrt_gen_block(&spec, 0, rrt_gen_order(&spec), a) == RRT_SUCCESS ? 0 : -1;
  char path[1024];
  snprintf(path, sizeof(path), "%s/matrices/%s", RINGRT_SHARED_DATA, name);
  return rrt_mm_read(path, RRT_MM_PATTERN_LAPLACIAN, a, NULL, err, errlen) == RRT_SUCCESS ? 0 : -1;
}

/* This rank's rows of the nonzero-balanced partition. */
static inline rrt_status ref_distribute(rrt_ctx_t ctx, const rrt_csr *a, rrt_sparse_t *A) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  int64_t *off = malloc(((size_t)P + 1) * sizeof(int64_t));
  rrt_sparse_partition(a->nrows, a->rowptr, P, off);
  int64_t r0 = off[r], r1 = off[r + 1];
  int64_t *rp = malloc(((size_t)(r1 - r0) + 1) * sizeof(int64_t));
  for (int64_t i = r0; i <= r1; i++)
    rp[i - r0] = a->rowptr[i] - a->rowptr[r0];
  rrt_status st = rrt_sparse_create(ctx, a->nrows, r0, r1 - r0, rp, a->col + a->rowptr[r0],
                                    a->val + a->rowptr[r0], A);
  free(rp), free(off);
  return st;
}

/* Context from the environment; exit code 77 (skip) when the backend asked
 * for (cuda) has no device, agreed on every rank. */
static inline int ref_ctx(rrt_ctx_t *ctx) {
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, NULL, ctx);
  if (st == RRT_ERR_NO_DEVICE || st == RRT_ERR_UNSUPPORTED) return 77;
  return st == RRT_SUCCESS ? 0 : 1;
}

/* A padded with explicit zeros at the ILU(k) fill, by the definition:
 * lev = 0 on A's pattern; each earlier row m of row i's pattern (fill
 * included, in increasing m) proposes lev(i,m) + lev(m,j) + 1 for its j > m;
 * kept when <= k. Dense per row (the test matrices are small). */
static inline rrt_csr ref_fill(const rrt_csr *a, int k) {
  int64_t n = a->nrows, cap = a->nnz + 16, nnz = 0;
  int64_t *ptr = calloc((size_t)n + 1, sizeof(int64_t)), *col = malloc((size_t)cap * 8);
  int *lv = malloc((size_t)cap * sizeof(int)), *row = malloc((size_t)n * sizeof(int));
  for (int64_t j = 0; j < n; j++)
    row[j] = INT_MAX;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      row[a->col[p]] = 0;
    for (int64_t m = 0; m < i; m++) {
      if (row[m] == INT_MAX) continue;
      for (int64_t q = ptr[m]; q < ptr[m + 1]; q++) {
        int64_t j = col[q];
        long p = (long)row[m] + lv[q] + 1;
        if (j > m && p <= k && p < row[j]) row[j] = (int)p;
      }
    }
    for (int64_t j = 0; j < n; j++) {
      if (row[j] == INT_MAX) continue;
      if (nnz == cap) {
        cap *= 2;
        col = realloc(col, (size_t)cap * 8), lv = realloc(lv, (size_t)cap * sizeof(int));
      }
      col[nnz] = j, lv[nnz++] = row[j], row[j] = INT_MAX;
    }
    ptr[i + 1] = nnz;
  }
  int64_t *ri = malloc((size_t)nnz * 8);
  double *v = calloc((size_t)nnz, sizeof(double));
  for (int64_t i = 0; i < n; i++)
    for (int64_t p = ptr[i]; p < ptr[i + 1]; p++)
      ri[p] = i, v[p] = ref_entry(a, i, col[p]) ? *ref_entry(a, i, col[p]) : 0.0;
  rrt_csr b;
  rrt_csr_from_triplets(n, n, nnz, ri, col, v, &b);
  free(ptr), free(col), free(lv), free(row), free(ri), free(v);
  return b;
}

/* Every rank's elimination positions (rrt_ilu0_get_positions), in global
 * row order on every rank; malloc'd, n entries. Collective over
 * MPI_COMM_WORLD (the tests' contexts span it). */
static inline int64_t *ref_all_positions(rrt_ilu0_t M, rrt_sparse_t A) {
  int P = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int64_t nloc = rrt_sparse_local_rows(A), n = rrt_sparse_n(A);
  int64_t *loc = malloc(((size_t)nloc + 1) * sizeof(int64_t));
  int64_t *pos = malloc(((size_t)n + 1) * sizeof(int64_t));
  int *cnt = malloc((size_t)P * sizeof(int)), *dis = malloc((size_t)P * sizeof(int));
  int mine = (int)nloc;
  rrt_ilu0_get_positions(M, loc);
  MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, MPI_COMM_WORLD);
  dis[0] = 0;
  for (int p = 1; p < P; p++)
    dis[p] = dis[p - 1] + cnt[p - 1];
  MPI_Allgatherv(loc, mine, MPI_INT64_T, pos, cnt, dis, MPI_INT64_T, MPI_COMM_WORLD);
  free(loc), free(cnt), free(dis);
  return pos;
}

#endif

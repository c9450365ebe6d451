/* `ringrt ilu` file I/O: each rank reads only its share of a matrix file
 * and keeps the rows of its nonzero-balanced block (io/mm_rows.h: errors
 * are the same everywhere); a right-hand side is read whole on every rank;
 * outputs are gathered on rank 0 and written there. */
#include "ilu_files.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/host_coll.h"
#include "io/mm_rows.h"
#include "io/npy.h"
#include "io/sparse_gen.h"

/* Rows [off[rank], off[rank+1]) of a generated problem, built block by block. */
static int load_generated(const char *generate, int P, int rank, int64_t *off, int64_t *n,
                          int64_t *r0, rrt_csr *loc, char *err, size_t errlen) {
  rrt_gen_spec spec;
  if (rrt_gen_parse(generate, &spec, err, errlen)) return 1;
  *n = rrt_gen_order(&spec);
  int64_t *rp = rrt_gen_rowptr(&spec);
  if (!rp) return snprintf(err, errlen, "out of memory for %lld rows", (long long)*n), 1;
  rrt_sparse_partition(*n, rp, P, off);
  free(rp);
  *r0 = off[rank];
  int rc = rrt_gen_block(&spec, off[rank], off[rank + 1], loc) != RRT_SUCCESS;
  if (rc) snprintf(err, errlen, "out of memory generating %s", generate);
  return rc;
}

/* This rank's rows of a Matrix Market file: each rank reads only its share
 * of the file (io/mm_rows.h); the verdict on a bad file is the same on
 * every rank. */
static int load_file(rrt_ctx_t ctx, const char *matrix, rrt_mm_pattern_values pattern, int64_t *n,
                     int64_t *r0, rrt_csr *loc, char *err, size_t errlen) {
  rrt_mm_info info;
  if (rrt_mm_read_rows(ctx, matrix, pattern, r0, loc, NULL, &info, err, errlen) != RRT_SUCCESS)
    return 1;
  if (info.nrows != info.ncols) {
    snprintf(err, errlen, "%s: matrix is %lld x %lld, ILU(0) needs a square matrix", matrix,
             (long long)info.nrows, (long long)info.ncols);
    rrt_csr_free(loc);
    return 1;
  }
  *n = info.nrows;
  return 0;
}

int rrt_app_ilu_load_rows(rrt_ctx_t ctx, const char *matrix, const char *generate,
                          rrt_mm_pattern_values pattern, int64_t *n, int64_t *r0, rrt_csr *loc,
                          char *err, size_t errlen) {
  if (!generate) return load_file(ctx, matrix, pattern, n, r0, loc, err, errlen);
  int P = rrt_ctx_size(ctx);
  int64_t *off = malloc(((size_t)P + 1) * sizeof(int64_t));
  if (!off) return snprintf(err, errlen, "out of memory"), 1;
  int rc = load_generated(generate, P, rrt_ctx_rank(ctx), off, n, r0, loc, err, errlen);
  free(off);
  return rc;
}

/* Local part of b from a file (whole vector on every rank). */
int rrt_app_ilu_load_rhs(const char *path, int64_t n, int64_t r0, int64_t m, double *b, char *err,
                         size_t errlen) {
  size_t len = strlen(path);
  double *v = NULL;
  int64_t vn = 0;
  if (len > 4 && !strcmp(path + len - 4, ".npy")) {
    rrt_npy a;
    if (rrt_npy_read(path, &a, err, errlen) != RRT_SUCCESS) return 1;
    if (strcmp(a.descr, "<f8") != 0 || (int64_t)a.count != n) {
      snprintf(err, errlen, "%s: need %lld float64 values (<f8), found %zu of %s", path,
               (long long)n, a.count, a.descr);
      rrt_npy_free(&a);
      return 1;
    }
    /* the whole vector is scanned, so every rank names the same value */
    const double *d = a.data;
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(d[i])) {
        snprintf(err, errlen, "%s: value %lld (0-based) is %s: NaN and Inf are refused", path,
                 (long long)i, isnan(d[i]) ? "NaN" : "Inf");
        rrt_npy_free(&a);
        return 1;
      }
    memcpy(b, d + r0, (size_t)m * sizeof(double));
    rrt_npy_free(&a);
    return 0;
  }
  if (rrt_mm_read_vector(path, &v, &vn, err, errlen) != RRT_SUCCESS) return 1;
  if (vn != n) {
    snprintf(err, errlen, "%s: %lld values, the matrix has %lld rows", path, (long long)vn,
             (long long)n);
    free(v);
    return 1;
  }
  memcpy(b, v + r0, (size_t)m * sizeof(double));
  free(v);
  return 0;
}

/* Gather 8-byte values to rank 0 in rank order (size_t counts, the
 * library's timeout): the global array on rank 0, NULL elsewhere and on a
 * failure (*fail set on every rank). */
static void *gather0(rrt_ctx_t ctx, const void *loc, int64_t m, int *fail) {
  void *all = NULL;
  if (rrt_host_gatherv_alloc(ctx, "ringrt ilu: gathering rows", loc, (size_t)m * 8, 0, &all, NULL,
                             NULL) != RRT_SUCCESS)
    *fail = 1;
  return all;
}

double *rrt_app_ilu_gather0(rrt_ctx_t ctx, const double *loc, int64_t m) {
  int fail = 0;
  return gather0(ctx, loc, m, &fail);
}

int rrt_app_ilu_write_rows(rrt_ctx_t ctx, const rrt_csr *loc, const double *f, int64_t n,
                           const char *path, const char *comment, char *err, size_t errlen) {
  int64_t nnz = 0, lnz = loc->nnz;
  int fail = rrt_host_allreduce(ctx, &lnz, &nnz, 1, RRT_DTYPE_I64, RRT_OP_SUM) != RRT_SUCCESS;
  int64_t *len = malloc(((size_t)loc->nrows + 1) * sizeof(int64_t));
  if (rrt_app_any_rank(ctx, fail || !len)) {
    snprintf(err, errlen, "%s: %s", path, len ? rrt_ctx_last_error(ctx) : "out of memory");
    free(len);
    return 1;
  }
  for (int64_t i = 0; i < loc->nrows; i++)
    len[i] = loc->rowptr[i + 1] - loc->rowptr[i];
  double *vals = gather0(ctx, f, loc->nnz, &fail);
  int64_t *cols = gather0(ctx, loc->col, loc->nnz, &fail);
  int64_t *lens = gather0(ctx, len, loc->nrows, &fail);
  int rc = fail;
  if (fail) snprintf(err, errlen, "%s: %s", path, rrt_ctx_last_error(ctx));
  if (!fail && rrt_ctx_rank(ctx) == 0) {
    rrt_csr a = {n, n, nnz, malloc(((size_t)n + 1) * sizeof(int64_t)), cols, vals};
    if (!a.rowptr) {
      rc = 1;
      snprintf(err, errlen, "%s: out of memory", path);
    } else {
      a.rowptr[0] = 0;
      for (int64_t i = 0; i < n; i++)
        a.rowptr[i + 1] = a.rowptr[i] + lens[i];
      rc = rrt_mm_write(path, &a, comment, err, errlen) != RRT_SUCCESS;
      free(a.rowptr);
    }
  }
  rc = rrt_app_any_rank(ctx, rc);
  free(vals), free(cols), free(len), free(lens);
  return rc;
}

int rrt_app_ilu_write_factors(rrt_ctx_t ctx, rrt_ilu0_t M, const rrt_csr *loc, int64_t n,
                              const char *path, char *err, size_t errlen) {
  /* the factor pattern: A's, plus the fill of ILU(k) */
  int64_t nnz = rrt_ilu0_factor_nnz(M);
  rrt_csr fp = {.nrows = loc->nrows, .ncols = loc->ncols, .nnz = nnz};
  fp.rowptr = malloc(((size_t)loc->nrows + 1) * sizeof(int64_t));
  fp.col = malloc(((size_t)nnz + 1) * sizeof(int64_t));
  fp.val = malloc(((size_t)nnz + 1) * sizeof(double));
  int rc = 1;
  if (rrt_app_any_rank(ctx, !fp.rowptr || !fp.col || !fp.val)) {
    snprintf(err, errlen, "%s: out of memory", path);
  } else {
    rrt_ilu0_get_factor_pattern(M, fp.rowptr, fp.col);
    rrt_ilu0_get_factors(M, fp.val);
    rc = rrt_app_ilu_write_rows(ctx, &fp, fp.val, n, path,
                                "ringrt ILU factors: L (unit diagonal implied) and U in one "
                                "pattern (A's plus the fill of ILU(k)), original row/column order",
                                err, errlen);
  }
  free(fp.rowptr), free(fp.col), free(fp.val);
  return rc;
}

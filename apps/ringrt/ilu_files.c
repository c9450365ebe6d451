/* `ringrt ilu` file I/O: every rank reads the same input (errors are then
 * the same everywhere) and keeps the rows of its nonzero-balanced block;
 * outputs are gathered on rank 0 and written there. */
#include "ilu_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* This rank's rows of a Matrix Market file read whole on every rank. */
static int load_file(const char *matrix, rrt_mm_pattern_values pattern, int P, int rank,
                     int64_t *off, int64_t *n, int64_t *r0, rrt_csr *loc, char *err,
                     size_t errlen) {
  rrt_csr a;
  if (rrt_mm_read(matrix, pattern, &a, NULL, err, errlen) != RRT_SUCCESS) return 1;
  if (a.nrows != a.ncols) {
    snprintf(err, errlen, "%s: matrix is %lld x %lld, ILU(0) needs a square matrix", matrix,
             (long long)a.nrows, (long long)a.ncols);
    rrt_csr_free(&a);
    return 1;
  }
  *n = a.nrows;
  rrt_sparse_partition(a.nrows, a.rowptr, P, off);
  *r0 = off[rank];
  int rc = 0;
  int64_t m = off[rank + 1] - off[rank], b = a.rowptr[off[rank]], nz = a.rowptr[off[rank + 1]] - b;
  loc->nrows = m, loc->ncols = a.ncols, loc->nnz = nz;
  loc->rowptr = malloc(((size_t)m + 1) * sizeof(int64_t));
  loc->col = malloc(((size_t)nz + 1) * sizeof(int64_t));
  loc->val = malloc(((size_t)nz + 1) * sizeof(double));
  if (!loc->rowptr || !loc->col || !loc->val) {
    rc = 1;
    snprintf(err, errlen, "out of memory");
  } else {
    for (int64_t i = 0; i <= m; i++)
      loc->rowptr[i] = a.rowptr[off[rank] + i] - b;
    memcpy(loc->col, a.col + b, (size_t)nz * sizeof(int64_t));
    memcpy(loc->val, a.val + b, (size_t)nz * sizeof(double));
  }
  rrt_csr_free(&a);
  return rc;
}

int rrt_app_ilu_load_rows(const char *matrix, const char *generate, rrt_mm_pattern_values pattern,
                          int P, int rank, int64_t *n, int64_t *r0, rrt_csr *loc, char *err,
                          size_t errlen) {
  int64_t *off = malloc(((size_t)P + 1) * sizeof(int64_t));
  if (!off) return snprintf(err, errlen, "out of memory"), 1;
  int rc = generate ? load_generated(generate, P, rank, off, n, r0, loc, err, errlen)
                    : load_file(matrix, pattern, P, rank, off, n, r0, loc, err, errlen);
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
    memcpy(b, (double *)a.data + r0, (size_t)m * sizeof(double));
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

/* Gather a local double array to rank 0 (global order): returns the global array on rank 0. */
double *rrt_app_ilu_gather0(MPI_Comm comm, const double *loc, int64_t m, int64_t total, int P,
                            int rank) {
  int *cnt = malloc((size_t)P * sizeof(int)), *dis = malloc((size_t)P * sizeof(int)), mine = (int)m;
  double *all = rank == 0 ? malloc(((size_t)total + 1) * sizeof(double)) : NULL;
  MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, comm);
  if (rank == 0) {
    dis[0] = 0;
    for (int p = 1; p < P; p++)
      dis[p] = dis[p - 1] + cnt[p - 1];
  }
  MPI_Gatherv(loc, mine, MPI_DOUBLE, all, cnt, dis, MPI_DOUBLE, 0, comm);
  free(cnt), free(dis);
  return all;
}

/* Gather the local rows (pattern of loc, values f) to rank 0 and write them. */
int rrt_app_ilu_write_rows(MPI_Comm comm, const rrt_csr *loc, const double *f, int64_t n,
                           const char *path, const char *comment, int P, int rank, char *err,
                           size_t errlen) {
  int64_t nnz = 0, lnz = loc->nnz;
  MPI_Allreduce(&lnz, &nnz, 1, MPI_INT64_T, MPI_SUM, comm);
  double *vals = rrt_app_ilu_gather0(comm, f, loc->nnz, nnz, P, rank);
  /* columns and row pointers travel as doubles-sized int64 through the same helper */
  double *cols = rrt_app_ilu_gather0(comm, (const double *)loc->col, loc->nnz, nnz, P, rank);
  int64_t *len = malloc(((size_t)loc->nrows + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < loc->nrows; i++)
    len[i] = loc->rowptr[i + 1] - loc->rowptr[i];
  double *lens = rrt_app_ilu_gather0(comm, (const double *)len, loc->nrows, n, P, rank);
  int rc = 0;
  if (rank == 0) {
    rrt_csr a = {n, n, nnz, malloc(((size_t)n + 1) * sizeof(int64_t)), (int64_t *)cols, vals};
    a.rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++)
      a.rowptr[i + 1] = a.rowptr[i] + ((int64_t *)lens)[i];
    rc = rrt_mm_write(path, &a, comment, err, errlen) != RRT_SUCCESS;
    free(a.rowptr);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  free(vals), free(cols), free(len), free(lens);
  return rc;
}

int rrt_app_ilu_write_factors(MPI_Comm comm, rrt_ilu0_t M, const rrt_csr *loc, int64_t n,
                              const char *path, int P, int rank, char *err, size_t errlen) {
  double *f = malloc(((size_t)loc->nnz + 1) * sizeof(double));
  if (!f) return snprintf(err, errlen, "out of memory"), 1;
  rrt_ilu0_get_factors(M, f);
  int rc = rrt_app_ilu_write_rows(comm, loc, f, n, path,
                                  "ringrt ILU(0) factors: L (unit diagonal implied) and U in one "
                                  "pattern, original row/column order",
                                  P, rank, err, errlen);
  free(f);
  return rc;
}

/* `ringrt ilu`: the problem's rows and right-hand side in, matrices and
 * vectors out (gathered on rank 0). */
#ifndef RRT_APP_ILU_FILES_H
#define RRT_APP_ILU_FILES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "io/mmio.h"
#include "ringrt/ilu.h"

/** This rank's rows of the problem: a generated one (`generate`, e.g.
 *  "laplace2d:20") or a Matrix Market file (`matrix`, plain or gzip), in row
 *  blocks balanced by nonzeros over the context's ranks. Sets the order *n
 *  and the first row *r0. Collective for a file. Returns 0, or 1 with err
 *  filled. */
int rrt_app_ilu_load_rows(rrt_ctx_t ctx, const char *matrix, const char *generate,
                          rrt_mm_pattern_values pattern, int64_t *n, int64_t *r0, rrt_csr *loc,
                          char *err, size_t errlen);

/** Rows r0 .. r0+m-1 of the right-hand side in `path` (.npy f8, else a
 *  Matrix Market vector) of length n into b. Returns 0, or 1 with err. */
int rrt_app_ilu_load_rhs(const char *path, int64_t n, int64_t r0, int64_t m, double *b, char *err,
                         size_t errlen);

/** Gather m local doubles of each rank to rank 0 in rank order: the global
 *  array on rank 0 (malloc'd), NULL elsewhere or on a failure. Collective. */
double *rrt_app_ilu_gather0(rrt_ctx_t ctx, const double *loc, int64_t m);

/** Gather the local rows (pattern of loc, values f) on rank 0 and write them
 *  as Matrix Market with `comment`. Collective; every rank returns the same
 *  verdict (0, or 1 with err filled on the rank that failed). */
int rrt_app_ilu_write_rows(rrt_ctx_t ctx, const rrt_csr *loc, const double *f, int64_t n,
                           const char *path, const char *comment, char *err, size_t errlen);

/** The combined LU factors of M (pattern of loc) written like
 *  rrt_app_ilu_write_rows. */
int rrt_app_ilu_write_factors(rrt_ctx_t ctx, rrt_ilu0_t M, const rrt_csr *loc, int64_t n,
                              const char *path, char *err, size_t errlen);

#endif

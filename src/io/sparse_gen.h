/* Generated test problems, so benchmarks need no files: any row block of
 * laplace2d:N (5-point), laplace3d:N (7-point) and convdiff2d:N,PECLET
 * (5-point central differences of -lap(u) + Pe (u_x + u_y), non-symmetric),
 * in natural (lexicographic) grid order. Each rank builds only its rows. */
#ifndef RRT_IO_SPARSE_GEN_H
#define RRT_IO_SPARSE_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "io/mmio.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rrt_gen_kind {
  RRT_GEN_LAPLACE2D = 0,
  RRT_GEN_LAPLACE3D,
  RRT_GEN_CONVDIFF2D
} rrt_gen_kind;

typedef struct rrt_gen_spec {
  rrt_gen_kind kind;
  int64_t N;     /* grid points per dimension */
  double peclet; /* convdiff2d only */
} rrt_gen_spec;

/** Parse "laplace2d:N", "laplace3d:N", "convdiff2d:N,PECLET". */
int rrt_gen_parse(const char *text, rrt_gen_spec *spec, char *err, size_t errlen);
/** Matrix order (N^2 or N^3). */
int64_t rrt_gen_order(const rrt_gen_spec *spec);
/** Row pointer of the whole matrix (n + 1 entries, malloc'd): for the
 *  nonzero-balanced partition without building the matrix. */
int64_t *rrt_gen_rowptr(const rrt_gen_spec *spec);
/** Rows [r0, r1) with global columns; out->nrows = r1 - r0, out->ncols = n. */
rrt_status rrt_gen_block(const rrt_gen_spec *spec, int64_t r0, int64_t r1, rrt_csr *out);

#ifdef __cplusplus
}
#endif
#endif

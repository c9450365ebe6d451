/* Internal: the distributed CSR behind rrt_sparse_t. Rows in contiguous
 * blocks per rank, global column indices sorted within a row; the ghost
 * columns (remote rows this rank reads) and the SpMV halo that fetches them.
 * The kernel table of the backend is chosen once here and shared by the
 * ILU(0) and the Krylov solvers built on this matrix. */
#ifndef RRT_SPARSE_CSR_H
#define RRT_SPARSE_CSR_H

#include <stdint.h>

#include "comm/halo.h"
#include "kernels/ilu0_table.h"
#include "ringrt/ilu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rrt_sparse {
  rrt_ctx_t ctx;
  const rrt_ilu0_kernels *k; /* the backend's kernels, chosen at create */
  int rank, size;
  int64_t n, row_begin, nloc, nnz, nnz_global;
  int64_t *offsets; /* size + 1 row-block offsets */
  /* host copy of the local rows */
  int64_t *rowptr, *col;
  double *val;
  /* extended columns: < nloc local, nloc + g for ghost g (sorted by global) */
  int64_t nghost;
  int64_t *ghost; /* global index of each ghost */
  int32_t *ghost_owner;
  int32_t *col_ext; /* host, nnz */
  /* backend copies for SpMV */
  int64_t *d_rowptr;
  int32_t *d_col_ext;
  double *d_val;
  double *d_xext; /* nloc + nghost */
  rrt_halo halo;  /* all ghosts, level 0 */
  double spmv_flops;
};

/** Extended index of global column g for A (local, ghost, or -1). */
int64_t rrt_sparse_ext_index(const struct rrt_sparse *A, int64_t g);
/** Global column of extended index e (local row or ghost). */
int64_t rrt_sparse_ext_global(const struct rrt_sparse *A, int64_t e);

/** The halo packing of A's kernels (comm/halo.h takes it at init). */
rrt_halo_pack rrt_sparse_halo_pack(const struct rrt_sparse *A);

/** Ghost columns of the local rows (sorted, unique, with owners), the
 *  extended column of every local entry and the SpMV halo (ghosts.c).
 *  Collective. */
rrt_status rrt_sparse_build_ghosts(struct rrt_sparse *A);

/** dst = src for n doubles of backend memory, on the compute stream and
 *  complete on return (dst == src is a no-op). */
rrt_status rrt_sparse_copy(const struct rrt_sparse *A, double *dst, const double *src, int64_t n);

#ifdef __cplusplus
}
#endif
#endif

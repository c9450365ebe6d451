/* Internal: the Krylov solvers' vector operations on backend memory, over
 * vectors distributed like the rows of a matrix. The backend's kernels come
 * from the matrix (its kernel table); dot products are summed locally in a
 * fixed order (partials in block order) and then over ranks in host memory.
 * Every reduction carries one more value, the count of ranks whose user
 * callback failed (*fail), so a failure is agreed without a message of its
 * own: the reduction then returns an error on every rank. */
#ifndef RRT_KRYLOV_VEC_H
#define RRT_KRYLOV_VEC_H

#include <stdint.h>

#include "kernels/ilu0_table.h"
#include "ringrt/ilu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_krylov_vecs {
  rrt_sparse_t A; /* the layout: A's local rows */
  rrt_ctx_t ctx;
  const rrt_ilu0_kernels *k;
  int64_t n;       /* local length */
  double *d_part;  /* RRT_ILU0_DOT_BLOCKS x RRT_VEC_GROUP partial sums (backend memory) */
  const int *fail; /* this rank's user callback failed (NULL: never) */
  double *red;     /* host: maxk + 1 values of one reduction */
  int maxk;
} rrt_krylov_vecs;

/** maxk: the most dot products one rrt_vec_mdot reduces. */
rrt_status rrt_krylov_vecs_init(rrt_krylov_vecs *v, rrt_sparse_t A, int maxk, const int *fail);
void rrt_krylov_vecs_free(rrt_krylov_vecs *v);

/** k zeroed vectors of the local length (each NULL on failure). */
rrt_status rrt_vec_alloc(const rrt_krylov_vecs *v, int k, double **x);
void rrt_vec_free(const rrt_krylov_vecs *v, int k, double **x);

rrt_status rrt_vec_copy(const rrt_krylov_vecs *v, double *dst, const double *src);
/** y = a x + b y. */
rrt_status rrt_vec_axpby(const rrt_krylov_vecs *v, double a, const double *x, double b, double *y);
/** Global dot product x . y (collective). */
rrt_status rrt_vec_dot(const rrt_krylov_vecs *v, const double *x, const double *y, double *out);
/** out[j] = X[j] . y for j < k, with one reduction over ranks (collective). */
rrt_status rrt_vec_mdot(const rrt_krylov_vecs *v, int k, double **X, const double *y, double *out);
/** y += sum_j a[j] X[j], j < k (local; a on the host). */
rrt_status rrt_vec_maxpy(const rrt_krylov_vecs *v, int k, const double *a, double *const *X,
                         double *y);
/** Global 2-norm (collective). */
rrt_status rrt_vec_norm(const rrt_krylov_vecs *v, const double *x, double *out);

#ifdef __cplusplus
}
#endif
#endif

/* Krylov vector operations (see vec.h). */
#include "krylov/vec.h"

#include <math.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ringrt/memory.h"
#include "sparse/csr.h"

rrt_status rrt_krylov_vecs_init(rrt_krylov_vecs *v, rrt_sparse_t A, int maxk, const int *fail) {
  *v = (rrt_krylov_vecs){A, A->ctx, A->k, A->nloc, NULL, fail, NULL, maxk < 1 ? 1 : maxk};
  v->red = malloc(((size_t)v->maxk + 1) * sizeof(double));
  if (!v->red) return rrt_error(v->ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_krylov_solve", "out of memory");
  return rrt_malloc(v->ctx, (size_t)RRT_ILU0_DOT_BLOCKS * RRT_VEC_GROUP * sizeof(double),
                    (void **)&v->d_part);
}

void rrt_krylov_vecs_free(rrt_krylov_vecs *v) {
  if (v->d_part) rrt_free(v->ctx, v->d_part);
  free(v->red);
  v->d_part = NULL, v->red = NULL;
}

rrt_status rrt_vec_alloc(const rrt_krylov_vecs *v, int k, double **x) {
  size_t bytes = (size_t)(v->n ? v->n : 1) * sizeof(double);
  for (int j = 0; j < k; j++)
    x[j] = NULL;
  for (int j = 0; j < k; j++) {
    RRT_CHECK(rrt_malloc(v->ctx, bytes, (void **)&x[j]));
    RRT_CHECK(rrt_memset(v->ctx, x[j], 0, bytes));
  }
  return RRT_SUCCESS;
}

void rrt_vec_free(const rrt_krylov_vecs *v, int k, double **x) {
  for (int j = 0; j < k; j++)
    rrt_free(v->ctx, x[j]);
}

rrt_status rrt_vec_copy(const rrt_krylov_vecs *v, double *dst, const double *src) {
  return rrt_sparse_copy(v->A, dst, src, v->n);
}

rrt_status rrt_vec_axpby(const rrt_krylov_vecs *v, double a, const double *x, double b, double *y) {
  return v->k->axpby(v->ctx->compute_stream, v->n, a, x, b, y);
}

/* Local parts of k dot products, groups of RRT_VEC_GROUP in one pass over
 * y each, summed in a fixed order: one block per 1024 elements, at most the
 * table's dot_max_blocks, so the block count depends on n only; the
 * partials are added in block order on the host. */
static rrt_status local_mdot(const rrt_krylov_vecs *v, int k, double *const *X, const double *y,
                             double *out) {
  int64_t nb = (v->n + 1023) / 1024;
  if (nb > v->k->dot_max_blocks) nb = v->k->dot_max_blocks;
  if (nb < 1) nb = 1;
  double part[RRT_ILU0_DOT_BLOCKS * RRT_VEC_GROUP];
  for (int j0 = 0; j0 < k; j0 += RRT_VEC_GROUP) {
    rrt_vec_group g = {{NULL}, {0.0}, k - j0 < RRT_VEC_GROUP ? k - j0 : RRT_VEC_GROUP};
    for (int t = 0; t < g.k; t++)
      g.x[t] = X[j0 + t];
    RRT_CHECK(v->k->mdot_partial(v->ctx->compute_stream, v->n, g, y, v->d_part, (int)nb));
    RRT_CHECK(rrt_memcpy_to_host(v->ctx, part, v->d_part, (size_t)(nb * g.k) * sizeof(double)));
    for (int t = 0; t < g.k; t++) {
      double s = 0.0;
      for (int64_t b = 0; b < nb; b++)
        s += part[t * nb + b];
      out[j0 + t] = s;
    }
  }
  return RRT_SUCCESS;
}

/* The sum over ranks of v->red[0..k-1] into out, with the failure count
 * as value k: a failure anywhere is an error everywhere. */
static rrt_status reduce(const rrt_krylov_vecs *v, int k, double *out) {
  int mine = v->fail && *v->fail;
  v->red[k] = mine ? 1.0 : 0.0;
  RRT_CHECK(rrt_host_allreduce(v->ctx, v->red, v->red, (size_t)k + 1, RRT_DTYPE_F64, RRT_OP_SUM));
  if (v->red[k] > 0.0) /* the failing rank recorded its message already */
    return mine ? RRT_ERR_INVALID_ARG
                : rrt_error(v->ctx, RRT_ERR_REMOTE, "rrt_krylov_solve",
                            "a user operator or preconditioner failed on %.0f rank(s)", v->red[k]);
  for (int j = 0; j < k; j++)
    out[j] = v->red[j];
  return RRT_SUCCESS;
}

rrt_status rrt_vec_dot(const rrt_krylov_vecs *v, const double *x, const double *y, double *out) {
  double *const X[1] = {(double *)x};
  RRT_CHECK(local_mdot(v, 1, X, y, &v->red[0]));
  return reduce(v, 1, out);
}

rrt_status rrt_vec_mdot(const rrt_krylov_vecs *v, int k, double **X, const double *y, double *out) {
  if (k > v->maxk)
    return rrt_error(v->ctx, RRT_ERR_INTERNAL, "rrt_krylov_solve", "mdot of %d > %d vectors", k,
                     v->maxk);
  RRT_CHECK(local_mdot(v, k, X, y, v->red));
  return reduce(v, k, out);
}

rrt_status rrt_vec_maxpy(const rrt_krylov_vecs *v, int k, const double *a, double *const *X,
                         double *y) {
  for (int j0 = 0; j0 < k; j0 += RRT_VEC_GROUP) {
    rrt_vec_group g = {{NULL}, {0.0}, k - j0 < RRT_VEC_GROUP ? k - j0 : RRT_VEC_GROUP};
    for (int t = 0; t < g.k; t++)
      g.x[t] = X[j0 + t], g.a[t] = a[j0 + t];
    RRT_CHECK(v->k->maxpy(v->ctx->compute_stream, v->n, g, y));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_vec_norm(const rrt_krylov_vecs *v, const double *x, double *out) {
  RRT_CHECK(rrt_vec_dot(v, x, x, out));
  *out = sqrt(*out);
  return RRT_SUCCESS;
}

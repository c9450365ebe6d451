/* The pieces every Krylov method uses (see solver.h). */
#include "krylov/solver.h"

#include <stdio.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"

rrt_status rrt_krylov_precond(rrt_krylov_solver *s, const double *r, double *z) {
  if (s->M) return rrt_ilu0_apply(s->M, r, z);
  return rrt_vec_copy(&s->v, z, r);
}

rrt_status rrt_krylov_residual(rrt_krylov_solver *s, const double *b, const double *x, double *r) {
  RRT_CHECK(rrt_sparse_spmv(s->A, x, r));
  return rrt_vec_axpby(&s->v, 1.0, b, -1.0, r);
}

rrt_status rrt_krylov_finish(rrt_krylov_solver *s, const double *b, const double *x, double *r,
                             int iterations, double target) {
  double rnorm;
  RRT_CHECK(rrt_krylov_residual(s, b, x, r));
  RRT_CHECK(rrt_vec_norm(&s->v, r, &rnorm));
  s->res->rnorm = rnorm;
  s->res->iterations = iterations;
  s->res->converged = rnorm <= target;
  return RRT_SUCCESS;
}

rrt_status rrt_krylov_record(rrt_krylov_solver *s, double rnorm) {
  rrt_krylov_result *res = s->res;
  if (res->history_len == s->hist_cap) {
    int cap = s->hist_cap ? 2 * s->hist_cap : 64;
    double *h = realloc(res->history, (size_t)cap * sizeof(double));
    if (!h)
      return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, RRT_KRYLOV_OP,
                       "out of memory for the history");
    res->history = h;
    s->hist_cap = cap;
  }
  res->history[res->history_len++] = rnorm;
  res->rnorm = rnorm;
  int every = s->opt->progress;
  int it = res->history_len - 1;
  if (every > 0 && it > 0 && it % every == 0 && s->ctx->rank == 0)
    fprintf(stderr, "  %s it %6d  residual %.3e  relative %.3e\n", s->method, it, rnorm,
            res->bnorm > 0 ? rnorm / res->bnorm : rnorm);
  return RRT_SUCCESS;
}

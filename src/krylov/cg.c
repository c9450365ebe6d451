/* Preconditioned conjugate gradients (symmetric positive definite A and M). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "krylov/solver.h"

rrt_status rrt_krylov_cg(rrt_krylov_solver *s, const double *b, double *x) {
  const rrt_krylov_vecs *vs = &s->v;
  double target = s->opt->rtol * s->res->bnorm;
  double *v[4];
  rrt_status st = rrt_vec_alloc(vs, 4, v);
  double *r = v[0], *z = v[1], *p = v[2], *q = v[3];
  double rz, rnorm = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(rrt_krylov_residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
  RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
  RRT_CHECK_GOTO(rrt_krylov_precond(s, r, z), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(vs, p, z), st, done);
  RRT_CHECK_GOTO(rrt_vec_dot(vs, r, z, &rz), st, done);
  while (rnorm > target && it < s->opt->maxit) {
    double pq;
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, p, q), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(vs, p, q, &pq), st, done);
    if (pq == 0.0) break;
    double alpha = rz / pq;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, p, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -alpha, q, 1.0, r), st, done);
    RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
    it++;
    RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
    if (rnorm <= target) break;
    RRT_CHECK_GOTO(rrt_krylov_precond(s, r, z), st, done);
    double rz1;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, r, z, &rz1), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, 1.0, z, rz1 / rz, p), st, done);
    rz = rz1;
  }
  RRT_CHECK_GOTO(rrt_krylov_finish(s, b, x, r, it, target), st, done);
done:
  rrt_vec_free(vs, 4, v);
  return st;
}

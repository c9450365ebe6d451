/* Preconditioned conjugate gradients (A and M symmetric positive
 * definite). The iteration is the same on both sides; the side picks the
 * monitored norm: ||r|| (right, the default) or ||M^-1 r|| (left, PETSc's
 * default for CG). A non-positive p^T A p or r^T M^-1 r proves A or M not
 * positive definite (e.g. negative ILU(0) pivots) and stops the solve
 * (DIVERGED_INDEFINITE_MAT / _PC) instead of running on. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "krylov/solver.h"

/* z = M^-1 r, and the monitored norm of r. */
static rrt_status precond_norm(rrt_krylov_solver *s, const double *r, double *z, double *mnorm) {
  RRT_CHECK(rrt_krylov_precond(s, r, z));
  return rrt_vec_norm(&s->v, s->left ? z : r, mnorm);
}

/* Stop on a curvature that is not positive: NaN/Inf, or indefinite. The
 * iteration that found it counts, as in PETSc's KSPCG (it has no norm in
 * the history). */
static int not_positive(rrt_krylov_solver *s, double d, rrt_krylov_reason indefinite, int *it) {
  if (d > 0.0) return 0;
  s->reason = isfinite(d) ? indefinite : RRT_KRYLOV_DIVERGED_NANORINF;
  (*it)++;
  return 1;
}

rrt_status rrt_krylov_cg(rrt_krylov_solver *s, const double *b, double *x) {
  const rrt_krylov_vecs *vs = &s->v;
  double *v[4];
  rrt_status st = rrt_vec_alloc(vs, 4, v);
  double *r = v[0], *z = v[1], *p = v[2], *q = v[3];
  double rz = 0.0, rnorm = 0.0, tn = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(rrt_krylov_residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(precond_norm(s, r, z, &rnorm), st, done);
  if (s->left)
    RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &tn), st, done);
  else
    tn = rnorm;
  RRT_CHECK_GOTO(rrt_krylov_start(s, x, rnorm, tn), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(vs, p, z), st, done);
  RRT_CHECK_GOTO(rrt_vec_dot(vs, r, z, &rz), st, done);
  while (!s->reason) {
    if (it >= s->opt->maxit) {
      s->reason = RRT_KRYLOV_DIVERGED_ITS;
      break;
    }
    if (not_positive(s, rz, RRT_KRYLOV_DIVERGED_INDEFINITE_PC, &it)) break;
    double pq;
    RRT_CHECK_GOTO(rrt_krylov_op(s, p, q), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(vs, p, q, &pq), st, done);
    if (not_positive(s, pq, RRT_KRYLOV_DIVERGED_INDEFINITE_MAT, &it)) break;
    double alpha = rz / pq;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, p, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -alpha, q, 1.0, r), st, done);
    if (s->left)
      RRT_CHECK_GOTO(precond_norm(s, r, z, &rnorm), st, done);
    else
      RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
    it++;
    RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
    if (rrt_krylov_test(s, rnorm)) break;
    if (!s->left) RRT_CHECK_GOTO(rrt_krylov_precond(s, r, z), st, done);
    double rz1;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, r, z, &rz1), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, 1.0, z, rz1 / rz, p), st, done);
    rz = rz1;
  }
  RRT_CHECK_GOTO(rrt_krylov_finish(s, b, x, r, it), st, done);
done:
  rrt_vec_free(vs, 4, v);
  return st;
}

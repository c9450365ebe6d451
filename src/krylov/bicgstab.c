/* BiCGSTAB, right preconditioned; judged on the true residual at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "krylov/solver.h"

rrt_status rrt_krylov_bicgstab(rrt_krylov_solver *s, const double *b, double *x) {
  const rrt_krylov_vecs *vs = &s->v;
  double target = s->opt->rtol * s->res->bnorm;
  double *v[8];
  rrt_status st = rrt_vec_alloc(vs, 8, v);
  double *r = v[0], *rh = v[1], *p = v[2], *vv = v[3], *ph = v[4], *sv = v[5], *sh = v[6],
         *t = v[7];
  double rho = 1.0, alpha = 1.0, omega = 1.0, rnorm = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(rrt_krylov_residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(vs, rh, r), st, done);
  RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
  RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
  while (rnorm > target && it < s->opt->maxit) {
    double rho1;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, rh, r, &rho1), st, done);
    if (rho1 == 0.0) break; /* breakdown: stop with what we have */
    double beta = (rho1 / rho) * (alpha / omega);
    rho = rho1;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -omega, vv, 1.0, p), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, 1.0, r, beta, p), st, done);
    RRT_CHECK_GOTO(rrt_krylov_precond(s, p, ph), st, done);
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, ph, vv), st, done);
    double rv;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, rh, vv, &rv), st, done);
    if (rv == 0.0) break;
    alpha = rho / rv;
    RRT_CHECK_GOTO(rrt_vec_copy(vs, sv, r), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -alpha, vv, 1.0, sv), st, done);
    double snorm;
    RRT_CHECK_GOTO(rrt_vec_norm(vs, sv, &snorm), st, done);
    it++;
    if (snorm <= target) {
      RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, ph, 1.0, x), st, done);
      rnorm = snorm;
      RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
      break;
    }
    RRT_CHECK_GOTO(rrt_krylov_precond(s, sv, sh), st, done);
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, sh, t), st, done);
    double ts[2], tt;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, t, sv, &ts[0]), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(vs, t, t, &tt), st, done);
    omega = tt > 0.0 ? ts[0] / tt : 0.0;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, ph, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, omega, sh, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_copy(vs, r, sv), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -omega, t, 1.0, r), st, done);
    RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
    RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
    if (omega == 0.0) break;
  }
  RRT_CHECK_GOTO(rrt_krylov_finish(s, b, x, r, it, target), st, done);
done:
  rrt_vec_free(vs, 8, v);
  return st;
}

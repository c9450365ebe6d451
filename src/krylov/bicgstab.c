/* BiCGSTAB, right (default: directions M^-1 p, M^-1 s) or left (the
 * operator M^-1 A, residuals M^-1 (b - A x)) preconditioned. A zero inner
 * product is DIVERGED_BREAKDOWN; the half step s is tested for convergence
 * (it saves the second apply when it meets the tolerance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "krylov/solver.h"

/* The direction d and its image: right: dh = M^-1 d, w = A dh; left:
 * dh = d, w = M^-1 A d (scratch: s->tmp). Returns the vector to add to x. */
static rrt_status direction(rrt_krylov_solver *s, double *d, double *dh, double *w, double **add) {
  if (s->left) {
    *add = d;
    return rrt_krylov_pop(s, d, w, s->tmp);
  }
  *add = dh;
  return rrt_krylov_pop(s, d, w, dh);
}

rrt_status rrt_krylov_bicgstab(rrt_krylov_solver *s, const double *b, double *x) {
  const rrt_krylov_vecs *vs = &s->v;
  double *v[8];
  rrt_status st = rrt_vec_alloc(vs, 8, v);
  double *r = v[0], *rh = v[1], *p = v[2], *vv = v[3], *ph = v[4], *sv = v[5], *sh = v[6],
         *t = v[7], *pa = NULL, *sa = NULL;
  double rho = 1.0, alpha = 1.0, omega = 1.0, rnorm = 0.0, tn = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(rrt_krylov_mresidual(s, b, x, r, &rnorm, &tn), st, done);
  RRT_CHECK_GOTO(rrt_krylov_start(s, x, rnorm, tn), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(vs, rh, r), st, done);
  while (!s->reason) {
    if (it >= s->opt->maxit) {
      s->reason = RRT_KRYLOV_DIVERGED_ITS;
      break;
    }
    double rho1;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, rh, r, &rho1), st, done);
    if (rho1 == 0.0) {
      s->reason = RRT_KRYLOV_DIVERGED_BREAKDOWN;
      break;
    }
    double beta = (rho1 / rho) * (alpha / omega);
    rho = rho1;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -omega, vv, 1.0, p), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, 1.0, r, beta, p), st, done);
    RRT_CHECK_GOTO(direction(s, p, ph, vv, &pa), st, done);
    double rv;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, rh, vv, &rv), st, done);
    if (rv == 0.0) {
      s->reason = RRT_KRYLOV_DIVERGED_BREAKDOWN;
      break;
    }
    alpha = rho / rv;
    RRT_CHECK_GOTO(rrt_vec_copy(vs, sv, r), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -alpha, vv, 1.0, sv), st, done);
    double snorm;
    RRT_CHECK_GOTO(rrt_vec_norm(vs, sv, &snorm), st, done);
    it++;
    if (snorm <= s->ttol) { /* converged at the half step */
      RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, pa, 1.0, x), st, done);
      RRT_CHECK_GOTO(rrt_krylov_record(s, snorm), st, done);
      rrt_krylov_test(s, snorm);
      break;
    }
    RRT_CHECK_GOTO(direction(s, sv, sh, t, &sa), st, done);
    double ts, tt;
    RRT_CHECK_GOTO(rrt_vec_dot(vs, t, sv, &ts), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(vs, t, t, &tt), st, done);
    omega = tt > 0.0 ? ts / tt : 0.0;
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, alpha, pa, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, omega, sa, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_copy(vs, r, sv), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(vs, -omega, t, 1.0, r), st, done);
    RRT_CHECK_GOTO(rrt_vec_norm(vs, r, &rnorm), st, done);
    RRT_CHECK_GOTO(rrt_krylov_record(s, rnorm), st, done);
    if (!rrt_krylov_test(s, rnorm) && omega == 0.0) s->reason = RRT_KRYLOV_DIVERGED_BREAKDOWN;
  }
  RRT_CHECK_GOTO(rrt_krylov_finish(s, b, x, r, it), st, done);
done:
  rrt_vec_free(vs, 8, v);
  return st;
}

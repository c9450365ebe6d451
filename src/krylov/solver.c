/* The pieces every Krylov method uses (see solver.h). */
#include "krylov/solver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"

/* A user callback's return: nonzero marks this rank failed (the next
 * reduction makes every rank return the error) and keeps the message. */
static void user_call(rrt_krylov_solver *s, const char *what, int rc) {
  if (rc == 0 || s->fail) return;
  s->fail = 1;
  rrt_error(s->ctx, RRT_ERR_INVALID_ARG, RRT_KRYLOV_OP, "the user %s returned %d on rank %d", what,
            rc, s->ctx->rank);
}

rrt_status rrt_krylov_op(rrt_krylov_solver *s, const double *x, double *y) {
  if (!s->opt->op) return rrt_sparse_spmv(s->A, x, y);
  user_call(s, "operator", s->opt->op(x, y, s->opt->op_user));
  return RRT_SUCCESS;
}

rrt_status rrt_krylov_precond(rrt_krylov_solver *s, const double *r, double *z) {
  if (s->opt->pc) {
    user_call(s, "preconditioner", s->opt->pc(r, z, s->opt->pc_user));
    return RRT_SUCCESS;
  }
  if (s->M) return rrt_ilu0_apply(s->M, r, z);
  return rrt_vec_copy(&s->v, z, r);
}

rrt_status rrt_krylov_residual(rrt_krylov_solver *s, const double *b, const double *x, double *r) {
  RRT_CHECK(rrt_krylov_op(s, x, r));
  return rrt_vec_axpby(&s->v, 1.0, b, -1.0, r);
}

rrt_status rrt_krylov_mresidual(rrt_krylov_solver *s, const double *b, const double *x, double *r,
                                double *mnorm, double *tnorm) {
  if (!s->left) {
    RRT_CHECK(rrt_krylov_residual(s, b, x, r));
    RRT_CHECK(rrt_vec_norm(&s->v, r, tnorm));
    *mnorm = *tnorm;
    return RRT_SUCCESS;
  }
  RRT_CHECK(rrt_krylov_residual(s, b, x, s->tmp));
  RRT_CHECK(rrt_vec_norm(&s->v, s->tmp, tnorm));
  RRT_CHECK(rrt_krylov_precond(s, s->tmp, r));
  return rrt_vec_norm(&s->v, r, mnorm);
}

rrt_status rrt_krylov_pop(rrt_krylov_solver *s, const double *v, double *w, double *z) {
  if (s->left) {
    RRT_CHECK(rrt_krylov_op(s, v, z));
    return rrt_krylov_precond(s, z, w);
  }
  RRT_CHECK(rrt_krylov_precond(s, v, z));
  return rrt_krylov_op(s, z, w);
}

rrt_status rrt_krylov_start(rrt_krylov_solver *s, const double *x, double mnorm, double tnorm) {
  s->tnorm0 = s->best = tnorm;
  RRT_CHECK(rrt_vec_copy(&s->v, s->xbest, x));
  RRT_CHECK(rrt_krylov_record(s, mnorm));
  rrt_krylov_test(s, mnorm);
  return RRT_SUCCESS;
}

rrt_krylov_reason rrt_krylov_test(rrt_krylov_solver *s, double rnorm) {
  if (!isfinite(rnorm))
    s->reason = RRT_KRYLOV_DIVERGED_NANORINF;
  else if (rnorm <= s->ttol) /* a zero residual meets any absolute tolerance */
    s->reason = rnorm < s->opt->atol || rnorm == 0.0 ? RRT_KRYLOV_CONVERGED_ATOL
                                                     : RRT_KRYLOV_CONVERGED_RTOL;
  else if (rnorm >= s->opt->dtol * s->rnorm0)
    s->reason = RRT_KRYLOV_DIVERGED_DTOL;
  return s->reason;
}

rrt_status rrt_krylov_offer(rrt_krylov_solver *s, const double *x, double tnorm) {
  if (!isfinite(tnorm) || (isfinite(s->best) && tnorm >= s->best)) return RRT_SUCCESS;
  s->best = tnorm;
  return rrt_vec_copy(&s->v, s->xbest, x);
}

rrt_status rrt_krylov_finish(rrt_krylov_solver *s, const double *b, double *x, double *r,
                             int iterations) {
  rrt_krylov_result *res = s->res;
  double tn;
  RRT_CHECK(rrt_krylov_residual(s, b, x, r));
  RRT_CHECK(rrt_vec_norm(&s->v, r, &tn));
  /* a "converged" x worse than the guess: the recurrence and the true
   * residual disagree (a numerically singular preconditioned operator) */
  if (s->reason > 0 && !(tn <= s->tnorm0))
    s->reason = isfinite(tn) ? RRT_KRYLOV_DIVERGED_BREAKDOWN : RRT_KRYLOV_DIVERGED_NANORINF;
  if (s->reason < 0 && isfinite(s->best) && !(tn <= s->best)) {
    RRT_CHECK(rrt_vec_copy(&s->v, x, s->xbest));
    tn = s->best;
  }
  res->iterations = iterations;
  res->reason = s->reason;
  res->converged = s->reason > 0;
  res->true_rnorm = tn;
  if (!s->left) res->rnorm = tn;
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
  if (s->opt->monitor) s->opt->monitor(it, rnorm, s->opt->monitor_user);
  if (every > 0 && it > 0 && it % every == 0 && s->ctx->rank == 0)
    fprintf(stderr, "  %s it %6d  residual %.3e  relative %.3e\n", s->method, it, rnorm,
            s->rnorm0 > 0 ? rnorm / s->rnorm0 : rnorm);
  return RRT_SUCCESS;
}

/* Internal: what the Krylov methods share (one method a file: gmres.c,
 * fgmres.c, bicgstab.c, cg.c; dispatch and options in krylov.c). Vectors
 * live in backend memory. The tolerances apply to the monitored norm: the
 * unpreconditioned ||b - A x|| (right side) or ||M^-1 (b - A x)|| (left),
 * tested as PETSc's KSPConvergedDefault does (rrt_krylov_test). */
#ifndef RRT_KRYLOV_SOLVER_H
#define RRT_KRYLOV_SOLVER_H

#include "krylov/vec.h"
#include "ringrt/ilu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRT_KRYLOV_OP "rrt_krylov_solve"

typedef struct rrt_krylov_solver {
  rrt_sparse_t A;
  rrt_ilu0_t M; /* preconditioner, or NULL */
  rrt_ctx_t ctx;
  rrt_krylov_vecs v;
  const rrt_krylov_options *opt;
  const char *method; /* its name, for the progress lines */
  rrt_krylov_result *res;
  int hist_cap;
  int left;      /* 1: left preconditioning (monitored norm ||M^-1 r||) */
  int fail;      /* a user callback failed on this rank (agreed at the next reduction) */
  double rnorm0; /* b in the monitored norm; the tolerances are relative to it */
  double ttol;   /* max(rtol rnorm0, atol) */
  rrt_krylov_reason reason;
  double *tmp;   /* scratch vector of the left-preconditioned operator */
  double *xbest; /* the iterate with the smallest known true residual */
  double best;   /* its true residual */
  double tnorm0; /* the true residual of the initial guess */
} rrt_krylov_solver;

/** y = A x: the user operator, or the SpMV. */
rrt_status rrt_krylov_op(rrt_krylov_solver *s, const double *x, double *y);
/** z = M^-1 r: the user preconditioner, the ILU(0), or z = r. */
rrt_status rrt_krylov_precond(rrt_krylov_solver *s, const double *r, double *z);
/** r = b - A x. */
rrt_status rrt_krylov_residual(rrt_krylov_solver *s, const double *b, const double *x, double *r);
/** r = the monitored residual of x (b - A x, or M^-1 (b - A x) on the left;
 *  on the left s->tmp holds b - A x), *mnorm its norm, *tnorm ||b - A x||. */
rrt_status rrt_krylov_mresidual(rrt_krylov_solver *s, const double *b, const double *x, double *r,
                                double *mnorm, double *tnorm);
/** w = the preconditioned operator applied to v: A M^-1 v (right, z = M^-1 v)
 *  or M^-1 A v (left; z is scratch). */
rrt_status rrt_krylov_pop(rrt_krylov_solver *s, const double *v, double *w, double *z);

/** The start of a method: x's true residual tnorm (x becomes the best
 *  iterate so far), the initial monitored norm recorded and tested. */
rrt_status rrt_krylov_start(rrt_krylov_solver *s, const double *x, double mnorm, double tnorm);
/** Append a monitored norm to the history; the monitor and progress lines. */
rrt_status rrt_krylov_record(rrt_krylov_solver *s, double rnorm);
/** PETSc's default test of a monitored norm: sets s->reason (NaN/Inf,
 *  converged atol/rtol, diverged dtol) and returns it (0: go on). */
rrt_krylov_reason rrt_krylov_test(rrt_krylov_solver *s, double rnorm);
/** x, with true residual tnorm, becomes the best iterate if it is better. */
rrt_status rrt_krylov_offer(rrt_krylov_solver *s, const double *x, double tnorm);
/** The end of a solve: x's true residual (r is scratch); a converged
 *  reason with x worse than the guess becomes a breakdown; on a diverged
 *  reason x becomes the best iterate. Fills s->res. */
rrt_status rrt_krylov_finish(rrt_krylov_solver *s, const double *b, double *x, double *r,
                             int iterations);

/** GMRES(m) over the Arnoldi process of gmres.c; Z: NULL, or FGMRES's m
 *  preconditioned directions. */
rrt_status rrt_krylov_gmres_engine(rrt_krylov_solver *s, const double *b, double *x, double **Z);

/** The methods: stop with s->reason set, then rrt_krylov_finish. */
rrt_status rrt_krylov_gmres(rrt_krylov_solver *s, const double *b, double *x);
rrt_status rrt_krylov_fgmres(rrt_krylov_solver *s, const double *b, double *x);
rrt_status rrt_krylov_bicgstab(rrt_krylov_solver *s, const double *b, double *x);
rrt_status rrt_krylov_cg(rrt_krylov_solver *s, const double *b, double *x);

#ifdef __cplusplus
}
#endif
#endif

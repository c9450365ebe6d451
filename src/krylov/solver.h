/* Internal: what the Krylov methods share (one method a file: gmres.c,
 * bicgstab.c, cg.c; dispatch and options in krylov.c). Vectors live in
 * backend memory; convergence is always judged on the unpreconditioned
 * residual ||b - A x|| <= rtol ||b||. */
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
} rrt_krylov_solver;

/** z = M^-1 r (z = r without a preconditioner). */
rrt_status rrt_krylov_precond(rrt_krylov_solver *s, const double *r, double *z);
/** r = b - A x. */
rrt_status rrt_krylov_residual(rrt_krylov_solver *s, const double *b, const double *x, double *r);
/** The end of a solve: judged on the true residual ||b - A x|| (r is
 *  scratch), not on the method's recurrence; fills rnorm, iterations and
 *  converged of s->res. */
rrt_status rrt_krylov_finish(rrt_krylov_solver *s, const double *b, const double *x, double *r,
                             int iterations, double target);
/** Append a residual norm to the history (and print progress on rank 0). */
rrt_status rrt_krylov_record(rrt_krylov_solver *s, double rnorm);

/** The methods: fill s->res (iterations, rnorm, converged). */
rrt_status rrt_krylov_gmres(rrt_krylov_solver *s, const double *b, double *x);
rrt_status rrt_krylov_bicgstab(rrt_krylov_solver *s, const double *b, double *x);
rrt_status rrt_krylov_cg(rrt_krylov_solver *s, const double *b, double *x);

#ifdef __cplusplus
}
#endif
#endif

/* rrt_krylov_solve: options, the method dispatch and the result; method
 * names. Each method is one file (gmres.c, bicgstab.c, cg.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/options.h"
#include "comm/user_stream.h"
#include "krylov/solver.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "sparse/csr.h"

static const rrt_krylov_options krylov_options_defaults = RRT_KRYLOV_OPTIONS_INITIALIZER;
static const rrt_options_layout krylov_options_layout = {
    .name = "rrt_krylov_options",
    .initializer = "RRT_KRYLOV_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_krylov_options),
    .min_size = offsetof(rrt_krylov_options, method),
    .defaults = &krylov_options_defaults,
};

/* Options from an older header get defaults for the fields they lack; the
 * values must be in range (agreed, so every rank fails alike). */
static rrt_status read_options(rrt_ctx_t ctx, const rrt_krylov_options *options,
                               rrt_krylov_options *opt) {
  char msg[256];
  if (rrt_options_import(&krylov_options_layout, options, opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, RRT_KRYLOV_OP, "%s", msg));
  if (opt->rtol < 0.0 || opt->maxit < 0 || opt->restart < 1 || opt->method < RRT_KRYLOV_GMRES ||
      opt->method > RRT_KRYLOV_CG)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, RRT_KRYLOV_OP,
                                    "bad options (rtol >= 0, maxit >= 0, restart >= 1, a known "
                                    "method)"));
  return RRT_SUCCESS;
}

static rrt_status run_method(rrt_krylov_solver *s, const double *b, double *x) {
  switch (s->opt->method) {
  case RRT_KRYLOV_GMRES: return rrt_krylov_gmres(s, b, x);
  case RRT_KRYLOV_BICGSTAB: return rrt_krylov_bicgstab(s, b, x);
  default: return rrt_krylov_cg(s, b, x);
  }
}

/* With the vectors set up: ||b||, the trivial b = 0, else the method. */
static rrt_status solve(rrt_krylov_solver *s, const double *b, double *x) {
  rrt_krylov_result *result = s->res;
  RRT_CHECK(rrt_vec_norm(&s->v, b, &result->bnorm));
  if (result->bnorm == 0.0) { /* the solution of A x = 0 is 0 */
    RRT_CHECK(rrt_memset(s->ctx, x, 0, (size_t)s->v.n * sizeof(double)));
    result->converged = 1;
    return rrt_krylov_record(s, 0.0);
  }
  return run_method(s, b, x);
}

rrt_status rrt_krylov_solve(rrt_sparse_t A, rrt_ilu0_t M, const rrt_krylov_options *options,
                            const double *b, double *x, rrt_krylov_result *result) {
  rrt_ctx_t ctx = A->ctx;
  memset(result, 0, sizeof(*result));
  rrt_krylov_options opt;
  RRT_CHECK(read_options(ctx, options, &opt));
  rrt_krylov_solver s = {A, M, ctx, {0}, &opt, rrt_krylov_method_name(opt.method), result, 0};
  double t0 = rrt_phase_begin(ctx);
  RRT_CHECK(rrt_user_stream_enter(ctx, "rrt_krylov_solve"));
  rrt_status st = rrt_krylov_vecs_init(&s.v, A);
  if (!st) st = solve(&s, b, x);
  rrt_krylov_vecs_free(&s.v);
  st = rrt_user_stream_leave(ctx, "rrt_krylov_solve", st);
  /* b = 0 ends without the phase, as it always did */
  if (st || result->bnorm == 0.0) return st;
  return rrt_phase_end(ctx, "krylov.solve", t0);
}

void rrt_krylov_result_free(rrt_krylov_result *r) {
  if (!r) return;
  free(r->history);
  r->history = NULL;
  r->history_len = 0;
}

const char *rrt_krylov_method_name(rrt_krylov_method m) {
  return m == RRT_KRYLOV_BICGSTAB ? "bicgstab" : m == RRT_KRYLOV_CG ? "cg" : "gmres";
}

rrt_status rrt_krylov_method_parse(const char *name, rrt_krylov_method *m) {
  if (!strcmp(name, "gmres"))
    *m = RRT_KRYLOV_GMRES;
  else if (!strcmp(name, "bicgstab"))
    *m = RRT_KRYLOV_BICGSTAB;
  else if (!strcmp(name, "cg"))
    *m = RRT_KRYLOV_CG;
  else
    return RRT_ERR_INVALID_ARG;
  return RRT_SUCCESS;
}

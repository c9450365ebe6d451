/* rrt_krylov_solve: options, the method dispatch and the result; method
 * and reason names. Each method is one file (gmres.c, fgmres.c,
 * bicgstab.c, cg.c). */
#include <math.h>
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

/* The result fields a caller's struct has: a caller whose options struct
 * predates the appended fields was built against the shorter result. */
static size_t result_size(const rrt_krylov_options *options) {
  size_t size = 0;
  if (options) memcpy(&size, options, sizeof size);
  return size > offsetof(rrt_krylov_options, atol) ? sizeof(rrt_krylov_result)
                                                   : offsetof(rrt_krylov_result, reason);
}

/* Options from an older header get defaults for the fields they lack; the
 * values must be in range (agreed, so every rank fails alike). */
static rrt_status read_options(rrt_ctx_t ctx, rrt_ilu0_t M, const rrt_krylov_options *options,
                               rrt_krylov_options *opt) {
  char msg[256];
  if (rrt_options_import(&krylov_options_layout, options, opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, RRT_KRYLOV_OP, "%s", msg));
  const char *bad = NULL;
  if (!(opt->rtol >= 0.0) || opt->maxit < 0 || opt->restart < 1 || opt->method < RRT_KRYLOV_GMRES ||
      opt->method > RRT_KRYLOV_FGMRES)
    bad = "rtol >= 0, maxit >= 0, restart >= 1, a known method";
  else if (!(opt->atol >= 0.0) || !(opt->dtol > 0.0))
    bad = "atol >= 0 and dtol > 0 (INFINITY: no divergence test)";
  else if (opt->side < RRT_KRYLOV_SIDE_DEFAULT || opt->side > RRT_KRYLOV_SIDE_RIGHT)
    bad = "side default, left or right";
  else if (opt->refine < RRT_KRYLOV_REFINE_NEVER || opt->refine > RRT_KRYLOV_REFINE_ALWAYS)
    bad = "refine never, ifneeded or always";
  else if (opt->method == RRT_KRYLOV_FGMRES && opt->side == RRT_KRYLOV_SIDE_LEFT)
    bad = "fgmres is right preconditioned only";
  else if (opt->pc && M)
    bad = "a user preconditioner (options.pc) and an ILU(0) handle: pass M = NULL";
  if (bad)
    return rrt_agree(ctx,
                     rrt_error(ctx, RRT_ERR_INVALID_ARG, RRT_KRYLOV_OP, "bad options (%s)", bad));
  return RRT_SUCCESS;
}

static rrt_status run_method(rrt_krylov_solver *s, const double *b, double *x) {
  switch (s->opt->method) {
  case RRT_KRYLOV_GMRES: return rrt_krylov_gmres(s, b, x);
  case RRT_KRYLOV_FGMRES: return rrt_krylov_fgmres(s, b, x);
  case RRT_KRYLOV_BICGSTAB: return rrt_krylov_bicgstab(s, b, x);
  default: return rrt_krylov_cg(s, b, x);
  }
}

/* rnorm0, the norm of b the tolerances are relative to: ||b||, or
 * ||M^-1 b|| on the left (PETSc's, whatever the guess). */
static rrt_status rhs_norm(rrt_krylov_solver *s, const double *b) {
  s->rnorm0 = s->res->bnorm;
  if (s->left) {
    RRT_CHECK(rrt_krylov_precond(s, b, s->tmp));
    RRT_CHECK(rrt_vec_norm(&s->v, s->tmp, &s->rnorm0));
  }
  s->ttol = fmax(s->opt->rtol * s->rnorm0, s->opt->atol);
  return RRT_SUCCESS;
}

/* With the vectors set up: ||b||, the trivial b = 0, else the method. */
static rrt_status solve(rrt_krylov_solver *s, const double *b, double *x) {
  rrt_krylov_result *result = s->res;
  size_t bytes = (size_t)s->v.n * sizeof(double);
  RRT_CHECK(rrt_vec_norm(&s->v, b, &result->bnorm));
  if (result->bnorm == 0.0 || s->opt->guess_zero) RRT_CHECK(rrt_memset(s->ctx, x, 0, bytes));
  if (result->bnorm == 0.0) { /* the solution of A x = 0 is 0 */
    result->converged = 1;
    result->reason = s->reason = RRT_KRYLOV_CONVERGED_ATOL;
    return rrt_krylov_record(s, 0.0);
  }
  RRT_CHECK(rrt_vec_alloc(&s->v, 1, &s->xbest));
  if (s->left) RRT_CHECK(rrt_vec_alloc(&s->v, 1, &s->tmp));
  RRT_CHECK(rhs_norm(s, b));
  return run_method(s, b, x);
}

rrt_status rrt_krylov_solve(rrt_sparse_t A, rrt_ilu0_t M, const rrt_krylov_options *options,
                            const double *b, double *x, rrt_krylov_result *result) {
  rrt_ctx_t ctx = A->ctx;
  size_t rsize = result_size(options);
  memset(result, 0, rsize);
  rrt_krylov_options opt;
  RRT_CHECK(read_options(ctx, M, options, &opt));
  rrt_krylov_result full;
  memset(&full, 0, sizeof full);
  rrt_krylov_solver s = {.A = A,
                         .M = M,
                         .ctx = ctx,
                         .opt = &opt,
                         .res = &full,
                         .method = rrt_krylov_method_name(opt.method),
                         .left = opt.side == RRT_KRYLOV_SIDE_LEFT};
  double t0 = rrt_phase_begin(ctx);
  RRT_CHECK(rrt_user_stream_enter(ctx, "rrt_krylov_solve"));
  int maxk = opt.method == RRT_KRYLOV_GMRES || opt.method == RRT_KRYLOV_FGMRES ? opt.restart : 1;
  rrt_status st = rrt_krylov_vecs_init(&s.v, A, maxk + 1, &s.fail);
  if (!st) st = solve(&s, b, x);
  rrt_vec_free(&s.v, 1, &s.xbest);
  rrt_vec_free(&s.v, 1, &s.tmp);
  rrt_krylov_vecs_free(&s.v);
  st = rrt_user_stream_leave(ctx, "rrt_krylov_solve", st);
  memcpy(result, &full, rsize);
  /* b = 0 ends without the phase, as it always did */
  if (st || full.bnorm == 0.0) return st;
  return rrt_phase_end(ctx, "krylov.solve", t0);
}

void rrt_krylov_result_free(rrt_krylov_result *r) {
  if (!r) return;
  free(r->history);
  r->history = NULL;
  r->history_len = 0;
}

static const struct {
  rrt_krylov_reason reason;
  const char *name;
} reason_names[] = {
    {RRT_KRYLOV_ITERATING, "CONVERGED_ITERATING"},
    {RRT_KRYLOV_CONVERGED_RTOL, "CONVERGED_RTOL"},
    {RRT_KRYLOV_CONVERGED_ATOL, "CONVERGED_ATOL"},
    {RRT_KRYLOV_DIVERGED_ITS, "DIVERGED_ITS"},
    {RRT_KRYLOV_DIVERGED_DTOL, "DIVERGED_DTOL"},
    {RRT_KRYLOV_DIVERGED_BREAKDOWN, "DIVERGED_BREAKDOWN"},
    {RRT_KRYLOV_DIVERGED_INDEFINITE_PC, "DIVERGED_INDEFINITE_PC"},
    {RRT_KRYLOV_DIVERGED_NANORINF, "DIVERGED_NANORINF"},
    {RRT_KRYLOV_DIVERGED_INDEFINITE_MAT, "DIVERGED_INDEFINITE_MAT"},
};

const char *rrt_krylov_reason_name(rrt_krylov_reason reason) {
  for (size_t k = 0; k < sizeof reason_names / sizeof reason_names[0]; k++)
    if (reason_names[k].reason == reason) return reason_names[k].name;
  return "UNKNOWN";
}

static const char *const method_names[] = {"gmres", "bicgstab", "cg", "fgmres"};

const char *rrt_krylov_method_name(rrt_krylov_method m) {
  return m >= RRT_KRYLOV_GMRES && m <= RRT_KRYLOV_FGMRES ? method_names[m] : "gmres";
}

rrt_status rrt_krylov_method_parse(const char *name, rrt_krylov_method *m) {
  for (int k = RRT_KRYLOV_GMRES; k <= RRT_KRYLOV_FGMRES; k++)
    if (!strcmp(name, method_names[k])) {
      *m = (rrt_krylov_method)k;
      return RRT_SUCCESS;
    }
  return RRT_ERR_INVALID_ARG;
}

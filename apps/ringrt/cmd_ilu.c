/* `ringrt ilu`: distributed ILU(0) of a sparse matrix (Matrix Market file or
 * a generated stencil problem) and a preconditioned Krylov solve.
 *
 * Every rank reads the file (errors are then the same everywhere) and keeps
 * the rows of its nonzero-balanced block; generated problems are built row
 * block by row block (ilu_files.c). Without --rhs, b = A * ones. Reports the
 * levels, the analysis/factor/solve times (max over ranks), iterations,
 * convergence (PETSc's reason names), the true residual ||b - A x|| / ||b||,
 * and GFLOP/s of SpMV, of the triangular solves and of the factorisation.
 * Exit 3 when the solve stops with a diverged reason (RRT_EXIT_NOT_CONVERGED,
 * app.h: iteration limit, dtol, breakdown, indefinite, NaN/Inf).
 *
 * Phases of rrt_cmd_ilu: parse options, read the problem, analyse and
 * factor (timed refactorisations), set up b, time the kernels, solve, write
 * outputs, report (text and JSON). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/json_out.h"
#include "comm/host_coll.h"
#include "ilu_files.h"
#include "io/mmio.h"
#include "io/npy.h"
#include "ringrt/ilu.h"

typedef struct ilu_opts {
  const char *matrix, *generate, *rhs, *x0, *factors_out, *x_out, *matrix_out;
  rrt_mm_pattern_values pattern;
  rrt_ilu_ordering ordering;
  rrt_krylov_method method;
  rrt_krylov_side side;
  rrt_krylov_refine refine;
  int no_solver, boost, f32, monitor;
  double tol, atol, dtol, boost_tol, boost_value;
  long maxit, restart, repeat, dd_blocks, levels;
} ilu_opts;

/* What a run holds: the context, this rank's rows, the matrix, the
 * preconditioner, the vectors, the solver's result. */
typedef struct ilu_run {
  rrt_app_common *com; /* the common options; keeps the first error */
  rrt_ctx_t ctx;
  MPI_Comm comm; /* the subcommand's communicator (the context has a dup) */
  int P, rank;
  rrt_csr loc;
  int64_t n, r0; /* global order, first row of this rank */
  rrt_sparse_t A;
  rrt_ilu0_t M;
  double *db, *dx, *dt, *hb; /* backend b, x, a work vector; host b */
  double *hx0;               /* host x0 (--x0), or NULL */
  size_t vb;                 /* bytes of one local vector (+1 element) */
  rrt_krylov_result res;
  char err[1024];
} ilu_run;

/* What is measured and reported. */
typedef struct ilu_measure {
  double analysis, factor, refactor, spmv, apply, solve, true_rel;
  int nl, nu;                 /* levels of L and U */
  int64_t hmin, hmax;         /* rows per L level */
  int64_t launch_f, launch_a; /* kernel launches of a factorisation, an apply (rank 0; 0 on cpu) */
  double factor_nnz;          /* entries of the factor pattern (A's plus the fill), global */
  double rank_nnz_max;        /* the most factor entries one rank holds */
} ilu_measure;

static void usage(void) {
  printf("usage: ringrt ilu (--matrix A.mtx | --generate PROBLEM) [options]\n\n"
         "Distributed level-scheduled ILU(0) (bitwise equal to the serial IKJ ILU(0) for any\n"
         "rank count and backend) and a preconditioned Krylov solve of A x = b.\n\n"
         "  --matrix F          Matrix Market coordinate file (real/integer/pattern;\n"
         "                      general/symmetric/skew-symmetric)\n"
         "  --generate P        laplace2d:N | laplace3d:N | convdiff2d:N,PECLET\n"
         "  --pattern-values V  values of a pattern matrix: ones | laplacian (refused otherwise)\n"
         "  --rhs F             right-hand side, .npy (f8, n values) or .mtx vector (b = A*ones)\n"
         "  --reorder O         natural | rcm | multicolor | dd | dd-color (natural). A\n"
         "                      reordering changes the preconditioner (ILU(0) of P A P^T),\n"
         "                      not the system solved. dd: each subdomain's interior rows\n"
         "                      first, the interface rows last (dd-color: interface coloured)\n"
         "  --levels K          ILU(K): K levels of fill, PETSc's -pc_factor_levels K (0);\n"
         "                      the same pattern as PETSc's and factors bitwise the same\n"
         "                      for any rank count (with --reorder: of P A P^T)\n"
         "  --dd-blocks K       subdomains of dd: 0 = one per rank (0), K > 0 = a K-way split\n"
         "                      of the rows, the same preconditioner for any rank count\n"
         "  --solver S          gmres | fgmres | bicgstab | cg | none (gmres; none: factor only)\n"
         "  --tol X             relative tolerance rtol (1e-8): converged when the monitored\n"
         "                      residual norm <= max(rtol ||b||, atol) (||M^-1 b|| on the left)\n"
         "  --atol X            absolute tolerance (0)\n"
         "  --dtol X            diverged when the monitored norm >= dtol ||b|| (1e4, PETSc's)\n"
         "  --maxit N           iteration cap (1000)\n"
         "  --restart N         GMRES / FGMRES restart length (30)\n"
         "  --gmres-refine R    never | ifneeded | always (never, as PETSc's default): a\n"
         "                      second Gram-Schmidt pass in GMRES / FGMRES\n"
         "  --side S            right | left (right): the monitored norm is ||b - A x|| on\n"
         "                      the right, ||M^-1 (b - A x)|| on the left (CG: only the norm)\n"
         "  --x0 F              initial guess, .npy or .mtx vector like --rhs; 'zero' (the\n"
         "                      default) starts from x = 0\n"
         "  --monitor           print the monitored residual norm each iteration on rank 0,\n"
         "                      as PETSc's -ksp_monitor ('  5 KSP Residual norm 1.2e-03')\n"
         "  --boost TOL,VALUE   replace pivots with |u_ii| <= TOL by VALUE (off)\n"
         "  --factor-precision P  f64 | f32 (f64). f32: the preconditioner keeps its factors\n"
         "                      in f32 (factored in f64, then rounded; half the memory\n"
         "                      traffic per apply); vectors and the Krylov solver stay f64\n"
         "  --repeat N          timed refactorisations (median reported), SpMV and apply\n"
         "                      repetitions (10)\n"
         "  --factors-out F     write the combined LU factors (Matrix Market, original order)\n"
         "  --x-out F           write the solution (.npy, f8)\n"
         "  --matrix-out F      write A itself (Matrix Market), e.g. a generated problem\n\n"
         "The report names why the solve stopped with PETSc's KSPConvergedReason names\n"
         "(CONVERGED_RTOL, CONVERGED_ATOL, DIVERGED_ITS, DIVERGED_DTOL, DIVERGED_BREAKDOWN,\n"
         "DIVERGED_INDEFINITE_PC, DIVERGED_INDEFINITE_MAT, DIVERGED_NANORINF). On a\n"
         "DIVERGED reason x is the iterate with the smallest true residual seen (at worst x0).\n\n"
         "Exit status 1 when the factorisation fails (zero pivot names the row), 3 when the\n"
         "solve stops with a DIVERGED reason (the outputs and the report are still written).\n\n"
         "%s%s",
         rrt_app_common_help, rrt_app_exit_help);
}

/* ------------------------------------------------------------ options --- */

/* One option with a value: 0 parsed, 2 on a usage error (printed). */
static int parse_option(rrt_app_common *c, const char *a, const char *next, ilu_opts *o) {
  if (!strcmp(a, "--matrix"))
    o->matrix = next;
  else if (!strcmp(a, "--generate"))
    o->generate = next;
  else if (!strcmp(a, "--rhs"))
    o->rhs = next;
  else if (!strcmp(a, "--x0"))
    o->x0 = strcmp(next, "zero") ? next : NULL;
  else if (!strcmp(a, "--factors-out"))
    o->factors_out = next;
  else if (!strcmp(a, "--x-out"))
    o->x_out = next;
  else if (!strcmp(a, "--matrix-out"))
    o->matrix_out = next;
  else if (!strcmp(a, "--pattern-values")) {
    if (!strcmp(next, "ones"))
      o->pattern = RRT_MM_PATTERN_ONES;
    else if (!strcmp(next, "laplacian"))
      o->pattern = RRT_MM_PATTERN_LAPLACIAN;
    else {
      rrt_app_usage_error(c, "--pattern-values is ones or laplacian, not '%s'", next);
      return 2;
    }
  } else if (!strcmp(a, "--reorder")) {
    if (rrt_ilu_ordering_parse(next, &o->ordering)) {
      rrt_app_usage_error(c, "--reorder is natural, rcm, multicolor, dd or dd-color, not '%s'",
                          next);
      return 2;
    }
  } else if (!strcmp(a, "--levels")) {
    if (rrt_app_parse_long(c, a, next, 0, 1 << 20, &o->levels)) return 2;
  } else if (!strcmp(a, "--dd-blocks")) {
    if (rrt_app_parse_long(c, a, next, 0, 1 << 20, &o->dd_blocks)) return 2;
  } else if (!strcmp(a, "--solver")) {
    if (!strcmp(next, "none"))
      o->no_solver = 1;
    else if (rrt_krylov_method_parse(next, &o->method)) {
      rrt_app_usage_error(c, "--solver is gmres, fgmres, bicgstab, cg or none, not '%s'", next);
      return 2;
    }
  } else if (!strcmp(a, "--gmres-refine")) {
    static const char *const names[] = {"never", "ifneeded", "always"};
    int k = 0;
    while (k < 3 && strcmp(next, names[k]))
      k++;
    if (k == 3) {
      rrt_app_usage_error(c, "--gmres-refine is never, ifneeded or always, not '%s'", next);
      return 2;
    }
    o->refine = (rrt_krylov_refine)k;
  } else if (!strcmp(a, "--side")) {
    if (strcmp(next, "left") && strcmp(next, "right")) {
      rrt_app_usage_error(c, "--side is left or right, not '%s'", next);
      return 2;
    }
    o->side = !strcmp(next, "left") ? RRT_KRYLOV_SIDE_LEFT : RRT_KRYLOV_SIDE_RIGHT;
  } else if (!strcmp(a, "--tol") || !strcmp(a, "--atol") || !strcmp(a, "--dtol")) {
    double *v = !strcmp(a, "--tol") ? &o->tol : !strcmp(a, "--atol") ? &o->atol : &o->dtol;
    if (rrt_app_parse_double(c, a, next, v)) return 2;
    if (v == &o->dtol ? !(*v > 0) : !(*v >= 0)) {
      rrt_app_usage_error(c, "%s '%s' is %s", a, next, v == &o->dtol ? "not positive" : "negative");
      return 2;
    }
  } else if (!strcmp(a, "--maxit")) {
    if (rrt_app_parse_long(c, a, next, 0, 100000000, &o->maxit)) return 2;
  } else if (!strcmp(a, "--restart")) {
    if (rrt_app_parse_long(c, a, next, 1, 10000, &o->restart)) return 2;
  } else if (!strcmp(a, "--repeat")) {
    if (rrt_app_parse_long(c, a, next, 1, 100000, &o->repeat)) return 2;
  } else if (!strcmp(a, "--factor-precision")) {
    if (strcmp(next, "f64") && strcmp(next, "f32")) {
      rrt_app_usage_error(c, "--factor-precision is f64 or f32, not '%s'", next);
      return 2;
    }
    o->f32 = !strcmp(next, "f32");
  } else if (!strcmp(a, "--boost")) {
    char tail = 0;
    if (sscanf(next, "%lf,%lf%c", &o->boost_tol, &o->boost_value, &tail) != 2) {
      rrt_app_usage_error(c, "bad value for --boost: '%s' (TOL,VALUE)", next);
      return 2;
    }
    o->boost = 1;
  } else {
    rrt_app_usage_error(c, "unknown option '%s' (see --help)", a);
    return 2;
  }
  return 0;
}

/* 0: run; 1: --help was printed; 2: usage error (printed on rank 0). */
static int parse(int argc, char **argv, ilu_opts *o, rrt_app_common *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (c->rank == 0) usage();
      return 1;
    }
    if (!strcmp(a, "--monitor")) {
      o->monitor = 1;
      continue;
    }
    int r = rrt_app_common_option(c, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!next || strncmp(a, "--", 2) != 0) {
      rrt_app_usage_error(c, "unknown option or missing value: '%s'", a);
      return 2;
    }
    i++;
    if (parse_option(c, a, next, o)) return 2;
  }
  if (!o->matrix == !o->generate) {
    rrt_app_usage_error(c, "give exactly one of --matrix or --generate (see --help)");
    return 2;
  }
  if (o->method == RRT_KRYLOV_FGMRES && o->side == RRT_KRYLOV_SIDE_LEFT) {
    rrt_app_usage_error(c, "--solver fgmres is right preconditioned only (--side right)");
    return 2;
  }
  return 0;
}

/* ---------------------------------------------------------- the steps --- */

/* The slowest rank's time. Waits go through the library's host
 * collectives, so a stalled rank ends the job within RINGRT_TIMEOUT. */
static double max_over(rrt_ctx_t ctx, double v) {
  double m = v;
  rrt_host_allreduce(ctx, &v, &m, 1, RRT_DTYPE_F64, RRT_OP_MAX);
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The last error of the context, on rank 0; returns 1 (a failed phase). */
static int fail_ctx(const ilu_run *run) {
  if (run->rank == 0) rrt_app_error(run->com, "%s", rrt_ctx_last_error(run->ctx));
  return 1;
}

/* This rank's rows (a failure anywhere fails all ranks), the distributed
 * matrix, and --matrix-out. Returns 0 or 1 (message on rank 0). */
static int read_problem(ilu_run *run, const ilu_opts *o) {
  /* a bad file fails every rank the same way */
  int bad = rrt_app_ilu_load_rows(run->ctx, o->matrix, o->generate, o->pattern, &run->n, &run->r0,
                                  &run->loc, run->err, sizeof(run->err));
  if (rrt_app_any_rank(run->ctx, bad)) {
    if (run->rank == 0)
      rrt_app_error(run->com, "%s", bad ? run->err : "input failed on another rank");
    return 1;
  }
  const rrt_csr *loc = &run->loc;
  if (rrt_sparse_create(run->ctx, run->n, run->r0, loc->nrows, loc->rowptr, loc->col, loc->val,
                        &run->A) != RRT_SUCCESS)
    return fail_ctx(run);
  if (o->matrix_out &&
      rrt_app_ilu_write_rows(run->ctx, loc, loc->val, run->n, o->matrix_out,
                             o->generate ? o->generate : o->matrix, run->err, sizeof(run->err))) {
    if (run->rank == 0) rrt_app_error(run->com, "--matrix-out %s", run->err);
    return 1;
  }
  return 0;
}

/* Analysis, the first factorisation and `repeat` timed refactorisations
 * (same pattern, as after rrt_sparse_set_values: the steady-state cost,
 * without the first touch of the factor storage). Returns 0 or 1. */
static int analyse_and_factor(ilu_run *run, const ilu_opts *o, int quiet, ilu_measure *ms) {
  if (o->ordering != RRT_ILU_ORDER_NATURAL && run->rank == 0 && !quiet)
    fprintf(stderr,
            "ringrt ilu: note: --reorder %s changes the preconditioner (ILU(0) of P A P^T), so "
            "iteration counts differ from the natural order; the system solved is the same\n",
            rrt_ilu_ordering_name(o->ordering));
  rrt_ilu0_options io = RRT_ILU0_OPTIONS_INITIALIZER;
  io.ordering = o->ordering;
  io.boost = o->boost, io.boost_tol = o->boost_tol, io.boost_value = o->boost_value;
  io.factors_f32 = o->f32;
  io.dd_blocks = (int)o->dd_blocks;
  io.levels = (int)o->levels;
  double t0 = rrt_time_now();
  rrt_status st = rrt_ilu0_create(run->A, &io, &run->M);
  ms->analysis = max_over(run->ctx, rrt_time_now() - t0);
  if (st != RRT_SUCCESS) return fail_ctx(run);
  rrt_barrier(run->ctx);
  t0 = rrt_time_now();
  st = rrt_ilu0_factor(run->M);
  ms->factor = max_over(run->ctx, rrt_time_now() - t0);
  if (st != RRT_SUCCESS) return fail_ctx(run);
  double *tr = malloc((size_t)o->repeat * sizeof(double));
  if (!tr) {
    if (run->rank == 0) rrt_app_error(run->com, "out of memory");
    return 1;
  }
  for (long k = 0; k < o->repeat && st == RRT_SUCCESS; k++) {
    rrt_barrier(run->ctx);
    t0 = rrt_time_now();
    st = rrt_ilu0_factor(run->M);
    tr[k] = max_over(run->ctx, rrt_time_now() - t0);
  }
  qsort(tr, (size_t)o->repeat, sizeof(double), cmp_double);
  ms->refactor = tr[o->repeat / 2];
  free(tr);
  if (st != RRT_SUCCESS) return fail_ctx(run);
  return 0;
}

/* The factor pattern's size: global entries and the most on one rank. */
static void fill_summary(const ilu_run *run, ilu_measure *ms) {
  double mine = (double)rrt_ilu0_factor_nnz(run->M);
  ms->factor_nnz = mine;
  rrt_host_allreduce(run->ctx, &mine, &ms->factor_nnz, 1, RRT_DTYPE_F64, RRT_OP_SUM);
  ms->rank_nnz_max = max_over(run->ctx, mine);
}

/* Levels of L and U, and the smallest and largest L level. */
static void level_summary(const ilu_run *run, ilu_measure *ms) {
  fill_summary(run, ms);
  rrt_ilu0_levels(run->M, &ms->nl, &ms->nu);
  rrt_ilu0_launches(run->M, &ms->launch_f, &ms->launch_a);
  int64_t *hist = malloc(((size_t)ms->nl + 1) * sizeof(int64_t));
  ms->hmin = INT64_MAX, ms->hmax = 0;
  rrt_ilu0_level_histogram(run->M, 0, hist);
  for (int l = 0; l < ms->nl; l++)
    ms->hmin = hist[l] < ms->hmin ? hist[l] : ms->hmin,
    ms->hmax = hist[l] > ms->hmax ? hist[l] : ms->hmax;
  free(hist);
}

/* One vector file (--rhs, --x0) into this rank's rows of h; a failure
 * anywhere fails all ranks. Returns 0 or 1 (message on rank 0). */
static int load_vector(ilu_run *run, const char *path, double *h) {
  int bad =
      rrt_app_ilu_load_rhs(path, run->n, run->r0, run->loc.nrows, h, run->err, sizeof(run->err));
  if (rrt_app_any_rank(run->ctx, bad)) {
    if (run->rank == 0)
      rrt_app_error(run->com, "%s", bad ? run->err : "a vector file failed on another rank");
    return 1;
  }
  return 0;
}

/* The vectors, b from --rhs or A * ones, and --x0. Returns 0 or 1. */
static int setup_rhs(ilu_run *run, const ilu_opts *o) {
  const int64_t m = run->loc.nrows;
  run->vb = ((size_t)m + 1) * sizeof(double);
  run->hb = malloc(run->vb);
  if (rrt_malloc(run->ctx, run->vb, (void **)&run->db) ||
      rrt_malloc(run->ctx, run->vb, (void **)&run->dx) ||
      rrt_malloc(run->ctx, run->vb, (void **)&run->dt) || !run->hb) {
    if (run->rank == 0) rrt_app_error(run->com, "out of memory for vectors");
    return 1;
  }
  if (o->x0 && (!(run->hx0 = malloc(run->vb)) || load_vector(run, o->x0, run->hx0))) {
    if (!run->hx0 && run->rank == 0) rrt_app_error(run->com, "out of memory for --x0");
    return 1;
  }
  if (o->rhs) {
    if (load_vector(run, o->rhs, run->hb)) return 1;
    rrt_memcpy_to_backend(run->ctx, run->db, run->hb, (size_t)m * sizeof(double));
  } else {
    for (int64_t i = 0; i < m; i++)
      run->hb[i] = 1.0;
    rrt_memcpy_to_backend(run->ctx, run->dx, run->hb, (size_t)m * sizeof(double));
    rrt_sparse_spmv(run->A, run->dx, run->db);
  }
  return 0;
}

/* Kernel rates: one untimed call each (first touch of the work vectors),
 * then the median of `repeat` synchronised calls. Returns 0 or 1. */
static int time_kernels(ilu_run *run, const ilu_opts *o, ilu_measure *ms) {
  double *tk = malloc((size_t)o->repeat * sizeof(double));
  if (!tk) {
    if (run->rank == 0) rrt_app_error(run->com, "out of memory");
    return 1;
  }
  for (int which = 0; which < 2; which++) {
    for (long k = -1; k < o->repeat; k++) {
      rrt_barrier(run->ctx);
      double t0 = rrt_time_now();
      if (which == 0)
        rrt_sparse_spmv(run->A, run->db, run->dt);
      else
        rrt_ilu0_apply(run->M, run->db, run->dt);
      rrt_synchronize(run->ctx);
      double t = max_over(run->ctx, rrt_time_now() - t0);
      if (k >= 0) tk[k] = t;
    }
    qsort(tk, (size_t)o->repeat, sizeof(double), cmp_double);
    *(which == 0 ? &ms->spmv : &ms->apply) = tk[o->repeat / 2];
  }
  free(tk);
  return 0;
}

/* ||b - A x|| / ||b||, independent of what the solver tracked. */
static double true_residual(ilu_run *run) {
  const int64_t m = run->loc.nrows;
  rrt_sparse_spmv(run->A, run->dx, run->dt);
  double *hr = malloc(run->vb), *hbb = malloc(run->vb);
  rrt_memcpy_to_host(run->ctx, hr, run->dt, (size_t)m * sizeof(double));
  rrt_memcpy_to_host(run->ctx, hbb, run->db, (size_t)m * sizeof(double));
  double s[2] = {0, 0}, g[2];
  for (int64_t i = 0; i < m; i++) {
    double d = hbb[i] - hr[i];
    s[0] += d * d, s[1] += hbb[i] * hbb[i];
  }
  if (rrt_host_allreduce(run->ctx, s, g, 2, RRT_DTYPE_F64, RRT_OP_SUM) != RRT_SUCCESS)
    g[0] = g[1] = NAN;
  double rn = sqrt(g[0]), bn = sqrt(g[1]);
  free(hr), free(hbb);
  return bn > 0 ? rn / bn : rn;
}

/* --monitor: PETSc's -ksp_monitor line on rank 0 (KSPMonitorResidual's
 * format, its trailing space included). */
typedef struct ilu_monitor {
  FILE *out;
  int rank;
} ilu_monitor;

static void monitor_line(int it, double rnorm, void *user) {
  const ilu_monitor *m = user;
  if (m->rank == 0) fprintf(m->out, "%3d KSP Residual norm %14.12e \n", it, rnorm);
}

/* The preconditioned Krylov solve from x0 (--x0, else 0; x stays so with
 * --solver none). Returns 0 or 1. */
static int solve(ilu_run *run, const ilu_opts *o, rrt_app_common *c, ilu_measure *ms) {
  ms->solve = 0.0, ms->true_rel = NAN;
  size_t bytes = (size_t)run->loc.nrows * sizeof(double);
  if (run->hx0)
    rrt_memcpy_to_backend(run->ctx, run->dx, run->hx0, bytes);
  else
    rrt_memset(run->ctx, run->dx, 0, bytes);
  if (o->no_solver) return 0;
  rrt_krylov_options ko = RRT_KRYLOV_OPTIONS_INITIALIZER;
  ko.method = o->method, ko.rtol = o->tol, ko.maxit = (int)o->maxit, ko.restart = (int)o->restart;
  ko.atol = o->atol, ko.dtol = o->dtol, ko.side = o->side, ko.refine = o->refine;
  ko.progress = c->quiet || o->monitor ? 0 : 100;
  ilu_monitor mon = {rrt_app_text_stream(c), run->rank};
  if (o->monitor) ko.monitor = monitor_line, ko.monitor_user = &mon;
  rrt_barrier(run->ctx);
  double t0 = rrt_time_now();
  rrt_status st = rrt_krylov_solve(run->A, run->M, &ko, run->db, run->dx, &run->res);
  ms->solve = max_over(run->ctx, rrt_time_now() - t0);
  if (st != RRT_SUCCESS) return fail_ctx(run);
  ms->true_rel = true_residual(run);
  return 0;
}

/* --factors-out and --x-out. Returns 0 or 1 (message on rank 0). */
static int write_outputs(ilu_run *run, const ilu_opts *o) {
  if (o->factors_out && rrt_app_ilu_write_factors(run->ctx, run->M, &run->loc, run->n,
                                                  o->factors_out, run->err, sizeof(run->err))) {
    if (run->rank == 0) rrt_app_error(run->com, "--factors-out %s", run->err);
    return 1;
  }
  if (!o->x_out) return 0;
  double *hx = malloc(run->vb);
  rrt_memcpy_to_host(run->ctx, hx, run->dx, (size_t)run->loc.nrows * sizeof(double));
  double *all = rrt_app_ilu_gather0(run->ctx, hx, run->loc.nrows);
  int wbad = 0;
  if (run->rank == 0 && !all) {
    wbad = 1;
    rrt_app_error(run->com, "%s: %s", o->x_out, rrt_ctx_last_error(run->ctx));
  } else if (run->rank == 0) {
    int64_t shape[1] = {run->n};
    wbad = rrt_npy_write(o->x_out, "<f8", 1, shape, all, run->err, sizeof(run->err)) != RRT_SUCCESS;
    if (wbad) rrt_app_error(run->com, "--x-out %s", run->err);
  }
  wbad = rrt_app_any_rank(run->ctx, wbad);
  free(hx), free(all);
  return wbad;
}

/* ------------------------------------------------------------- report --- */

typedef struct ilu_rates {
  double nnz, spmv, tri, fac; /* global nonzeros; GFLOP/s of SpMV, L+U solves, factor */
} ilu_rates;

static int is_dd(rrt_ilu_ordering o) {
  return o == RRT_ILU_ORDER_DD || o == RRT_ILU_ORDER_DD_COLOR;
}

static const char *side_name(rrt_krylov_side side) {
  return side == RRT_KRYLOV_SIDE_LEFT ? "left" : "right";
}

static ilu_rates rates_of(const ilu_run *run, const ilu_measure *ms) {
  ilu_rates r;
  r.nnz = (double)rrt_sparse_global_nnz(run->A);
  r.spmv = 2.0 * r.nnz / ms->spmv * 1e-9;
  r.tri = rrt_ilu0_apply_flops(run->M) / ms->apply * 1e-9;
  r.fac = rrt_ilu0_factor_flops(run->M) / ms->factor * 1e-9;
  return r;
}

static void report_text(FILE *out, const ilu_run *run, const ilu_opts *o, const ilu_measure *ms,
                        const ilu_rates *r) {
  const char *src = o->matrix ? o->matrix : o->generate;
  char ilu_name[32] = "0";
  if (o->levels > 0) snprintf(ilu_name, sizeof ilu_name, "(%ld)", o->levels);
  fprintf(out, "ringrt ilu: %s  n %lld  nnz %.0f  ranks %d  backend %s  ordering %s  factors %s\n",
          src, (long long)run->n, r->nnz, run->P, rrt_backend_name(rrt_ctx_backend(run->ctx)),
          rrt_ilu_ordering_name(o->ordering), o->f32 ? "f32" : "f64");
  if (is_dd(o->ordering))
    fprintf(out, "  subdomains  %ld%s\n", o->dd_blocks ? o->dd_blocks : (long)run->P,
            o->dd_blocks ? " (--dd-blocks)" : " (one per rank)");
  if (o->levels > 0)
    fprintf(out,
            "  fill        ILU(%ld)  factor nnz %.0f (fill %.0f, %.2fx A)  most on a rank %.0f "
            "(%.3g MB of f64 values + 32-bit columns)\n",
            o->levels, ms->factor_nnz, ms->factor_nnz - r->nnz, ms->factor_nnz / r->nnz,
            ms->rank_nnz_max, ms->rank_nnz_max * 12.0 / 1e6);
  fprintf(out, "  levels      L %d  U %d  (rows per L level: min %lld, max %lld)\n", ms->nl, ms->nu,
          (long long)ms->hmin, (long long)ms->hmax);
  if (ms->launch_a > 0)
    fprintf(out, "  launches    factor %lld  apply %lld  (kernels, rank 0)\n",
            (long long)ms->launch_f, (long long)ms->launch_a);
  fprintf(out,
          "  analysis    %.3f s\n  factor      %.4f s  %.3f GFLOP/s (refactor median %.4f s)\n",
          ms->analysis, ms->factor, r->fac, ms->refactor);
  fprintf(out, "  spmv        %.6f s  %.3f GFLOP/s\n  trisolve    %.6f s  %.3f GFLOP/s (L and U)\n",
          ms->spmv, r->spmv, ms->apply, r->tri);
  if (!o->no_solver)
    fprintf(out,
            "  solve       %s+ilu%s (%s)  %d iterations  %.4f s  converged %s (%s)  true residual "
            "%.3e\n",
            rrt_krylov_method_name(o->method), ilu_name, side_name(o->side), run->res.iterations,
            ms->solve, run->res.converged ? "yes" : "no", rrt_krylov_reason_name(run->res.reason),
            ms->true_rel);
}

static void report_json(FILE *js, const ilu_run *run, const ilu_opts *o, const ilu_measure *ms,
                        const ilu_rates *r) {
  const char *src = o->matrix ? o->matrix : o->generate;
  fprintf(js, "{\"command\": \"ilu\", \"problem\": ");
  rrt_json_string(js, src);
  fprintf(js, ", \"n\": %lld", (long long)run->n);
  rrt_app_json_field(js, "nnz", r->nnz);
  fprintf(js,
          ", \"ranks\": %d, \"backend\": \"%s\", \"ordering\": \"%s\", \"factor_precision\": "
          "\"%s\", \"levels_l\": %d, \"levels_u\": %d",
          run->P, rrt_backend_name(rrt_ctx_backend(run->ctx)), rrt_ilu_ordering_name(o->ordering),
          o->f32 ? "f32" : "f64", ms->nl, ms->nu);
  if (is_dd(o->ordering)) fprintf(js, ", \"dd_blocks\": %ld", o->dd_blocks);
  if (o->levels > 0) { /* ILU(k): the fill (ILU(0) reports stay as they were) */
    fprintf(js, ", \"fill_levels\": %ld", o->levels);
    rrt_app_json_field(js, "factor_nnz", ms->factor_nnz);
    rrt_app_json_field(js, "fill_nnz", ms->factor_nnz - r->nnz);
    rrt_app_json_field(js, "factor_nnz_rank_max", ms->rank_nnz_max);
    rrt_app_json_field(js, "factor_bytes_rank_max", ms->rank_nnz_max * 12.0);
  }
  if (ms->launch_a > 0) /* device kernels (cuda, emu) */
    fprintf(js, ", \"launches_factor\": %lld, \"launches_apply\": %lld", (long long)ms->launch_f,
            (long long)ms->launch_a);
  const struct {
    const char *key;
    double v;
  } fields[] = {{"analysis_s", ms->analysis}, {"factor_s", ms->factor},   {"factor_gflops", r->fac},
                {"refactor_s", ms->refactor}, {"spmv_s", ms->spmv},       {"spmv_gflops", r->spmv},
                {"trisolve_s", ms->apply},    {"trisolve_gflops", r->tri}};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
    rrt_app_json_field(js, fields[k].key, fields[k].v);
  if (o->no_solver) return;
  fprintf(js, ", \"solver\": \"%s\", \"iterations\": %d", rrt_krylov_method_name(o->method),
          run->res.iterations);
  rrt_app_json_field(js, "solve_s", ms->solve);
  fprintf(js, ", \"side\": \"%s\", \"converged\": %s, \"reason\": \"%s\"", side_name(o->side),
          run->res.converged ? "true" : "false", rrt_krylov_reason_name(run->res.reason));
  rrt_app_json_field(js, "true_residual", ms->true_rel);
}

/* Why the solve failed, on rank 0 (NaN or Inf in --rhs / --x0 files is
 * refused when they are read, naming the file and the entry). */
static void report_failure(const ilu_run *run, const ilu_opts *o) {
  if (run->rank != 0) return;
  fprintf(stderr, "ringrt ilu: %s stopped with %s after %d iterations (rtol %g",
          rrt_krylov_method_name(o->method), rrt_krylov_reason_name(run->res.reason),
          run->res.iterations, o->tol);
  if (o->atol > 0) fprintf(stderr, ", atol %g", o->atol);
  fprintf(stderr, ", dtol %g, maxit %ld)\n", o->dtol, o->maxit);
}

/* The text report (stdout, or stderr when the JSON goes to stdout) and the
 * JSON report; the exit code: 3 when the solve stopped with a diverged
 * reason (every reason < 0). */
static int report(const ilu_run *run, const ilu_opts *o, rrt_app_common *c, const ilu_measure *ms) {
  ilu_rates r = rates_of(run, ms);
  if (run->rank == 0) report_text(rrt_app_text_stream(c), run, o, ms, &r);
  int rc = (o->no_solver || run->res.converged) ? RRT_EXIT_OK : RRT_EXIT_NOT_CONVERGED;
  FILE *js = rrt_app_json_open(c);
  if (js) {
    report_json(js, run, o, ms, &r);
    rrt_app_json_close(c, rc);
  }
  if (rc) report_failure(run, o);
  return rc;
}

/* Outputs and inputs named on the command line, for the path checks. */
static int check_paths(rrt_app_common *c, const ilu_opts *o) {
  const rrt_app_path outs[] = {
      {"--factors-out", o->factors_out}, {"--x-out", o->x_out}, {"--matrix-out", o->matrix_out}};
  const rrt_app_path ins[] = {{"--matrix", o->matrix}, {"--rhs", o->rhs}, {"--x0", o->x0}};
  return rrt_app_check_paths(c, outs, 3, ins, 3);
}

int rrt_cmd_ilu(MPI_Comm comm, int argc, char **argv) {
  ilu_opts o = {0};
  o.tol = 1e-8, o.dtol = 1e4, o.maxit = 1000, o.restart = 30, o.repeat = 10, o.boost_value = 1.0;
  o.pattern = RRT_MM_PATTERN_REFUSE;
  rrt_app_common c;
  rrt_app_common_init(&c, "ilu", comm, argc, argv);
  int rc = rrt_app_agree_args(comm, &c, parse(argc, argv, &o, &c));
  if (rc) return rc == 1 ? 0 : rrt_app_finish(NULL, &c, RRT_EXIT_USAGE);
  rc = check_paths(&c, &o);
  ilu_run run;
  memset(&run, 0, sizeof run);
  run.comm = comm;
  run.com = &c;
  if (rrt_app_ctx_create(comm, &c, &run.ctx) != RRT_SUCCESS)
    return rrt_app_finish(NULL, &c, RRT_EXIT_FAILURE);
  run.P = rrt_ctx_size(run.ctx), run.rank = rrt_ctx_rank(run.ctx);
  ilu_measure ms = {0};
  if ((rc = rrt_app_agree_code(run.ctx, &c, rc)) != 0) goto done;
  rc = RRT_EXIT_FAILURE;
  if (read_problem(&run, &o) || analyse_and_factor(&run, &o, c.quiet, &ms)) goto done;
  level_summary(&run, &ms);
  if (setup_rhs(&run, &o) || time_kernels(&run, &o, &ms) || solve(&run, &o, &c, &ms) ||
      write_outputs(&run, &o))
    goto done;
  rc = report(&run, &o, &c, &ms);
done:
  rrt_krylov_result_free(&run.res);
  rrt_free(run.ctx, run.db), rrt_free(run.ctx, run.dx), rrt_free(run.ctx, run.dt);
  free(run.hb), free(run.hx0);
  rrt_ilu0_destroy(run.M);
  rrt_sparse_destroy(run.A);
  rrt_csr_free(&run.loc);
  return rrt_app_finish(run.ctx, &c, rc);
}

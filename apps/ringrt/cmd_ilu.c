/* `ringrt ilu`: distributed ILU(0) of a sparse matrix (Matrix Market file or
 * a generated stencil problem) and a preconditioned Krylov solve.
 *
 * Every rank reads the file (errors are then the same everywhere) and keeps
 * the rows of its nonzero-balanced block; generated problems are built row
 * block by row block. Without --rhs, b = A * ones. Reports the levels, the
 * analysis/factor/solve times (max over ranks), iterations, convergence, the
 * true residual ||b - A x|| / ||b||, and GFLOP/s of SpMV, of the triangular
 * solves and of the factorisation. Exit 1 when the solve does not converge. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "io/mmio.h"
#include "io/npy.h"
#include "io/sparse_gen.h"
#include "ringrt/ilu.h"

typedef struct ilu_opts {
  const char *matrix, *generate, *rhs, *factors_out, *x_out, *matrix_out;
  rrt_mm_pattern_values pattern;
  rrt_ilu_ordering ordering;
  rrt_krylov_method method;
  int no_solver, boost, f32;
  double tol, boost_tol, boost_value;
  long maxit, restart, repeat;
} ilu_opts;

static void usage(void) {
  printf("usage: ringrt ilu (--matrix A.mtx | --generate PROBLEM) [options]\n\n"
         "Distributed level-scheduled ILU(0) (bitwise equal to the serial IKJ ILU(0) for any\n"
         "rank count and backend) and a preconditioned Krylov solve of A x = b.\n\n"
         "  --matrix F          Matrix Market coordinate file (real/integer/pattern;\n"
         "                      general/symmetric/skew-symmetric)\n"
         "  --generate P        laplace2d:N | laplace3d:N | convdiff2d:N,PECLET\n"
         "  --pattern-values V  values of a pattern matrix: ones | laplacian (refused otherwise)\n"
         "  --rhs F             right-hand side, .npy (f8, n values) or .mtx vector (b = A*ones)\n"
         "  --reorder O         natural | rcm | multicolor (natural). A reordering changes the\n"
         "                      preconditioner (ILU(0) of P A P^T), not the system solved\n"
         "  --solver S          gmres | bicgstab | cg | none (gmres; none: factor only)\n"
         "  --tol X             relative residual ||b - A x|| / ||b|| to reach (1e-8)\n"
         "  --maxit N           iteration cap (1000)\n"
         "  --restart N         GMRES restart length (30)\n"
         "  --boost TOL,VALUE   replace pivots with |u_ii| <= TOL by VALUE (off)\n"
         "  --factor-precision P  f64 | f32 (f64). f32: the preconditioner keeps its factors\n"
         "                      in f32 (factored in f64, then rounded; half the memory\n"
         "                      traffic per apply); vectors and the Krylov solver stay f64\n"
         "  --repeat N          timed refactorisations (median reported), SpMV and apply\n"
         "                      repetitions (10)\n"
         "  --factors-out F     write the combined LU factors (Matrix Market, original order)\n"
         "  --x-out F           write the solution (.npy, f8)\n"
         "  --matrix-out F      write A itself (Matrix Market), e.g. a generated problem\n\n"
         "Exit status 1 when the factorisation fails (zero pivot names the row) or the solve\n"
         "does not converge.\n\n%s",
         rrt_app_common_help);
}

static int parse(MPI_Comm comm, int argc, char **argv, ilu_opts *o, rrt_app_common *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      if (rank == 0) usage();
      return 1;
    }
    int r = rrt_app_common_option(c, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!next || strncmp(a, "--", 2) != 0) {
      rrt_app_print0(comm, "ringrt ilu: unknown option or missing value: '%s'\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--matrix"))
      o->matrix = next;
    else if (!strcmp(a, "--generate"))
      o->generate = next;
    else if (!strcmp(a, "--rhs"))
      o->rhs = next;
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
        rrt_app_print0(comm, "ringrt ilu: --pattern-values is ones or laplacian, not '%s'\n", next);
        return 2;
      }
    } else if (!strcmp(a, "--reorder")) {
      if (rrt_ilu_ordering_parse(next, &o->ordering)) {
        rrt_app_print0(comm, "ringrt ilu: --reorder is natural, rcm or multicolor, not '%s'\n",
                       next);
        return 2;
      }
    } else if (!strcmp(a, "--solver")) {
      if (!strcmp(next, "none"))
        o->no_solver = 1;
      else if (rrt_krylov_method_parse(next, &o->method)) {
        rrt_app_print0(comm, "ringrt ilu: --solver is gmres, bicgstab, cg or none, not '%s'\n",
                       next);
        return 2;
      }
    } else if (!strcmp(a, "--tol")) {
      if (rrt_app_parse_double(comm, "ilu", a, next, &o->tol) || !(o->tol >= 0)) return 2;
    } else if (!strcmp(a, "--maxit")) {
      if (rrt_app_parse_long(comm, "ilu", a, next, 0, 100000000, &o->maxit)) return 2;
    } else if (!strcmp(a, "--restart")) {
      if (rrt_app_parse_long(comm, "ilu", a, next, 1, 10000, &o->restart)) return 2;
    } else if (!strcmp(a, "--repeat")) {
      if (rrt_app_parse_long(comm, "ilu", a, next, 1, 100000, &o->repeat)) return 2;
    } else if (!strcmp(a, "--factor-precision")) {
      if (strcmp(next, "f64") && strcmp(next, "f32")) {
        rrt_app_print0(comm, "ringrt ilu: --factor-precision is f64 or f32, not '%s'\n", next);
        return 2;
      }
      o->f32 = !strcmp(next, "f32");
    } else if (!strcmp(a, "--boost")) {
      char tail = 0;
      if (sscanf(next, "%lf,%lf%c", &o->boost_tol, &o->boost_value, &tail) != 2) {
        rrt_app_print0(comm, "ringrt ilu: bad value for --boost: '%s' (TOL,VALUE)\n", next);
        return 2;
      }
      o->boost = 1;
    } else {
      rrt_app_print0(comm, "ringrt ilu: unknown option '%s' (see --help)\n", a);
      return 2;
    }
  }
  if (!o->matrix == !o->generate) {
    rrt_app_print0(comm, "ringrt ilu: give exactly one of --matrix or --generate (see --help)\n");
    return 2;
  }
  return 0;
}

/* This rank's rows of the problem. Returns 0, or 1 with err filled. */
static int load_local(const ilu_opts *o, int P, int rank, int64_t *n, int64_t *r0, rrt_csr *loc,
                      char *err, size_t errlen) {
  int64_t *off = malloc(((size_t)P + 1) * sizeof(int64_t));
  if (!off) return snprintf(err, errlen, "out of memory"), 1;
  int rc = 0;
  if (o->generate) {
    rrt_gen_spec spec;
    if (rrt_gen_parse(o->generate, &spec, err, errlen)) {
      free(off);
      return 1;
    }
    *n = rrt_gen_order(&spec);
    int64_t *rp = rrt_gen_rowptr(&spec);
    if (!rp) {
      free(off);
      return snprintf(err, errlen, "out of memory for %lld rows", (long long)*n), 1;
    }
    rrt_sparse_partition(*n, rp, P, off);
    free(rp);
    *r0 = off[rank];
    rc = rrt_gen_block(&spec, off[rank], off[rank + 1], loc) != RRT_SUCCESS;
    if (rc) snprintf(err, errlen, "out of memory generating %s", o->generate);
  } else {
    rrt_csr a;
    if (rrt_mm_read(o->matrix, o->pattern, &a, NULL, err, errlen) != RRT_SUCCESS) {
      free(off);
      return 1;
    }
    if (a.nrows != a.ncols) {
      snprintf(err, errlen, "%s: matrix is %lld x %lld, ILU(0) needs a square matrix", o->matrix,
               (long long)a.nrows, (long long)a.ncols);
      rrt_csr_free(&a);
      free(off);
      return 1;
    }
    *n = a.nrows;
    rrt_sparse_partition(a.nrows, a.rowptr, P, off);
    *r0 = off[rank];
    int64_t m = off[rank + 1] - off[rank], b = a.rowptr[off[rank]],
            nz = a.rowptr[off[rank + 1]] - b;
    loc->nrows = m, loc->ncols = a.ncols, loc->nnz = nz;
    loc->rowptr = malloc(((size_t)m + 1) * sizeof(int64_t));
    loc->col = malloc(((size_t)nz + 1) * sizeof(int64_t));
    loc->val = malloc(((size_t)nz + 1) * sizeof(double));
    if (!loc->rowptr || !loc->col || !loc->val) {
      rc = 1;
      snprintf(err, errlen, "out of memory");
    } else {
      for (int64_t i = 0; i <= m; i++)
        loc->rowptr[i] = a.rowptr[off[rank] + i] - b;
      memcpy(loc->col, a.col + b, (size_t)nz * sizeof(int64_t));
      memcpy(loc->val, a.val + b, (size_t)nz * sizeof(double));
    }
    rrt_csr_free(&a);
  }
  free(off);
  return rc;
}

/* Local part of b from a file (whole vector on every rank). */
static int load_rhs(const char *path, int64_t n, int64_t r0, int64_t m, double *b, char *err,
                    size_t errlen) {
  size_t len = strlen(path);
  double *v = NULL;
  int64_t vn = 0;
  if (len > 4 && !strcmp(path + len - 4, ".npy")) {
    rrt_npy a;
    if (rrt_npy_read(path, &a, err, errlen) != RRT_SUCCESS) return 1;
    if (strcmp(a.descr, "<f8") != 0 || (int64_t)a.count != n) {
      snprintf(err, errlen, "%s: need %lld float64 values (<f8), found %zu of %s", path,
               (long long)n, a.count, a.descr);
      rrt_npy_free(&a);
      return 1;
    }
    memcpy(b, (double *)a.data + r0, (size_t)m * sizeof(double));
    rrt_npy_free(&a);
    return 0;
  }
  if (rrt_mm_read_vector(path, &v, &vn, err, errlen) != RRT_SUCCESS) return 1;
  if (vn != n) {
    snprintf(err, errlen, "%s: %lld values, the matrix has %lld rows", path, (long long)vn,
             (long long)n);
    free(v);
    return 1;
  }
  memcpy(b, v + r0, (size_t)m * sizeof(double));
  free(v);
  return 0;
}

static double max_over(MPI_Comm comm, double v) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

/* Gather a local double array to rank 0 (global order): returns the global array on rank 0. */
static double *gather0(MPI_Comm comm, const double *loc, int64_t m, int64_t total, int P,
                       int rank) {
  int *cnt = malloc((size_t)P * sizeof(int)), *dis = malloc((size_t)P * sizeof(int)), mine = (int)m;
  double *all = rank == 0 ? malloc(((size_t)total + 1) * sizeof(double)) : NULL;
  MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, comm);
  if (rank == 0) {
    dis[0] = 0;
    for (int p = 1; p < P; p++)
      dis[p] = dis[p - 1] + cnt[p - 1];
  }
  MPI_Gatherv(loc, mine, MPI_DOUBLE, all, cnt, dis, MPI_DOUBLE, 0, comm);
  free(cnt), free(dis);
  return all;
}

/* Gather the local rows (pattern of loc, values f) to rank 0 and write them. */
static int write_rows(MPI_Comm comm, const rrt_csr *loc, const double *f, int64_t n,
                      const char *path, const char *comment, int P, int rank, char *err,
                      size_t errlen) {
  int64_t nnz = 0, lnz = loc->nnz;
  MPI_Allreduce(&lnz, &nnz, 1, MPI_INT64_T, MPI_SUM, comm);
  double *vals = gather0(comm, f, loc->nnz, nnz, P, rank);
  /* columns and row pointers travel as doubles-sized int64 through the same helper */
  double *cols = gather0(comm, (const double *)loc->col, loc->nnz, nnz, P, rank);
  int64_t *len = malloc(((size_t)loc->nrows + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < loc->nrows; i++)
    len[i] = loc->rowptr[i + 1] - loc->rowptr[i];
  double *lens = gather0(comm, (const double *)len, loc->nrows, n, P, rank);
  int rc = 0;
  if (rank == 0) {
    rrt_csr a = {n, n, nnz, malloc(((size_t)n + 1) * sizeof(int64_t)), (int64_t *)cols, vals};
    a.rowptr[0] = 0;
    for (int64_t i = 0; i < n; i++)
      a.rowptr[i + 1] = a.rowptr[i] + ((int64_t *)lens)[i];
    rc = rrt_mm_write(path, &a, comment, err, errlen) != RRT_SUCCESS;
    free(a.rowptr);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  free(vals), free(cols), free(len), free(lens);
  return rc;
}

static int write_factors(MPI_Comm comm, rrt_ilu0_t M, const rrt_csr *loc, int64_t n,
                         const char *path, int P, int rank, char *err, size_t errlen) {
  double *f = malloc(((size_t)loc->nnz + 1) * sizeof(double));
  if (!f) return snprintf(err, errlen, "out of memory"), 1;
  rrt_ilu0_get_factors(M, f);
  int rc = write_rows(comm, loc, f, n, path,
                      "ringrt ILU(0) factors: L (unit diagonal implied) and U in one "
                      "pattern, original row/column order",
                      P, rank, err, errlen);
  free(f);
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int rrt_cmd_ilu(MPI_Comm comm, int argc, char **argv) {
  ilu_opts o = {0};
  o.tol = 1e-8, o.maxit = 1000, o.restart = 30, o.repeat = 10, o.boost_value = 1.0;
  o.pattern = RRT_MM_PATTERN_REFUSE;
  rrt_app_common c = {0};
  int rc = parse(comm, argc, argv, &o, &c);
  if (rc) return rc == 1 ? 0 : rc;
  rrt_ctx_t ctx = NULL;
  if (rrt_app_ctx_create(comm, &c, &ctx) != RRT_SUCCESS) return 1;
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  FILE *out = (c.json_path && !strcmp(c.json_path, "-")) ? stderr : stdout;
  char err[1024] = "";
  rrt_csr loc = {0};
  int64_t n = 0, r0 = 0;
  rrt_sparse_t A = NULL;
  rrt_ilu0_t M = NULL;
  double *db = NULL, *dx = NULL, *dt = NULL, *hb = NULL;
  rrt_krylov_result res = {0};
  rc = 1;
  /* every rank reads the same input, so every rank fails the same way */
  int bad = load_local(&o, P, rank, &n, &r0, &loc, err, sizeof(err)), anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
  if (anybad) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", bad ? err : "input failed on another rank");
    goto done;
  }
  if (rrt_sparse_create(ctx, n, r0, loc.nrows, loc.rowptr, loc.col, loc.val, &A) != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  if (o.matrix_out && write_rows(comm, &loc, loc.val, n, o.matrix_out,
                                 o.generate ? o.generate : o.matrix, P, rank, err, sizeof(err))) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", err);
    goto done;
  }
  if (o.ordering != RRT_ILU_ORDER_NATURAL && rank == 0 && !c.quiet)
    fprintf(stderr,
            "ringrt ilu: note: --reorder %s changes the preconditioner (ILU(0) of P A P^T), so "
            "iteration counts differ from the natural order; the system solved is the same\n",
            rrt_ilu_ordering_name(o.ordering));
  rrt_ilu0_options io = RRT_ILU0_OPTIONS_INITIALIZER;
  io.ordering = o.ordering;
  io.boost = o.boost, io.boost_tol = o.boost_tol, io.boost_value = o.boost_value;
  io.factors_f32 = o.f32;
  double t0 = rrt_time_now();
  rrt_status st = rrt_ilu0_create(A, &io, &M);
  double t_analysis = max_over(comm, rrt_time_now() - t0);
  if (st != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  MPI_Barrier(comm);
  t0 = rrt_time_now();
  st = rrt_ilu0_factor(M);
  double t_factor = max_over(comm, rrt_time_now() - t0);
  if (st != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  /* Refactorisations (same pattern, as after rrt_sparse_set_values): the
   * steady-state cost, without the first touch of the factor storage. */
  double t_refactor = t_factor, *tr = malloc((size_t)o.repeat * sizeof(double));
  if (!tr) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: out of memory\n");
    goto done;
  }
  for (long k = 0; k < o.repeat && st == RRT_SUCCESS; k++) {
    MPI_Barrier(comm);
    t0 = rrt_time_now();
    st = rrt_ilu0_factor(M);
    tr[k] = max_over(comm, rrt_time_now() - t0);
  }
  qsort(tr, (size_t)o.repeat, sizeof(double), cmp_double);
  t_refactor = tr[o.repeat / 2];
  free(tr);
  if (st != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  int nl = 0, nu = 0;
  rrt_ilu0_levels(M, &nl, &nu);
  int64_t *hist = malloc(((size_t)nl + 1) * sizeof(int64_t)), hmin = INT64_MAX, hmax = 0;
  rrt_ilu0_level_histogram(M, 0, hist);
  for (int l = 0; l < nl; l++)
    hmin = hist[l] < hmin ? hist[l] : hmin, hmax = hist[l] > hmax ? hist[l] : hmax;
  free(hist);
  /* vectors */
  size_t vb = ((size_t)loc.nrows + 1) * sizeof(double);
  hb = malloc(vb);
  if (rrt_malloc(ctx, vb, (void **)&db) || rrt_malloc(ctx, vb, (void **)&dx) ||
      rrt_malloc(ctx, vb, (void **)&dt) || !hb) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: out of memory for vectors\n");
    goto done;
  }
  if (o.rhs) {
    bad = load_rhs(o.rhs, n, r0, loc.nrows, hb, err, sizeof(err));
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm);
    if (anybad) {
      if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", bad ? err : "rhs failed on another rank");
      goto done;
    }
    rrt_memcpy_to_backend(ctx, db, hb, (size_t)loc.nrows * sizeof(double));
  } else {
    for (int64_t i = 0; i < loc.nrows; i++)
      hb[i] = 1.0;
    rrt_memcpy_to_backend(ctx, dx, hb, (size_t)loc.nrows * sizeof(double));
    rrt_sparse_spmv(A, dx, db);
  }
  /* kernel rates: one untimed call each (first touch of the work vectors),
   * then the median of `repeat` synchronised calls */
  double t_spmv = 0.0, t_apply = 0.0, *tk = malloc((size_t)o.repeat * sizeof(double));
  if (!tk) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: out of memory\n");
    goto done;
  }
  for (int which = 0; which < 2; which++) {
    for (long k = -1; k < o.repeat; k++) {
      MPI_Barrier(comm);
      t0 = rrt_time_now();
      if (which == 0)
        rrt_sparse_spmv(A, db, dt);
      else
        rrt_ilu0_apply(M, db, dt);
      rrt_synchronize(ctx);
      double t = max_over(comm, rrt_time_now() - t0);
      if (k >= 0) tk[k] = t;
    }
    qsort(tk, (size_t)o.repeat, sizeof(double), cmp_double);
    *(which == 0 ? &t_spmv : &t_apply) = tk[o.repeat / 2];
  }
  free(tk);
  double nnz = (double)rrt_sparse_global_nnz(A);
  double t_solve = 0.0, true_rel = NAN;
  rrt_memset(ctx, dx, 0, (size_t)loc.nrows * sizeof(double));
  if (!o.no_solver) {
    rrt_krylov_options ko = RRT_KRYLOV_OPTIONS_INITIALIZER;
    ko.method = o.method, ko.rtol = o.tol, ko.maxit = (int)o.maxit, ko.restart = (int)o.restart;
    ko.progress = c.quiet ? 0 : 100;
    MPI_Barrier(comm);
    t0 = rrt_time_now();
    st = rrt_krylov_solve(A, M, &ko, db, dx, &res);
    t_solve = max_over(comm, rrt_time_now() - t0);
    if (st != RRT_SUCCESS) {
      if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", rrt_ctx_last_error(ctx));
      goto done;
    }
    /* true residual, independent of what the solver tracked */
    double bn = 0, rn = 0;
    rrt_sparse_spmv(A, dx, dt);
    double *hr = malloc(vb), *hbb = malloc(vb);
    rrt_memcpy_to_host(ctx, hr, dt, (size_t)loc.nrows * sizeof(double));
    rrt_memcpy_to_host(ctx, hbb, db, (size_t)loc.nrows * sizeof(double));
    double s[2] = {0, 0}, g[2];
    for (int64_t i = 0; i < loc.nrows; i++) {
      double d = hbb[i] - hr[i];
      s[0] += d * d, s[1] += hbb[i] * hbb[i];
    }
    MPI_Allreduce(s, g, 2, MPI_DOUBLE, MPI_SUM, comm);
    rn = sqrt(g[0]), bn = sqrt(g[1]);
    true_rel = bn > 0 ? rn / bn : rn;
    free(hr), free(hbb);
  }
  if (o.factors_out && write_factors(comm, M, &loc, n, o.factors_out, P, rank, err, sizeof(err))) {
    if (rank == 0) fprintf(stderr, "ringrt ilu: %s\n", err);
    goto done;
  }
  if (o.x_out) {
    double *hx = malloc(vb);
    rrt_memcpy_to_host(ctx, hx, dx, (size_t)loc.nrows * sizeof(double));
    double *all = gather0(comm, hx, loc.nrows, n, P, rank);
    int wbad = 0;
    if (rank == 0) {
      int64_t shape[1] = {n};
      wbad = rrt_npy_write(o.x_out, "<f8", 1, shape, all, err, sizeof(err)) != RRT_SUCCESS;
      if (wbad) fprintf(stderr, "ringrt ilu: %s\n", err);
    }
    MPI_Bcast(&wbad, 1, MPI_INT, 0, comm);
    free(hx), free(all);
    if (wbad) goto done;
  }
  double gf_spmv = 2.0 * nnz / t_spmv * 1e-9, gf_tri = rrt_ilu0_apply_flops(M) / t_apply * 1e-9;
  double gf_fac = rrt_ilu0_factor_flops(M) / t_factor * 1e-9;
  const char *src = o.matrix ? o.matrix : o.generate;
  if (rank == 0) {
    fprintf(out,
            "ringrt ilu: %s  n %lld  nnz %.0f  ranks %d  backend %s  ordering %s  factors %s\n",
            src, (long long)n, nnz, P, rrt_backend_name(rrt_ctx_backend(ctx)),
            rrt_ilu_ordering_name(o.ordering), o.f32 ? "f32" : "f64");
    fprintf(out, "  levels      L %d  U %d  (rows per L level: min %lld, max %lld)\n", nl, nu,
            (long long)hmin, (long long)hmax);
    fprintf(out,
            "  analysis    %.3f s\n  factor      %.4f s  %.3f GFLOP/s (refactor median %.4f s)\n",
            t_analysis, t_factor, gf_fac, t_refactor);
    fprintf(out,
            "  spmv        %.6f s  %.3f GFLOP/s\n  trisolve    %.6f s  %.3f GFLOP/s (L and U)\n",
            t_spmv, gf_spmv, t_apply, gf_tri);
    if (!o.no_solver)
      fprintf(out,
              "  solve       %s+ilu0  %d iterations  %.4f s  converged %s  true residual %.3e\n",
              rrt_krylov_method_name(o.method), res.iterations, t_solve,
              res.converged ? "yes" : "no", true_rel);
  }
  FILE *js = rrt_app_json_open(&c, rank);
  if (js) {
    fprintf(
        js,
        "{\"command\": \"ilu\", \"problem\": \"%s\", \"n\": %lld, \"nnz\": %.0f, \"ranks\": %d, "
        "\"backend\": \"%s\", \"ordering\": \"%s\", \"factor_precision\": \"%s\", \"levels_l\": "
        "%d, \"levels_u\": %d, "
        "\"analysis_s\": %.6g, \"factor_s\": %.6g, \"factor_gflops\": %.6g, "
        "\"refactor_s\": %.6g, \"spmv_s\": %.6g, \"spmv_gflops\": %.6g, \"trisolve_s\": %.6g, "
        "\"trisolve_gflops\": %.6g",
        src, (long long)n, nnz, P, rrt_backend_name(rrt_ctx_backend(ctx)),
        rrt_ilu_ordering_name(o.ordering), o.f32 ? "f32" : "f64", nl, nu, t_analysis, t_factor,
        gf_fac, t_refactor, t_spmv, gf_spmv, t_apply, gf_tri);
    if (!o.no_solver)
      fprintf(js,
              ", \"solver\": \"%s\", \"iterations\": %d, \"solve_s\": %.6g, \"converged\": %s, "
              "\"true_residual\": %.6g",
              rrt_krylov_method_name(o.method), res.iterations, t_solve,
              res.converged ? "true" : "false", true_rel);
    fprintf(js, "}\n");
    rrt_app_json_close(js);
  }
  rc = (o.no_solver || res.converged) ? 0 : 1;
  if (rc && rank == 0)
    fprintf(stderr, "ringrt ilu: %s did not converge to %g in %ld iterations\n",
            rrt_krylov_method_name(o.method), o.tol, o.maxit);
done:
  rrt_krylov_result_free(&res);
  rrt_free(ctx, db), rrt_free(ctx, dx), rrt_free(ctx, dt);
  free(hb);
  rrt_ilu0_destroy(M);
  rrt_sparse_destroy(A);
  rrt_csr_free(&loc);
  if (rrt_app_ctx_finish(ctx, &c) != RRT_SUCCESS && rc == 0) rc = 1;
  return rc;
}

/* GMRES(m), right (default) or left preconditioned, and the engine FGMRES
 * shares (fgmres.c): classical Gram-Schmidt, a second pass never (the
 * default, as PETSc's), if needed or always (rrt_krylov_refine), so one
 * iteration needs two reductions over ranks by default;
 * the small dense algebra (Givens rotations, the triangular solve) runs on
 * the host. Stops as PETSc's
 * KSPGMRES: the estimate |g_j+1| tested every iteration, a happy breakdown
 * without convergence and a restart residual far (0.1 rnorm of the cycle
 * start) from the estimate are DIVERGED_BREAKDOWN; each restart tests the
 * residual computed afresh, and records it as that iteration's norm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "krylov/solver.h"

/* One restart cycle's storage. */
typedef struct gmres_work {
  int m;
  double **V;      /* m + 1 basis vectors (backend) */
  double **X;      /* m + 2 pointers: V[0..j] and w, one step's fused dots */
  double **Z;      /* FGMRES: m preconditioned directions; NULL for GMRES */
  double *H;       /* column-major (m+1) x m: the rotated Hessenberg matrix R */
  double *cs, *sn; /* m Givens rotations */
  double *g;       /* m + 1: the rotated residual vector */
  double *h, *h2;  /* m + 1: the new column, and its second Gram-Schmidt pass */
  double *y;       /* m: R^-1 g */
  double *vec[3];  /* backend: w (new direction), u (V y), z (preconditioned) */
} gmres_work;

static void work_free(rrt_krylov_solver *s, gmres_work *W) {
  if (W->V) rrt_vec_free(&s->v, W->m + 1, W->V);
  rrt_vec_free(&s->v, 3, W->vec);
  free(W->V), free(W->X), free(W->H), free(W->cs), free(W->sn), free(W->g), free(W->h), free(W->h2);
  free(W->y);
}

static rrt_status work_alloc(rrt_krylov_solver *s, gmres_work *W, double **Z) {
  size_t m = (size_t)s->opt->restart;
  memset(W, 0, sizeof(*W));
  W->m = (int)m;
  W->Z = Z;
  W->V = calloc(m + 1, sizeof(double *));
  W->X = calloc(m + 2, sizeof(double *));
  W->H = calloc((m + 1) * m, sizeof(double));
  W->cs = calloc(m, sizeof(double)), W->sn = calloc(m, sizeof(double));
  W->g = calloc(m + 1, sizeof(double)), W->h = calloc(m + 1, sizeof(double));
  W->h2 = calloc(m + 1, sizeof(double)), W->y = calloc(m, sizeof(double));
  if (!W->V || !W->X || !W->H || !W->cs || !W->sn || !W->g || !W->h || !W->h2 || !W->y)
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, RRT_KRYLOV_OP, "out of memory");
  RRT_CHECK(rrt_vec_alloc(&s->v, W->m + 1, W->V));
  return rrt_vec_alloc(&s->v, 3, W->vec);
}

/* One classical Gram-Schmidt pass of w against V[0..j]: h += the
 * coefficients (h2 scratch). Two sweeps over the basis (the fused dots, the
 * fused update) and one reduction. */
static rrt_status cgs_pass(const rrt_krylov_vecs *v, gmres_work *W, int j, double *w, double *h) {
  double *h2 = W->h2;
  RRT_CHECK(rrt_vec_mdot(v, j + 1, W->V, w, h2));
  for (int i = 0; i <= j; i++)
    h[i] += h2[i], h2[i] = -h2[i];
  return rrt_vec_maxpy(v, j + 1, h2, W->V, w);
}

/* Arnoldi step j: w = A M^-1 V[j] (right; M^-1 V[j] kept in Z[j] for
 * FGMRES) or M^-1 A V[j] (left), orthogonalised against V[0..j] by
 * classical Gram-Schmidt, with a second pass as options->refine says (the
 * ifneeded test needs |w| before, taken in the first pass's dots).
 * h[0..j+1] are the coefficients, V[j+1] = w / |w| unless |w| = 0. */
static rrt_status arnoldi(rrt_krylov_solver *s, gmres_work *W, int j, double *hn) {
  const rrt_krylov_vecs *v = &s->v;
  rrt_krylov_refine refine = s->opt->refine;
  double *w = W->vec[0], *z = W->Z ? W->Z[j] : W->vec[2], *h = W->h, *h2 = W->h2;
  RRT_CHECK(rrt_krylov_pop(s, W->V[j], w, z));
  double before = 0.0;
  if (refine == RRT_KRYLOV_REFINE_IFNEEDED) {
    for (int i = 0; i <= j; i++)
      W->X[i] = W->V[i];
    W->X[j + 1] = w; /* w . w in the same pass as the coefficients */
    RRT_CHECK(rrt_vec_mdot(v, j + 2, W->X, w, h));
    before = sqrt(fabs(h[j + 1]));
    for (int i = 0; i <= j; i++)
      h2[i] = -h[i];
    RRT_CHECK(rrt_vec_maxpy(v, j + 1, h2, W->V, w));
  } else {
    memset(h, 0, (size_t)(j + 1) * sizeof(double));
    RRT_CHECK(cgs_pass(v, W, j, w, h));
    if (refine == RRT_KRYLOV_REFINE_ALWAYS) RRT_CHECK(cgs_pass(v, W, j, w, h));
  }
  RRT_CHECK(rrt_vec_norm(v, w, hn));
  if (refine == RRT_KRYLOV_REFINE_IFNEEDED && *hn < before * 0.70710678118654752) {
    RRT_CHECK(cgs_pass(v, W, j, w, h));
    RRT_CHECK(rrt_vec_norm(v, w, hn));
  }
  h[j + 1] = *hn;
  if (*hn > 0.0) RRT_CHECK(rrt_vec_axpby(v, 1.0 / *hn, w, 0.0, W->V[j + 1]));
  return RRT_SUCCESS;
}

/* The earlier rotations applied to column j, a new one zeroing h[j+1],
 * g rotated with it, the column stored in H. */
static void givens(gmres_work *W, int j) {
  double *h = W->h, *cs = W->cs, *sn = W->sn, *g = W->g;
  for (int i = 0; i < j; i++) {
    double a = cs[i] * h[i] + sn[i] * h[i + 1];
    h[i + 1] = -sn[i] * h[i] + cs[i] * h[i + 1];
    h[i] = a;
  }
  double den = hypot(h[j], h[j + 1]);
  cs[j] = den > 0.0 ? h[j] / den : 1.0;
  sn[j] = den > 0.0 ? h[j + 1] / den : 0.0;
  h[j] = den;
  h[j + 1] = 0.0;
  g[j + 1] = -sn[j] * g[j];
  g[j] = cs[j] * g[j];
  for (int i = 0; i <= j; i++)
    W->H[(size_t)j * (W->m + 1) + i] = h[i];
}

/* y = R^-1 g over the first j columns; x += M^-1 (V y) (right), V y
 * (left) or Z y (FGMRES). */
static rrt_status update_x(rrt_krylov_solver *s, gmres_work *W, int j, double *x) {
  const rrt_krylov_vecs *v = &s->v;
  int m = W->m;
  double *y = W->y, *u = W->vec[1], *z = W->vec[2];
  for (int i = j - 1; i >= 0; i--) {
    double t = W->g[i];
    for (int k = i + 1; k < j; k++)
      t -= W->H[(size_t)k * (m + 1) + i] * y[k];
    y[i] = t / W->H[(size_t)i * (m + 1) + i];
  }
  if (W->Z) return rrt_vec_maxpy(v, j, y, W->Z, x); /* FGMRES: the directions were kept */
  RRT_CHECK(rrt_vec_axpby(v, y[0], W->V[0], 0.0, u));
  RRT_CHECK(rrt_vec_maxpy(v, j - 1, y + 1, W->V + 1, u));
  if (s->left) return rrt_vec_axpby(v, 1.0, u, 1.0, x);
  RRT_CHECK(rrt_krylov_precond(s, u, z));
  return rrt_vec_axpby(v, 1.0, z, 1.0, x);
}

/* One restart cycle from V[0] = r / beta: up to m Arnoldi steps, each
 * estimate tested (PETSc's order); *jout: the steps taken. A cycle that
 * ends full without a reason leaves its last norm for the restart to
 * record (*pending), as PETSc's history holds the restart's residual. */
static rrt_status cycle(rrt_krylov_solver *s, gmres_work *W, double beta, int *it, int *jout,
                        int *pending) {
  memset(W->g, 0, (size_t)(W->m + 1) * sizeof(double));
  W->g[0] = beta;
  int j = 0;
  *pending = 0;
  while (j < W->m && *it < s->opt->maxit) {
    double hn;
    RRT_CHECK(arnoldi(s, W, j, &hn));
    /* PETSc's happy breakdown: |w| below min(|w| / |g_j|, 1e-30) */
    double hapbnd = fmin(fabs(hn / W->g[j]), 1e-30);
    int happy = hn < hapbnd || hn == 0.0;
    givens(W, j);
    (*it)++, j++;
    double est = fabs(W->g[j]);
    if (!rrt_krylov_test(s, est) && happy) s->reason = RRT_KRYLOV_DIVERGED_BREAKDOWN;
    if (!s->reason && j == W->m && *it < s->opt->maxit) {
      *pending = 1;
      break;
    }
    RRT_CHECK(rrt_krylov_record(s, est));
    if (s->reason) break;
  }
  *jout = j;
  return RRT_SUCCESS;
}

/* The restart test: PETSc's check of the fresh residual beta against the
 * last estimate, then the residual recorded (if the cycle left it) and
 * tested. Returns nonzero when the solve stops. */
static int restart_stops(rrt_krylov_solver *s, double beta, double est, double c0, int pending) {
  if (est > 0.0 && fabs(beta - est) > 0.1 * c0) {
    s->reason = RRT_KRYLOV_DIVERGED_BREAKDOWN;
    return 1;
  }
  if (pending && rrt_krylov_record(s, beta)) return -1;
  return rrt_krylov_test(s, beta) != RRT_KRYLOV_ITERATING;
}

rrt_status rrt_krylov_gmres_engine(rrt_krylov_solver *s, const double *b, double *x, double **Z) {
  const rrt_krylov_vecs *v = &s->v;
  double beta = 0.0, tn = 0.0, est = -1.0, c0 = 0.0;
  int it = 0, pending = 0;
  gmres_work W;
  rrt_status st = work_alloc(s, &W, Z);
  if (st) goto done;
  RRT_CHECK_GOTO(rrt_krylov_mresidual(s, b, x, W.V[0], &beta, &tn), st, done);
  RRT_CHECK_GOTO(rrt_krylov_start(s, x, beta, tn), st, done);
  while (!s->reason) {
    if (est >= 0.0) {
      int stop = restart_stops(s, beta, est, c0, pending);
      if (stop < 0) st = RRT_ERR_OUT_OF_MEMORY;
      if (stop) break;
    }
    if (it >= s->opt->maxit) {
      s->reason = RRT_KRYLOV_DIVERGED_ITS;
      break;
    }
    c0 = beta;
    RRT_CHECK_GOTO(rrt_vec_axpby(v, 1.0 / beta, W.V[0], 0.0, W.V[0]), st, done);
    int j = 0;
    RRT_CHECK_GOTO(cycle(s, &W, beta, &it, &j, &pending), st, done);
    RRT_CHECK_GOTO(update_x(s, &W, j, x), st, done);
    est = fabs(W.g[j]);
    RRT_CHECK_GOTO(rrt_krylov_mresidual(s, b, x, W.V[0], &beta, &tn), st, done);
    RRT_CHECK_GOTO(rrt_krylov_offer(s, x, tn), st, done);
    /* an estimate that met the tolerance the fresh residual misses: go on
     * from the fresh residual (right side: convergence is on ||b - A x||) */
    if (s->reason > 0 && !s->left && !(beta <= s->ttol)) s->reason = RRT_KRYLOV_ITERATING;
  }
  if (!st) st = rrt_krylov_finish(s, b, x, W.vec[0], it);
done:
  work_free(s, &W);
  return st;
}

rrt_status rrt_krylov_gmres(rrt_krylov_solver *s, const double *b, double *x) {
  return rrt_krylov_gmres_engine(s, b, x, NULL);
}

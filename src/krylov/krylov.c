/* Krylov solvers over the distributed CSR: GMRES(m) (right preconditioned,
 * classical Gram-Schmidt done twice so one restart cycle needs two
 * allreduces per iteration), BiCGSTAB and CG. Vectors live in backend
 * memory; the small dense GMRES algebra runs on the host. Convergence is
 * always judged on the unpreconditioned residual ||b - A x|| <= rtol ||b||. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_impl.h"
#include "comm/error.h"
#include "comm/options.h"

#define OPK "rrt_krylov_solve"

/* ---- backend vector helpers ----------------------------------------------- */

rrt_status rrt_vec_copy(rrt_ctx_t ctx, double *dst, const double *src, int64_t n) {
  if (dst == src || n == 0) return RRT_SUCCESS;
  if (rrt_ilu_is_cpu(ctx) || !ctx->dev->is_cuda) {
    memcpy(dst, src, (size_t)n * sizeof(double));
    return RRT_SUCCESS;
  }
  RRT_CHECK(ctx->dev->memcpy_async(dst, src, (size_t)n * sizeof(double), RRT_COPY_D2D,
                                   ctx->compute_stream));
  return ctx->dev->stream_sync(ctx->compute_stream);
}

rrt_status rrt_vec_axpby(rrt_ctx_t ctx, int64_t n, double a, const double *x, double b, double *y) {
  if (rrt_ilu_is_cpu(ctx)) {
    if (b == 0.0) {
#pragma omp parallel for schedule(static) if (n > 65536)
      for (int64_t i = 0; i < n; i++)
        y[i] = a * x[i];
    } else {
#pragma omp parallel for schedule(static) if (n > 65536)
      for (int64_t i = 0; i < n; i++) {
        double p = a * x[i], q = b * y[i];
        y[i] = p + q;
      }
    }
    return RRT_SUCCESS;
  }
  return RRT_KCALL(ctx->dev, rrt_k_ilu0_axpby, ctx->compute_stream, n, a, x, b, y);
}

/* Local part of a dot product, summed in a fixed order. */
static rrt_status local_dot(rrt_ctx_t ctx, int64_t n, const double *x, const double *y,
                            double *out) {
  if (rrt_ilu_is_cpu(ctx)) {
    double s = 0.0;
#pragma omp parallel for reduction(+ : s) schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++)
      s += x[i] * y[i];
    *out = s;
    return RRT_SUCCESS;
  }
  /* one block per 1024 elements, at most RRT_ILU0_DOT_BLOCKS: the block
   * count depends on n only, so the sum order is fixed */
  int nb = (int)((n + 1023) / 1024);
  nb = nb < 1 ? 1 : nb > RRT_ILU0_DOT_BLOCKS ? RRT_ILU0_DOT_BLOCKS : nb;
  double part[RRT_ILU0_DOT_BLOCKS], *d_part = NULL;
  RRT_CHECK(rrt_malloc(ctx, sizeof(part), (void **)&d_part));
  rrt_status st =
      RRT_KCALL(ctx->dev, rrt_k_ilu0_dot_partial, ctx->compute_stream, n, x, y, d_part, nb);
  if (!st) st = rrt_memcpy_to_host(ctx, part, d_part, (size_t)nb * sizeof(double));
  rrt_free(ctx, d_part);
  double s = 0.0;
  for (int b = 0; b < nb; b++)
    s += part[b];
  *out = s;
  return st;
}

/* Sum of k host doubles over ranks (through backend memory, as the transport wants). */
static rrt_status allreduce_host(rrt_ctx_t ctx, double *v, int k) {
  if (!ctx->dev->is_cuda) return rrt_allreduce(ctx, v, v, (size_t)k, RRT_DTYPE_F64, RRT_OP_SUM);
  double *d = NULL;
  RRT_CHECK(rrt_malloc(ctx, (size_t)k * sizeof(double), (void **)&d));
  rrt_status st = rrt_memcpy_to_backend(ctx, d, v, (size_t)k * sizeof(double));
  if (!st) st = rrt_allreduce(ctx, d, d, (size_t)k, RRT_DTYPE_F64, RRT_OP_SUM);
  if (!st) st = rrt_memcpy_to_host(ctx, v, d, (size_t)k * sizeof(double));
  rrt_free(ctx, d);
  return st;
}

rrt_status rrt_vec_dot(rrt_ctx_t ctx, int64_t n, const double *x, const double *y, double *out) {
  RRT_CHECK(local_dot(ctx, n, x, y, out));
  return allreduce_host(ctx, out, 1);
}

/* out[j] = (X[j], y), j < k, with one allreduce. */
static rrt_status vec_mdot(rrt_ctx_t ctx, int64_t n, int k, double **X, const double *y,
                           double *out) {
  for (int j = 0; j < k; j++)
    RRT_CHECK(local_dot(ctx, n, X[j], y, &out[j]));
  return allreduce_host(ctx, out, k);
}

static rrt_status vec_norm(rrt_ctx_t ctx, int64_t n, const double *x, double *out) {
  RRT_CHECK(rrt_vec_dot(ctx, n, x, x, out));
  *out = sqrt(*out);
  return RRT_SUCCESS;
}

/* ---- shared pieces ------------------------------------------------------------ */

typedef struct solver {
  rrt_sparse_t A;
  rrt_ilu0_t M;
  rrt_ctx_t ctx;
  int64_t n;
  const rrt_krylov_options *opt;
  rrt_krylov_result *res;
  int hist_cap;
} solver;

static rrt_status precond(solver *s, const double *r, double *z) {
  if (s->M) return rrt_ilu0_apply(s->M, r, z);
  return rrt_vec_copy(s->ctx, z, r, s->n);
}

/* r = b - A x */
static rrt_status residual(solver *s, const double *b, const double *x, double *r) {
  RRT_CHECK(rrt_sparse_spmv(s->A, x, r));
  return rrt_vec_axpby(s->ctx, s->n, 1.0, b, -1.0, r);
}

static rrt_status record(solver *s, double rnorm) {
  rrt_krylov_result *res = s->res;
  if (res->history_len == s->hist_cap) {
    int cap = s->hist_cap ? 2 * s->hist_cap : 64;
    double *h = realloc(res->history, (size_t)cap * sizeof(double));
    if (!h) return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, OPK, "out of memory for the history");
    res->history = h;
    s->hist_cap = cap;
  }
  res->history[res->history_len++] = rnorm;
  res->rnorm = rnorm;
  int every = s->opt->progress;
  int it = res->history_len - 1;
  if (every > 0 && it > 0 && it % every == 0 && s->ctx->rank == 0)
    fprintf(stderr, "  %s it %6d  residual %.3e  relative %.3e\n",
            rrt_krylov_method_name(s->opt->method), it, rnorm,
            res->bnorm > 0 ? rnorm / res->bnorm : rnorm);
  return RRT_SUCCESS;
}

static rrt_status alloc_vecs(rrt_ctx_t ctx, int64_t n, int k, double **v) {
  for (int j = 0; j < k; j++) {
    v[j] = NULL;
    RRT_CHECK(rrt_malloc(ctx, (size_t)(n ? n : 1) * sizeof(double), (void **)&v[j]));
    RRT_CHECK(rrt_memset(ctx, v[j], 0, (size_t)(n ? n : 1) * sizeof(double)));
  }
  return RRT_SUCCESS;
}

static void free_vecs(rrt_ctx_t ctx, int k, double **v) {
  for (int j = 0; j < k; j++)
    rrt_free(ctx, v[j]);
}

/* ---- GMRES(m) -------------------------------------------------------------------- */

static rrt_status gmres(solver *s, const double *b, double *x) {
  rrt_ctx_t ctx = s->ctx;
  int64_t n = s->n;
  int m = s->opt->restart;
  double target = s->opt->rtol * s->res->bnorm;
  rrt_status st = RRT_SUCCESS;
  double **V = calloc((size_t)m + 1, sizeof(double *));
  double *H = calloc((size_t)(m + 1) * (size_t)m, sizeof(double)); /* column-major (m+1) x m */
  double *cs = calloc((size_t)m, sizeof(double)), *sn = calloc((size_t)m, sizeof(double));
  double *g = calloc((size_t)m + 1, sizeof(double)), *h = calloc((size_t)m + 1, sizeof(double));
  double *h2 = calloc((size_t)m + 1, sizeof(double)), *y = calloc((size_t)m, sizeof(double));
  double *w = NULL, *u = NULL, *z = NULL;
  if (!V || !H || !cs || !sn || !g || !h || !h2 || !y) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OPK, "out of memory");
    goto done;
  }
  double *tmp[3];
  RRT_CHECK_GOTO(alloc_vecs(ctx, n, m + 1, V), st, done);
  RRT_CHECK_GOTO(alloc_vecs(ctx, n, 3, tmp), st, done);
  w = tmp[0], u = tmp[1], z = tmp[2];
  double beta;
  RRT_CHECK_GOTO(residual(s, b, x, V[0]), st, done);
  RRT_CHECK_GOTO(vec_norm(ctx, n, V[0], &beta), st, done);
  RRT_CHECK_GOTO(record(s, beta), st, done);
  int it = 0;
  while (beta > target && it < s->opt->maxit) {
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, 1.0 / beta, V[0], 0.0, V[0]), st, done);
    memset(g, 0, (size_t)(m + 1) * sizeof(double));
    g[0] = beta;
    int j = 0;
    for (; j < m && it < s->opt->maxit; j++) {
      RRT_CHECK_GOTO(precond(s, V[j], z), st, done);
      RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, z, w), st, done);
      /* classical Gram-Schmidt, twice */
      RRT_CHECK_GOTO(vec_mdot(ctx, n, j + 1, V, w, h), st, done);
      for (int i = 0; i <= j; i++)
        RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -h[i], V[i], 1.0, w), st, done);
      RRT_CHECK_GOTO(vec_mdot(ctx, n, j + 1, V, w, h2), st, done);
      for (int i = 0; i <= j; i++) {
        RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -h2[i], V[i], 1.0, w), st, done);
        h[i] += h2[i];
      }
      double hn;
      RRT_CHECK_GOTO(vec_norm(ctx, n, w, &hn), st, done);
      h[j + 1] = hn;
      if (hn > 0.0) RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, 1.0 / hn, w, 0.0, V[j + 1]), st, done);
      /* Givens rotations */
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
        H[(size_t)j * (m + 1) + i] = h[i];
      it++;
      RRT_CHECK_GOTO(record(s, fabs(g[j + 1])), st, done);
      if (fabs(g[j + 1]) <= target || hn == 0.0) {
        j++;
        break;
      }
    }
    /* y = R^-1 g, x += M^-1 (V y) */
    for (int i = j - 1; i >= 0; i--) {
      double t = g[i];
      for (int k = i + 1; k < j; k++)
        t -= H[(size_t)k * (m + 1) + i] * y[k];
      y[i] = t / H[(size_t)i * (m + 1) + i];
    }
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, y[0], V[0], 0.0, u), st, done);
    for (int i = 1; i < j; i++)
      RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, y[i], V[i], 1.0, u), st, done);
    RRT_CHECK_GOTO(precond(s, u, z), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, 1.0, z, 1.0, x), st, done);
    /* restart from the true residual */
    RRT_CHECK_GOTO(residual(s, b, x, V[0]), st, done);
    RRT_CHECK_GOTO(vec_norm(ctx, n, V[0], &beta), st, done);
    s->res->rnorm = beta;
    if (beta == 0.0) break;
  }
  s->res->iterations = it;
  s->res->converged = beta <= target;
done:
  if (V) free_vecs(ctx, m + 1, V);
  rrt_free(ctx, w), rrt_free(ctx, u), rrt_free(ctx, z);
  free(V), free(H), free(cs), free(sn), free(g), free(h), free(h2), free(y);
  return st;
}

/* ---- BiCGSTAB ----------------------------------------------------------------------- */

static rrt_status bicgstab(solver *s, const double *b, double *x) {
  rrt_ctx_t ctx = s->ctx;
  int64_t n = s->n;
  double target = s->opt->rtol * s->res->bnorm;
  double *v[8];
  rrt_status st = alloc_vecs(ctx, n, 8, v);
  double *r = v[0], *rh = v[1], *p = v[2], *vv = v[3], *ph = v[4], *sv = v[5], *sh = v[6],
         *t = v[7];
  double rho = 1.0, alpha = 1.0, omega = 1.0, rnorm = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(ctx, rh, r, n), st, done);
  RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
  RRT_CHECK_GOTO(record(s, rnorm), st, done);
  while (rnorm > target && it < s->opt->maxit) {
    double rho1;
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, rh, r, &rho1), st, done);
    if (rho1 == 0.0) break; /* breakdown: stop with what we have */
    double beta = (rho1 / rho) * (alpha / omega);
    rho = rho1;
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -omega, vv, 1.0, p), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, 1.0, r, beta, p), st, done);
    RRT_CHECK_GOTO(precond(s, p, ph), st, done);
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, ph, vv), st, done);
    double rv;
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, rh, vv, &rv), st, done);
    if (rv == 0.0) break;
    alpha = rho / rv;
    RRT_CHECK_GOTO(rrt_vec_copy(ctx, sv, r, n), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -alpha, vv, 1.0, sv), st, done);
    double snorm;
    RRT_CHECK_GOTO(vec_norm(ctx, n, sv, &snorm), st, done);
    it++;
    if (snorm <= target) {
      RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, alpha, ph, 1.0, x), st, done);
      rnorm = snorm;
      RRT_CHECK_GOTO(record(s, rnorm), st, done);
      break;
    }
    RRT_CHECK_GOTO(precond(s, sv, sh), st, done);
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, sh, t), st, done);
    double ts[2], tt;
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, t, sv, &ts[0]), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, t, t, &tt), st, done);
    omega = tt > 0.0 ? ts[0] / tt : 0.0;
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, alpha, ph, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, omega, sh, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_copy(ctx, r, sv, n), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -omega, t, 1.0, r), st, done);
    RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
    RRT_CHECK_GOTO(record(s, rnorm), st, done);
    if (omega == 0.0) break;
  }
  /* judge on the true residual, not the recurrence */
  RRT_CHECK_GOTO(residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
  s->res->rnorm = rnorm;
  s->res->iterations = it;
  s->res->converged = rnorm <= target;
done:
  free_vecs(ctx, 8, v);
  return st;
}

/* ---- CG ------------------------------------------------------------------------------ */

static rrt_status cg(solver *s, const double *b, double *x) {
  rrt_ctx_t ctx = s->ctx;
  int64_t n = s->n;
  double target = s->opt->rtol * s->res->bnorm;
  double *v[4];
  rrt_status st = alloc_vecs(ctx, n, 4, v);
  double *r = v[0], *z = v[1], *p = v[2], *q = v[3];
  double rz, rnorm = 0.0;
  int it = 0;
  if (st) goto done;
  RRT_CHECK_GOTO(residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
  RRT_CHECK_GOTO(record(s, rnorm), st, done);
  RRT_CHECK_GOTO(precond(s, r, z), st, done);
  RRT_CHECK_GOTO(rrt_vec_copy(ctx, p, z, n), st, done);
  RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, r, z, &rz), st, done);
  while (rnorm > target && it < s->opt->maxit) {
    double pq;
    RRT_CHECK_GOTO(rrt_sparse_spmv(s->A, p, q), st, done);
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, p, q, &pq), st, done);
    if (pq == 0.0) break;
    double alpha = rz / pq;
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, alpha, p, 1.0, x), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, -alpha, q, 1.0, r), st, done);
    RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
    it++;
    RRT_CHECK_GOTO(record(s, rnorm), st, done);
    if (rnorm <= target) break;
    RRT_CHECK_GOTO(precond(s, r, z), st, done);
    double rz1;
    RRT_CHECK_GOTO(rrt_vec_dot(ctx, n, r, z, &rz1), st, done);
    RRT_CHECK_GOTO(rrt_vec_axpby(ctx, n, 1.0, z, rz1 / rz, p), st, done);
    rz = rz1;
  }
  RRT_CHECK_GOTO(residual(s, b, x, r), st, done);
  RRT_CHECK_GOTO(vec_norm(ctx, n, r, &rnorm), st, done);
  s->res->rnorm = rnorm;
  s->res->iterations = it;
  s->res->converged = rnorm <= target;
done:
  free_vecs(ctx, 4, v);
  return st;
}

static const rrt_krylov_options krylov_options_defaults = RRT_KRYLOV_OPTIONS_INITIALIZER;
static const rrt_options_layout krylov_options_layout = {
    .name = "rrt_krylov_options",
    .initializer = "RRT_KRYLOV_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_krylov_options),
    .min_size = offsetof(rrt_krylov_options, method),
    .defaults = &krylov_options_defaults,
};

rrt_status rrt_krylov_solve(rrt_sparse_t A, rrt_ilu0_t M, const rrt_krylov_options *options,
                            const double *b, double *x, rrt_krylov_result *result) {
  rrt_ctx_t ctx = A->ctx;
  memset(result, 0, sizeof(*result));
  /* options from an older header: its fields, defaults for the rest */
  rrt_krylov_options opt;
  char msg[256];
  if (rrt_options_import(&krylov_options_layout, options, &opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPK, "%s", msg));
  if (opt.rtol < 0.0 || opt.maxit < 0 || opt.restart < 1 || opt.method < RRT_KRYLOV_GMRES ||
      opt.method > RRT_KRYLOV_CG)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPK,
                                    "bad options (rtol >= 0, maxit >= 0, restart >= 1, a known "
                                    "method)"));
  solver s = {A, M, ctx, A->nloc, &opt, result, 0};
  double t0 = rrt_phase_begin(ctx);
  RRT_CHECK(vec_norm(ctx, s.n, b, &result->bnorm));
  if (result->bnorm == 0.0) { /* the solution of A x = 0 is 0 */
    RRT_CHECK(rrt_memset(ctx, x, 0, (size_t)s.n * sizeof(double)));
    result->converged = 1;
    return record(&s, 0.0);
  }
  rrt_status st = opt.method == RRT_KRYLOV_GMRES      ? gmres(&s, b, x)
                  : opt.method == RRT_KRYLOV_BICGSTAB ? bicgstab(&s, b, x)
                                                      : cg(&s, b, x);
  if (st) return st;
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

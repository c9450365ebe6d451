/* SEACells public API: validation, the outer Frank-Wolfe loop, results. */
#include "ringrt/seacells.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "comm/options.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

rrt_status rrt_seacells_partition(rrt_ctx_t ctx, int64_t n, int64_t *first, int64_t *count) {
  if (!ctx || !first || !count || n < 0)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_partition", "bad arguments (n = %lld)",
                     (long long)n);
  rrt_cell_blocks pl;
  if (rrt_cell_blocks_create(n, rrt_ctx_size(ctx), 0, &pl) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_partition", "plan");
  int r = rrt_ctx_rank(ctx);
  *first = pl.cell_start[r];
  *count = pl.cell_start[r + 1] - pl.cell_start[r];
  rrt_cell_blocks_destroy(&pl);
  return RRT_SUCCESS;
}

/* Given archetypes: m distinct cells in 0..n-1 (the list is the same on
 * every rank, so every rank finds the same problem). */
static rrt_status check_archetypes(rrt_sc_run *s, const int64_t *a, const char *op) {
  for (int j = 0; j < s->m; j++) {
    if (a[j] < 0 || a[j] >= s->n)
      return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                       "archetype %d is cell %lld, outside 0..%lld", j, (long long)a[j],
                       (long long)s->n - 1);
    for (int i = 0; i < j; i++)
      if (a[i] == a[j])
        return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "archetypes %d and %d are both cell %lld",
                         i, j, (long long)a[j]);
  }
  return RRT_SUCCESS;
}

static rrt_status validate(rrt_sc_run *s, const double *x) {
  const char *op = "rrt_seacells_run";
  const rrt_seacells_options *o = &s->opt;
  if (!s->kern)
    return rrt_error(s->ctx, RRT_ERR_UNSUPPORTED, op,
                     "no SEACells kernels for this backend in this build");
  if (s->n <= 0)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "no cells (n = %lld): nothing to group",
                     (long long)s->n);
  if (s->d < 1) return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "dims = %d", s->d);
  if (o->knn < 2)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                     "knn = %d: the reference's n_neighbors, at least 2 (it counts the cell)",
                     o->knn);
  if (s->n > INT32_MAX)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "%lld cells: at most 2^31-1",
                     (long long)s->n);
  if (s->n < (int64_t)s->knn + 1)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                     "%lld cells but knn = %d (%d other cells per list) needs at least %d",
                     (long long)s->n, o->knn, s->knn, s->knn + 1);
  if (s->m > s->n)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "fewer cells (%lld) than metacells (%d)",
                     (long long)s->n, s->m);
  if (o->graph != RRT_SEACELLS_GRAPH_UNION && o->graph != RRT_SEACELLS_GRAPH_INTERSECT)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "graph = %d (union 0 or intersect 1)",
                     (int)o->graph);
  if (o->fw_iter < 1)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "fw_iter = %d (at least 1)", o->fw_iter);
  if (o->max_iter < 0 || o->min_iter < 0 || o->min_iter > o->max_iter)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op,
                     "min_iter = %d, max_iter = %d (need 0 <= min_iter <= max_iter)", o->min_iter,
                     o->max_iter);
  if (!(o->eps >= 0)) return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "eps = %g", o->eps);
  if (s->nl > 0 && !x) return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "x is NULL");
  for (int64_t i = 0; i < s->nl; i++)
    for (int k = 0; k < s->d; k++)
      if (!isfinite(x[i * s->d + k]))
        return rrt_error(s->ctx, RRT_ERR_NUMERIC, op, "coordinate %d of cell %lld is %g", k,
                         (long long)(s->c0 + i), x[i * s->d + k]);
  if (o->init == RRT_SEACELLS_INIT_GIVEN) {
    if (!o->archetypes)
      return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, op, "given archetypes but the list is NULL");
    return check_archetypes(s, o->archetypes, op);
  }
  return RRT_SUCCESS;
}

rrt_status rrt_sc_alloc_state(rrt_sc_run *s) {
  int m = s->m, cap = s->opt.fw_iter + 1;
  rrt_sc_bmat *b = &s->b;
  b->m = m;
  b->cap = cap;
  b->n = s->n;
  b->nnz = calloc((size_t)m, sizeof(int));
  b->cell = calloc((size_t)m * cap, sizeof(int32_t));
  b->w = calloc((size_t)m * cap, sizeof(double));
  b->first = calloc((size_t)s->n, sizeof(int32_t));
  b->cnt = calloc((size_t)s->n, sizeof(int32_t));
  b->ent_j = calloc((size_t)m * cap, sizeof(int32_t));
  b->ent_w = calloc((size_t)m * cap, sizeof(double));
  b->touched = calloc((size_t)m * cap, sizeof(int32_t));
  size_t na = (size_t)(s->nl + 1) * s->capa;
  s->a_idx = calloc(na, sizeof(int32_t));
  s->a_w = calloc(na, sizeof(double));
  s->a_nnz = calloc((size_t)s->nl + 1, sizeof(int));
  s->archetypes = calloc((size_t)m, sizeof(int64_t));
  s->rss = calloc((size_t)s->opt.max_iter + 1, sizeof(double));
  s->rss_cap = s->opt.max_iter + 1;
  if (!b->nnz || !b->cell || !b->w || !b->first || !b->cnt || !b->ent_j || !b->ent_w ||
      !b->touched || !s->a_idx || !s->a_w || !s->a_nnz || !s->archetypes || !s->rss)
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_run", "state for %d metacells",
                     m);
  return RRT_SUCCESS;
}

/* A0 from the archetypes: B = the archetype cells, a first A update from
 * A = 0, and RSS_0 (the reference's initialize()). */
static rrt_status first_state(rrt_sc_run *s) {
  RRT_CHECK(rrt_sc_b_from_archetypes(s));
  RRT_CHECK(rrt_sc_update_t1a(s));
  RRT_CHECK(rrt_sc_update_a(s, 1));
  RRT_CHECK(rrt_sc_compute_rss(s, &s->rss[0]));
  s->iters = 0, s->converged = 0, s->initialized = 1;
  if (s->opt.verbose && s->rank == 0) fprintf(stderr, "seacells: init RSS %.6g\n", s->rss[0]);
  return RRT_SUCCESS;
}

/* Room for `more` RSS values after the current ones. The size is the same
 * on every rank, so every rank fails here alike. */
static rrt_status grow_rss(rrt_sc_run *s, int more) {
  if (s->iters + 1 + more <= s->rss_cap) return RRT_SUCCESS;
  if (more > INT32_MAX - 1 - s->iters)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_step",
                     "%d more iterations after %d", more, s->iters);
  int cap = s->iters + 1 + more;
  double *r = realloc(s->rss, (size_t)cap * sizeof(double));
  if (!r) return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_step", "RSS history");
  s->rss = r, s->rss_cap = cap;
  return RRT_SUCCESS;
}

/* One outer iteration (A, then B, then the RSS); sets `converged` as run
 * decides it: past min_iter, an RSS change below eps * RSS_0. */
static rrt_status one_iteration(rrt_sc_run *s) {
  double t0 = rrt_time_now();
  int t = s->iters + 1;
  RRT_CHECK(rrt_sc_update_a(s, 0));
  RRT_CHECK(rrt_sc_update_b(s));
  RRT_CHECK(rrt_sc_update_t1a(s)); /* for the RSS and the next A update */
  RRT_CHECK(rrt_sc_compute_rss(s, &s->rss[t]));
  s->iters = t;
  double delta = fabs(s->rss[t - 1] - s->rss[t]);
  if (s->opt.verbose && s->rank == 0)
    fprintf(stderr, "seacells: iter %3d  RSS %.6g  change %.3g (threshold %.3g)  %.2f s\n", t,
            s->rss[t], delta, s->opt.eps * s->rss[0], rrt_time_now() - t0);
  s->converged = t >= s->opt.min_iter && delta < s->opt.eps * s->rss[0];
  return RRT_SUCCESS;
}

void rrt_sc_run_free(rrt_sc_run *s) {
  rrt_sc_bmat *b = &s->b;
  free(b->nnz), free(b->cell), free(b->w), free(b->first), free(b->cnt), free(b->ent_j);
  free(b->ent_w), free(b->touched);
  free(s->nbr), free(s->nbr_d2), free(s->sigma);
  rrt_sc_csr_free(&s->mrow);
  free(s->ghost.cell);
  free(s->order), free(s->row_order);
  rrt_sc_csr_free(&s->ghost.rows);
  free(s->kdiag);
  rrt_sc_yidx_free(&s->mb);
  free(s->a_idx), free(s->a_w), free(s->a_nnz);
  rrt_sc_csr_free(&s->t1a), rrt_sc_csr_free(&s->t1b);
  free(s->archetypes), free(s->rss);
  free(s->x_own), free(s->given);
  rrt_cell_blocks_destroy(&s->plan);
}

static const rrt_seacells_options options_defaults = RRT_SEACELLS_OPTIONS_INITIALIZER;
static const rrt_options_layout options_layout = {
    .name = "rrt_seacells_options",
    .initializer = "RRT_SEACELLS_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_seacells_options),
    .min_size = offsetof(rrt_seacells_options, n_metacells),
    .defaults = &options_defaults,
    .magic_offset = offsetof(rrt_seacells_options, magic),
    .magic = RRT_SEACELLS_OPTIONS_MAGIC,
};

/* The handle's own copies of the caller's rows and archetype list: a
 * handle outlives the call that made it. */
static rrt_status own_inputs(rrt_sc_run *s, const double *x) {
  size_t bytes = (size_t)s->nl * s->d * sizeof(double);
  s->x_own = malloc(bytes + 1);
  if (s->opt.init == RRT_SEACELLS_INIT_GIVEN) s->given = malloc((size_t)s->m * sizeof(int64_t));
  if (!s->x_own || (s->opt.init == RRT_SEACELLS_INIT_GIVEN && !s->given))
    return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_create",
                     "a copy of the %lld rows", (long long)s->nl);
  if (bytes) memcpy(s->x_own, x, bytes);
  s->x = s->x_own;
  if (s->given) {
    memcpy(s->given, s->opt.archetypes, (size_t)s->m * sizeof(int64_t));
    s->opt.archetypes = s->given;
  }
  return RRT_SUCCESS;
}

/* The handle's fields from the arguments (no validation yet). */
static void setup(rrt_sc_run *s, rrt_ctx_t ctx, int64_t n, int dims,
                  const rrt_seacells_options *opt) {
  s->ctx = ctx;
  s->opt = *opt;
  s->rank = rrt_ctx_rank(ctx);
  s->size = rrt_ctx_size(ctx);
  s->n = n;
  s->d = dims;
  rrt_sc_graph_convention(n, opt->knn, &s->knn, &s->kbw);
  int64_t m = opt->n_metacells > 0 ? opt->n_metacells : (n / 75 > 1 ? n / 75 : 1);
  s->m = (int)(m > INT32_MAX ? INT32_MAX : m);
  s->capa = s->m < opt->fw_iter ? s->m : opt->fw_iter;
  if (s->capa < 1) s->capa = 1;
  s->kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx)); /* the one backend question */
  /* K A^T entries kept per cell on average (12 bytes each: at most 9.6 kB a
   * cell at fw_iter 50, typically 30-45 entries on the blobs): the cpu B
   * argmin that skips by sign needs them; over budget it walks the rows */
  s->kat_budget = 16 * (int64_t)s->capa;
}

/* Create with the kernel built from x (m NULL) or given (m: this rank's rows). */
static rrt_status create(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                         const rrt_seacells_matrix *m, const rrt_seacells_options *user_opt,
                         rrt_seacells_t *result) {
  if (!ctx || !user_opt || !result)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_create", "NULL argument");
  *result = NULL;
  /* options from an older header: its fields, defaults for the rest */
  rrt_seacells_options opt;
  char msg[256];
  if (rrt_options_import(&options_layout, user_opt, &opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_create", "%s", msg));
  struct rrt_seacells *h = calloc(1, sizeof *h);
  if (!h)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_create", "handle"));
  rrt_sc_run *s = &h->s;
  setup(s, ctx, n, dims, &opt);
  rrt_status st = rrt_cell_blocks_create(n < 0 ? 0 : n, s->size, 0, &s->plan);
  if (st == RRT_SUCCESS) {
    s->c0 = s->plan.cell_start[s->rank];
    s->nl = s->plan.cell_start[s->rank + 1] - s->c0;
    st = validate(s, x);
  } else {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_seacells_create", "plan");
  }
  if (st == RRT_SUCCESS) st = rrt_sc_alloc_state(s);
  if (st == RRT_SUCCESS) st = own_inputs(s, x);
  st = rrt_agree(ctx, st);
  if (st == RRT_SUCCESS) st = m ? rrt_sc_use_kernel(s, m) : rrt_sc_build_graph(s);
  if (st != RRT_SUCCESS) {
    rrt_sc_run_free(s);
    free(h);
    return st;
  }
  *result = h;
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_create(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                               const rrt_seacells_options *opt, rrt_seacells_t *result) {
  return create(ctx, n, dims, x, NULL, opt, result);
}

rrt_status rrt_seacells_create_with_kernel(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                                           const rrt_seacells_matrix *m,
                                           const rrt_seacells_options *opt,
                                           rrt_seacells_t *result) {
  if (!m)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_create_with_kernel", "m is NULL");
  return create(ctx, n, dims, x, m, opt, result);
}

rrt_status rrt_seacells_initialize(rrt_seacells_t h, const int64_t *archetypes) {
  if (!h) return RRT_ERR_INVALID_ARG;
  rrt_sc_run *s = &h->s;
  if (archetypes) {
    RRT_CHECK(check_archetypes(s, archetypes, "rrt_seacells_initialize"));
    memmove(s->archetypes, archetypes, (size_t)s->m * sizeof(int64_t));
  } else {
    RRT_CHECK(rrt_sc_init_archetypes(s));
  }
  s->initialized = 0;
  return first_state(s);
}

rrt_status rrt_seacells_step(rrt_seacells_t h, int iterations) {
  if (!h) return RRT_ERR_INVALID_ARG;
  rrt_sc_run *s = &h->s;
  if (!s->initialized)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_step",
                     "no initial state: call rrt_seacells_initialize first");
  if (iterations < 0)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "rrt_seacells_step", "iterations = %d",
                     iterations);
  RRT_CHECK(grow_rss(s, iterations));
  for (int i = 0; i < iterations; i++) {
    RRT_CHECK(one_iteration(s));
    if (s->converged) break;
  }
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_run(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                            const rrt_seacells_options *user_opt, rrt_seacells_t *result) {
  rrt_seacells_t h = NULL;
  RRT_CHECK(rrt_seacells_create(ctx, n, dims, x, user_opt, &h));
  rrt_status st = rrt_seacells_initialize(h, NULL);
  if (st == RRT_SUCCESS) st = rrt_seacells_step(h, h->s.opt.max_iter);
  if (st != RRT_SUCCESS) {
    rrt_seacells_destroy(h);
    return st;
  }
  if (!h->s.converged && h->s.rank == 0 && h->s.opt.verbose)
    fprintf(stderr, "seacells: warning: not converged after %d iterations\n", h->s.iters);
  *result = h;
  return RRT_SUCCESS;
}

void rrt_seacells_destroy(rrt_seacells_t h) {
  if (!h) return;
  rrt_sc_run_free(&h->s);
  free(h);
}

int64_t rrt_seacells_n_metacells(rrt_seacells_t h) { return h ? h->s.m : 0; }
int rrt_seacells_iterations(rrt_seacells_t h) { return h ? h->s.iters : 0; }
int rrt_seacells_converged(rrt_seacells_t h) { return h ? h->s.converged : 0; }

const double *rrt_seacells_rss(rrt_seacells_t h, int *count) {
  if (count) *count = h ? h->s.iters + 1 : 0;
  return h ? h->s.rss : NULL;
}

const int64_t *rrt_seacells_archetypes(rrt_seacells_t h) { return h ? h->s.archetypes : NULL; }

/* Entry e comes before entry f of one A column: a larger weight, or the same
 * weight and a lower archetype (entries are in ascending archetype order). */
static int ranks_before(const double *aw, int e, int f) {
  return aw[e] > aw[f] || (aw[e] == aw[f] && e < f);
}

rrt_status rrt_seacells_local_assignments(rrt_seacells_t h, int top, int64_t *assign,
                                          int64_t *top_idx, double *top_w) {
  if (!h || top < 0) return RRT_ERR_INVALID_ARG;
  const rrt_sc_run *s = &h->s;
  for (int64_t i = 0; i < s->nl; i++) {
    const int32_t *ai = s->a_idx + i * s->capa;
    const double *aw = s->a_w + i * s->capa;
    int nz = s->a_nnz[i];
    int best = -1;
    for (int e = 0; e < nz; e++) /* ascending archetypes: strict > keeps the lowest on ties */
      if (best < 0 || aw[e] > aw[best]) best = e;
    if (assign) assign[i] = best < 0 ? -1 : ai[best];
    if (!top_idx || !top_w) continue;
    /* Selection in the order (weight descending, archetype ascending): pick
     * t is the first entry after pick t-1 in that order, so every entry of
     * the column takes part (no bitmap with a fixed bound) and pick 0 is
     * the hard assignment. */
    int prev = -1;
    for (int t = 0; t < top; t++) {
      int b = -1;
      for (int e = 0; e < nz; e++)
        if ((prev < 0 || ranks_before(aw, prev, e)) && (b < 0 || ranks_before(aw, e, b))) b = e;
      top_idx[i * top + t] = b < 0 ? -1 : ai[b];
      top_w[i * top + t] = b < 0 ? 0.0 : aw[b];
      if (b >= 0) prev = b;
    }
  }
  return RRT_SUCCESS;
}

double rrt_seacells_seconds(rrt_seacells_t h, const char *phase) {
  static const char *names[] = {"knn", "kernel", "init", "update_a", "update_b", "rss"};
  if (!h || !phase) return 0.0;
  for (int i = 0; i < 6; i++)
    if (!strcmp(phase, names[i])) return h->s.sec[i];
  return 0.0;
}

/* SEACells initial archetypes by greedy column subset selection on K
 * (Farahat et al.): pick the column that best explains the residual
 * kernel, f_i / g_i with f_i = |R e_i|^2 and g_i = R_ii, then deflate R by
 * w w^T with w = R e_p / sqrt(R_pp). The w's are sparse (K is), kept
 * replicated; K is implicit (M M), its rows formed on demand. Deterministic:
 * the same archetypes for any rank count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "seacells/internal.h"
#include "kernels/cpu/seacells.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

typedef struct spvec {
  int64_t nnz;
  int32_t *idx; /* ascending */
  double *val;
} spvec;

/* The state of the selection: scores of the local cells, the replicated
 * w's, and dense scratch over all n cells with lists of what is set. */
typedef struct cssp {
  double *f, *g, *score; /* nl: |R e_i|^2, R_ii, f / g */
  char *chosen;          /* nl */
  spvec *w;              /* m */
  double *o, *v;         /* n: the new column w_j (scaled), sum_r (w_r . o) w_r */
  int32_t *tl, *vl;      /* n: the cells set in o, in v */
  char *mark, *vmark;    /* n */
  int64_t nt, nv;        /* entries of tl, vl */
  double onorm;          /* |o|^2 */
  int32_t *rowc;         /* K row p (replicated): columns, values, length */
  double *rowv;
  int64_t len;
  double *kacc, *kvals; /* n: K row scratch, then (M o) per row l */
  int32_t *klist;
  char *kmark;
} cssp;

static void cssp_free(cssp *c, int m) {
  if (c->w)
    for (int r = 0; r < m; r++)
      free(c->w[r].idx), free(c->w[r].val);
  free(c->w);
  free(c->f), free(c->g), free(c->score), free(c->o), free(c->v), free(c->tl), free(c->vl);
  free(c->mark), free(c->vmark), free(c->chosen), free(c->rowc), free(c->rowv);
  free(c->kacc), free(c->kvals), free(c->klist), free(c->kmark);
}

static rrt_status cssp_alloc(rrt_sc_run *s, cssp *c, int count) {
  size_t n = (size_t)s->n, nl = (size_t)s->nl;
  memset(c, 0, sizeof *c);
  c->f = calloc(nl + 1, sizeof(double)), c->g = calloc(nl + 1, sizeof(double));
  c->score = malloc((nl + 1) * sizeof(double));
  c->o = calloc(n, sizeof(double)), c->v = calloc(n, sizeof(double));
  c->tl = malloc(n * sizeof(int32_t)), c->vl = malloc(n * sizeof(int32_t));
  c->mark = calloc(n, 1), c->vmark = calloc(n, 1), c->chosen = calloc(nl + 1, 1);
  c->w = calloc((size_t)count + 1, sizeof(spvec));
  c->kacc = malloc(n * sizeof(double)), c->kvals = malloc(n * sizeof(double));
  c->klist = malloc(n * sizeof(int32_t)), c->kmark = calloc(n, 1);
  if (!c->f || !c->g || !c->score || !c->o || !c->v || !c->tl || !c->vl || !c->mark || !c->vmark ||
      !c->chosen || !c->w || !c->kacc || !c->kvals || !c->klist || !c->kmark)
    return OOM(s, "CSSP");
  return RRT_SUCCESS;
}

/* f_i = |K e_i|^2 and g_i = K_ii of the local cells, a K row per cell. */
static rrt_status cssp_start(rrt_sc_run *s, cssp *c) {
  int64_t n = s->n, nl = s->nl;
  double *f = c->f, *g = c->g;
  int fail = 0;
#pragma omp parallel
  {
    double *acc = malloc((size_t)n * sizeof(double)), *vals = malloc((size_t)n * sizeof(double));
    int32_t *list = malloc((size_t)n * sizeof(int32_t));
    char *km = calloc((size_t)n, 1);
    if (!acc || !vals || !list || !km) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < nl; i++) {
      if (!acc || !vals || !list || !km) continue;
      int64_t len = rrt_sc_k_row(s, i, acc, km, list, vals);
      for (int64_t q = 0; q < len; q++) {
        f[i] = f[i] + vals[q] * vals[q];
        if (list[q] == s->c0 + i) g[i] = vals[q];
      }
    }
    free(acc), free(vals), free(list), free(km);
  }
  return fail ? OOM(s, "CSSP") : RRT_SUCCESS;
}

/* K row p (= column p) from its owner onto every rank. */
static rrt_status cssp_fetch_row(rrt_sc_run *s, cssp *c, int64_t p) {
  int owner = rrt_cell_blocks_owner(&s->plan, p);
  c->len = 0;
  if (owner == s->rank) c->len = rrt_sc_k_row(s, p - s->c0, c->kacc, c->kmark, c->klist, c->kvals);
  RRT_CHECK(rrt_host_bcast(s->ctx, &c->len, sizeof c->len, owner));
  free(c->rowc), free(c->rowv);
  c->rowc = malloc((size_t)(c->len + 1) * sizeof(int32_t));
  c->rowv = malloc((size_t)(c->len + 1) * sizeof(double));
  if (!c->rowc || !c->rowv) return OOM(s, "CSSP");
  if (owner == s->rank) {
    memcpy(c->rowc, c->klist, (size_t)c->len * sizeof(int32_t));
    memcpy(c->rowv, c->kvals, (size_t)c->len * sizeof(double));
    c->chosen[p - s->c0] = 1;
  }
  RRT_CHECK(rrt_host_bcast(s->ctx, c->rowc, (size_t)c->len * sizeof(int32_t), owner));
  return rrt_host_bcast(s->ctx, c->rowv, (size_t)c->len * sizeof(double), owner);
}

static double sp_get(const spvec *v, int32_t c) {
  int64_t lo = 0, hi = v->nnz - 1;
  while (lo <= hi) {
    int64_t mid = (lo + hi) / 2;
    if (v->idx[mid] == c) return v->val[mid];
    if (v->idx[mid] < c)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return 0.0;
}

/* The new column: o = (K e_p - sum_r w_r[p] w_r) / sqrt(R_pp), into the
 * dense scratch o (cells listed in tl, ascending), kept as w_j. */
static rrt_status cssp_new_column(rrt_sc_run *s, cssp *c, int j, int64_t p) {
  double *o = c->o;
  int32_t *tl = c->tl;
  char *mark = c->mark;
  spvec *w = c->w;
  int64_t nt = 0;
  for (int64_t q = 0; q < c->len; q++)
    mark[c->rowc[q]] = 1, o[c->rowc[q]] = c->rowv[q], tl[nt++] = c->rowc[q];
  for (int r = 0; r < j; r++) {
    double wp = sp_get(&w[r], (int32_t)p);
    if (wp == 0.0) continue;
    for (int64_t q = 0; q < w[r].nnz; q++) {
      int32_t cell = w[r].idx[q];
      if (!mark[cell]) mark[cell] = 1, o[cell] = 0.0, tl[nt++] = cell;
      o[cell] = o[cell] - wp * w[r].val[q];
    }
  }
  if (!mark[p]) mark[p] = 1, o[p] = 0.0, tl[nt++] = (int32_t)p;
  double dp = o[p] > 0.0 ? o[p] : 0.0, sc = sqrt(dp) > 1e-6 ? sqrt(dp) : 1e-6;
  rrt_sc_sort_i32(tl, nt);
  w[j].idx = malloc((size_t)(nt + 1) * sizeof(int32_t));
  w[j].val = malloc((size_t)(nt + 1) * sizeof(double));
  if (!w[j].idx || !w[j].val) return OOM(s, "CSSP");
  double onorm = 0.0;
  for (int64_t q = 0; q < nt; q++) {
    o[tl[q]] = (tl[q] == p ? dp : o[tl[q]]) / sc;
    w[j].idx[q] = tl[q];
    w[j].val[q] = o[tl[q]];
    onorm = onorm + o[tl[q]] * o[tl[q]];
  }
  w[j].nnz = nt;
  c->nt = nt;
  c->onorm = onorm;
  return RRT_SUCCESS;
}

/* v = sum_r (w_r . o) w_r over the earlier columns (cells listed in vl). */
static void cssp_project(cssp *c, int j) {
  const spvec *w = c->w;
  int64_t nv = 0;
  for (int r = 0; r < j; r++) {
    double dsum = 0.0;
    for (int64_t q = 0; q < w[r].nnz; q++)
      dsum = dsum + w[r].val[q] * c->o[w[r].idx[q]];
    if (dsum == 0.0) continue;
    for (int64_t q = 0; q < w[r].nnz; q++) {
      int32_t cell = w[r].idx[q];
      if (!c->vmark[cell]) c->vmark[cell] = 1, c->v[cell] = 0.0, c->vl[nv++] = cell;
      c->v[cell] = c->v[cell] + dsum * w[r].val[q];
    }
  }
  c->nv = nv;
}

/* f_i -= 2 o_i ((K o)_i - v_i) - o_i^2 |o|^2; g_i -= o_i^2, for local i in
 * supp(o). (K o)_i = sum_l M_il (M o)_l, with (M o)_l formed once per l
 * (kacc, marked in kmark) rather than a K row per i. Then the scratch is
 * reset for the next column. */
static void cssp_deflate(rrt_sc_run *s, cssp *c) {
  const int32_t *tl = c->tl;
  int64_t nu = 0;
  for (int64_t q = 0; q < c->nt; q++) {
    int64_t i = tl[q] - s->c0;
    if (i < 0 || i >= s->nl) continue;
    double ko = 0.0;
    for (int64_t pp = s->mrow.ptr[i]; pp < s->mrow.ptr[i + 1]; pp++) {
      int32_t l = s->mrow.col[pp];
      if (!c->kmark[l]) {
        const int32_t *lc;
        const double *lv;
        int64_t len;
        rrt_sc_m_row(s, l, &lc, &lv, &len);
        double u = 0.0;
        for (int64_t e = 0; e < len; e++)
          if (c->mark[lc[e]]) u = u + lv[e] * c->o[lc[e]];
        c->kmark[l] = 1, c->kacc[l] = u, c->klist[nu++] = l;
      }
      ko = ko + s->mrow.val[pp] * c->kacc[l];
    }
    double oi = c->o[tl[q]], vi = c->vmark[tl[q]] ? c->v[tl[q]] : 0.0;
    c->f[i] = c->f[i] - 2.0 * oi * (ko - vi) + oi * oi * c->onorm;
    c->g[i] = c->g[i] - oi * oi;
  }
  for (int64_t q = 0; q < nu; q++)
    c->kmark[c->klist[q]] = 0;
  for (int64_t q = 0; q < c->nt; q++)
    c->mark[tl[q]] = 0, c->o[tl[q]] = 0.0;
  for (int64_t q = 0; q < c->nv; q++)
    c->vmark[c->vl[q]] = 0, c->v[c->vl[q]] = 0.0;
}

/* Archetype j: the best-scoring column, then the deflation by it. */
static rrt_status cssp_select(rrt_sc_run *s, cssp *c, int j, int64_t *out) {
  for (int64_t i = 0; i < s->nl; i++)
    c->score[i] = (!c->chosen[i] && c->g[i] > 1e-12) ? c->f[i] / c->g[i] : -INFINITY;
  int64_t p;
  RRT_CHECK(rrt_sc_argmax(s, c->score, &p));
  if (p < 0 || p >= s->n)
    return rrt_error(s->ctx, RRT_ERR_NUMERIC, "seacells", "CSSP found no column for archetype %d",
                     j);
  out[j] = p;
  RRT_CHECK(cssp_fetch_row(s, c, p));
  RRT_CHECK(cssp_new_column(s, c, j, p));
  cssp_project(c, j);
  cssp_deflate(s, c);
  return RRT_SUCCESS;
}

rrt_status rrt_sc_cssp(rrt_sc_run *s, int count, int64_t *out) {
  cssp c;
  rrt_status st = cssp_alloc(s, &c, count);
  if (st == RRT_SUCCESS) st = cssp_start(s, &c);
  for (int j = 0; st == RRT_SUCCESS && j < count; j++)
    st = cssp_select(s, &c, j, out);
  cssp_free(&c, count);
  return st;
}

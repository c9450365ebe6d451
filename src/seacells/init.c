/* SEACells initial archetypes: greedy CSSP on K (deterministic), seeded
 * max-min sampling on the coordinates, or given cells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/seacells_math.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

/* splitmix64: the seeded first cell, independent of the rank count */
static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Global argmax of local scores (lowest cell on ties) via min-loc of -score. */
static rrt_status argmax(sc_run *s, const double *score, int64_t *best) {
  rrt_minloc ml = {INFINITY, INT64_MAX};
  for (int64_t i = 0; i < s->nl; i++)
    if (rrt_sc_argmin_better(-score[i], s->c0 + i, ml.value, ml.index))
      ml.value = -score[i], ml.index = s->c0 + i;
  RRT_CHECK(rrt_allreduce_minloc(s->ctx, &ml, 1));
  *best = ml.index;
  return RRT_SUCCESS;
}

static rrt_status init_maxmin(sc_run *s) {
  int d = s->d;
  double *mind = malloc((size_t)(s->nl + 1) * sizeof(double)),
         *pt = malloc((size_t)d * sizeof(double));
  if (!mind || !pt) {
    free(mind), free(pt);
    return OOM(s, "max-min");
  }
  for (int64_t i = 0; i < s->nl; i++)
    mind[i] = INFINITY;
  int64_t p = (int64_t)(mix64(s->opt.seed) % (uint64_t)s->n);
  rrt_status st = RRT_SUCCESS;
  for (int j = 0; j < s->m && st == RRT_SUCCESS; j++) {
    if (j > 0) st = argmax(s, mind, &p);
    if (st != RRT_SUCCESS) break;
    s->archetypes[j] = p;
    int owner = rrt_cell_blocks_owner(&s->plan, p);
    if (owner == s->rank) memcpy(pt, s->x + (p - s->c0) * d, (size_t)d * sizeof(double));
    st = rrt_host_bcast(s->ctx, pt, (size_t)d * sizeof(double), owner);
    for (int64_t i = 0; st == RRT_SUCCESS && i < s->nl; i++) {
      double d2 = rrt_sc_sqdist(s->x + i * d, pt, d);
      if (d2 < mind[i]) mind[i] = d2;
      if (s->c0 + i == p) mind[i] = -INFINITY; /* never chosen twice */
    }
  }
  free(mind);
  free(pt);
  return st;
}

typedef struct spvec {
  int64_t nnz;
  int32_t *idx; /* ascending */
  double *val;
} spvec;

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

static int i32_cmp(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return x < y ? -1 : x > y;
}

/* Greedy column subset selection on K (Farahat et al.): pick the column
 * that best explains the residual kernel, f_i / g_i with f_i = |R e_i|^2 and
 * g_i = R_ii, then deflate R by w w^T with w = R e_p / sqrt(R_pp). The w's
 * are sparse (K is), kept replicated. */
static rrt_status init_cssp(sc_run *s) {
  int64_t n = s->n, nl = s->nl;
  int m = s->m;
  rrt_status st = RRT_SUCCESS;
  double *f = calloc((size_t)nl + 1, sizeof(double)), *g = calloc((size_t)nl + 1, sizeof(double));
  double *score = malloc((size_t)(nl + 1) * sizeof(double));
  double *o = calloc((size_t)n, sizeof(double)), *v = calloc((size_t)n, sizeof(double));
  int32_t *tl = malloc((size_t)n * sizeof(int32_t)), *vl = malloc((size_t)n * sizeof(int32_t));
  char *mark = calloc((size_t)n, 1), *vmark = calloc((size_t)n, 1),
       *chosen = calloc((size_t)nl + 1, 1);
  spvec *w = calloc((size_t)m, sizeof(spvec));
  double *dots = malloc((size_t)m * sizeof(double));
  int32_t *rowc = NULL, *klist = NULL;
  double *rowv = NULL, *kacc = NULL, *kvals = NULL;
  char *kmark = NULL;
  if (!f || !g || !score || !o || !v || !tl || !vl || !mark || !vmark || !chosen || !w || !dots) {
    st = OOM(s, "CSSP");
    goto out;
  }
  /* K is implicit (M M): its rows are formed on demand, in scratch of n */
  kacc = malloc((size_t)n * sizeof(double)), kvals = malloc((size_t)n * sizeof(double));
  klist = malloc((size_t)n * sizeof(int32_t)), kmark = calloc((size_t)n, 1);
  if (!kacc || !kvals || !klist || !kmark) {
    st = OOM(s, "CSSP");
    goto out;
  }
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
      int64_t len = sc_k_row(s, i, acc, km, list, vals);
      for (int64_t q = 0; q < len; q++) {
        f[i] = f[i] + vals[q] * vals[q];
        if (list[q] == s->c0 + i) g[i] = vals[q];
      }
    }
    free(acc), free(vals), free(list), free(km);
  }
  if (fail) {
    st = OOM(s, "CSSP");
    goto out;
  }
  for (int j = 0; j < m; j++) {
    for (int64_t i = 0; i < nl; i++)
      score[i] = (!chosen[i] && g[i] > 1e-12) ? f[i] / g[i] : -INFINITY;
    int64_t p;
    RRT_CHECK_GOTO(argmax(s, score, &p), st, out);
    if (p < 0 || p >= n) {
      st = rrt_error(s->ctx, RRT_ERR_NUMERIC, "seacells", "CSSP found no column for archetype %d",
                     j);
      goto out;
    }
    s->archetypes[j] = p;
    /* K row p (= column p) from its owner */
    int owner = rrt_cell_blocks_owner(&s->plan, p);
    int64_t len = 0;
    if (owner == s->rank) len = sc_k_row(s, p - s->c0, kacc, kmark, klist, kvals);
    RRT_CHECK_GOTO(rrt_host_bcast(s->ctx, &len, sizeof len, owner), st, out);
    free(rowc), free(rowv);
    rowc = malloc((size_t)(len + 1) * sizeof(int32_t));
    rowv = malloc((size_t)(len + 1) * sizeof(double));
    if (!rowc || !rowv) {
      st = OOM(s, "CSSP");
      goto out;
    }
    if (owner == s->rank) {
      memcpy(rowc, klist, (size_t)len * sizeof(int32_t));
      memcpy(rowv, kvals, (size_t)len * sizeof(double));
      chosen[p - s->c0] = 1;
    }
    RRT_CHECK_GOTO(rrt_host_bcast(s->ctx, rowc, (size_t)len * sizeof(int32_t), owner), st, out);
    RRT_CHECK_GOTO(rrt_host_bcast(s->ctx, rowv, (size_t)len * sizeof(double), owner), st, out);
    /* delta = K e_p - sum_r w_r[p] w_r, into the dense scratch o */
    int64_t nt = 0;
    for (int64_t q = 0; q < len; q++)
      mark[rowc[q]] = 1, o[rowc[q]] = rowv[q], tl[nt++] = rowc[q];
    for (int r = 0; r < j; r++) {
      double wp = sp_get(&w[r], (int32_t)p);
      if (wp == 0.0) continue;
      for (int64_t q = 0; q < w[r].nnz; q++) {
        int32_t c = w[r].idx[q];
        if (!mark[c]) mark[c] = 1, o[c] = 0.0, tl[nt++] = c;
        o[c] = o[c] - wp * w[r].val[q];
      }
    }
    if (!mark[p]) mark[p] = 1, o[p] = 0.0, tl[nt++] = (int32_t)p;
    double dp = o[p] > 0.0 ? o[p] : 0.0, sc = sqrt(dp) > 1e-6 ? sqrt(dp) : 1e-6;
    qsort(tl, (size_t)nt, sizeof(int32_t), i32_cmp);
    w[j].idx = malloc((size_t)(nt + 1) * sizeof(int32_t));
    w[j].val = malloc((size_t)(nt + 1) * sizeof(double));
    if (!w[j].idx || !w[j].val) {
      st = OOM(s, "CSSP");
      goto out;
    }
    double onorm = 0.0;
    for (int64_t q = 0; q < nt; q++) {
      o[tl[q]] = (tl[q] == p ? dp : o[tl[q]]) / sc;
      w[j].idx[q] = tl[q];
      w[j].val[q] = o[tl[q]];
      onorm = onorm + o[tl[q]] * o[tl[q]];
    }
    w[j].nnz = nt;
    /* v = sum_r (w_r . o) w_r over the earlier columns */
    int64_t nv = 0;
    for (int r = 0; r < j; r++) {
      double dsum = 0.0;
      for (int64_t q = 0; q < w[r].nnz; q++)
        dsum = dsum + w[r].val[q] * o[w[r].idx[q]];
      dots[r] = dsum;
      if (dsum == 0.0) continue;
      for (int64_t q = 0; q < w[r].nnz; q++) {
        int32_t c = w[r].idx[q];
        if (!vmark[c]) vmark[c] = 1, v[c] = 0.0, vl[nv++] = c;
        v[c] = v[c] + dsum * w[r].val[q];
      }
    }
    /* f_i -= 2 o_i ((K o)_i - v_i) - o_i^2 |o|^2; g_i -= o_i^2, for local i in
     * supp(o). (K o)_i = sum_l M_il (M o)_l, with (M o)_l formed once per l
     * (kacc, marked in kmark) rather than a K row per i. */
    int64_t nu = 0;
    for (int64_t q = 0; q < nt; q++) {
      int64_t i = tl[q] - s->c0;
      if (i < 0 || i >= nl) continue;
      double ko = 0.0;
      for (int64_t pp = s->mrow.ptr[i]; pp < s->mrow.ptr[i + 1]; pp++) {
        int32_t l = s->mrow.col[pp];
        if (!kmark[l]) {
          const int32_t *lc;
          const double *lv;
          int64_t len;
          sc_m_row(s, l, &lc, &lv, &len);
          double u = 0.0;
          for (int64_t e = 0; e < len; e++)
            if (mark[lc[e]]) u = u + lv[e] * o[lc[e]];
          kmark[l] = 1, kacc[l] = u, klist[nu++] = l;
        }
        ko = ko + s->mrow.val[pp] * kacc[l];
      }
      double oi = o[tl[q]], vi = vmark[tl[q]] ? v[tl[q]] : 0.0;
      f[i] = f[i] - 2.0 * oi * (ko - vi) + oi * oi * onorm;
      g[i] = g[i] - oi * oi;
    }
    for (int64_t q = 0; q < nu; q++)
      kmark[klist[q]] = 0;
    for (int64_t q = 0; q < nt; q++)
      mark[tl[q]] = 0, o[tl[q]] = 0.0;
    for (int64_t q = 0; q < nv; q++)
      vmark[vl[q]] = 0, v[vl[q]] = 0.0;
  }
out:
  if (w)
    for (int r = 0; r < m; r++)
      free(w[r].idx), free(w[r].val);
  free(w);
  free(f), free(g), free(score), free(o), free(v), free(tl), free(vl);
  free(mark), free(vmark), free(chosen), free(dots), free(rowc), free(rowv);
  free(kacc), free(kvals), free(klist), free(kmark);
  return st;
}

rrt_status sc_init_archetypes(sc_run *s) {
  double t0 = rrt_time_now();
  rrt_status st = RRT_SUCCESS;
  switch (s->opt.init) {
  case RRT_SEACELLS_INIT_GIVEN:
    for (int j = 0; j < s->m; j++)
      s->archetypes[j] = s->opt.archetypes[j];
    break;
  case RRT_SEACELLS_INIT_MAXMIN: st = init_maxmin(s); break;
  default: st = init_cssp(s); break;
  }
  s->sec[SC_INIT] += rrt_time_now() - t0;
  return rrt_agree(s->ctx, st);
}

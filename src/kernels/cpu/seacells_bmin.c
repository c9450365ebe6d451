/* The B-update argmin on the cpu without a per-cell walk over archetypes
 * (see rrt_sc_cpu_b_argmin_signs in kernels/cpu/seacells.h).
 *
 * g_ij = 2 (s_ij - k_ij) with s = (K Bg) T1b >= 0 and k = K A^T >= 0. A
 * cell where k_ij has no entry has g_ij = 2 s_ij >= 0, so an archetype's
 * minimum is negative only at cells of its K A^T column (S_j, a few dozen
 * cells each): those are evaluated first, all of them. Only an archetype
 * whose minimum there is not negative needs the other cells, and of those
 * only the lowest with g_ij = 0 can win; they are scanned in ascending
 * order until that cell (a full scan when there is none). Every value is
 * computed as the dense form computes it (s_ij summed over the K Bg row in
 * its order, the entries T1b lacks being +0), so the minimum and its
 * lowest index are the dense argmin's bits. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"

/* s_ij = sum over the K Bg row of cell i (its order) of kbg_l T1b_lj, with
 * row j of T1b scattered into the dense d (T1b is symmetric bit for bit;
 * entries it lacks are skipped, as the dense sum added them as +0). */
static inline double s_entry(const rrt_sc_rowset *kg, int64_t i, const double *d) {
  double s = 0.0;
  for (int64_t q = kg->beg[i]; q < kg->end[i]; q++)
    if (d[kg->col[q]] != 0.0) s = s + kg->val[q] * d[kg->col[q]];
  return s;
}

/* Archetype j's minimum over the cells of its K A^T column (sptr/scell/
 * sval, ascending) into (*bv, *bi). */
static void min_over_column(int64_t c0, int32_t j, const rrt_sc_rowset *kg, const int64_t *sptr,
                            const int32_t *scell, const double *sval, const double *d, double *bv,
                            int64_t *bi) {
  double v = INFINITY;
  int64_t at = INT64_MAX;
  for (int64_t p = sptr[j]; p < sptr[j + 1]; p++) {
    double g = rrt_sc_grad(s_entry(kg, scell[p], d), sval[p]);
    if (rrt_sc_argmin_better(g, c0 + scell[p], v, at)) v = g, at = c0 + scell[p];
  }
  *bv = v, *bi = at;
}

/* Unless archetype j's minimum (*bv, *bi) is negative, the other local cells
 * in ascending order, up to the first zero. */
static void scan_rest(int64_t nl, int64_t c0, int32_t j, const rrt_sc_rowset *kg,
                      const int64_t *sptr, const int32_t *scell, const double *d, double *bv,
                      int64_t *bi) {
  double v = *bv;
  int64_t at = *bi;
  if (v < 0.0) return;
  for (int64_t i = 0, p = sptr[j]; i < nl; i++) {
    if (v == 0.0 && at < c0 + i) break; /* nothing later beats (0, a lower cell) */
    if (p < sptr[j + 1] && scell[p] == i) {
      p++;
      continue;
    }
    double g = rrt_sc_grad(s_entry(kg, i, d), 0.0);
    if (rrt_sc_argmin_better(g, c0 + i, v, at)) v = g, at = c0 + i;
  }
  *bv = v, *bi = at;
}

/* The wide archetypes (a K A^T column over more than half the cells: the
 * zero-gradient archetypes that every cell's A picks up, a few dozen of
 * them) cell-major: one pass over the K Bg rows for all of them, instead of
 * one pass each, which at 100k cells streams the rows from memory dozens
 * of times a step. The cells are visited in the order their rows are
 * stored (order), so the pass streams them; s_ij is summed over the K Bg
 * row of i in its order, skipping the entries T1b lacks, as s_entry does.
 * rrt_sc_argmin_better is a total order on (value, cell), so neither the
 * visiting order nor the threads' ranges change the minimum: the same bits
 * as min_over_column. dw: the wide archetypes' T1b rows, dw[l * nw + w] =
 * T1b[l][wide[w]]; widx[j]: j's position in wide, or -1. */
typedef struct wide_set {
  int nw;
  const int32_t *wide, *widx;
  const double *dw;
} wide_set;

typedef struct wide_rows {
  const int32_t *order;
  const rrt_sc_rowset *kg, *kat;
} wide_rows;

static void wide_range(int64_t r0, int64_t r1, int64_t c0, const wide_set *ws, const wide_rows *wr,
                       double *s, double *v, int64_t *at) {
  const rrt_sc_rowset *kg = wr->kg, *kat = wr->kat;
  const int nw = ws->nw;
  for (int w = 0; w < nw; w++)
    v[w] = INFINITY, at[w] = INT64_MAX;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i = wr->order ? wr->order[r] : r;
    for (int w = 0; w < nw; w++)
      s[w] = 0.0;
    for (int64_t q = kg->beg[i]; q < kg->end[i]; q++) {
      const double *row = ws->dw + (size_t)kg->col[q] * nw, kv = kg->val[q];
      /* a select, not a branch, so that the loop vectorises over w
       * (with -fno-trapping-math, src/CMakeLists.txt) */
      for (int w = 0; w < nw; w++)
        s[w] = row[w] != 0.0 ? s[w] + kv * row[w] : s[w];
    }
    for (int64_t e = kat->beg[i]; e < kat->end[i]; e++) {
      int w = ws->widx[kat->col[e]];
      if (w < 0) continue;
      double g = rrt_sc_grad(s[w], kat->val[e]);
      if (rrt_sc_argmin_better(g, c0 + i, v[w], at[w])) v[w] = g, at[w] = c0 + i;
    }
  }
}

/* The wide archetypes' minima over their columns into best_v/best_i;
 * 1 when out of memory. */
static int wide_minima(int64_t nl, int64_t c0, const wide_set *ws, const wide_rows *wr,
                       double *best_v, int64_t *best_i) {
  const int nw = ws->nw;
  int nth = nl >= RRT_SC_PAR_MIN ? omp_get_max_threads() : 1, used = 1;
  double *sv = malloc((size_t)nth * nw * 2 * sizeof(double) + 1); /* per thread: s, v */
  int64_t *ats = malloc((size_t)nth * nw * sizeof(int64_t) + 1);
  if (!sv || !ats) {
    free(sv), free(ats);
    return 1;
  }
#pragma omp parallel num_threads(nth) if (nth > 1)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    used = nt;
    double *s = sv + (size_t)t * 2 * nw;
    wide_range(nl * t / nt, nl * (t + 1) / nt, c0, ws, wr, s, s + nw, ats + (size_t)t * nw);
  }
  for (int w = 0; w < nw; w++) {
    double v = INFINITY;
    int64_t at = INT64_MAX;
    for (int t = 0; t < used; t++) {
      double tv = sv[(size_t)t * 2 * nw + nw + w];
      int64_t ta = ats[(size_t)t * nw + w];
      if (rrt_sc_argmin_better(tv, ta, v, at)) v = tv, at = ta;
    }
    best_v[ws->wide[w]] = v, best_i[ws->wide[w]] = at;
  }
  free(sv), free(ats);
  return 0;
}

/* At most this many archetypes go cell-major (their T1b rows are held as
 * an m x nw array). */
#define RRT_SC_WIDE_MAX 64

/* The wide archetypes of this K A^T (columns over more than half the
 * cells) and their T1b rows; nw = 0 when there are none or memory is short
 * (then every archetype goes the archetype-major way: the same bits). */
static void wide_make(int64_t nl, int m, const int64_t *sptr, const rrt_sc_kk *t1b, wide_set *ws,
                      int32_t **wide, int32_t **widx, double **dw) {
  ws->nw = 0;
  *wide = malloc(RRT_SC_WIDE_MAX * sizeof(int32_t));
  *widx = malloc((size_t)m * sizeof(int32_t));
  if (!*wide || !*widx) return;
  int nw = 0;
  for (int j = 0; j < m; j++) {
    (*widx)[j] = -1;
    if (nw < RRT_SC_WIDE_MAX && 2 * (sptr[j + 1] - sptr[j]) > nl)
      (*widx)[j] = nw, (*wide)[nw++] = j;
  }
  if (nw == 0 || !(*dw = calloc((size_t)m * nw, sizeof(double)))) return;
  for (int w = 0; w < nw; w++)
    for (int64_t q = t1b->ptr[(*wide)[w]]; q < t1b->ptr[(*wide)[w] + 1]; q++)
      (*dw)[(size_t)t1b->col[q] * nw + w] = t1b->val[q];
  *ws = (wide_set){nw, *wide, *widx, *dw};
}

rrt_status rrt_sc_cpu_b_argmin_signs(int64_t nl, int64_t c0, int m, const int32_t *order,
                                     const int32_t *jorder, const int64_t *kptr,
                                     const int32_t *kcol, const double *kval, const int32_t *bfirst,
                                     const int32_t *bcnt, const int32_t *bent_j,
                                     const double *bent_w, const rrt_sc_rowset *kat,
                                     const int64_t *sptr, const int32_t *scell, const double *sval,
                                     const rrt_sc_kk *t1b, double *best_v, int64_t *best_i) {
  rrt_sc_rowset kg = {NULL, NULL, NULL, NULL};
  /* the K Bg rows of the step, each summed in rrt_sc_sparse_row's order */
  rrt_status st = rrt_sc_cpu_xh_rows(nl, m, order, kptr, kcol, kval, bfirst, bcnt, bent_j, bent_w,
                                     INT64_MAX, &kg);
  if (st != RRT_SUCCESS) return st;
  wide_set ws = {0, NULL, NULL, NULL};
  int32_t *wide = NULL, *widx = NULL;
  double *dw = NULL;
  wide_make(nl, m, sptr, t1b, &ws, &wide, &widx, &dw);
  const wide_rows wr = {order, &kg, kat};
  const int wide_failed = ws.nw > 0 && wide_minima(nl, c0, &ws, &wr, best_v, best_i);
  int fail = wide_failed;
#pragma omp parallel if (nl >= RRT_SC_PAR_MIN && !wide_failed)
  {
    double *d = wide_failed ? NULL : calloc((size_t)m, sizeof(double));
    if (!d) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(dynamic, 4)
    for (int32_t u = 0; u < m; u++) {
      int32_t j = jorder ? jorder[u] : u;
      if (!d) continue;
      for (int64_t q = t1b->ptr[j]; q < t1b->ptr[j + 1]; q++)
        d[t1b->col[q]] = t1b->val[q];
      if (ws.nw == 0 || ws.widx[j] < 0)
        min_over_column(c0, j, &kg, sptr, scell, sval, d, &best_v[j], &best_i[j]);
      scan_rest(nl, c0, j, &kg, sptr, scell, d, &best_v[j], &best_i[j]);
      for (int64_t q = t1b->ptr[j]; q < t1b->ptr[j + 1]; q++)
        d[t1b->col[q]] = 0.0;
    }
    free(d);
  }
  rrt_sc_rowset_free(&kg);
  free(wide), free(widx), free(dw);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

rrt_status rrt_sc_cpu_kat_cells(int64_t nl, int m, const rrt_sc_rowset *kat, int64_t **sptr_out,
                                int32_t **scell_out, double **sval_out) {
  int64_t nz = 0;
  for (int64_t i = 0; i < nl; i++)
    nz += kat->end[i] - kat->beg[i];
  int64_t *sptr = calloc((size_t)m + 1, sizeof(int64_t)),
          *fill = calloc((size_t)m, sizeof(int64_t));
  int32_t *scell = malloc((size_t)(nz + 1) * sizeof(int32_t));
  double *sval = malloc((size_t)(nz + 1) * sizeof(double));
  if (!sptr || !fill || !scell || !sval) {
    free(sptr), free(fill), free(scell), free(sval);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t i = 0; i < nl; i++)
    for (int64_t e = kat->beg[i]; e < kat->end[i]; e++)
      sptr[kat->col[e] + 1]++;
  for (int j = 0; j < m; j++)
    sptr[j + 1] += sptr[j];
  for (int64_t i = 0; i < nl; i++) /* cells ascending within each archetype */
    for (int64_t e = kat->beg[i]; e < kat->end[i]; e++) {
      int64_t p = sptr[kat->col[e]] + fill[kat->col[e]]++;
      scell[p] = (int32_t)i, sval[p] = kat->val[e];
    }
  free(fill);
  *sptr_out = sptr, *scell_out = scell, *sval_out = sval;
  return RRT_SUCCESS;
}

typedef struct jkey {
  int64_t key;
  int32_t j;
} jkey;

static int jkey_cmp(const void *a, const void *b) {
  const jkey *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->j < y->j ? -1 : x->j > y->j;
}

rrt_status rrt_sc_cpu_kat_order(int64_t nl, int m, const int32_t *order, const int64_t *sptr,
                                const int32_t *scell, int32_t **jorder) {
  int64_t *pos = malloc(((size_t)nl + 1) * sizeof(int64_t));
  jkey *k = malloc(((size_t)m + 1) * sizeof(jkey));
  *jorder = malloc(((size_t)m + 1) * sizeof(int32_t));
  if (!pos || !k || !*jorder) {
    free(pos), free(k), free(*jorder);
    *jorder = NULL;
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t r = 0; r < nl; r++)
    pos[order ? order[r] : r] = r;
  for (int j = 0; j < m; j++) {
    k[j] = (jkey){INT64_MAX, j};
    for (int64_t p = sptr[j]; p < sptr[j + 1]; p++)
      if (pos[scell[p]] < k[j].key) k[j].key = pos[scell[p]];
  }
  qsort(k, (size_t)m, sizeof(jkey), jkey_cmp);
  for (int j = 0; j < m; j++)
    (*jorder)[j] = k[j].j;
  free(pos), free(k);
  return RRT_SUCCESS;
}

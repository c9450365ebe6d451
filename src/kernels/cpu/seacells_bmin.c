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
#include <string.h>

#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"

/* s_ij = sum over the K Bg row of cell i (its order) of kbg_l T1b_lj, with
 * row j of T1b scattered into the dense d (T1b is symmetric bit for bit;
 * entries it lacks are skipped, as the dense sum added them as +0), for
 * four cells at once: four independent sums, each over its own row in its
 * order (so the same bits), which the CPU overlaps (one sum is a chain of
 * dependent additions; at 200k cells these chains were most of the
 * archetype minima's time). */
static inline void s_entry4(const rrt_sc_rowset *kg, const int64_t *cell, const double *d,
                            double *out) {
  int64_t q[4], len[4], n = INT64_MAX;
  for (int t = 0; t < 4; t++) {
    q[t] = kg->beg[cell[t]], len[t] = kg->end[cell[t]] - q[t];
    n = len[t] < n ? len[t] : n;
  }
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (int64_t k = 0; k < n; k++) {
    double d0 = d[kg->col[q[0] + k]], d1 = d[kg->col[q[1] + k]];
    double d2 = d[kg->col[q[2] + k]], d3 = d[kg->col[q[3] + k]];
    s0 = d0 != 0.0 ? s0 + kg->val[q[0] + k] * d0 : s0;
    s1 = d1 != 0.0 ? s1 + kg->val[q[1] + k] * d1 : s1;
    s2 = d2 != 0.0 ? s2 + kg->val[q[2] + k] * d2 : s2;
    s3 = d3 != 0.0 ? s3 + kg->val[q[3] + k] * d3 : s3;
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
  for (int t = 0; t < 4; t++) /* the rest of each row, in order */
    for (int64_t k = n; k < len[t]; k++)
      if (d[kg->col[q[t] + k]] != 0.0) out[t] = out[t] + kg->val[q[t] + k] * d[kg->col[q[t] + k]];
}

/* The gradients g = 2 (s - k) of cells[0..n) (n <= 4) into g, their s
 * summed four at a time (a short batch is padded with its first cell). */
static inline void grads4(const rrt_sc_rowset *kg, const int64_t *cells, const double *k, int n,
                          const double *d, double *g) {
  int64_t c4[4];
  double s4[4];
  for (int t = 0; t < 4; t++)
    c4[t] = cells[t < n ? t : 0];
  s_entry4(kg, c4, d, s4);
  for (int t = 0; t < n; t++)
    g[t] = rrt_sc_grad(s4[t], k[t]);
}

/* Archetype j's minimum over the cells of its K A^T column (sptr/scell/
 * sval, ascending) into (*bv, *bi), four cells at a time, taken in order. */
static void min_over_column(int64_t c0, int32_t j, const rrt_sc_rowset *kg, const int64_t *sptr,
                            const int32_t *scell, const double *sval, const double *d, double *bv,
                            int64_t *bi) {
  double v = INFINITY;
  int64_t at = INT64_MAX;
  for (int64_t p = sptr[j]; p < sptr[j + 1]; p += 4) {
    int n = sptr[j + 1] - p < 4 ? (int)(sptr[j + 1] - p) : 4;
    int64_t cells[4] = {0, 0, 0, 0};
    double g[4];
    for (int t = 0; t < n; t++)
      cells[t] = scell[p + t];
    grads4(kg, cells, sval + p, n, d, g);
    for (int t = 0; t < n; t++)
      if (rrt_sc_argmin_better(g[t], c0 + cells[t], v, at)) v = g[t], at = c0 + cells[t];
  }
  *bv = v, *bi = at;
}

/* Unless archetype j's minimum (*bv, *bi) is negative, the other local cells
 * in ascending order, up to the first zero (four gradients at a time; the
 * ones past the stop are not used). */
static void scan_rest(int64_t nl, int64_t c0, int32_t j, const rrt_sc_rowset *kg,
                      const int64_t *sptr, const int32_t *scell, const double *d, double *bv,
                      int64_t *bi) {
  static const double zero[4] = {0.0, 0.0, 0.0, 0.0};
  double v = *bv;
  int64_t at = *bi;
  if (v < 0.0) return;
  for (int64_t i = 0, p = sptr[j]; i < nl;) {
    int64_t cells[4] = {0, 0, 0, 0};
    int n = 0;
    for (; i < nl && n < 4; i++) { /* the next cells outside the column */
      while (p < sptr[j + 1] && scell[p] < i)
        p++;
      if (p < sptr[j + 1] && scell[p] == i) continue;
      cells[n++] = i;
    }
    if (n == 0) break;
    double g[4];
    grads4(kg, cells, zero, n, d, g);
    for (int t = 0; t < n; t++) {
      if (v == 0.0 && at < c0 + cells[t]) { /* nothing later beats (0, a lower cell) */
        *bv = v, *bi = at;
        return;
      }
      if (rrt_sc_argmin_better(g[t], c0 + cells[t], v, at)) v = g[t], at = c0 + cells[t];
    }
  }
  *bv = v, *bi = at;
}

/* The wide archetypes (rrt_sc_wide in kernels/cpu/seacells.h: a K A^T
 * column over more than half the cells, the zero-gradient archetypes that
 * every cell's A picks up, a few dozen of them) cell-major: one pass over
 * the K Bg rows for all of them, instead of one pass each, which at 100k
 * cells streams the rows from memory dozens of times a step. The cells
 * are visited in the order their rows are stored (order), so the pass
 * streams them; s_ij is summed over the K Bg row of i in its order,
 * skipping the entries T1b lacks, as s_entry4 does. Each cell's K A^T
 * values for the wide archetypes lie in one row of kw (NaN where its row
 * has none: the gradient is NaN there and never wins), so the minima are
 * updated by selects over w, with no branch and no walk of its K A^T row.
 * rrt_sc_argmin_better is a total order on (value, cell), so neither the
 * visiting order nor the threads' ranges change the minimum: the same bits
 * as min_over_column. */
/* One cell's gradients for the wide archetypes into their running minima
 * (v, at): selects over w, which vectorise (restrict: the stores cannot
 * change s or kat). */
static inline void wide_update(int nw, const double *restrict s, const double *restrict kat,
                               double cell, double *restrict v, double *restrict at) {
  for (int w = 0; w < nw; w++) {
    double g = rrt_sc_grad(s[w], kat[w]), vw = v[w], aw = at[w];
    int better = rrt_sc_argmin_better_num(g, cell, vw, aw);
    v[w] = better ? g : vw;
    at[w] = better ? cell : aw;
  }
}

/* AVX2 doubles the width of both select loops where the CPU has it (no FMA
 * in the target, -ffp-contract=off: the same operations, so the same
 * bits); the loader picks the clone. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RRT_SC_WIDE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RRT_SC_WIDE_CLONES
#endif

RRT_SC_WIDE_CLONES static void wide_range(int64_t r0, int64_t r1, int64_t c0, const rrt_sc_wide *ws,
                                          const int32_t *order, const rrt_sc_rowset *kg, double *s,
                                          double *v, double *at) {
  const int nw = ws->nw;
  for (int w = 0; w < nw; w++)
    v[w] = INFINITY, at[w] = INFINITY;
  for (int64_t r = r0; r < r1; r++) {
    int64_t i = order ? order[r] : r;
    double cell = (double)(c0 + i);
    for (int w = 0; w < nw; w++)
      s[w] = 0.0;
    for (int64_t q = kg->beg[i]; q < kg->end[i]; q++) {
      const double *row = ws->dw + (size_t)kg->col[q] * nw, kv = kg->val[q];
      /* a select, not a branch, so that the loop vectorises over w
       * (with -fno-trapping-math, src/CMakeLists.txt) */
      for (int w = 0; w < nw; w++)
        s[w] = row[w] != 0.0 ? s[w] + kv * row[w] : s[w];
    }
    wide_update(nw, s, ws->kw + (size_t)r * nw, cell, v, at);
  }
}

/* The wide archetypes' minima over their columns into best_v/best_i;
 * 1 when out of memory. */
static int wide_minima(int64_t nl, int64_t c0, const rrt_sc_wide *ws, const int32_t *order,
                       const rrt_sc_rowset *kg, double *best_v, int64_t *best_i) {
  const int nw = ws->nw;
  int nth = nl >= RRT_SC_PAR_MIN ? omp_get_max_threads() : 1, used = 1;
  double *sva = malloc((size_t)nth * nw * 3 * sizeof(double) + 1); /* per thread: s, v, at */
  if (!sva) return 1;
#pragma omp parallel num_threads(nth) if (nth > 1)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    used = nt;
    double *s = sva + (size_t)t * 3 * nw;
    wide_range(nl * t / nt, nl * (t + 1) / nt, c0, ws, order, kg, s, s + nw, s + 2 * nw);
  }
  for (int w = 0; w < nw; w++) {
    double v = INFINITY;
    int64_t at = INT64_MAX;
    for (int t = 0; t < used; t++) {
      const double *tva = sva + (size_t)t * 3 * nw + nw;
      int64_t ta = tva[nw + w] == INFINITY ? INT64_MAX : (int64_t)tva[nw + w];
      if (rrt_sc_argmin_better(tva[w], ta, v, at)) v = tva[w], at = ta;
    }
    best_v[ws->wide[w]] = v, best_i[ws->wide[w]] = at;
  }
  free(sva);
  return 0;
}

void rrt_sc_wide_free(rrt_sc_wide *ws) {
  free(ws->wide), free(ws->widx), free(ws->dw), free(ws->kw);
  memset(ws, 0, sizeof *ws);
}

/* kw from the wide columns of K A^T by archetype (sptr/scell/sval): row r
 * for the cell at storage position r (pos: nl scratch), NaN elsewhere. */
static void wide_kat_rows(int64_t nl, const int32_t *order, const int64_t *sptr,
                          const int32_t *scell, const double *sval, int64_t *pos, rrt_sc_wide *ws) {
  const int nw = ws->nw;
  for (int64_t r = 0; r < nl; r++)
    pos[order ? order[r] : r] = r;
  for (int64_t q = 0; q < nl * nw; q++)
    ws->kw[q] = NAN;
  for (int w = 0; w < nw; w++)
    for (int64_t p = sptr[ws->wide[w]]; p < sptr[ws->wide[w] + 1]; p++)
      ws->kw[pos[scell[p]] * nw + w] = sval[p];
}

void rrt_sc_cpu_wide_make(int64_t nl, int m, const int32_t *order, const int64_t *sptr,
                          const int32_t *scell, const double *sval, const rrt_sc_kk *t1b,
                          rrt_sc_wide *ws) {
  memset(ws, 0, sizeof *ws);
  ws->wide = malloc(RRT_SC_WIDE_MAX * sizeof(int32_t));
  ws->widx = malloc((size_t)m * sizeof(int32_t));
  if (!ws->wide || !ws->widx) {
    rrt_sc_wide_free(ws);
    return;
  }
  int nw = 0;
  for (int j = 0; j < m; j++) {
    ws->widx[j] = -1;
    if (nw < RRT_SC_WIDE_MAX && 2 * (sptr[j + 1] - sptr[j]) > nl)
      ws->widx[j] = nw, ws->wide[nw++] = j;
  }
  ws->nw = nw;
  int64_t *pos = nw > 0 ? malloc(((size_t)nl + 1) * sizeof(int64_t)) : NULL;
  if (nw > 0) ws->dw = calloc((size_t)m * nw, sizeof(double));
  if (nw > 0) ws->kw = malloc((size_t)nl * nw * sizeof(double));
  if (nw == 0 || !pos || !ws->dw || !ws->kw) { /* all archetype-major: the same bits */
    free(pos);
    rrt_sc_wide_free(ws);
    return;
  }
  for (int w = 0; w < nw; w++)
    for (int64_t q = t1b->ptr[ws->wide[w]]; q < t1b->ptr[ws->wide[w] + 1]; q++)
      ws->dw[(size_t)t1b->col[q] * nw + w] = t1b->val[q];
  wide_kat_rows(nl, order, sptr, scell, sval, pos, ws);
  free(pos);
}

rrt_status rrt_sc_cpu_b_argmin_signs(int64_t nl, int64_t c0, int m, const int32_t *order,
                                     const int32_t *jorder, const int64_t *kptr,
                                     const int32_t *kcol, const double *kval, const int32_t *bfirst,
                                     const int32_t *bcnt, const int32_t *bent_j,
                                     const double *bent_w, const rrt_sc_wide *wide,
                                     const int64_t *sptr, const int32_t *scell, const double *sval,
                                     const rrt_sc_kk *t1b, double *best_v, int64_t *best_i) {
  rrt_sc_rowset kg = {NULL, NULL, NULL, NULL};
  /* the K Bg rows of the step, each summed in rrt_sc_sparse_row's order */
  rrt_status st = rrt_sc_cpu_xh_rows(nl, m, order, kptr, kcol, kval, bfirst, bcnt, bent_j, bent_w,
                                     INT64_MAX, &kg);
  if (st != RRT_SUCCESS) return st;
  const int nw = wide ? wide->nw : 0;
  const int wide_failed = nw > 0 && wide_minima(nl, c0, wide, order, &kg, best_v, best_i);
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
      if (nw == 0 || wide->widx[j] < 0)
        min_over_column(c0, j, &kg, sptr, scell, sval, d, &best_v[j], &best_i[j]);
      scan_rest(nl, c0, j, &kg, sptr, scell, d, &best_v[j], &best_i[j]);
      for (int64_t q = t1b->ptr[j]; q < t1b->ptr[j + 1]; q++)
        d[t1b->col[q]] = 0.0;
    }
    free(d);
  }
  rrt_sc_rowset_free(&kg);
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

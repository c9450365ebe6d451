/* SEACells CPU kernels (see kernels/cpu/seacells.h). */
#include "kernels/cpu/seacells.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/dense.h"
#include "kernels/seacells_math.h"

static void swap_i32(int32_t *v, int64_t a, int64_t b) {
  int32_t t = v[a];
  v[a] = v[b], v[b] = t;
}

static void sift_down(int32_t *v, int64_t root, int64_t end) {
  for (int64_t child; (child = 2 * root + 1) < end; root = child) {
    if (child + 1 < end && v[child + 1] > v[child]) child++;
    if (v[root] >= v[child]) return;
    swap_i32(v, root, child);
  }
}

void rrt_sc_heapsort_i32(int32_t *v, int64_t n) {
  for (int64_t k = n / 2 - 1; k >= 0; k--)
    sift_down(v, k, n);
  for (int64_t end = n - 1; end > 0; end--) {
    swap_i32(v, 0, end);
    sift_down(v, 0, end);
  }
}

static void quicksort_i32(int32_t *v, int64_t n, int depth) {
  while (n > 24) {
    if (depth-- == 0) {
      rrt_sc_heapsort_i32(v, n);
      return;
    }
    int32_t a = v[0], b = v[n / 2], c = v[n - 1]; /* median of three */
    int32_t p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int64_t i = -1, j = n; /* Hoare: [0, j] <= p <= [j + 1, n), both sides non-empty */
    for (;;) {
      do
        i++;
      while (v[i] < p);
      do
        j--;
      while (v[j] > p);
      if (i >= j) break;
      swap_i32(v, i, j);
    }
    if (j + 1 < n - j - 1) { /* recurse on the smaller side, loop on the larger */
      quicksort_i32(v, j + 1, depth);
      v += j + 1, n -= j + 1;
    } else {
      quicksort_i32(v + j + 1, n - j - 1, depth);
      n = j + 1;
    }
  }
  rrt_sc_sort_i32(v, n); /* insertion sort below 25 */
}

void rrt_sc_sort_i32_long(int32_t *v, int64_t n) {
  int depth = 0;
  for (int64_t k = n; k > 1; k >>= 1)
    depth += 2;
  quicksort_i32(v, n, depth);
}

/* Insert (dd, id) into a list of k kept ascending by (d2, index). */
static void topk_insert(double *bd, int32_t *bi, int k, double dd, int32_t id) {
  if (!rrt_sc_nn_less(dd, id, bd[k - 1], bi[k - 1] < 0 ? INT64_MAX : bi[k - 1])) return;
  int p = k - 1;
  while (p > 0 && rrt_sc_nn_less(dd, id, bd[p - 1], bi[p - 1] < 0 ? INT64_MAX : bi[p - 1])) {
    bd[p] = bd[p - 1];
    bi[p] = bi[p - 1];
    p--;
  }
  bd[p] = dd;
  bi[p] = id;
}

#define QT 128  /* query rows per GEMM tile */
#define RT 1024 /* reference rows per GEMM tile */

rrt_status rrt_sc_cpu_knn_tile(const double *q, int64_t nq, int64_t q0, const double *r, int64_t nr,
                               int64_t r0, int d, int k, double *best_d, int32_t *best_i) {
  if (nq == 0 || nr == 0) return RRT_SUCCESS;
  double *rn = malloc((size_t)nr * sizeof(double));
  if (!rn) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t j = 0; j < nr; j++)
    rn[j] = rrt_dense_dot(d, r + j * d, r + j * d);
  int64_t ntiles = (nq + QT - 1) / QT;
  rrt_status st = RRT_SUCCESS;
  /* one BLAS thread per OpenMP thread for the tile: a pthreads OpenBLAS
   * does not see the OpenMP region and would run its own pool on the same
   * cores (1.5x the kNN's time at 20k cells on 2 cores) */
  int blas_threads = rrt_dense_threads();
  rrt_dense_set_threads(1);
#pragma omp parallel
  {
    double *dot = malloc((size_t)QT * RT * sizeof(double));
    if (!dot) {
#pragma omp atomic write
      st = RRT_ERR_OUT_OF_MEMORY;
    }
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < ntiles; t++) {
      if (!dot) continue;
      int64_t i0 = t * QT, ni = nq - i0 < QT ? nq - i0 : QT;
      double qn[QT];
      for (int64_t i = 0; i < ni; i++)
        qn[i] = rrt_dense_dot(d, q + (i0 + i) * d, q + (i0 + i) * d);
      for (int64_t j0 = 0; j0 < nr; j0 += RT) {
        int64_t nj = nr - j0 < RT ? nr - j0 : RT;
        rrt_dense_gram((int)ni, (int)nj, d, q + i0 * d, r + j0 * d, dot);
        for (int64_t i = 0; i < ni; i++) {
          double *bd = best_d + (i0 + i) * k;
          int32_t *bi = best_i + (i0 + i) * k;
          int64_t gi = q0 + i0 + i;
          for (int64_t j = 0; j < nj; j++) {
            int64_t gj = r0 + j0 + j;
            if (gj == gi) continue;
            double approx = qn[i] + rn[j0 + j] - 2.0 * dot[i * nj + j];
            /* screen: the GEMM form is accurate to a few ulps of |q|^2 + |r|^2 */
            double slack = 1e-9 * (qn[i] + rn[j0 + j]) + 1e-300;
            if (approx - slack > bd[k - 1]) continue;
            double ex = rrt_sc_sqdist(q + (i0 + i) * d, r + (j0 + j) * d, d);
            topk_insert(bd, bi, k, ex, (int32_t)gj);
          }
        }
      }
    }
    free(dot);
  }
  rrt_dense_set_threads(blas_threads);
  free(rn);
  return st;
}

void rrt_sc_cpu_b_argmin(int64_t nl, int64_t c0, int m, const int64_t *kptr, const int32_t *kcol,
                         const double *kval, const int32_t *bfirst, const int32_t *bcnt,
                         const int32_t *bent_j, const double *bent_w, const int32_t *hfirst,
                         const int32_t *hcnt, const int32_t *hent_j, const double *hent_w,
                         const rrt_sc_rowset *kat_rows, const rrt_sc_kk *t1b_rows, double *best_v,
                         int64_t *best_i) {
  for (int j = 0; j < m; j++)
    best_v[j] = INFINITY, best_i[j] = INT64_MAX;
#pragma omp parallel if (nl >= RRT_SC_PAR_MIN)
  {
    double *kbg = calloc((size_t)m * 4, sizeof(double));
    double *kat = kbg + m, *bv = kbg + 2 * m, *sv = kbg + 3 * m;
    int64_t *bi = malloc((size_t)m * sizeof(int64_t));
    int32_t *touched = malloc((size_t)m * 4 * sizeof(int32_t));
    int32_t *slist = touched + m, *pend = touched + 2 * m, *klist = touched + 3 * m;
    unsigned char *mark = calloc((size_t)m * 3, 1), *smark = mark + m, *kmark = mark + 2 * m;
    int npend = 0; /* archetypes still without a zero-gradient cell in this chunk */
    for (int j = 0; j < m; j++)
      bv[j] = INFINITY, bi[j] = INT64_MAX;
    /* chunks of 64 cells handed out dynamically (a thread that is held up
     * on a shared machine does not hold up the others); the zero rule is
     * applied per chunk, whose cells are visited in ascending order, and the
     * argmin keeps the lowest index on ties, so the result does not depend
     * on which thread took which chunk */
    int64_t nchunks = (nl + 63) / 64;
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < nchunks * 64; i++) {
      if (i % 64 == 0)
        for (npend = 0; npend < m; npend++)
          pend[npend] = npend;
      if (i >= nl) continue;
      int ns = 0;
      int64_t gi = c0 + i;
      int nt = rrt_sc_sparse_row(kptr[i], kptr[i + 1], kcol, kval, bfirst, bcnt, bent_j, bent_w,
                                 mark, kbg, touched);
      /* s = (K Bg)_i T1b over the nonzeros, in touched order per entry */
      for (int t = 0; t < nt; t++) {
        int32_t l = touched[t];
        double kv = kbg[l];
        for (int64_t q = t1b_rows->ptr[l]; q < t1b_rows->ptr[l + 1]; q++) {
          int32_t j = t1b_rows->col[q];
          if (!smark[j]) smark[j] = 1, sv[j] = 0.0, slist[ns++] = j;
          sv[j] = sv[j] + kv * t1b_rows->val[q];
        }
      }
      /* K A^T row i = X_i H, in X-column order as in the CUDA kernel */
      int nk = 0;
      if (kat_rows)
        for (int64_t p = kat_rows->beg[i]; p < kat_rows->end[i]; p++) {
          int32_t j = kat_rows->col[p];
          kmark[j] = 1, kat[j] = kat_rows->val[p], klist[nk++] = j;
        }
      for (int64_t p = kat_rows ? kptr[i + 1] : kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = hfirst[c]; e < hfirst[c] + hcnt[c]; e++) {
          int32_t j = hent_j[e];
          if (!kmark[j]) kmark[j] = 1, kat[j] = 0.0, klist[nk++] = j;
          kat[j] = kat[j] + kval[p] * hent_w[e];
        }
      }
      for (int q = 0; q < ns; q++) {
        int32_t j = slist[q];
        double g = rrt_sc_grad(sv[j], kat[j]);
        if (rrt_sc_argmin_better(g, gi, bv[j], bi[j])) bv[j] = g, bi[j] = gi;
      }
      for (int u = 0; u < nk; u++) {
        int32_t j = klist[u];
        if (smark[j]) continue;
        double g = rrt_sc_grad(0.0, kat[j]);
        if (rrt_sc_argmin_better(g, gi, bv[j], bi[j])) bv[j] = g, bi[j] = gi;
      }
      for (int q = 0; q < npend;) { /* the first cell of the range where g_ij = 0 exactly */
        int32_t j = pend[q];
        if (smark[j] || kat[j] != 0.0) {
          q++;
          continue;
        }
        double g = rrt_sc_grad(0.0, 0.0);
        if (rrt_sc_argmin_better(g, gi, bv[j], bi[j])) bv[j] = g, bi[j] = gi;
        pend[q] = pend[--npend];
      }
      for (int u = 0; u < nk; u++)
        kat[klist[u]] = 0.0, kmark[klist[u]] = 0;
      for (int q = 0; q < ns; q++)
        smark[slist[q]] = 0;
      for (int t = 0; t < nt; t++)
        mark[touched[t]] = 0;
    }
#pragma omp critical
    for (int j = 0; j < m; j++)
      if (rrt_sc_argmin_better(bv[j], bi[j], best_v[j], best_i[j]))
        best_v[j] = bv[j], best_i[j] = bi[j];
    free(kbg);
    free(bi);
    free(touched);
    free(mark);
  }
}

/* Row r of X H, that of cell order[r] (rrt_sc_sparse_row's order and bits). */
typedef struct xh_arg {
  const int32_t *order;
  const int64_t *kptr;
  const int32_t *kcol;
  const double *kval;
  const int32_t *hfirst, *hcnt, *hent_j;
  const double *hent_w;
} xh_arg;

static int xh_row(const void *arg, int64_t r, unsigned char *mark, double *acc, int32_t *list) {
  const xh_arg *x = arg;
  int64_t i = x->order ? x->order[r] : r;
  return rrt_sc_sparse_row(x->kptr[i], x->kptr[i + 1], x->kcol, x->kval, x->hfirst, x->hcnt,
                           x->hent_j, x->hent_w, mark, acc, list);
}

rrt_status rrt_sc_cpu_xh_rows(int64_t nl, int m, const int32_t *order, const int64_t *kptr,
                              const int32_t *kcol, const double *kval, const int32_t *hfirst,
                              const int32_t *hcnt, const int32_t *hent_j, const double *hent_w,
                              int64_t max_nnz, rrt_sc_rowset *out) {
  const xh_arg x = {order, kptr, kcol, kval, hfirst, hcnt, hent_j, hent_w};
  rrt_sc_rowset r = {malloc(((size_t)nl + 1) * sizeof(int64_t)),
                     malloc(((size_t)nl + 1) * sizeof(int64_t)), NULL, NULL};
  int64_t *ptr = malloc(((size_t)nl + 1) * sizeof(int64_t)), cap = 0;
  rrt_status st = ptr && r.beg && r.end ? rrt_sc_cpu_rows(nl, m, nl >= RRT_SC_PAR_MIN, xh_row, &x,
                                                          max_nnz, ptr, &r.col, &r.val, &cap)
                                        : RRT_ERR_OUT_OF_MEMORY;
  for (int64_t q = 0; st == RRT_SUCCESS && q < nl; q++) {
    int64_t i = order ? order[q] : q;
    r.beg[i] = ptr[q], r.end[i] = ptr[q + 1];
  }
  free(ptr);
  if (st != RRT_SUCCESS) {
    rrt_sc_rowset_free(&r);
    return st;
  }
  *out = r;
  return RRT_SUCCESS;
}

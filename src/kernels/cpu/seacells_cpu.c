/* SEACells CPU kernels (see seacells_cpu.h). */
#include "kernels/cpu/seacells_cpu.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/seacells_math.h"

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
    rn[j] = cblas_ddot(d, r + j * d, 1, r + j * d, 1);
  int64_t ntiles = (nq + QT - 1) / QT;
  rrt_status st = RRT_SUCCESS;
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
        qn[i] = cblas_ddot(d, q + (i0 + i) * d, 1, q + (i0 + i) * d, 1);
      for (int64_t j0 = 0; j0 < nr; j0 += RT) {
        int64_t nj = nr - j0 < RT ? nr - j0 : RT;
        /* BLAS threads stay at one inside the OpenMP region (OpenBLAS
         * detects the parallel region), which is what we want here. */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ni, (int)nj, d, 1.0, q + i0 * d,
                    d, r + j0 * d, d, 0.0, dot, (int)nj);
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
  free(rn);
  return st;
}

void rrt_sc_cpu_a_solve(int64_t nl, int m, int fw_iter, int capa, const int64_t *kptr,
                        const int32_t *kcol, const double *kval, const int32_t *bfirst,
                        const int32_t *bcnt, const int32_t *bent_j, const double *bent_w,
                        const double *t1a, int first, int32_t *a_idx, double *a_w, int *a_nnz) {
#pragma omp parallel
  {
    double *t2 = malloc((size_t)m * 3 * sizeof(double));
    double *u = t2 + m, *a = t2 + 2 * m;
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < nl; i++) {
      /* t2 = row i of K B, summed over the K row in column order */
      for (int j = 0; j < m; j++)
        t2[j] = 0.0, u[j] = 0.0, a[j] = 0.0;
      for (int64_t p = kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = bfirst[c]; e < bfirst[c] + bcnt[c]; e++)
          t2[bent_j[e]] = t2[bent_j[e]] + kval[p] * bent_w[e];
      }
      /* u = T1a a for the current column (sparse a, ascending archetype) */
      if (!first) {
        for (int e = 0; e < a_nnz[i]; e++) {
          int l = a_idx[i * capa + e];
          double al = a_w[i * capa + e];
          a[l] = al;
          const double *row = t1a + (int64_t)l * m; /* T1a is symmetric bit for bit */
          for (int j = 0; j < m; j++)
            u[j] = u[j] + row[j] * al;
        }
      }
      for (int t = 0; t < fw_iter; t++) {
        int amin = 0;
        double gbest = rrt_sc_grad(u[0], t2[0]);
        for (int j = 1; j < m; j++) {
          double g = rrt_sc_grad(u[j], t2[j]);
          if (rrt_sc_argmin_better(g, j, gbest, amin)) gbest = g, amin = j;
        }
        double f = rrt_sc_fw_step(t);
        const double *row = t1a + (int64_t)amin * m;
        for (int j = 0; j < m; j++) {
          a[j] = rrt_sc_fw_move(a[j], f, j == amin);
          u[j] = f == 1.0 ? row[j] : u[j] + f * (row[j] - u[j]);
        }
      }
      int nz = 0;
      for (int j = 0; j < m && nz < capa; j++)
        if (a[j] != 0.0) {
          a_idx[i * capa + nz] = j;
          a_w[i * capa + nz] = a[j];
          nz++;
        }
      a_nnz[i] = nz;
    }
    free(t2);
  }
}

void rrt_sc_cpu_b_argmin(int64_t nl, int64_t c0, int m, const int64_t *kptr, const int32_t *kcol,
                         const double *kval, const int32_t *bfirst, const int32_t *bcnt,
                         const int32_t *bent_j, const double *bent_w, const int64_t *katptr,
                         const int32_t *katcol, const double *katval, const double *t1b,
                         double *best_v, int64_t *best_i) {
  for (int j = 0; j < m; j++)
    best_v[j] = INFINITY, best_i[j] = INT64_MAX;
#pragma omp parallel
  {
    double *kbg = malloc((size_t)m * 3 * sizeof(double));
    double *kat = kbg + m, *bv = kbg + 2 * m;
    int64_t *bi = malloc((size_t)m * sizeof(int64_t));
    int *touched = malloc((size_t)m * sizeof(int));
    char *mark = calloc((size_t)m, 1);
    for (int j = 0; j < m; j++)
      kat[j] = 0.0, bv[j] = INFINITY, bi[j] = INT64_MAX;
#pragma omp for schedule(dynamic, 16)
    for (int64_t i = 0; i < nl; i++) {
      int nt = 0;
      for (int64_t p = kptr[i]; p < kptr[i + 1]; p++) {
        int32_t c = kcol[p];
        for (int32_t e = bfirst[c]; e < bfirst[c] + bcnt[c]; e++) {
          int j = bent_j[e];
          if (!mark[j]) mark[j] = 1, kbg[j] = 0.0, touched[nt++] = j;
          kbg[j] = kbg[j] + kval[p] * bent_w[e];
        }
      }
      for (int64_t p = katptr[i]; p < katptr[i + 1]; p++)
        kat[katcol[p]] = katval[p];
      for (int j = 0; j < m; j++) {
        double s = 0.0;
        for (int t = 0; t < nt; t++)
          s = s + kbg[touched[t]] * t1b[(int64_t)touched[t] * m + j];
        double g = rrt_sc_grad(s, kat[j]);
        if (rrt_sc_argmin_better(g, c0 + i, bv[j], bi[j])) bv[j] = g, bi[j] = c0 + i;
      }
      for (int64_t p = katptr[i]; p < katptr[i + 1]; p++)
        kat[katcol[p]] = 0.0;
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

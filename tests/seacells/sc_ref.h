/* Dense serial SEACells reference for the tests: everything as n x n /
 * n x k dense matrices, written from the algorithm's definition (kNN with
 * (d2, index) order, bandwidth = distance to the (k/2)-th neighbour, union
 * kernel, K = M M, greedy CSSP, Frank-Wolfe A/B with 2/(t+2) steps, RSS as
 * the explicit Frobenius norm |M - M B A|). Small n only. */
#ifndef SC_REF_H
#define SC_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sc_ref {
  int n, m, iters, converged;
  int *arch, *assign;
  double rss[128];
} sc_ref;

static inline double ref_d2(const double *x, int d, int i, int j) {
  double s = 0;
  for (int k = 0; k < d; k++)
    s += (x[i * d + k] - x[j * d + k]) * (x[i * d + k] - x[j * d + k]);
  return s;
}

static inline double *ref_mm(const double *A, const double *B, int r, int q,
                             int c) { /* r x q * q x c */
  double *C = calloc((size_t)r * c, sizeof(double));
  for (int i = 0; i < r; i++)
    for (int l = 0; l < q; l++)
      if (A[i * q + l] != 0)
        for (int j = 0; j < c; j++)
          C[i * c + j] += A[i * q + l] * B[l * c + j];
  return C;
}

static inline double *ref_tr(const double *A, int r, int c) {
  double *T = malloc((size_t)r * c * sizeof(double));
  for (int i = 0; i < r; i++)
    for (int j = 0; j < c; j++)
      T[j * r + i] = A[i * c + j];
  return T;
}

static inline double ref_rss(const double *M, const double *B, const double *A, int n, int m) {
  double *MB = ref_mm(M, B, n, n, m), *R = ref_mm(MB, A, n, m, n), s = 0;
  for (int i = 0; i < n * n; i++)
    s += (M[i] - R[i]) * (M[i] - R[i]);
  free(MB), free(R);
  return sqrt(s);
}

/* A (m x n) update: gradient 2 (B^T K B A - B^T K), per column argmin. */
static inline void ref_update_a(const double *K, const double *B, double *A, int n, int m, int T,
                                int zero) {
  double *KB = ref_mm(K, B, n, n, m), *Bt = ref_tr(B, n, m), *t1 = ref_mm(Bt, KB, m, n, m);
  if (zero) memset(A, 0, sizeof(double) * n * m);
  for (int t = 0; t < T; t++) {
    double *t1A = ref_mm(t1, A, m, m, n), f = 2.0 / (t + 2.0);
    for (int i = 0; i < n; i++) {
      int best = 0;
      double gb = 2 * (t1A[i] - KB[i * m]);
      for (int j = 1; j < m; j++) {
        double g = 2 * (t1A[j * n + i] - KB[i * m + j]);
        if (g < gb) gb = g, best = j;
      }
      for (int j = 0; j < m; j++)
        A[j * n + i] += f * ((j == best) - A[j * n + i]);
    }
    free(t1A);
  }
  free(KB), free(Bt), free(t1);
}

/* B (n x m) update: gradient 2 (K B A A^T - K A^T), per column argmin. */
static inline void ref_update_b(const double *K, double *B, const double *A, int n, int m, int T) {
  double *At = ref_tr(A, m, n), *AAt = ref_mm(A, At, m, n, m), *KAt = ref_mm(K, At, n, n, m);
  for (int t = 0; t < T; t++) {
    double *KB = ref_mm(K, B, n, n, m), *G = ref_mm(KB, AAt, n, m, m), f = 2.0 / (t + 2.0);
    for (int j = 0; j < m; j++) {
      int best = 0;
      double gb = 2 * (G[j] - KAt[j]);
      for (int i = 1; i < n; i++) {
        double g = 2 * (G[i * m + j] - KAt[i * m + j]);
        if (g < gb) gb = g, best = i;
      }
      for (int i = 0; i < n; i++)
        B[i * m + j] += f * ((i == best) - B[i * m + j]);
    }
    free(KB), free(G);
  }
  free(At), free(AAt), free(KAt);
}

/* Greedy CSSP on a dense PSD K (Farahat et al.). */
static inline void ref_cssp(const double *K, int n, int m, int *arch) {
  double *f = calloc(n, sizeof(double)), *g = calloc(n, sizeof(double));
  double *W = calloc((size_t)m * n, sizeof(double)), *o = malloc(n * sizeof(double));
  char *chosen = calloc(n, 1);
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < n; c++)
      f[i] += K[c * n + i] * K[c * n + i];
    g[i] = K[i * n + i];
  }
  for (int j = 0; j < m; j++) {
    int p = -1;
    double bs = -INFINITY;
    for (int i = 0; i < n; i++) {
      double sc = (!chosen[i] && g[i] > 1e-12) ? f[i] / g[i] : -INFINITY;
      if (sc > bs) bs = sc, p = i;
    }
    arch[j] = p;
    chosen[p] = 1;
    for (int c = 0; c < n; c++) {
      o[c] = K[c * n + p];
      for (int r = 0; r < j; r++)
        o[c] -= W[r * n + p] * W[r * n + c];
    }
    double dp = o[p] > 0 ? o[p] : 0, s = sqrt(dp) > 1e-6 ? sqrt(dp) : 1e-6, on = 0;
    o[p] = dp;
    for (int c = 0; c < n; c++)
      o[c] /= s, on += o[c] * o[c];
    for (int i = 0; i < n; i++) {
      double ro = 0;
      for (int c = 0; c < n; c++)
        ro += K[i * n + c] * o[c];
      for (int r = 0; r < j; r++) {
        double dr = 0;
        for (int c = 0; c < n; c++)
          dr += W[r * n + c] * o[c];
        ro -= W[r * n + i] * dr;
      }
      f[i] += -2 * o[i] * ro + o[i] * o[i] * on;
      g[i] -= o[i] * o[i];
    }
    memcpy(W + (size_t)j * n, o, n * sizeof(double));
  }
  free(f), free(g), free(W), free(o), free(chosen);
}

/* Dense graph: kNN (nbr, nd: n x knn, (d2, index) order), bandwidths sig
 * (distance to the (knn/2)-th neighbour) and the union kernel M (n x n,
 * malloc'd, M_ii = 1). */
static inline double *ref_graph(const double *x, int n, int d, int knn, int *nbr, double *nd,
                                double *sig) {
  for (int i = 0; i < n; i++) {
    for (int e = 0; e < knn; e++)
      nd[i * knn + e] = INFINITY, nbr[i * knn + e] = n;
    for (int j = 0; j < n; j++) {
      if (j == i) continue;
      double dd = ref_d2(x, d, i, j);
      int p = knn;
      while (p > 0 &&
             (dd < nd[i * knn + p - 1] || (dd == nd[i * knn + p - 1] && j < nbr[i * knn + p - 1])))
        p--;
      if (p == knn) continue;
      for (int q = knn - 1; q > p; q--)
        nd[i * knn + q] = nd[i * knn + q - 1], nbr[i * knn + q] = nbr[i * knn + q - 1];
      nd[i * knn + p] = dd, nbr[i * knn + p] = j;
    }
    sig[i] = sqrt(nd[i * knn + (knn / 2 > 0 ? knn / 2 : 1) - 1]);
  }
  double *M = calloc((size_t)n * n, sizeof(double));
  for (int i = 0; i < n; i++) {
    M[i * n + i] = 1;
    for (int e = 0; e < knn; e++) {
      int j = nbr[i * knn + e];
      double v = nd[i * knn + e] <= 0 ? 1 : exp(-nd[i * knn + e] / (sig[i] * sig[j]));
      M[i * n + j] = M[j * n + i] = v;
    }
  }
  return M;
}

/* The whole run. arch_in: given archetypes, or NULL for CSSP. */
static inline void sc_reference(const double *x, int n, int d, int m, int knn, int fw, int min_iter,
                                int max_iter, double eps, const int *arch_in, sc_ref *out) {
  int *nbr = malloc((size_t)n * knn * sizeof(int));
  double *nd = malloc((size_t)n * knn * sizeof(double)), *sig = malloc(n * sizeof(double));
  double *M = ref_graph(x, n, d, knn, nbr, nd, sig);
  double *K = ref_mm(M, M, n, n, n);
  out->n = n, out->m = m;
  out->arch = malloc(m * sizeof(int));
  out->assign = malloc(n * sizeof(int));
  if (arch_in)
    memcpy(out->arch, arch_in, m * sizeof(int));
  else
    ref_cssp(K, n, m, out->arch);
  double *B = calloc((size_t)n * m, sizeof(double)), *A = calloc((size_t)m * n, sizeof(double));
  for (int j = 0; j < m; j++)
    B[out->arch[j] * m + j] = 1;
  ref_update_a(K, B, A, n, m, fw, 1);
  out->rss[0] = ref_rss(M, B, A, n, m);
  out->converged = 0;
  out->iters = 0;
  for (int t = 1; t <= max_iter && t < 128; t++) {
    ref_update_a(K, B, A, n, m, fw, 0);
    ref_update_b(K, B, A, n, m, fw);
    out->rss[t] = ref_rss(M, B, A, n, m);
    out->iters = t;
    if (t >= min_iter && fabs(out->rss[t - 1] - out->rss[t]) < eps * out->rss[0]) {
      out->converged = 1;
      break;
    }
  }
  for (int i = 0; i < n; i++) {
    int b = 0;
    for (int j = 1; j < m; j++)
      if (A[j * n + i] > A[b * n + i]) b = j;
    out->assign[i] = b;
  }
  free(nbr), free(nd), free(sig), free(M), free(K), free(B), free(A);
}

static inline void sc_ref_free(sc_ref *r) { free(r->arch), free(r->assign); }

/* Gaussian blobs: `centres` clusters in d dims, well separated when spread small. */
static inline double *sc_blobs(int n, int d, int centres, double spread, unsigned seed) {
  double *x = malloc((size_t)n * d * sizeof(double));
  unsigned long long st = seed * 2654435761ull + 1;
  for (int i = 0; i < n; i++) {
    int c = i % centres;
    for (int k = 0; k < d; k++) {
      double s = 0;
      for (int r = 0; r < 6; r++) { /* Irwin-Hall approximation of a normal */
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        s += (double)(st >> 11) / 9007199254740992.0;
      }
      x[i * d + k] = (k == c % d ? 10.0 * (1 + c / d) : 0.0) + spread * (s - 3.0);
    }
  }
  return x;
}

#endif

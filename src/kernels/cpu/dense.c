/* Dense products: OpenBLAS, or the loops that replace it (kernels/cpu/dense.h). */
#include "kernels/cpu/dense.h"

#if RINGRT_HAVE_BLAS
#include <cblas.h>

double rrt_dense_dot(int n, const double *x, const double *y) { return cblas_ddot(n, x, 1, y, 1); }

void rrt_dense_gram(int n, int m, int d, const double *a, const double *b, double *c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, d, 1.0, a, d, b, d, 0.0, c, m);
}

void rrt_dense_set_threads(int n) { openblas_set_num_threads(n); }

int rrt_dense_threads(void) { return openblas_get_num_threads(); }

#else

double rrt_dense_dot(int n, const double *x, const double *y) {
  double s = 0.0;
  for (int k = 0; k < n; k++)
    s += x[k] * y[k];
  return s;
}

void rrt_dense_gram(int n, int m, int d, const double *a, const double *b, double *c) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      c[(int64_t)i * m + j] = rrt_dense_dot(d, a + (int64_t)i * d, b + (int64_t)j * d);
}

void rrt_dense_set_threads(int n) { (void)n; }

int rrt_dense_threads(void) { return 1; }

#endif

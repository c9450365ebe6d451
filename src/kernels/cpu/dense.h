/* The few dense products of the CPU kernels, through OpenBLAS when the build
 * has it (RINGRT_HAVE_BLAS) and plain loops otherwise (RINGRT_BLAS=OFF or no
 * OpenBLAS: the minimal GPU node).
 *
 * Their callers only screen with them (the SEACells kNN recomputes every
 * survivor exactly), so a result never depends on which one ran nor on its
 * rounding: the loops are exact reference code, not tuned. */
#ifndef RRT_KERNELS_CPU_DENSE_H
#define RRT_KERNELS_CPU_DENSE_H

#include <stdint.h>

/** sum_k x[k] y[k] over n values. */
double rrt_dense_dot(int n, const double *x, const double *y);

/** c[i*m + j] = sum_k a[i*d + k] b[j*d + k] (row-major A (n x d) times B^T,
 *  B (m x d)): the Gram block of two sets of points. */
void rrt_dense_gram(int n, int m, int d, const double *a, const double *b, double *c);

/** Size the BLAS thread pool (a no-op without BLAS), and its size (1
 *  without BLAS). */
void rrt_dense_set_threads(int n);
int rrt_dense_threads(void);

#endif

/* CPU kernels of ILU(0) (see kernels/cpu/ilu0.h). Rows of one level are independent,
 * so a level is an OpenMP parallel loop; each row's arithmetic is sequential
 * in the serial IKJ order, which is what keeps the factors bitwise equal to
 * the serial factorisation. */
#include "kernels/cpu/ilu0.h"

#include <math.h>

#include "kernels/ilu0_math.h"

/* Below this many rows a level is not worth waking the thread team. */
#define RRT_ILU0_OMP_MIN_ROWS 512

void rrt_ilu0_cpu_factor_rows(const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f) {
  /* small levels: no parallel region at all (even a disabled one costs) */
  if (nrows < RRT_ILU0_OMP_MIN_ROWS) {
    for (int64_t t = 0; t < nrows; t++)
      rrt_ilu0_factor_row(rows[t], f);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < nrows; t++)
    rrt_ilu0_factor_row(rows[t], f);
}

/* The triangular solves, generated for f64 factor values (no suffix) and for
 * f32 ones (_f32, the factors_f32 option): the values are widened to f64 and
 * the arithmetic is the same f64 arithmetic in the same order. */
#define RRT_ILU0_CPU_SOLVES(SFX, VT)                                                               \
  static inline void lsolve_row##SFX(int32_t i, const rrt_ilu0_idx *lr, const int32_t *col,        \
                                     const VT *v, const double *r, double *y) {                    \
    double s = r[i];                                                                               \
    for (int64_t e = lr[2 * i]; e < lr[2 * i + 1]; e++)                                            \
      s = rrt_ilu0_update(s, (double)v[e], y[col[e]]);                                             \
    y[i] = s;                                                                                      \
  }                                                                                                \
                                                                                                   \
  void rrt_ilu0_cpu_lsolve_rows##SFX(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,   \
                                     const rrt_ilu0_idx *ur, const int32_t *col, const VT *v,      \
                                     const double *r, double *y) {                                 \
    (void)ur; /* the uniform (lr, ur) signature; L needs only lr */                                \
    if (nrows < RRT_ILU0_OMP_MIN_ROWS) {                                                           \
      for (int64_t t = 0; t < nrows; t++)                                                          \
        lsolve_row##SFX(rows[t], lr, col, v, r, y);                                                \
      return;                                                                                      \
    }                                                                                              \
    _Pragma("omp parallel for schedule(static)") for (int64_t t = 0; t < nrows; t++)               \
        lsolve_row##SFX(rows[t], lr, col, v, r, y);                                                \
  }                                                                                                \
                                                                                                   \
  static inline void usolve_row##SFX(int32_t i, const rrt_ilu0_idx *ur, const int32_t *col,        \
                                     const VT *v, const double *dinv, const double *y,             \
                                     double *z) {                                                  \
    int64_t d = ur[2 * i];                                                                         \
    double s = y[i];                                                                               \
    for (int64_t e = ur[2 * i + 1] - 1; e > d; e--)                                                \
      s = rrt_ilu0_update(s, (double)v[e], z[col[e]]);                                             \
    z[i] = rrt_ilu0_mul(s, dinv[i]);                                                               \
  }                                                                                                \
                                                                                                   \
  void rrt_ilu0_cpu_usolve_rows##SFX(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,   \
                                     const rrt_ilu0_idx *ur, const int32_t *col, const VT *v,      \
                                     const double *dinv, const double *y, double *z) {             \
    (void)lr;                                                                                      \
    if (nrows < RRT_ILU0_OMP_MIN_ROWS) {                                                           \
      for (int64_t t = 0; t < nrows; t++)                                                          \
        usolve_row##SFX(rows[t], ur, col, v, dinv, y, z);                                          \
      return;                                                                                      \
    }                                                                                              \
    _Pragma("omp parallel for schedule(static)") for (int64_t t = 0; t < nrows; t++)               \
        usolve_row##SFX(rows[t], ur, col, v, dinv, y, z);                                          \
  }                                                                                                \
                                                                                                   \
  /* Sequential sweeps over a row list (the whole rank in elimination order,                       \
   * or one coarse level; U lists in decreasing position). The row just                            \
   * solved is usually the last term of the next row (its neighbour in the                         \
   * order): take it from a register, so the chain from row to row does not                        \
   * go through a store and a reload. Same values, operations and order as                         \
   * the row functions above. */                                                                   \
  void rrt_ilu0_cpu_lsolve_seq##SFX(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,   \
                                    const int32_t *col, const VT *v, const double *r, double *y) { \
    int32_t prev = -1;                                                                             \
    double pv = 0.0;                                                                               \
    for (int64_t t = 0; t < nrows; t++) {                                                          \
      int32_t i = order[t];                                                                        \
      double s = r[i];                                                                             \
      for (int64_t e = lr[2 * i]; e < lr[2 * i + 1]; e++) {                                        \
        int32_t c = col[e];                                                                        \
        if (c == prev) {                                                                           \
          s = rrt_ilu0_update(s, (double)v[e], pv);                                                \
        } else {                                                                                   \
          s = rrt_ilu0_update(s, (double)v[e], y[c]);                                              \
        }                                                                                          \
      }                                                                                            \
      y[i] = s;                                                                                    \
      prev = i, pv = s;                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  void rrt_ilu0_cpu_usolve_seq##SFX(const int32_t *order, int64_t nrows, int reverse,              \
                                    const rrt_ilu0_idx *ur, const int32_t *col, const VT *v,       \
                                    const double *dinv, const double *y, double *z) {              \
    int32_t prev = -1;                                                                             \
    double pv = 0.0;                                                                               \
    for (int64_t t = 0; t < nrows; t++) {                                                          \
      int32_t i = order[reverse ? nrows - 1 - t : t];                                              \
      int64_t d = ur[2 * i];                                                                       \
      double s = y[i];                                                                             \
      for (int64_t e = ur[2 * i + 1] - 1; e > d; e--) {                                            \
        int32_t c = col[e];                                                                        \
        if (c == prev) {                                                                           \
          s = rrt_ilu0_update(s, (double)v[e], pv);                                                \
        } else {                                                                                   \
          s = rrt_ilu0_update(s, (double)v[e], z[c]);                                              \
        }                                                                                          \
      }                                                                                            \
      s = rrt_ilu0_mul(s, dinv[i]);                                                                \
      z[i] = s;                                                                                    \
      prev = i, pv = s;                                                                            \
    }                                                                                              \
  }

RRT_ILU0_CPU_SOLVES(, double)
RRT_ILU0_CPU_SOLVES(_f32, float)

/* One rank: both sweeps, the U sweep over the order from its end. */
void rrt_ilu0_cpu_apply_seq(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                            const rrt_ilu0_idx *ur, const int32_t *col, const double *v,
                            const double *dinv, const double *r, double *y, double *z) {
  rrt_ilu0_cpu_lsolve_seq(order, nrows, lr, col, v, r, y);
  rrt_ilu0_cpu_usolve_seq(order, nrows, 1, ur, col, v, dinv, y, z);
}

void rrt_ilu0_cpu_apply_seq_f32(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                                const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                                const double *dinv, const double *r, double *y, double *z) {
  rrt_ilu0_cpu_lsolve_seq_f32(order, nrows, lr, col, v, r, y);
  rrt_ilu0_cpu_usolve_seq_f32(order, nrows, 1, ur, col, v, dinv, y, z);
}

void rrt_ilu0_cpu_round_f32(int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur, const double *v,
                            float *vf, double *dinv) {
  for (int64_t e = 0; e < nval; e++)
    vf[e] = (float)v[e];
  for (int64_t i = 0; i < nloc; i++)
    dinv[i] = rrt_ilu0_div(1.0, (double)vf[ur[2 * i]]);
}

void rrt_ilu0_cpu_spmv(int64_t nrows, const int64_t *rowptr, const int32_t *col, const double *a,
                       const double *x, double *y) {
#pragma omp parallel for schedule(static) if (nrows >= RRT_ILU0_OMP_MIN_ROWS)
  for (int64_t i = 0; i < nrows; i++) {
    double s = 0.0;
    for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
      s = rrt_ilu0_madd(s, a[e], x[col[e]]);
    y[i] = s;
  }
}

void rrt_ilu0_cpu_axpby(int64_t n, double a, const double *x, double b, double *y) {
  if (b == 0.0) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++)
      y[i] = a * x[i];
  } else {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      double p = a * x[i], q = b * y[i];
      y[i] = p + q;
    }
  }
}

/* out[t] = x[t] . y over [lo, hi) for the K vectors of a group at once:
 * every x[t] streams alongside y, as the hardware prefetchers follow best.
 * (Finishing one vector's 8 KB chunk before the next, as this did before,
 * ran at 0.6x the bandwidth once the GMRES basis outgrew the cache: a 30-
 * vector restart cycle at n = 216000 took 58 ms against 48 now.) NL
 * running sums per vector, lane i % NL, added pairwise at the end: the
 * compiler keeps them in registers (one sum would be one long chain of
 * dependent adds), and the order depends on lo and hi only. */
#define RRT_CPU_MDOT_RANGE(K, NL)                                                                  \
  static void mdot_range##K(int64_t lo, int64_t hi, const double *const *x, const double *y,       \
                            double *out) {                                                         \
    double lane[K][NL] = {{0}};                                                                    \
    int64_t i = lo;                                                                                \
    for (; i + NL <= hi; i += NL)                                                                  \
      for (int t = 0; t < K; t++)                                                                  \
        for (int l = 0; l < NL; l++)                                                               \
          lane[t][l] += x[t][i + l] * y[i + l];                                                    \
    for (int t = 0; t < K; t++) {                                                                  \
      for (int64_t j = i; j < hi; j++)                                                             \
        lane[t][j - i] += x[t][j] * y[j];                                                          \
      for (int w = NL / 2; w >= 1; w /= 2)                                                         \
        for (int l = 0; l < w; l++)                                                                \
          lane[t][l] += lane[t][l + w];                                                            \
      out[t] = lane[t][0];                                                                         \
    }                                                                                              \
  }
/* fewer vectors, more lanes: about eight running sums in all */
RRT_CPU_MDOT_RANGE(1, 8)
RRT_CPU_MDOT_RANGE(2, 4)
RRT_CPU_MDOT_RANGE(3, 2)
RRT_CPU_MDOT_RANGE(4, 2)
_Static_assert(RRT_VEC_GROUP == 4, "mdot_range has a variant per group size up to 4");

static void mdot_range(int64_t lo, int64_t hi, const rrt_vec_group *g, const double *y,
                       double *out) {
  const double *const *x = g->x;
  switch (g->k) {
  case 1: mdot_range1(lo, hi, x, y, out); break;
  case 2: mdot_range2(lo, hi, x, y, out); break;
  case 3: mdot_range3(lo, hi, x, y, out); break;
  default: mdot_range4(lo, hi, x, y, out); break;
  }
}

enum { CPU_DOT_BLOCKS = 64 };

/* Fixed blocks (at most CPU_DOT_BLOCKS, at least 8192 elements) summed in
 * block order: the result depends on n only, not on the thread count. */
void rrt_ilu0_cpu_mdot(int64_t n, const rrt_vec_group *g, const double *y, double *out) {
  int64_t bs = (n + CPU_DOT_BLOCKS - 1) / CPU_DOT_BLOCKS;
  if (bs < 8192) bs = 8192;
  int64_t nb = (n + bs - 1) / bs;
  double part[CPU_DOT_BLOCKS][RRT_VEC_GROUP];
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t b = 0; b < nb; b++)
    mdot_range(b * bs, n < (b + 1) * bs ? n : (b + 1) * bs, g, y, part[b]);
  for (int t = 0; t < g->k; t++) {
    out[t] = 0.0;
    for (int64_t b = 0; b < nb; b++)
      out[t] += part[b][t];
  }
}

double rrt_ilu0_cpu_dot(int64_t n, const double *x, const double *y) {
  rrt_vec_group g = {{x}, {1.0}, 1};
  double out;
  rrt_ilu0_cpu_mdot(n, &g, y, &out);
  return out;
}

/* Each thread works on its own copy of the group (firstprivate), a local
 * the compiler keeps in registers: through the pointer, a store to y could
 * alias *g, so x[t] and a[t] were reloaded per element and the loop stayed
 * scalar. The full group, the case GMRES calls most, also gets a constant
 * k, so its loop is unrolled over t and vectorised over i. */
void rrt_ilu0_cpu_maxpy(int64_t n, const rrt_vec_group *g, double *y) {
  rrt_vec_group grp = *g;
  if (grp.k == RRT_VEC_GROUP) {
#pragma omp parallel for schedule(static) firstprivate(grp) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
      grp.k = RRT_VEC_GROUP;
      y[i] = rrt_ilu0_maxpy_elem(y[i], &grp, i);
    }
  } else {
#pragma omp parallel for schedule(static) firstprivate(grp) if (n > 65536)
    for (int64_t i = 0; i < n; i++)
      y[i] = rrt_ilu0_maxpy_elem(y[i], &grp, i);
  }
}

void rrt_ilu0_cpu_gather(const int32_t *idx, int64_t n, const double *src, double *buf) {
  for (int64_t t = 0; t < n; t++)
    buf[t] = src[idx[t]];
}

void rrt_ilu0_cpu_scatter(const int32_t *idx, int64_t n, const double *buf, double *dst) {
  for (int64_t t = 0; t < n; t++)
    dst[idx[t]] = buf[t];
}

/* Whole-rank sweeps in elimination order, one thread: for a single rank with
 * small levels this beats level scheduling (rows are visited in memory
 * order instead of level by level), with the same per-row arithmetic. */
void rrt_ilu0_cpu_factor_seq(const int32_t *order, int64_t nrows, rrt_ilu0_factor_args f) {
  for (int64_t t = 0; t < nrows; t++)
    rrt_ilu0_factor_row(order[t], f);
}

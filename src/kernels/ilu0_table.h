/* Internal: the kernel table of the sparse / ILU(0) / Krylov workload.
 *
 * One table per backend (cpu: the C kernels of kernels/cpu/ilu0.h; cuda and
 * emu: the nvcc and the emulator builds of kernels/cuda/ilu0.cu), chosen
 * once when a matrix is created and kept on its handle, so no call site asks
 * which backend it runs on. Every launch entry takes the stream first and
 * returns rrt_status (the cpu entries run synchronously and ignore the
 * stream). Index conventions are those of kernels/cpu/ilu0.h.
 *
 * A NULL entry is a capability the backend does not have: level_sweep NULL
 * means the level analysis runs on the host (sched/ilu0_levels.h); the *_seq
 * entries (host-sequential sweeps in elimination order, which beat level
 * scheduling for small levels on a CPU) exist only where the kernels are
 * plain host code. */
#ifndef RRT_KERNELS_ILU0_TABLE_H
#define RRT_KERNELS_ILU0_TABLE_H

#include <stdint.h>

#include "comm/device.h"
#include "kernels/ilu0_math.h" /* rrt_vec_group, rrt_ilu0_chain */
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Blocks of a device partial dot product (its sum runs on the host in block order). */
#define RRT_ILU0_DOT_BLOCKS 64

typedef struct rrt_ilu0_kernels {
  const char *name; /* "cpu", "cuda", "emu" */

  /* ---- launches: one level, one vector operation ---- */
  /** Factor the listed rows (one level): IKJ updates, pivot boost, dinv. */
  rrt_status (*factor_rows)(rrt_stream s, const int32_t *rows, int64_t nrows,
                            rrt_ilu0_factor_args f);
  /** y[i] = r[i] - sum_L l_ik y[k] for the listed rows, f64 and f32 factor values. */
  rrt_status (*lsolve_rows)(rrt_stream s, const int32_t *rows, int64_t nrows,
                            const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                            const double *v, const double *r, double *y);
  rrt_status (*lsolve_rows_f32)(rrt_stream s, const int32_t *rows, int64_t nrows,
                                const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                                const float *v, const double *r, double *y);
  /** z[i] = (y[i] - sum_U u_ij z[j]) * dinv[i] for the listed rows. */
  rrt_status (*usolve_rows)(rrt_stream s, const int32_t *rows, int64_t nrows,
                            const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                            const double *v, const double *dinv, const double *y, double *z);
  rrt_status (*usolve_rows_f32)(rrt_stream s, const int32_t *rows, int64_t nrows,
                                const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                                const float *v, const double *dinv, const double *y, double *z);
  /** factors_f32: vf = fl32(v) for nval values, dinv[i] = 1 / vf[ur[2 * i]]. */
  rrt_status (*round_f32)(rrt_stream s, int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur,
                          const double *v, float *vf, double *dinv);
  /** y[i] = sum a[e] x[col[e]], i < nrows (x extended). */
  rrt_status (*spmv)(rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,
                     const double *a, const double *x, double *y);
  /** buf[t] = src[idx[t]] and dst[idx[t]] = buf[t] (halo packing; the
   *  signature of rrt_halo_pack_fn in comm/halo.h). */
  rrt_status (*gather)(rrt_stream s, const int32_t *idx, int64_t n, const double *src, double *buf);
  rrt_status (*scatter)(rrt_stream s, const int32_t *idx, int64_t n, const double *buf,
                        double *dst);
  /** y = a x + b y (b == 0: y is overwritten, whatever it held). */
  rrt_status (*axpby)(rrt_stream s, int64_t n, double a, const double *x, double b, double *y);
  int dot_max_blocks; /* at most this many partials per vector (cpu: 1, one threaded sum) */
  /** partial[t * nblocks + b] (b < nblocks) sum to g.x[t] . y in a fixed
   *  order, t < g.k: a group's dot products in one pass over y. */
  rrt_status (*mdot_partial)(rrt_stream s, int64_t n, rrt_vec_group g, const double *y,
                             double *partial, int nblocks);
  /** y += sum_t g.a[t] g.x[t] (rrt_ilu0_maxpy_elem: bitwise the same on every backend). */
  rrt_status (*maxpy)(rrt_stream s, int64_t n, rrt_vec_group g, double *y);
  /** One device sweep of the level analysis (upper < 0: commit), or NULL. */
  rrt_status (*level_sweep)(rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,
                            const int64_t *pos, int upper, int32_t *level, int *changed);

  /* ---- sync-free sweeps: the rows of a run of consecutive levels, listed
   * level by level, in one launch; each row waits for the local rows it
   * reads (c.done), then runs the arithmetic of the *_rows entry, so the
   * results are bitwise those of one launch per level. NULL: a launch per
   * level. ---- */
  rrt_status (*factor_chain)(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                             rrt_ilu0_factor_args f);
  rrt_status (*lsolve_chain)(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                             const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                             const double *v, const double *r, double *y);
  rrt_status (*lsolve_chain_f32)(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                                 const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                                 const float *v, const double *r, double *y);
  rrt_status (*usolve_chain)(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                             const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                             const double *v, const double *dinv, const double *y, double *z);
  rrt_status (*usolve_chain_f32)(rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,
                                 const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,
                                 const float *v, const double *dinv, const double *y, double *z);

  /* ---- host-sequential sweeps (NULL where kernels are launches) ---- */
  void (*factor_seq)(const int32_t *order, int64_t nrows, rrt_ilu0_factor_args f);
  void (*lsolve_seq)(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                     const int32_t *col, const double *v, const double *r, double *y);
  void (*lsolve_seq_f32)(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                         const int32_t *col, const float *v, const double *r, double *y);
  void (*usolve_seq)(const int32_t *order, int64_t nrows, int reverse, const rrt_ilu0_idx *ur,
                     const int32_t *col, const double *v, const double *dinv, const double *y,
                     double *z);
  void (*usolve_seq_f32)(const int32_t *order, int64_t nrows, int reverse, const rrt_ilu0_idx *ur,
                         const int32_t *col, const float *v, const double *dinv, const double *y,
                         double *z);
  void (*apply_seq)(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                    const rrt_ilu0_idx *ur, const int32_t *col, const double *v, const double *dinv,
                    const double *r, double *y, double *z);
  void (*apply_seq_f32)(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                        const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                        const double *dinv, const double *r, double *y, double *z);
} rrt_ilu0_kernels;

/** The table of a resolved backend (RRT_BACKEND_CPU, _CUDA, _EMU), or NULL
 *  when this build has none for it (cuda without CUDA). */
const rrt_ilu0_kernels *rrt_ilu0_kernels_for(rrt_backend backend);

#ifdef __cplusplus
}
#endif
#endif

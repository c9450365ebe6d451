/* The kernel tables of the sparse / ILU(0) / Krylov workload (see
 * ilu0_table.h): the cpu table adapts the C kernels to the launch
 * signature; the cuda and emu tables are the two builds of the wrappers in
 * kernels/cuda/ilu0.cu, named here once instead of at every call. */
#include "kernels/ilu0_table.h"

#include "kernels/cpu/ilu0.h"

/* ---- cpu: synchronous C kernels ------------------------------------------- */

static rrt_status cpu_factor_rows(rrt_stream s, const int32_t *rows, int64_t nrows,
                                  rrt_ilu0_factor_args f) {
  (void)s;
  rrt_ilu0_cpu_factor_rows(rows, nrows, f);
  return RRT_SUCCESS;
}

static rrt_status cpu_lsolve_rows(rrt_stream s, const int32_t *rows, int64_t nrows,
                                  const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
                                  const int32_t *col, const double *v, const double *r, double *y) {
  (void)s;
  rrt_ilu0_cpu_lsolve_rows(rows, nrows, lr, ur, col, v, r, y);
  return RRT_SUCCESS;
}

static rrt_status cpu_lsolve_rows_f32(rrt_stream s, const int32_t *rows, int64_t nrows,
                                      const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
                                      const int32_t *col, const float *v, const double *r,
                                      double *y) {
  (void)s;
  rrt_ilu0_cpu_lsolve_rows_f32(rows, nrows, lr, ur, col, v, r, y);
  return RRT_SUCCESS;
}

static rrt_status cpu_usolve_rows(rrt_stream s, const int32_t *rows, int64_t nrows,
                                  const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
                                  const int32_t *col, const double *v, const double *dinv,
                                  const double *y, double *z) {
  (void)s;
  rrt_ilu0_cpu_usolve_rows(rows, nrows, lr, ur, col, v, dinv, y, z);
  return RRT_SUCCESS;
}

static rrt_status cpu_usolve_rows_f32(rrt_stream s, const int32_t *rows, int64_t nrows,
                                      const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur,
                                      const int32_t *col, const float *v, const double *dinv,
                                      const double *y, double *z) {
  (void)s;
  rrt_ilu0_cpu_usolve_rows_f32(rows, nrows, lr, ur, col, v, dinv, y, z);
  return RRT_SUCCESS;
}

static rrt_status cpu_round_f32(rrt_stream s, int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur,
                                const double *v, float *vf, double *dinv) {
  (void)s;
  rrt_ilu0_cpu_round_f32(nval, nloc, ur, v, vf, dinv);
  return RRT_SUCCESS;
}

static rrt_status cpu_spmv(rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,
                           const double *a, const double *x, double *y) {
  (void)s;
  rrt_ilu0_cpu_spmv(nrows, rowptr, col, a, x, y);
  return RRT_SUCCESS;
}

static rrt_status cpu_gather(rrt_stream s, const int32_t *idx, int64_t n, const double *src,
                             double *buf) {
  (void)s;
  rrt_ilu0_cpu_gather(idx, n, src, buf);
  return RRT_SUCCESS;
}

static rrt_status cpu_scatter(rrt_stream s, const int32_t *idx, int64_t n, const double *buf,
                              double *dst) {
  (void)s;
  rrt_ilu0_cpu_scatter(idx, n, buf, dst);
  return RRT_SUCCESS;
}

static rrt_status cpu_axpby(rrt_stream s, int64_t n, double a, const double *x, double b,
                            double *y) {
  (void)s;
  rrt_ilu0_cpu_axpby(n, a, x, b, y);
  return RRT_SUCCESS;
}

static rrt_status cpu_mdot_partial(rrt_stream s, int64_t n, rrt_vec_group g, const double *y,
                                   double *partial, int nblocks) {
  (void)s, (void)nblocks;
  rrt_ilu0_cpu_mdot(n, &g, y, partial); /* one partial per vector */
  return RRT_SUCCESS;
}

static rrt_status cpu_maxpy(rrt_stream s, int64_t n, rrt_vec_group g, double *y) {
  (void)s;
  rrt_ilu0_cpu_maxpy(n, &g, y);
  return RRT_SUCCESS;
}

static const rrt_ilu0_kernels rrt_ilu0_kernels_cpu = {
    .name = "cpu",
    .factor_rows = cpu_factor_rows,
    .lsolve_rows = cpu_lsolve_rows,
    .lsolve_rows_f32 = cpu_lsolve_rows_f32,
    .usolve_rows = cpu_usolve_rows,
    .usolve_rows_f32 = cpu_usolve_rows_f32,
    .round_f32 = cpu_round_f32,
    .spmv = cpu_spmv,
    .gather = cpu_gather,
    .scatter = cpu_scatter,
    .axpby = cpu_axpby,
    .dot_max_blocks = 1,
    .mdot_partial = cpu_mdot_partial,
    .maxpy = cpu_maxpy,
    .level_sweep = NULL, /* the host sweep of sched/ilu0_levels.h */
    .factor_seq = rrt_ilu0_cpu_factor_seq,
    .lsolve_seq = rrt_ilu0_cpu_lsolve_seq,
    .lsolve_seq_f32 = rrt_ilu0_cpu_lsolve_seq_f32,
    .usolve_seq = rrt_ilu0_cpu_usolve_seq,
    .usolve_seq_f32 = rrt_ilu0_cpu_usolve_seq_f32,
    .apply_seq = rrt_ilu0_cpu_apply_seq,
    .apply_seq_f32 = rrt_ilu0_cpu_apply_seq_f32,
};

/* ---- cuda and emu: the two builds of kernels/cuda/ilu0.cu ----------------- */

/* Declares name##_emu and name##_cuda for every wrapper. */
#define RRT_ILU0_KERNEL_LIST(X)                                                                    \
  X(rrt_k_ilu0_factor_rows,                                                                        \
    (rrt_stream s, const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f))                    \
  X(rrt_k_ilu0_lsolve_rows,                                                                        \
    (rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,                     \
     const rrt_ilu0_idx *ur, const int32_t *col, const double *v, const double *r, double *y))     \
  X(rrt_k_ilu0_usolve_rows, (rrt_stream s, const int32_t *rows, int64_t nrows,                     \
                             const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,   \
                             const double *v, const double *dinv, const double *y, double *z))     \
  X(rrt_k_ilu0_lsolve_rows_f32,                                                                    \
    (rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,                     \
     const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *r, double *y))      \
  X(rrt_k_ilu0_usolve_rows_f32,                                                                    \
    (rrt_stream s, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,                     \
     const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *dinv,               \
     const double *y, double *z))                                                                  \
  X(rrt_k_ilu0_round_f32, (rrt_stream s, int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur,       \
                           const double *v, float *vf, double *dinv))                              \
  X(rrt_k_ilu0_spmv, (rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,      \
                      const double *a, const double *x, double *y))                                \
  X(rrt_k_ilu0_gather,                                                                             \
    (rrt_stream s, const int32_t *idx, int64_t n, const double *src, double *buf))                 \
  X(rrt_k_ilu0_scatter,                                                                            \
    (rrt_stream s, const int32_t *idx, int64_t n, const double *buf, double *dst))                 \
  X(rrt_k_ilu0_axpby, (rrt_stream s, int64_t n, double a, const double *x, double b, double *y))   \
  X(rrt_k_ilu0_mdot_partial,                                                                       \
    (rrt_stream s, int64_t n, rrt_vec_group g, const double *y, double *partial, int nblocks))     \
  X(rrt_k_ilu0_maxpy, (rrt_stream s, int64_t n, rrt_vec_group g, double *y))                       \
  X(rrt_k_ilu0_level_sweep,                                                                        \
    (rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col, const int64_t *pos,   \
     int upper, int32_t *level, int *changed))                                                     \
  X(rrt_k_ilu0_factor_chain,                                                                       \
    (rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f))  \
  X(rrt_k_ilu0_lsolve_chain,                                                                       \
    (rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,   \
     const rrt_ilu0_idx *ur, const int32_t *col, const double *v, const double *r, double *y))     \
  X(rrt_k_ilu0_lsolve_chain_f32,                                                                   \
    (rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,   \
     const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *r, double *y))      \
  X(rrt_k_ilu0_usolve_chain, (rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows,  \
                              const rrt_ilu0_idx *lr, const rrt_ilu0_idx *ur, const int32_t *col,  \
                              const double *v, const double *dinv, const double *y, double *z))    \
  X(rrt_k_ilu0_usolve_chain_f32,                                                                   \
    (rrt_stream s, rrt_ilu0_chain c, const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,   \
     const rrt_ilu0_idx *ur, const int32_t *col, const float *v, const double *dinv,               \
     const double *y, double *z))

RRT_ILU0_KERNEL_LIST(RRT_DECLARE_KERNEL)

/* A launch table of one build (SFX: _emu or _cuda): sync-free sweeps, no host-sequential ones. */
#define RRT_ILU0_LAUNCH_TABLE(NAME, SFX)                                                           \
  {                                                                                                \
    .name = NAME, .factor_rows = rrt_k_ilu0_factor_rows##SFX,                                      \
    .lsolve_rows = rrt_k_ilu0_lsolve_rows##SFX,                                                    \
    .lsolve_rows_f32 = rrt_k_ilu0_lsolve_rows_f32##SFX,                                            \
    .usolve_rows = rrt_k_ilu0_usolve_rows##SFX,                                                    \
    .usolve_rows_f32 = rrt_k_ilu0_usolve_rows_f32##SFX, .round_f32 = rrt_k_ilu0_round_f32##SFX,    \
    .spmv = rrt_k_ilu0_spmv##SFX, .gather = rrt_k_ilu0_gather##SFX,                                \
    .scatter = rrt_k_ilu0_scatter##SFX, .axpby = rrt_k_ilu0_axpby##SFX,                            \
    .dot_max_blocks = RRT_ILU0_DOT_BLOCKS, .mdot_partial = rrt_k_ilu0_mdot_partial##SFX,           \
    .maxpy = rrt_k_ilu0_maxpy##SFX, .level_sweep = rrt_k_ilu0_level_sweep##SFX,                    \
    .factor_chain = rrt_k_ilu0_factor_chain##SFX, .lsolve_chain = rrt_k_ilu0_lsolve_chain##SFX,    \
    .lsolve_chain_f32 = rrt_k_ilu0_lsolve_chain_f32##SFX,                                          \
    .usolve_chain = rrt_k_ilu0_usolve_chain##SFX,                                                  \
    .usolve_chain_f32 = rrt_k_ilu0_usolve_chain_f32##SFX,                                          \
  }

static const rrt_ilu0_kernels rrt_ilu0_kernels_emu = RRT_ILU0_LAUNCH_TABLE("emu", _emu);
#if RINGRT_HAVE_CUDA
static const rrt_ilu0_kernels rrt_ilu0_kernels_cuda = RRT_ILU0_LAUNCH_TABLE("cuda", _cuda);
#endif

const rrt_ilu0_kernels *rrt_ilu0_kernels_for(rrt_backend backend) {
  switch (backend) {
  case RRT_BACKEND_CPU: return &rrt_ilu0_kernels_cpu;
  case RRT_BACKEND_EMU: return &rrt_ilu0_kernels_emu;
  case RRT_BACKEND_CUDA:
#if RINGRT_HAVE_CUDA
    return &rrt_ilu0_kernels_cuda;
#else
    return NULL;
#endif
  default: return NULL;
  }
}

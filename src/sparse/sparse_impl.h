/* Internal: the distributed CSR behind rrt_sparse_t, the halo exchange
 * machinery shared by SpMV, ILU(0) factorisation and the triangular solves,
 * and the backend dispatch of the ILU(0) kernels. */
#ifndef RRT_SPARSE_SPARSE_IMPL_H
#define RRT_SPARSE_SPARSE_IMPL_H

#include <stdint.h>

#include "comm/ctx.h"
#include "comm/device.h"
#include "kernels/cpu/ilu0.h"
#include "ringrt/ilu.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"
#include "sched/ilu0_levels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernels: nvcc / emulator builds of src/kernels/cuda/ilu0.cu ---------- */
RRT_DECLARE_KERNEL(rrt_k_ilu0_factor_rows,
                   (rrt_stream s, const int32_t *rows, int64_t nrows, const int64_t *lr,
                    const int64_t *ur, const int32_t *piv, const int64_t *pair_ptr,
                    const int32_t *pair_dst, const int32_t *pair_src, const double *a,
                    const int32_t *fperm, double *v, double *dinv, int boost, double tol,
                    double value))
RRT_DECLARE_KERNEL(rrt_k_ilu0_lsolve_rows,
                   (rrt_stream s, const int32_t *rows, int64_t nrows, const int64_t *lr,
                    const int64_t *ur, const int32_t *col, const double *v, const double *r,
                    double *y))
RRT_DECLARE_KERNEL(rrt_k_ilu0_usolve_rows,
                   (rrt_stream s, const int32_t *rows, int64_t nrows, const int64_t *lr,
                    const int64_t *ur, const int32_t *col, const double *v, const double *dinv,
                    const double *y, double *z))
RRT_DECLARE_KERNEL(rrt_k_ilu0_lsolve_rows_f32,
                   (rrt_stream s, const int32_t *rows, int64_t nrows, const int64_t *lr,
                    const int64_t *ur, const int32_t *col, const float *v, const double *r,
                    double *y))
RRT_DECLARE_KERNEL(rrt_k_ilu0_usolve_rows_f32,
                   (rrt_stream s, const int32_t *rows, int64_t nrows, const int64_t *lr,
                    const int64_t *ur, const int32_t *col, const float *v, const double *dinv,
                    const double *y, double *z))
RRT_DECLARE_KERNEL(rrt_k_ilu0_round_f32,
                   (rrt_stream s, int64_t nval, int64_t nloc, const int64_t *ur, const double *v,
                    float *vf, double *dinv))
RRT_DECLARE_KERNEL(rrt_k_ilu0_spmv,
                   (rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,
                    const double *a, const double *x, double *y))
RRT_DECLARE_KERNEL(rrt_k_ilu0_gather,
                   (rrt_stream s, const int32_t *idx, int64_t n, const double *src, double *buf))
RRT_DECLARE_KERNEL(rrt_k_ilu0_scatter,
                   (rrt_stream s, const int32_t *idx, int64_t n, const double *buf, double *dst))
RRT_DECLARE_KERNEL(rrt_k_ilu0_axpby,
                   (rrt_stream s, int64_t n, double a, const double *x, double b, double *y))
RRT_DECLARE_KERNEL(rrt_k_ilu0_dot_partial, (rrt_stream s, int64_t n, const double *x,
                                            const double *y, double *partial, int nblocks))
RRT_DECLARE_KERNEL(rrt_k_ilu0_level_sweep,
                   (rrt_stream s, int64_t nrows, const int64_t *rowptr, const int32_t *col,
                    const int64_t *pos, int upper, int32_t *level, int *changed))

/** Blocks of the partial dot product (its sum runs on the host in block order). */
#define RRT_ILU0_DOT_BLOCKS 64

/* ---- halo exchange ----------------------------------------------------------- */

/* A plan of messages in levels (level 0 when unleveled): sends gather
 * src[send.idx] into a buffer, receives scatter into dst[recv.idx]. One
 * rrt_p2p_group per level carries that level's sends and receives; a
 * level's receives are waited for only before the level that first needs
 * them (need[l]). */
typedef struct rrt_halo {
  rrt_msg_plan send, recv;
  int nlev;                 /* levels 0..nlev */
  int *send_lev, *recv_lev; /* nlev + 2: message ranges per level */
  int *need;                /* nlev + 1: level before which level l's receives are needed */
  int32_t *d_send_idx, *d_recv_idx;
  double *d_send_buf, *d_recv_buf;
  rrt_request_t *req;  /* nlev + 1 outstanding requests */
  rrt_request_t *sreq; /* after rrt_halo_begin: the sends, apart from the receives */
  int lo;              /* levels below lo have no receive left to wait for */
  int preposted;       /* rrt_halo_begin posted every level's receives */
} rrt_halo;

/** Build the device side of a halo from two host plans (taken over). need
 *  may be NULL (every level's receives are needed at the next level). */
rrt_status rrt_halo_init(rrt_ctx_t ctx, rrt_halo *h, rrt_msg_plan *send, rrt_msg_plan *recv,
                         int nlev, const int *need);
void rrt_halo_free(rrt_ctx_t ctx, rrt_halo *h);
/** Post the receives of every level now (MPI transports only: NCCL would
 *  serialise them before the sends). Lets a level wait for messages of the
 *  same level number (need[l] == l), which coarse levels need. */
rrt_status rrt_halo_begin(rrt_ctx_t ctx, rrt_halo *h);
/** Level l is computed: gather and post its messages (src: source array). */
rrt_status rrt_halo_post(rrt_ctx_t ctx, rrt_halo *h, int level, const double *src);
/** Before computing level l: wait for the receives needed there, scatter into dst. */
rrt_status rrt_halo_wait_needed(rrt_ctx_t ctx, rrt_halo *h, int level, double *dst);
/** Wait for everything outstanding (sends too), scatter remaining receives. */
rrt_status rrt_halo_wait_all(rrt_ctx_t ctx, rrt_halo *h, double *dst);

/* ---- the distributed CSR ------------------------------------------------------- */

struct rrt_sparse {
  rrt_ctx_t ctx;
  int rank, size;
  int64_t n, row_begin, nloc, nnz, nnz_global;
  int64_t *offsets; /* size + 1 row-block offsets */
  /* host copy of the local rows */
  int64_t *rowptr, *col;
  double *val;
  /* extended columns: < nloc local, nloc + g for ghost g (sorted by global) */
  int64_t nghost;
  int64_t *ghost; /* global index of each ghost */
  int32_t *ghost_owner;
  int32_t *col_ext; /* host, nnz */
  /* backend copies for SpMV */
  int64_t *d_rowptr;
  int32_t *d_col_ext;
  double *d_val;
  double *d_xext; /* nloc + nghost */
  rrt_halo halo;  /* all ghosts, level 0 */
  double spmv_flops;
};

/** Extended index of global column g for A (local, ghost, or -1). */
int64_t rrt_sparse_ext_index(const struct rrt_sparse *A, int64_t g);

/** Backend vector helpers used by the solvers. */
rrt_status rrt_vec_copy(rrt_ctx_t ctx, double *dst, const double *src, int64_t n);
rrt_status rrt_vec_axpby(rrt_ctx_t ctx, int64_t n, double a, const double *x, double b, double *y);
/** Global dot product (allreduce over ranks). */
rrt_status rrt_vec_dot(rrt_ctx_t ctx, int64_t n, const double *x, const double *y, double *out);

/* ---- kernel dispatch: cpu calls C directly, cuda/emu the .cu wrappers ---------- */
static inline int rrt_ilu_is_cpu(rrt_ctx_t ctx) { return ctx->backend == RRT_BACKEND_CPU; }

#define RRT_ILU_DISPATCH(ctx, cpu_call, kname, ...)                                                \
  (rrt_ilu_is_cpu(ctx) ? ((cpu_call), RRT_SUCCESS)                                                 \
                       : RRT_KCALL((ctx)->dev, kname, (ctx)->compute_stream, __VA_ARGS__))

#ifdef __cplusplus
}
#endif
#endif


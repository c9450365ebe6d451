/* ILU(0) apply, z = U^-1 L^-1 r: the forward (L, unit diagonal) and the
 * backward (U) triangular solves over the same level schedule as the
 * factorisation, solved rows sent as soon as their level is done. */
#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/user_stream.h"
#include "ilu/handle.h"
#include "ringrt/trace.h"

/* One schedule level of the forward (L) and backward (U) solves: f64 or
 * f32 factor values; coarse levels as sequential sweeps (see factor.c). */
static rrt_status lsolve_level(rrt_ilu0_t M, const int32_t *rows, int64_t n, const double *r,
                               rrt_ilu0_chain c) {
  const rrt_ilu0_kernels *k = M->k;
  rrt_stream s = M->ctx->compute_stream;
  if (M->chain && M->d_vf)
    return k->lsolve_chain_f32(s, c, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, r, M->d_y);
  if (M->chain)
    return k->lsolve_chain(s, c, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, r, M->d_y);
  if (M->coarse[0] > 1) {
    if (M->d_vf)
      k->lsolve_seq_f32(rows, n, M->d_lr, M->d_col, M->d_vf, r, M->d_y);
    else
      k->lsolve_seq(rows, n, M->d_lr, M->d_col, M->d_v, r, M->d_y);
    return RRT_SUCCESS;
  }
  if (M->d_vf)
    return k->lsolve_rows_f32(s, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, r, M->d_y);
  return k->lsolve_rows(s, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, r, M->d_y);
}

static rrt_status usolve_level(rrt_ilu0_t M, const int32_t *rows, int64_t n, const double *r,
                               rrt_ilu0_chain c) {
  (void)r; /* U reads y, the L solve's result */
  const rrt_ilu0_kernels *k = M->k;
  rrt_stream s = M->ctx->compute_stream;
  if (M->chain && M->d_vf)
    return k->usolve_chain_f32(s, c, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, M->d_dinv,
                               M->d_y, M->d_z);
  if (M->chain)
    return k->usolve_chain(s, c, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, M->d_dinv, M->d_y,
                           M->d_z);
  if (M->coarse[1] > 1) {
    if (M->d_vf)
      k->usolve_seq_f32(rows, n, 0, M->d_ur, M->d_col, M->d_vf, M->d_dinv, M->d_y, M->d_z);
    else
      k->usolve_seq(rows, n, 0, M->d_ur, M->d_col, M->d_v, M->d_dinv, M->d_y, M->d_z);
    return RRT_SUCCESS;
  }
  if (M->d_vf)
    return k->usolve_rows_f32(s, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, M->d_dinv, M->d_y,
                              M->d_z);
  return k->usolve_rows(s, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, M->d_dinv, M->d_y, M->d_z);
}

/* One rank, host-sequential kernels: both sweeps in elimination order. */
static void apply_seq(rrt_ilu0_t M, const double *r, double *z) {
  if (M->d_vf)
    M->k->apply_seq_f32(M->porder, M->nloc, M->d_lr, M->d_ur, M->d_col, M->d_vf, M->d_dinv, r,
                        M->d_y, z);
  else
    M->k->apply_seq(M->porder, M->nloc, M->d_lr, M->d_ur, M->d_col, M->d_v, M->d_dinv, r, M->d_y,
                    z);
}

static rrt_status apply(rrt_ilu0_t M, const double *r, double *z) {
  rrt_ctx_t ctx = M->ctx;
  double t0 = rrt_phase_begin(ctx);
  if (M->seq_order) {
    apply_seq(M, r, z);
    return rrt_phase_end(ctx, "ilu0.apply", t0);
  }
  RRT_CHECK(rrt_ilu0_sweep(M, 0, &M->hl, M->d_y, lsolve_level, r));
  RRT_CHECK(rrt_ilu0_sweep(M, 1, &M->hu, M->d_z, usolve_level, NULL));
  RRT_CHECK(rrt_sparse_copy(M->A, z, M->d_z, M->nloc));
  return rrt_phase_end(ctx, "ilu0.apply", t0);
}

rrt_status rrt_ilu0_apply_host(rrt_ilu0_t M, const double *r, double *z) { return apply(M, r, z); }

rrt_status rrt_ilu0_apply(rrt_ilu0_t M, const double *r, double *z) {
  RRT_CHECK(rrt_user_stream_enter(M->ctx, "rrt_ilu0_apply"));
  return rrt_user_stream_leave(M->ctx, "rrt_ilu0_apply", apply(M, r, z));
}

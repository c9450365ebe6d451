/* ILU(0) numeric factorisation: level by level, the factored rows other
 * ranks need sent as soon as their level is done; then the agreed pivot
 * checks and, for factors_f32, the rounded copy the apply uses. */
#include <math.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/user_stream.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

#define OPF "rrt_ilu0_factor"

/* factors_f32: the f32 copy the apply uses. A factor entry beyond the f32
 * range, or a pivot that becomes 0 in f32, is RRT_ERR_NUMERIC on every rank,
 * naming the first such global row (hv: the f64 factors on the host). */
static rrt_status round_f32(rrt_ilu0_t M, const double *hv) {
  rrt_ctx_t ctx = M->ctx;
  int64_t bad = INT64_MAX, gbad = INT64_MAX;
  for (int64_t i = 0; i < M->nloc && bad == INT64_MAX; i++) {
    int bad_row = (float)hv[M->ur[2 * i]] == 0.0f;
    for (int64_t e = M->lr[2 * i]; e < M->lr[2 * i + 1]; e++)
      bad_row |= !isfinite((float)hv[e]);
    for (int64_t e = M->ur[2 * i]; e < M->ur[2 * i + 1]; e++)
      bad_row |= !isfinite((float)hv[e]);
    if (bad_row) bad = M->A->row_begin + i;
  }
  RRT_CHECK(rrt_host_allreduce(ctx, &bad, &gbad, 1, RRT_DTYPE_I64, RRT_OP_MIN));
  if (gbad != INT64_MAX)
    return rrt_error(ctx, RRT_ERR_NUMERIC, OPF,
                     "factors_f32: global row %lld (0-based) has a factor entry beyond the f32 "
                     "range or a pivot that is 0 in f32; use f64 factors",
                     (long long)gbad);
  return rrt_agree(ctx, M->k->round_f32(ctx->compute_stream, M->nnz, M->nloc, M->d_ur, M->d_v,
                                        M->d_vf, M->d_dinv));
}

/* What every factor kernel reads and writes (built per launch: a few words). */
static rrt_ilu0_factor_args factor_args(rrt_ilu0_t M) {
  const rrt_ilu0_options *o = &M->opt;
  return (rrt_ilu0_factor_args){.lr = M->d_lr,
                                .ur = M->d_ur,
                                .pair_ptr = M->d_pair_ptr,
                                .arow = M->A->d_rowptr,
                                .gofs = M->d_gofs,
                                .col = M->d_col,
                                .pair_dst = M->d_pair_dst,
                                .pair_src = M->d_pair_src,
                                .fperm = M->d_fperm,
                                .a = M->A->d_val,
                                .v = M->d_v,
                                .dinv = M->d_dinv,
                                .nloc = M->nloc,
                                .nnz = M->nnz,
                                .boost = o->boost,
                                .tol = o->boost_tol,
                                .value = o->boost_value};
}

/* One schedule level: a coarse level (several levels, host-sequential
 * kernels) is a sequential sweep in elimination order; a plain level is one
 * parallel loop / launch; a run of levels (M->chain) one sync-free launch. */
static rrt_status factor_level(rrt_ilu0_t M, const int32_t *rows, int64_t n, const double *r,
                               rrt_ilu0_chain c) {
  (void)r; /* the level signature of the solves */
  if (M->chain) return M->k->factor_chain(M->ctx->compute_stream, c, rows, n, factor_args(M));
  if (M->coarse[0] > 1) {
    M->k->factor_seq(rows, n, factor_args(M));
    return RRT_SUCCESS;
  }
  return M->k->factor_rows(M->ctx->compute_stream, rows, n, factor_args(M));
}

/* The numeric sweep: each row gathers its values from A's backend copy just
 * before it is factored (no separate pass over the values, nothing crosses
 * PCIe); then the pivots (and, for f32 factors, all values) to the host. */
static rrt_status factor_sweep(rrt_ilu0_t M, int host) {
  rrt_ctx_t ctx = M->ctx;
  rrt_status st = RRT_SUCCESS;
  if (M->seq_order)
    M->k->factor_seq(M->seq_order, M->nloc, factor_args(M));
  else
    st = rrt_ilu0_sweep(M, 0, &M->hf, M->d_v, factor_level, NULL);
  /* the pivots on the host, gathered on the backend (cpu: read in place) */
  if (!st && M->d_didx)
    st = M->k->gather(ctx->compute_stream, M->d_didx, M->nloc, M->d_v, M->d_diag);
  if (!st && M->d_didx)
    st = rrt_memcpy_to_host(ctx, M->h_diag, M->d_diag, (size_t)M->nloc * sizeof(double));
  /* f32 factors: the range check reads every value */
  if (!st && !host && M->d_vf)
    st = rrt_memcpy_to_host(ctx, M->h_v, M->d_v, (size_t)M->nnz * sizeof(double));
  return st;
}

/* Pivots: the first zero (or non-finite) pivot in elimination order is the
 * serial one, whatever garbage follows it; agree on it everywhere, naming
 * its global row on every rank. */
static rrt_status check_pivots(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  int64_t bad[2] = {INT64_MAX, INT64_MAX}; /* zero, non-finite: position */
  for (int64_t i = 0; i < M->nloc; i++) {
    double u = M->h_diag ? M->h_diag[i] : M->d_v[M->ur[2 * i]];
    if (u != 0.0 && isfinite(u)) continue; /* the common case: positions not read */
    int64_t p = M->pos_ext[i];
    if (u == 0.0 && p < bad[0]) bad[0] = p;
    if (!isfinite(u) && p < bad[1]) bad[1] = p;
  }
  int64_t gbad[2];
  RRT_CHECK(rrt_host_allreduce(ctx, bad, gbad, 2, RRT_DTYPE_I64, RRT_OP_MIN));
  int which = gbad[0] <= gbad[1] ? 0 : 1;
  if (gbad[which] == INT64_MAX) return RRT_SUCCESS;
  int64_t row = INT64_MAX, grow = INT64_MAX;
  for (int64_t i = 0; i < M->nloc; i++)
    if (M->pos_ext[i] == gbad[which]) row = M->A->row_begin + i;
  RRT_CHECK(rrt_host_allreduce(ctx, &row, &grow, 1, RRT_DTYPE_I64, RRT_OP_MIN));
  if (which == 0)
    return rrt_error(ctx, RRT_ERR_SINGULAR, OPF,
                     "zero pivot at global row %lld (0-based; position %lld in the elimination "
                     "order)%s",
                     (long long)grow, (long long)gbad[0],
                     M->opt.boost ? "" : "; a pivot boost may help");
  return rrt_error(ctx, RRT_ERR_NUMERIC, OPF,
                   "non-finite pivot at global row %lld (0-based; position %lld)", (long long)grow,
                   (long long)gbad[1]);
}

/* ILU(k): A's current values into the padded matrix (its fill entries stay
 * the explicit zeros they were created with). */
static rrt_status load_padded(rrt_ilu0_t M) {
  rrt_sparse_t A = M->Auser, F = M->Afill;
  for (int64_t e = 0; e < A->nnz; e++)
    F->val[M->amap[e]] = A->val[e];
  if ((void *)F->d_val == (void *)F->val) return RRT_SUCCESS;
  return rrt_memcpy_to_backend(M->ctx, F->d_val, F->val, (size_t)F->nnz * sizeof(double));
}

static rrt_status factor(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  double t0 = rrt_phase_begin(ctx);
  if (M->Afill) RRT_CHECK(rrt_agree(ctx, load_padded(M)));
  M->tstale = 1; /* the transpose apply's factors follow at its next call */
  /* host memory backends (cpu, emu) read the f64 values in place */
  int host = !ctx->dev->is_cuda;
  /* a transport or kernel failure here cannot be agreed safely only if a
   * peer is stuck; the transport aborts on timeout, so agreeing is safe */
  RRT_CHECK(rrt_agree(ctx, factor_sweep(M, host)));
  RRT_CHECK(check_pivots(M));
  if (M->d_vf) RRT_CHECK(round_f32(M, host ? M->d_v : M->h_v));
  return rrt_phase_end(ctx, "ilu0.factor", t0);
}

rrt_status rrt_ilu0_factor(rrt_ilu0_t M) {
  RRT_CHECK(rrt_user_stream_enter(M->ctx, "rrt_ilu0_factor"));
  return rrt_user_stream_leave(M->ctx, "rrt_ilu0_factor", factor(M));
}

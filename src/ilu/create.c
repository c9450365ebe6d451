/* rrt_ilu0_create as a sequence of named phases (each in the file of its
 * job, see handle.h), rrt_ilu0_destroy and the queries. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/options.h"
#include "comm/test_stall.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

#define OPC RRT_ILU0_OP_CREATE

static const rrt_ilu0_options ilu0_options_defaults = RRT_ILU0_OPTIONS_INITIALIZER;
static const rrt_options_layout ilu0_options_layout = {
    .name = "rrt_ilu0_options",
    .initializer = "RRT_ILU0_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_ilu0_options),
    .min_size = offsetof(rrt_ilu0_options, ordering),
    .defaults = &ilu0_options_defaults,
};

/* Options from an older header get defaults for the fields they lack; the
 * ordering must be known (agreed, so every rank fails alike). */
static rrt_status read_options(rrt_ctx_t ctx, const rrt_ilu0_options *options,
                               rrt_ilu0_options *opt) {
  char msg[256];
  if (rrt_options_import(&ilu0_options_layout, options, opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC, "%s", msg));
  if (opt->ordering < RRT_ILU_ORDER_NATURAL || opt->ordering > RRT_ILU_ORDER_DD_COLOR)
    return rrt_agree(
        ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC, "ordering %d unknown", (int)opt->ordering));
  if (opt->boost < 0 || opt->boost > RRT_ILU0_BOOST_ADD)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC,
                                    "boost %d unknown (0 off, 1 replace, 2 add)", opt->boost));
  int dd = opt->ordering == RRT_ILU_ORDER_DD || opt->ordering == RRT_ILU_ORDER_DD_COLOR;
  if (dd && (opt->dd_blocks < 0 || opt->dd_blocks > RRT_ILU0_DD_BLOCKS_MAX))
    return rrt_agree(ctx,
                     rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC,
                               "dd_blocks %d out of range (0: one subdomain per rank, or 1 to %d)",
                               opt->dd_blocks, RRT_ILU0_DD_BLOCKS_MAX));
  if (opt->levels < 0 || opt->levels > RRT_ILU0_LEVELS_MAX)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC,
                                    "levels %d out of range (0: ILU(0), or 1 to %d levels of fill)",
                                    opt->levels, RRT_ILU0_LEVELS_MAX));
  return RRT_SUCCESS;
}

/* 32-bit local value indices (checked on every rank before anything else). */
static rrt_status check_index_width(rrt_ilu0_t M) {
  int32_t big = M->nnz > INT32_MAX / 2, anybig = 0;
  RRT_CHECK(rrt_host_allreduce_named(M->ctx, RRT_ILU0_OP_ANALYSIS("index width"), &big, &anybig, 1,
                                     RRT_DTYPE_I32, RRT_OP_MAX));
  if (anybig)
    return rrt_error(M->ctx, RRT_ERR_UNSUPPORTED, OPC,
                     "a rank holds more than %d nonzeros; use more ranks", INT32_MAX / 2);
  return RRT_SUCCESS;
}

/* One phase of the analysis, timed as "ilu0.analysis.<name>" (the phase
 * totals, rrt_phase_seconds, and --trace show where rrt_ilu0_create spends
 * its time). */
#define RRT_ILU0_PHASE(name, call)                                                                 \
  do {                                                                                             \
    double t_ = rrt_phase_begin(M->ctx);                                                           \
    RRT_CHECK(call);                                                                               \
    rrt_phase_end(M->ctx, "ilu0.analysis." name, t_);                                              \
  } while (0)

/* The analysis, phase by phase; S carries what later phases need. */
static rrt_status analyse(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  rrt_test_stall(M->ctx, "ilu_analysis"); /* fault tests only (RINGRT_TEST_STALL) */
  /* 0. ILU(k): the filled pattern, the padded matrix the rest runs on */
  if (M->opt.levels > 0) RRT_ILU0_PHASE("fill", rrt_ilu0_fill(M));
  RRT_CHECK(check_index_width(M));
  /* 1. positions in the elimination order */
  RRT_ILU0_PHASE("positions", rrt_ilu0_positions(M));
  /* 2. factor storage order and the structural diagonal check (agreed) */
  RRT_ILU0_PHASE("order", rrt_ilu0_factor_order(M));
  /* 3. which ghosts are needed for L (factor, L solve) and U (U solve) */
  RRT_ILU0_PHASE("requests", rrt_ilu0_ghost_requests(M, S));
  /* 4. levels across ranks and the schedule on them */
  rrt_test_stall(M->ctx, "ilu_levels"); /* mid-analysis: the timeout names the phase */
  RRT_ILU0_PHASE("levels", rrt_ilu0_schedule(M, S));
  /* 5. U rows of L ghosts: lengths, then global columns, in ghost order */
  RRT_ILU0_PHASE("ghost_urows", rrt_ilu0_ghost_urows(M, S));
  /* 6. plans: rows others need after each level */
  RRT_ILU0_PHASE("halos", rrt_ilu0_halos(M, S));
  /* 7. pivots and update pairs (the IKJ schedule of every row), after the
   * halos: its scratch is S->lev[0], which they were the last to read */
  RRT_ILU0_PHASE("pairs", rrt_ilu0_update_pairs(M, S));
  /* 8. backend copies */
  RRT_ILU0_PHASE("backend", rrt_ilu0_backend_alloc(M));
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_create(rrt_sparse_t A, const rrt_ilu0_options *options, rrt_ilu0_t *out) {
  return rrt_ilu0_create_at(A, options, NULL, out);
}

rrt_status rrt_ilu0_create_at(rrt_sparse_t A, const rrt_ilu0_options *options, const int64_t *pos,
                              rrt_ilu0_t *out) {
  *out = NULL;
  rrt_ctx_t ctx = A->ctx;
  rrt_ilu0_options opt;
  RRT_CHECK(read_options(ctx, options, &opt));
  double t0 = rrt_phase_begin(ctx);
  struct rrt_ilu0 *M = calloc(1, sizeof(*M));
  if (!M) return rrt_agree(ctx, rrt_ilu0_nomem(ctx, OPC));
  M->A = A;
  M->ctx = ctx;
  M->k = A->k;
  M->opt = opt;
  M->nloc = A->nloc;
  M->nnz = A->nnz;
  M->next = A->nloc + A->nghost;
  M->given_pos = pos;
  rrt_ilu0_setup S = {0};
  rrt_status st = analyse(M, &S);
  M->given_pos = NULL;
  rrt_ilu0_setup_free(&S);
  /* every failure above is either agreed (singular) or a local resource
   * problem: agree so no rank goes on to a factorisation the others skip */
  if (st != RRT_ERR_SINGULAR) st = rrt_agree_named(ctx, RRT_ILU0_OP_ANALYSIS("outcome"), st);
  if (st) {
    rrt_ilu0_destroy(M);
    return st;
  }
  rrt_phase_end(ctx, "ilu0.analysis", t0);
  *out = M;
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_destroy(rrt_ilu0_t M) {
  if (!M) return RRT_SUCCESS;
  rrt_ctx_t ctx = M->ctx;
  rrt_ilu0_destroy(M->T);
  rrt_sparse_destroy(M->At), rrt_sparse_destroy(M->Afill);
  free(M->tdest), free(M->tperm), free(M->amap), free(M->fill_pos);
  rrt_halo_free(ctx, &M->hf), rrt_halo_free(ctx, &M->hl), rrt_halo_free(ctx, &M->hu);
  rrt_ilu0_unshare(ctx, M->d_lr, M->lr), rrt_ilu0_unshare(ctx, M->d_ur, M->ur);
  rrt_ilu0_unshare(ctx, M->d_col, M->fcol), rrt_ilu0_unshare(ctx, M->d_fperm, M->fperm);
  rrt_ilu0_unshare(ctx, M->d_gofs, M->gofs), rrt_ilu0_unshare(ctx, M->d_pair_ptr, M->pair_ptr);
  rrt_ilu0_unshare(ctx, M->d_pair_dst, M->pair_dst);
  rrt_ilu0_unshare(ctx, M->d_pair_src, M->pair_src);
  for (int s = 0; s < 2; s++) {
    rrt_ilu0_unshare(ctx, M->d_lev[s], M->levrows[s]);
    free(M->hist[s]), free(M->levptr[s]), free(M->levrows[s]);
  }
  free(M->pos_ext), free(M->phase_start), free(M->lr), free(M->ur), free(M->fcol), free(M->fperm),
      free(M->gofs);
  free(M->pair_dst), free(M->pair_src), free(M->pair_ptr), free(M->h_v);
  free(M->h_diag);
  rrt_free(ctx, M->d_didx), rrt_free(ctx, M->d_diag);
  free(M->porder);
  rrt_free(ctx, M->d_v), rrt_free(ctx, M->d_y), rrt_free(ctx, M->d_z);
  rrt_free(ctx, M->d_dinv), rrt_free(ctx, M->d_vf);
  rrt_free(ctx, M->d_done), rrt_free(ctx, M->d_ticket);
  free(M);
  return RRT_SUCCESS;
}

/* ---- queries --------------------------------------------------------------------- */

void rrt_ilu0_levels(rrt_ilu0_t M, int *levels_l, int *levels_u) {
  (void)rrt_ilu0_count_levels(M); /* failed: -1 stays */
  if (levels_l) *levels_l = M->nlev[0];
  if (levels_u) *levels_u = M->nlev[1];
}

/* Launches of one side's sweep: one per run of levels holding local rows. */
static int64_t sweep_launches(rrt_ilu0_t M, const rrt_halo *h, int side) {
  int64_t n = 0;
  for (int l = 1, e; l <= M->nsched[side]; l = e + 1) {
    e = rrt_ilu0_run_end(M, h, side, l);
    n += M->levptr[side][e] > M->levptr[side][l - 1];
  }
  return n;
}

void rrt_ilu0_launches(rrt_ilu0_t M, int64_t *factor, int64_t *apply) {
  int host_loops = M->k->factor_seq != NULL; /* the cpu table */
  if (factor) *factor = host_loops ? 0 : sweep_launches(M, &M->hf, 0);
  if (apply) *apply = host_loops ? 0 : sweep_launches(M, &M->hl, 0) + sweep_launches(M, &M->hu, 1);
}

rrt_status rrt_ilu0_level_histogram(rrt_ilu0_t M, int which, int64_t *counts) {
  if (which != 0 && which != 1)
    return rrt_error(M->ctx, RRT_ERR_INVALID_ARG, "rrt_ilu0_level_histogram",
                     "which must be 0 or 1");
  RRT_CHECK(rrt_ilu0_count_levels(M));
  memcpy(counts, M->hist[which], (size_t)M->nlev[which] * sizeof(int64_t));
  return RRT_SUCCESS;
}

int64_t rrt_ilu0_factor_nnz(rrt_ilu0_t M) { return M->nnz; }

rrt_status rrt_ilu0_get_factor_pattern(rrt_ilu0_t M, int64_t *rowptr, int64_t *cols) {
  if (rowptr) memcpy(rowptr, M->A->rowptr, ((size_t)M->nloc + 1) * sizeof(int64_t));
  if (cols) memcpy(cols, M->A->col, (size_t)M->nnz * sizeof(int64_t));
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_get_factors(rrt_ilu0_t M, double *vals) {
  RRT_CHECK(rrt_memcpy_to_host(M->ctx, M->h_v, M->d_v, (size_t)M->nnz * sizeof(double)));
  if (M->fperm) {
    for (int64_t f = 0; f < M->nnz; f++)
      vals[M->fperm[f]] = M->h_v[f];
    return RRT_SUCCESS;
  }
  /* rows stored as A holds them: row i's L part, then its diagonal and U part */
  for (int64_t i = 0; i < M->nloc; i++) {
    double *row = vals + M->A->rowptr[i];
    int64_t nl = M->lr[2 * i + 1] - M->lr[2 * i], nu = M->ur[2 * i + 1] - M->ur[2 * i];
    memcpy(row, M->h_v + M->lr[2 * i], (size_t)nl * sizeof(double));
    memcpy(row + nl, M->h_v + M->ur[2 * i], (size_t)nu * sizeof(double));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_get_positions(rrt_ilu0_t M, int64_t *pos) {
  memcpy(pos, M->pos_ext, (size_t)M->nloc * sizeof(int64_t));
  return RRT_SUCCESS;
}

double rrt_ilu0_factor_flops(rrt_ilu0_t M) { return M->fflops; }
double rrt_ilu0_apply_flops(rrt_ilu0_t M) { return M->aflops; }

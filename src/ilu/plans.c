/* ILU(0) message plans and backend storage: which rows go to which rank
 * after which level (L: factorisation and L solve; U: U solve), as halos,
 * and the backend copies of the factor structure. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"

#define OPC RRT_ILU0_OP_CREATE

/* Per-level "needed before" of a receive plan: the earliest local level
 * that reads any of its rows. gneed[g]: earliest level reading ghost g. */
static int *need_levels(const rrt_msg_plan *recv, int nlev, const int32_t *gneed, int64_t nloc) {
  int *need = malloc(((size_t)nlev + 1) * sizeof(int));
  if (!need) return NULL;
  for (int l = 0; l <= nlev; l++)
    need[l] = INT_MAX;
  for (int m = 0; m < recv->nmsg; m++)
    for (int64_t t = recv->ptr[m]; t < recv->ptr[m + 1]; t++) {
      int v = gneed[recv->idx[t] - nloc];
      if (v < need[recv->level[m]]) need[recv->level[m]] = v;
    }
  return need;
}

/* Expand a row plan into an entry plan: row r -> entries start(r) .. +len(r). */
static rrt_status expand_plan(const rrt_msg_plan *rows, const int64_t *start, const int64_t *len,
                              int64_t base, rrt_msg_plan *out) {
  memset(out, 0, sizeof(*out));
  int64_t total = 0;
  for (int64_t t = 0; t < rows->ptr[rows->nmsg]; t++)
    total += len[rows->idx[t] - base];
  out->nmsg = rows->nmsg;
  out->level = malloc(((size_t)rows->nmsg + 1) * sizeof(int32_t));
  out->peer = malloc(((size_t)rows->nmsg + 1) * sizeof(int32_t));
  out->ptr = malloc(((size_t)rows->nmsg + 2) * sizeof(int64_t));
  out->idx = malloc(((size_t)total + 1) * sizeof(int32_t));
  if (!out->level || !out->peer || !out->ptr || !out->idx) return RRT_ERR_OUT_OF_MEMORY;
  int64_t w = 0;
  for (int m = 0; m < rows->nmsg; m++) {
    out->level[m] = rows->level[m];
    out->peer[m] = rows->peer[m];
    out->ptr[m] = w;
    for (int64_t t = rows->ptr[m]; t < rows->ptr[m + 1]; t++) {
      int64_t r = rows->idx[t] - base;
      for (int64_t q = 0; q < len[r]; q++)
        out->idx[w++] = (int32_t)(start[r] + q);
    }
  }
  out->ptr[rows->nmsg] = w;
  return RRT_SUCCESS;
}

/* Row plans of one side: the requested rows this rank sends (sp) and the
 * ghost rows it receives (rp), each after its schedule level. */
static rrt_status row_plans(rrt_ilu0_t M, const rrt_ilu0_setup *S, int side, rrt_msg_plan *sp,
                            rrt_msg_plan *rp) {
  rrt_sparse_t A = M->A;
  int64_t ng = A->nghost, cnt = (S->nreq > ng ? S->nreq : ng) + 1;
  int32_t *pp = malloc((size_t)cnt * sizeof(int32_t)), *pi = malloc((size_t)cnt * sizeof(int32_t));
  int32_t *pl = malloc((size_t)cnt * sizeof(int32_t));
  int64_t *pk = malloc((size_t)cnt * sizeof(int64_t));
  rrt_status st = RRT_SUCCESS;
  if (!pp || !pi || !pl || !pk) {
    st = rrt_ilu0_nomem(M->ctx, OPC);
    goto done;
  }
  const int32_t *lev = S->lev[side];
  int64_t m = 0;
  for (int64_t t = 0; t < S->nreq; t++) {
    if (!(S->req[2 * t + 1] & (1 << side))) continue;
    int64_t r = S->req[2 * t] - A->row_begin;
    pp[m] = S->req_src[t], pi[m] = (int32_t)r, pl[m] = lev[r], pk[m] = S->req[2 * t], m++;
  }
  RRT_CHECK_GOTO(rrt_msg_plan_build(m, pp, pi, pl, pk, sp), st, done);
  m = 0;
  for (int64_t g = 0; g < ng; g++) {
    if (!(S->gflag[g] & (1 << side))) continue;
    pp[m] = A->ghost_owner[g], pi[m] = (int32_t)(M->nloc + g), pl[m] = lev[M->nloc + g];
    pk[m] = A->ghost[g], m++;
  }
  st = rrt_msg_plan_build(m, pp, pi, pl, pk, rp);
done:
  free(pp), free(pi), free(pl), free(pk);
  return st;
}

/* The factorisation sends the U part (diagonal included) of the L rows. */
static rrt_status factor_plans(rrt_ilu0_t M, const rrt_ilu0_setup *S, const rrt_msg_plan *sp,
                               const rrt_msg_plan *rp, rrt_msg_plan *fs, rrt_msg_plan *fr) {
  int64_t nloc = M->nloc, ng = M->A->nghost, cnt = (nloc > ng ? nloc : ng) + 1;
  int64_t *start = malloc((size_t)cnt * sizeof(int64_t));
  int64_t *len = malloc((size_t)cnt * sizeof(int64_t));
  rrt_status st = RRT_ERR_OUT_OF_MEMORY;
  if (start && len) {
    for (int64_t r = 0; r < nloc; r++)
      start[r] = M->ur[2 * r], len[r] = M->ur[2 * r + 1] - M->ur[2 * r];
    st = expand_plan(sp, start, len, 0, fs);
    for (int64_t g = 0; g < ng && !st; g++)
      start[g] = M->nnz + M->gofs[g], len[g] = S->glen[g];
    if (!st) st = expand_plan(rp, start, len, nloc, fr);
  }
  free(start), free(len);
  return st ? rrt_ilu0_nomem(M->ctx, OPC) : RRT_SUCCESS;
}

rrt_status rrt_ilu0_halos(rrt_ilu0_t M, const rrt_ilu0_setup *S) {
  rrt_ctx_t ctx = M->ctx;
  rrt_msg_plan sp[2] = {{0}}, rp[2] = {{0}}, fs = {0}, fr = {0};
  rrt_halo_pack pack = rrt_sparse_halo_pack(M->A);
  int *need = NULL;
  rrt_status st = RRT_SUCCESS;
  for (int side = 0; side < 2; side++)
    RRT_CHECK_GOTO(row_plans(M, S, side, &sp[side], &rp[side]), st, done);
  RRT_CHECK_GOTO(factor_plans(M, S, &sp[0], &rp[0], &fs, &fr), st, done);
  need = need_levels(&rp[0], M->nsched[0], S->gneed[0], M->nloc);
  if (!need) RRT_CHECK_GOTO(rrt_ilu0_nomem(ctx, OPC), st, done);
  RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hf, &pack, &fs, &fr, M->nsched[0], need), st, done);
  RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hl, &pack, &sp[0], &rp[0], M->nsched[0], need), st, done);
  free(need);
  need = need_levels(&rp[1], M->nsched[1], S->gneed[1], M->nloc);
  if (!need) RRT_CHECK_GOTO(rrt_ilu0_nomem(ctx, OPC), st, done);
  st = rrt_halo_init(ctx, &M->hu, &pack, &sp[1], &rp[1], M->nsched[1], need);
done:
  free(need);
  for (int side = 0; side < 2; side++)
    rrt_msg_plan_free(&sp[side]), rrt_msg_plan_free(&rp[side]);
  rrt_msg_plan_free(&fs), rrt_msg_plan_free(&fr);
  return st;
}

/* The factor structure the kernels read. */
static rrt_status upload_structure(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  size_t nloc = (size_t)M->nloc, nnz = (size_t)M->nnz, nlv = (size_t)M->nlv;
  size_t npair = (size_t)M->pair_ptr[M->nlv];
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_lr, M->lr, (2 * nloc + 1) * sizeof(int64_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_ur, M->ur, (2 * nloc + 1) * sizeof(int64_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_col, M->fcol, nnz * sizeof(int32_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_fperm, M->fperm, nnz * sizeof(int32_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_piv, M->piv, nlv * sizeof(int32_t)));
  RRT_CHECK(
      rrt_ilu0_upload(ctx, (void **)&M->d_pair_ptr, M->pair_ptr, (nlv + 1) * sizeof(int64_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_pair_dst, M->pair_dst, npair * sizeof(int32_t)));
  RRT_CHECK(rrt_ilu0_upload(ctx, (void **)&M->d_pair_src, M->pair_src, npair * sizeof(int32_t)));
  for (int side = 0; side < 2; side++)
    RRT_CHECK(
        rrt_ilu0_upload(ctx, (void **)&M->d_lev[side], M->levrows[side], nloc * sizeof(int32_t)));
  /* the pivots' value indices, for the gather the zero-pivot check reads */
  int32_t *didx = malloc((nloc + 1) * sizeof(int32_t));
  if (!didx) return rrt_ilu0_nomem(ctx, OPC);
  for (size_t i = 0; i < nloc; i++)
    didx[i] = (int32_t)M->ur[2 * i];
  rrt_status st = rrt_ilu0_upload(ctx, (void **)&M->d_didx, didx, nloc * sizeof(int32_t));
  free(didx);
  return st;
}

/* Factor values and work vectors, touched now (the analysis, like PETSc's
 * symbolic phase, pays for the first-touch page faults; every
 * factorisation costs the same). */
static rrt_status alloc_values(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  size_t nloc = (size_t)M->nloc, nval = (size_t)M->nval, next = (size_t)M->next;
  RRT_CHECK(rrt_malloc(ctx, (nval + 1) * sizeof(double), (void **)&M->d_v));
  RRT_CHECK(rrt_malloc(ctx, (next + 1) * sizeof(double), (void **)&M->d_y));
  RRT_CHECK(rrt_malloc(ctx, (next + 1) * sizeof(double), (void **)&M->d_z));
  RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(double), (void **)&M->d_dinv));
  RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(double), (void **)&M->d_diag));
  RRT_CHECK(rrt_memset(ctx, M->d_v, 0, (nval + 1) * sizeof(double)));
  RRT_CHECK(rrt_memset(ctx, M->d_dinv, 0, (nloc + 1) * sizeof(double)));
  RRT_CHECK(rrt_memset(ctx, M->d_y, 0, (next + 1) * sizeof(double)));
  RRT_CHECK(rrt_memset(ctx, M->d_z, 0, (next + 1) * sizeof(double)));
  if (M->opt.factors_f32)
    RRT_CHECK(rrt_malloc(ctx, ((size_t)M->nnz + 1) * sizeof(float), (void **)&M->d_vf));
  M->h_v = malloc(((size_t)M->nnz + 1) * sizeof(double));
  M->h_diag = malloc((nloc + 1) * sizeof(double));
  if (!M->h_v || !M->h_diag) return rrt_ilu0_nomem(ctx, OPC);
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_backend_alloc(rrt_ilu0_t M) {
  RRT_CHECK(upload_structure(M));
  return alloc_values(M);
}

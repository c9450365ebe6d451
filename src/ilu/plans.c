/* ILU(0) message plans and backend storage: which rows go to which rank
 * after which level (L: factorisation and L solve; U: U solve), as halos,
 * and the backend copies of the factor structure. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/device.h"
#include "comm/error.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"

#define OPC RRT_ILU0_OP_CREATE

/* "Needed before" of every message of a receive plan: the earliest local
 * level that reads any of its rows. gneed[g]: earliest level reading ghost g. */
static int *need_messages(const rrt_msg_plan *recv, const int32_t *gneed, int64_t nloc) {
  int *need = malloc(((size_t)recv->nmsg + 1) * sizeof(int));
  if (!need) return NULL;
  for (int m = 0; m < recv->nmsg; m++) {
    need[m] = INT_MAX;
    for (int64_t t = recv->ptr[m]; t < recv->ptr[m + 1]; t++)
      if (gneed[recv->idx[t] - nloc] < need[m]) need[m] = gneed[recv->idx[t] - nloc];
  }
  return need;
}

/* Expand a row plan into an entry plan: row r (idx - base) -> entries
 * add + begin[r * stride] .. add + end[r * stride]. */
typedef struct row_ranges {
  const rrt_ilu0_idx *begin, *end;
  int64_t stride, base, add;
} row_ranges;

static rrt_status expand_plan(const rrt_msg_plan *rows, row_ranges rr, rrt_msg_plan *out) {
  memset(out, 0, sizeof(*out));
  int64_t total = 0;
  for (int64_t t = 0; t < rows->ptr[rows->nmsg]; t++) {
    int64_t r = (rows->idx[t] - rr.base) * rr.stride;
    total += rr.end[r] - rr.begin[r];
  }
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
      int64_t r = (rows->idx[t] - rr.base) * rr.stride;
      for (int64_t v = rr.begin[r]; v < rr.end[r]; v++)
        out->idx[w++] = (int32_t)(rr.add + v);
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

/* The factorisation sends the U part (diagonal included) of the L rows:
 * local row r is ur[2r] .. ur[2r + 1], ghost g nnz + gofs[g] .. gofs[g + 1]. */
static rrt_status factor_plans(rrt_ilu0_t M, const rrt_msg_plan *sp, const rrt_msg_plan *rp,
                               rrt_msg_plan *fs, rrt_msg_plan *fr) {
  row_ranges own = {M->ur, M->ur + 1, 2, 0, 0};
  row_ranges ghost = {M->gofs, M->gofs + 1, 1, M->nloc, M->nnz};
  rrt_status st = expand_plan(sp, own, fs);
  if (!st) st = expand_plan(rp, ghost, fr);
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
  RRT_CHECK_GOTO(factor_plans(M, &sp[0], &rp[0], &fs, &fr), st, done);
  need = need_messages(&rp[0], S->gneed[0], M->nloc);
  if (!need) RRT_CHECK_GOTO(rrt_ilu0_nomem(ctx, OPC), st, done);
  RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hf, &pack, &fs, &fr, M->nsched[0], need), st, done);
  RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hl, &pack, &sp[0], &rp[0], M->nsched[0], need), st, done);
  free(need);
  need = need_messages(&rp[1], S->gneed[1], M->nloc);
  if (!need) RRT_CHECK_GOTO(rrt_ilu0_nomem(ctx, OPC), st, done);
  st = rrt_halo_init(ctx, &M->hu, &pack, &sp[1], &rp[1], M->nsched[1], need);
done:
  free(need);
  for (int side = 0; side < 2; side++)
    rrt_msg_plan_free(&sp[side]), rrt_msg_plan_free(&rp[side]);
  rrt_msg_plan_free(&fs), rrt_msg_plan_free(&fr);
  return st;
}

/* The factor structure the kernels read: on a device layer in host memory
 * (cpu, emu) the kernels read the host arrays themselves (no copy: the
 * copies were a third of the analysis time), on CUDA a device copy. */
static rrt_status upload_structure(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  size_t nloc = (size_t)M->nloc, nnz = (size_t)M->nnz, nlv = (size_t)M->nlv;
  size_t npair = (size_t)M->pair_ptr[M->nlv];
  size_t rows_bytes = (2 * nloc + 1) * sizeof(rrt_ilu0_idx);
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_lr, M->lr, rows_bytes));
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_ur, M->ur, rows_bytes));
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_col, M->fcol, nnz * sizeof(int32_t)));
  if (M->fperm) /* NULL: rows stored as A holds them */
    RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_fperm, M->fperm, nnz * sizeof(int32_t)));
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_gofs, M->gofs,
                           ((size_t)M->A->nghost + 1) * sizeof(rrt_ilu0_idx)));
  RRT_CHECK(
      rrt_ilu0_share(ctx, (void **)&M->d_pair_ptr, M->pair_ptr, (nlv + 1) * sizeof(rrt_ilu0_idx)));
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_pair_dst, M->pair_dst, npair * sizeof(int32_t)));
  RRT_CHECK(rrt_ilu0_share(ctx, (void **)&M->d_pair_src, M->pair_src, npair * sizeof(int32_t)));
  for (int side = 0; side < 2; side++)
    RRT_CHECK(
        rrt_ilu0_share(ctx, (void **)&M->d_lev[side], M->levrows[side], nloc * sizeof(int32_t)));
  /* the pivots' value indices, for the gather the zero-pivot check reads
   * (not on cpu, whose synchronous host loops leave the pivots readable in
   * place: rrt_ilu0_factor) */
  if (M->k->factor_seq) return RRT_SUCCESS;
  int32_t *didx = NULL;
  RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(int32_t), (void **)&M->d_didx));
  if (ctx->dev->is_cuda && !(didx = malloc((nloc + 1) * sizeof(int32_t))))
    return rrt_ilu0_nomem(ctx, OPC);
  int32_t *h = didx ? didx : M->d_didx;
  for (size_t i = 0; i < nloc; i++)
    h[i] = (int32_t)M->ur[2 * i];
  rrt_status st =
      didx ? rrt_memcpy_to_backend(ctx, M->d_didx, didx, nloc * sizeof(int32_t)) : RRT_SUCCESS;
  free(didx);
  return st;
}

/* Factor values and work vectors, touched now (the analysis, like PETSc's
 * symbolic phase, pays for the first-touch page faults of the factor; every
 * factorisation costs the same). The one-rank sequential apply needs no z
 * (it writes the caller's vector), and writes every y it reads before
 * reading it; like PETSc's work vector, y is touched by the first apply. */
static rrt_status alloc_values(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  size_t nloc = (size_t)M->nloc, nval = (size_t)M->nval, next = (size_t)M->next;
  RRT_CHECK(rrt_malloc(ctx, (nval + 1) * sizeof(double), (void **)&M->d_v));
  RRT_CHECK(rrt_malloc(ctx, (next + 1) * sizeof(double), (void **)&M->d_y));
  RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(double), (void **)&M->d_dinv));
  RRT_CHECK(rrt_memset(ctx, M->d_v, 0, (nval + 1) * sizeof(double)));
  RRT_CHECK(rrt_memset(ctx, M->d_dinv, 0, (nloc + 1) * sizeof(double)));
  if (!M->seq_order) {
    RRT_CHECK(rrt_malloc(ctx, (next + 1) * sizeof(double), (void **)&M->d_z));
    RRT_CHECK(rrt_memset(ctx, M->d_y, 0, (next + 1) * sizeof(double)));
    RRT_CHECK(rrt_memset(ctx, M->d_z, 0, (next + 1) * sizeof(double)));
  }
  if (M->opt.factors_f32)
    RRT_CHECK(rrt_malloc(ctx, ((size_t)M->nnz + 1) * sizeof(float), (void **)&M->d_vf));
  if (M->chain) { /* sync-free sweeps: stamps 0 (no sweep yet), the counter 0 */
    RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(int32_t), (void **)&M->d_done));
    RRT_CHECK(rrt_malloc(ctx, sizeof(unsigned long long), (void **)&M->d_ticket));
    RRT_CHECK(rrt_memset(ctx, M->d_done, 0, (nloc + 1) * sizeof(int32_t)));
    RRT_CHECK(rrt_memset(ctx, M->d_ticket, 0, sizeof(unsigned long long)));
  }
  M->h_v = malloc(((size_t)M->nnz + 1) * sizeof(double));
  if (!M->h_v) return rrt_ilu0_nomem(ctx, OPC);
  if (M->d_didx) { /* the gathered pivots (see upload_structure) */
    RRT_CHECK(rrt_malloc(ctx, (nloc + 1) * sizeof(double), (void **)&M->d_diag));
    if (!(M->h_diag = malloc((nloc + 1) * sizeof(double)))) return rrt_ilu0_nomem(ctx, OPC);
  }
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_backend_alloc(rrt_ilu0_t M) {
  RRT_CHECK(upload_structure(M));
  return alloc_values(M);
}

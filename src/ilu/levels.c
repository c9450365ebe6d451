/* ILU(0) level sets across ranks and the schedule built on them: plain
 * levels, coarse levels (several levels as one sequential sweep), or one
 * sequential sweep of the whole rank. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"
#include "sched/ilu0_levels.h"

#define OPC RRT_ILU0_OP_CREATE

/* One rank with a device level sweep: the level analysis runs on the
 * device, one sweep launch per level (a row is finished in the launch after
 * all its dependencies were; see ilu0_level_sweep_k). */
static rrt_status levels_device(rrt_ilu0_t M, int32_t *lev[2]) {
  rrt_ctx_t ctx = M->ctx;
  rrt_sparse_t A = M->A;
  rrt_stream s = ctx->compute_stream;
  int64_t n = M->nloc;
  int64_t *d_rowptr = NULL, *d_pos = NULL;
  int32_t *d_col = NULL, *d_lev = NULL;
  int *d_changed = NULL;
  rrt_status st =
      rrt_ilu0_upload(ctx, (void **)&d_rowptr, A->rowptr, ((size_t)n + 1) * sizeof(int64_t));
  if (!st) st = rrt_ilu0_upload(ctx, (void **)&d_col, A->col_ext, (size_t)A->nnz * sizeof(int32_t));
  if (!st) st = rrt_ilu0_upload(ctx, (void **)&d_pos, M->pos_ext, (size_t)n * sizeof(int64_t));
  if (!st) st = rrt_malloc(ctx, ((size_t)n + 1) * sizeof(int32_t), (void **)&d_lev);
  if (!st) st = rrt_malloc(ctx, sizeof(int), (void **)&d_changed);
  for (int side = 0; side < 2 && !st; side++) {
    st = rrt_memset(ctx, d_lev, 0, ((size_t)n + 1) * sizeof(int32_t));
    for (int64_t round = 0; !st && round <= n; round++) {
      int changed = 0;
      st = rrt_memset(ctx, d_changed, 0, sizeof(int));
      if (!st) st = M->k->level_sweep(s, n, d_rowptr, d_col, d_pos, side, d_lev, d_changed);
      if (!st) st = M->k->level_sweep(s, n, d_rowptr, d_col, d_pos, -1, d_lev, d_changed);
      if (!st) st = rrt_memcpy_to_host(ctx, &changed, d_changed, sizeof(int));
      if (!changed) break;
    }
    if (!st) st = rrt_memcpy_to_host(ctx, lev[side], d_lev, (size_t)n * sizeof(int32_t));
  }
  rrt_free(ctx, d_rowptr), rrt_free(ctx, d_pos), rrt_free(ctx, d_col), rrt_free(ctx, d_lev);
  rrt_free(ctx, d_changed);
  return st;
}

/* One level sweep over the local rows of one side, on the factor storage:
 * the dependencies of row i are exactly its L part (side 0) or the U part
 * after its diagonal (side 1), both stored in elimination order, so the
 * sweep (porder; for U from its end) streams fcol and compares no
 * positions. Rows whose dependencies are all known get 1 + their maximum
 * level; returns the number of local rows still unknown. */
static int64_t sweep_parts(rrt_ilu0_t M, int side, int32_t *lev) {
  const rrt_ilu0_idx *part = side == 0 ? M->lr : M->ur;
  int64_t unknown = 0, n = M->nloc;
  for (int64_t t = 0; t < n; t++) {
    int32_t i = M->porder[side == 0 ? t : n - 1 - t];
    if (lev[i]) continue;
    int32_t mx = 0;
    int64_t v = part[2 * i] + side, end = part[2 * i + 1];
    for (; v < end; v++) {
      int32_t l = lev[M->fcol[v]];
      if (!l) break;
      if (l > mx) mx = l;
    }
    if (v == end)
      lev[i] = mx + 1;
    else
      unknown++;
  }
  return unknown;
}

/* Byte layout of the level replies: two int32 per request to its asker
 * (lay[0..P), offsets lay[P..2P)), two per ghost from its owner (lay[2P..4P)). */
static void reply_layout(rrt_ilu0_t M, const rrt_ilu0_setup *S, size_t *lay) {
  rrt_sparse_t A = M->A;
  int P = M->ctx->size;
  memset(lay, 0, 4 * (size_t)P * sizeof(size_t));
  for (int64_t t = 0; t < S->nreq; t++)
    lay[S->req_src[t]] += 2 * sizeof(int32_t);
  for (int64_t g = 0; g < A->nghost; g++)
    lay[2 * P + A->ghost_owner[g]] += 2 * sizeof(int32_t);
  for (int p = 1; p < P; p++) {
    lay[P + p] = lay[P + p - 1] + lay[p - 1];
    lay[3 * P + p] = lay[3 * P + p - 1] + lay[2 * P + p - 1];
  }
}

/* Levels of L (side 0) and U (side 1): sweeps, with the levels of the ghost
 * rows sent by their owners between sweeps, until every row is known. */
static rrt_status levels_host(rrt_ilu0_t M, const rrt_ilu0_setup *S, int32_t *lev[2]) {
  rrt_ctx_t ctx = M->ctx;
  rrt_sparse_t A = M->A;
  int P = ctx->size;
  rrt_status st = RRT_SUCCESS;
  int32_t *reply = malloc(2 * ((size_t)S->nreq + 1) * sizeof(int32_t));
  int32_t *resp = malloc(2 * ((size_t)A->nghost + 1) * sizeof(int32_t));
  size_t *lay = malloc(4 * (size_t)P * sizeof(size_t));
  if (!reply || !resp || !lay) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  reply_layout(M, S, lay);
  for (int round = 0;; round++) {
    int64_t unknown = 0, total = 0;
    for (int side = 0; side < 2; side++)
      unknown += sweep_parts(M, side, lev[side]);
    for (int64_t t = 0; t < S->nreq; t++) {
      int64_t r = S->req[2 * t] - A->row_begin;
      reply[2 * t] = lev[0][r];
      reply[2 * t + 1] = lev[1][r];
    }
    RRT_CHECK_GOTO(rrt_host_alltoallv_named(ctx, RRT_ILU0_OP_ANALYSIS("levels"), reply, lay,
                                            lay + P, resp, lay + 2 * P, lay + 3 * P),
                   st, done);
    /* replies come back in owner order, i.e. in ghost order */
    for (int64_t g = 0; g < A->nghost; g++) {
      lev[0][M->nloc + g] = resp[2 * g];
      lev[1][M->nloc + g] = resp[2 * g + 1];
    }
    RRT_CHECK_GOTO(rrt_host_allreduce_named(ctx, RRT_ILU0_OP_ANALYSIS("levels"), &unknown, &total,
                                            1, RRT_DTYPE_I64, RRT_OP_SUM),
                   st, done);
    if (total == 0) break;
    if (round > M->A->n + 2) {
      st = rrt_error(ctx, RRT_ERR_INTERNAL, OPC, "level analysis does not converge");
      break;
    }
  }
done:
  free(reply), free(resp), free(lay);
  return st;
}

/* The largest level of one side over all ranks (collective). */
static rrt_status global_levels(rrt_ilu0_t M, const int32_t *lev, const char *op, int32_t *gmx) {
  int32_t mx = 0;
  for (int64_t i = 0; i < M->nloc; i++)
    if (lev[i] > mx) mx = lev[i];
  return rrt_host_allreduce_named(M->ctx, op, &mx, gmx, 1, RRT_DTYPE_I32, RRT_OP_MAX);
}

/* The reported level count and histogram of one side, over all ranks
 * (M->nlev, M->hist: rrt_ilu0_levels). Collective. */
static rrt_status level_report(rrt_ilu0_t M, int side, const int32_t *lev) {
  const char *op = RRT_ILU0_OP_ANALYSIS("level histogram");
  int32_t gmx = 0;
  RRT_CHECK(global_levels(M, lev, op, &gmx));
  int64_t *cnt = calloc((size_t)gmx + 1, sizeof(int64_t));
  free(M->hist[side]);
  M->hist[side] = calloc((size_t)gmx + 1, sizeof(int64_t));
  rrt_status st = cnt && M->hist[side] ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  for (int64_t i = 0; !st && i < M->nloc; i++)
    cnt[lev[i] - 1]++;
  if (!st)
    st = rrt_host_allreduce_named(M->ctx, op, cnt, M->hist[side], (size_t)gmx, RRT_DTYPE_I64,
                                  RRT_OP_SUM);
  free(cnt);
  if (!st) M->nlev[side] = gmx;
  return st;
}

/* Rows per schedule level of one side, given the global level count gmx:
 * the level count and pointers (M->nsched, levptr). */
static rrt_status level_pointers(rrt_ilu0_t M, int side, const int32_t *lev, int32_t gmx) {
  M->nsched[side] = gmx;
  free(M->levptr[side]);
  int64_t *ptr = M->levptr[side] = calloc((size_t)gmx + 2, sizeof(int64_t));
  if (!ptr) return rrt_ilu0_nomem(M->ctx, OPC);
  for (int64_t i = 0; i < M->nloc; i++)
    ptr[lev[i]]++; /* level l counted in ptr[l], summed below */
  for (int l = 0; l < gmx; l++)
    ptr[l + 1] += ptr[l];
  return RRT_SUCCESS;
}

/* The local rows grouped by level (levrows, levptr[l-1] .. levptr[l]), in
 * elimination order within a level (L side; reversed for U), as coarse
 * levels need and as the rows are stored. */
static rrt_status level_rows(rrt_ilu0_t M, int side, const int32_t *lev) {
  const int64_t *ptr = M->levptr[side];
  free(M->levrows[side]);
  M->levrows[side] = rrt_ilu0_alloc(((size_t)M->nloc + 1) * sizeof(int32_t));
  int64_t *fill = malloc(((size_t)M->nsched[side] + 1) * sizeof(int64_t));
  if (!M->levrows[side] || !fill) {
    free(fill);
    return rrt_ilu0_nomem(M->ctx, OPC);
  }
  memcpy(fill, ptr, (size_t)M->nsched[side] * sizeof(int64_t));
  for (int64_t t = 0; t < M->nloc; t++) {
    int32_t i = M->porder[side == 0 ? t : M->nloc - 1 - t];
    M->levrows[side][fill[lev[i] - 1]++] = i;
  }
  free(fill);
  return RRT_SUCCESS;
}

/* Coarse schedule level of extended row x: the phase of its position
 * (M->phase_start; 1 without phases), counted from the last phase for U. */
static int32_t coarse_level(rrt_ilu0_t M, int side, int64_t x) {
  int nph = M->nphase > 0 ? M->nphase : 1, lo = 0, hi = nph - 1;
  while (lo < hi) { /* the last phase starting at or before pos_ext[x] */
    int mid = (lo + hi + 1) / 2;
    if (M->phase_start[mid] <= M->pos_ext[x])
      lo = mid;
    else
      hi = mid - 1;
  }
  return side == 0 ? lo + 1 : nph - lo;
}

/* Schedule level of extended row x for sync-free sweeps: its phase, then
 * within the phase its owner rank (both counted from the end for U). A
 * remote row read in the same phase comes from a lower rank (L; higher for
 * U; remote_reads_ordered), so from an earlier schedule level: every
 * message is needed after the level that sends it, and no receive has to
 * be posted ahead (which NCCL could not do). A rank's rows of one phase are
 * one launch; the dd interiors need nothing remote and run at once, the
 * interface rank after rank, as on the cpu. */
static int32_t chain_level(rrt_ilu0_t M, int side, int64_t x) {
  int P = M->ctx->size;
  int owner = x < M->nloc ? M->ctx->rank : M->A->ghost_owner[x - M->nloc];
  return (coarse_level(M, side, x) - 1) * P + (side == 0 ? owner : P - 1 - owner) + 1;
}

/* Whether every remote row the side's sweep reads comes from a lower rank
 * (L; higher for U), or else from an earlier schedule level than each row
 * reading it (the dd orderings' interface colours, subdomains split over
 * ranks): the condition of coarse levels below. */
static int remote_reads_ordered(rrt_ilu0_t M, int side, const int32_t *gflag) {
  rrt_sparse_t A = M->A;
  int rank = M->ctx->rank, by_rank = 1;
  for (int64_t g = 0; g < A->nghost && by_rank; g++)
    if (gflag[g] & (1 << side))
      by_rank = side == 0 ? A->ghost_owner[g] < rank : A->ghost_owner[g] > rank;
  if (by_rank || M->nphase <= 1) return by_rank;
  for (int64_t i = 0; i < M->nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int32_t e = A->col_ext[p];
      if (e < M->nloc || (M->pos_ext[e] < M->pos_ext[i]) != (side == 0)) continue;
      int32_t owner = A->ghost_owner[e - M->nloc];
      if (coarse_level(M, side, e) < coarse_level(M, side, i)) continue;
      if (side == 0 ? owner >= rank : owner <= rank) return 0;
    }
  return 1;
}

/* Coarse schedule levels (host-sequential kernels, several ranks, small
 * levels): all the levels of a phase of the elimination order (the whole
 * order, unless a dd ordering splits it into interiors and interface) form
 * one schedule level, processed sequentially in elimination order (valid:
 * a row's dependencies have smaller positions, and phases follow the
 * positions) with the cache-friendly sweeps of one rank, and exchanged
 * once. Only when every remote row a rank reads comes from an earlier
 * schedule level, or from a lower rank (L; higher for U) in the same one,
 * as natural order on row blocks and the dd orderings give: a message may
 * then be needed in the level that produces it (receives are posted ahead)
 * without a cycle. So each rank sweeps its rows once per phase, after the
 * ranks it depends on; the dd interiors need nothing remote and run at the
 * same time. Measured on laplace2d:1000 / laplace3d:100 at 2 ranks in
 * natural order, one schedule level beat every pipelined band of B levels
 * tried (18 to 124): a band visits short runs of rows all over the block,
 * and that cost more than the overlap gained (see docs/ilu.md).
 * *B = 1: keep the levels, else the level count (a flag). Collective. */
static rrt_status coarse_factor(rrt_ilu0_t M, int side, const int32_t *gflag, int *B) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int32_t ok = 0, all = 0;
  if (M->chain) { /* sync-free sweeps: for the dd orderings, the interiors in one launch */
    ok = ctx->size > 1 && M->nphase > 1;
  } else { /* host-sequential sweeps, small levels (the test of the one-rank sweep) */
    int64_t rows = A->n / (M->nlev[side] > 0 ? M->nlev[side] : 1);
    ok = M->k->factor_seq != NULL && ctx->size > 1 &&
         (ctx->threads <= 1 || rows < RRT_ILU0_SEQ_ROWS_PER_LEVEL);
  }
  ok = ok && remote_reads_ordered(M, side, gflag);
  RRT_CHECK(rrt_host_allreduce_named(ctx, RRT_ILU0_OP_ANALYSIS("schedule"), &ok, &all, 1,
                                     RRT_DTYPE_I32, RRT_OP_MIN));
  *B = all && M->nlev[side] > 1 ? M->nlev[side] : 1;
  return RRT_SUCCESS;
}

/* Earliest local schedule level reading each ghost, per side (the ghosts
 * of row i's L part for side 0, of its U part for side 1). */
static void ghost_need(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  int64_t nloc = M->nloc;
  for (int64_t g = 0; g < M->A->nghost; g++)
    S->gneed[0][g] = S->gneed[1][g] = INT_MAX;
  if (M->A->nghost == 0) return; /* one rank: no pass over the entries */
  for (int64_t i = 0; i < nloc; i++)
    for (int side = 0; side < 2; side++) {
      const rrt_ilu0_idx *part = side == 0 ? M->lr : M->ur;
      int32_t l = S->lev[side][i], *need = S->gneed[side];
      for (int64_t v = part[2 * i] + side; v < part[2 * i + 1]; v++) {
        int32_t e = M->fcol[v];
        if (e >= nloc && l < need[e - nloc]) need[e - nloc] = l;
      }
    }
}

/* One rank with host-sequential kernels and one thread: the sweeps follow
 * the elimination order (porder, forwards and backwards) and read no
 * level, so the levels, only reported there, are counted when first asked
 * (rrt_ilu0_count_levels): their two sweeps and arrays were a tenth of the
 * analysis. */
static int levels_deferred(rrt_ilu0_t M) {
  return M->ctx->size == 1 && M->k->factor_seq && M->ctx->threads <= 1;
}

rrt_status rrt_ilu0_count_levels(rrt_ilu0_t M) {
  if (M->nlev[0] >= 0 && M->nlev[1] >= 0) return RRT_SUCCESS;
  int32_t *lev = malloc(((size_t)M->next + 1) * sizeof(int32_t));
  rrt_status st = lev ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, "rrt_ilu0_levels");
  for (int side = 0; side < 2 && !st; side++) {
    memset(lev, 0, ((size_t)M->next + 1) * sizeof(int32_t));
    /* one rank: a sweep in elimination order finds every level */
    if (sweep_parts(M, side, lev) != 0)
      st = rrt_error(M->ctx, RRT_ERR_INTERNAL, "rrt_ilu0_levels", "level sweep incomplete");
    if (!st) st = level_report(M, side, lev);
  }
  free(lev);
  return st;
}

rrt_status rrt_ilu0_schedule(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  rrt_ctx_t ctx = M->ctx;
  int64_t ng = M->A->nghost;
  int deferred = levels_deferred(M);
  for (int side = 0; side < 2; side++) {
    /* deferred: lev[0] only as the update pairs' scratch, which sets it */
    S->lev[side] = rrt_ilu0_alloc(((size_t)M->next + 1) * sizeof(int32_t));
    S->gneed[side] = malloc(((size_t)ng + 1) * sizeof(int32_t));
    if (!S->lev[side] || !S->gneed[side]) return rrt_ilu0_nomem(ctx, OPC);
    if (!deferred) memset(S->lev[side], 0, ((size_t)M->next + 1) * sizeof(int32_t));
  }
  if (deferred) {
    M->seq_order = M->porder;
    M->nlev[0] = M->nlev[1] = -1; /* not counted yet */
    return RRT_SUCCESS;           /* no ghosts: S->gneed is empty */
  }
  /* levels, across ranks (one rank with a device sweep: on the device) */
  if (ctx->size == 1 && M->k->level_sweep)
    RRT_CHECK(levels_device(M, S->lev));
  else
    RRT_CHECK(levels_host(M, S, S->lev));
  for (int side = 0; side < 2; side++) {
    RRT_CHECK(level_report(M, side, S->lev[side]));
    RRT_CHECK(level_pointers(M, side, S->lev[side], M->nlev[side]));
  }
  /* One rank with host-sequential kernels and small levels: a sequential
   * sweep in elimination order is faster than level scheduling (memory
   * order beats tiny parallel levels); large levels (multicolour) keep the
   * threads. The sweeps read porder, so no level lists. */
  if (ctx->size == 1 && M->k->factor_seq &&
      M->nloc < (int64_t)M->nlev[0] * RRT_ILU0_SEQ_ROWS_PER_LEVEL)
    M->seq_order = M->porder;
  /* sync-free sweeps take the level lists in order (a topological order:
   * by level, or in elimination order within a coarse level) */
  M->chain = M->k->factor_chain && ctx->env.ilu_sweep == RRT_ILU_SWEEP_AUTO;
  for (int side = 0; side < 2; side++) {
    RRT_CHECK(coarse_factor(M, side, S->gflag, &M->coarse[side]));
    if (M->coarse[side] > 1) {
      /* schedule levels of local and ghost rows alike (phases are global) */
      for (int64_t x = 0; x < M->next; x++)
        if (S->lev[side][x] > 0)
          S->lev[side][x] = M->chain ? chain_level(M, side, x) : coarse_level(M, side, x);
      int32_t gmx = 0;
      RRT_CHECK(global_levels(M, S->lev[side], RRT_ILU0_OP_ANALYSIS("level lists"), &gmx));
      RRT_CHECK(level_pointers(M, side, S->lev[side], gmx));
    }
    if (!M->seq_order) RRT_CHECK(level_rows(M, side, S->lev[side]));
  }
  ghost_need(M, S);
  return RRT_SUCCESS;
}

int rrt_ilu0_run_end(rrt_ilu0_t M, const rrt_halo *h, int side, int level) {
  int end = level;
  if (M->chain)
    while (end < M->nsched[side] && !rrt_halo_posts(h, end))
      end++;
  return end;
}

static rrt_ilu0_chain chain_next(rrt_ilu0_t M) {
  /* every sweep stamps every local row, so a stamp only has to differ from
   * the previous sweep's: wrapping around is harmless */
  M->chain_gen = M->chain_gen == INT32_MAX ? 1 : M->chain_gen + 1;
  return (rrt_ilu0_chain){M->d_done, M->d_ticket, M->nloc, M->chain_gen};
}

rrt_status rrt_ilu0_sweep(rrt_ilu0_t M, int side, rrt_halo *h, double *x, rrt_ilu0_level_fn run,
                          const double *r) {
  rrt_ctx_t ctx = M->ctx;
  /* coarse levels of the host sweeps may need a message in the level
   * that sends it: receives posted ahead (chain levels never do) */
  if (M->coarse[side] > 1 && !M->chain) RRT_CHECK(rrt_halo_begin(ctx, h));
  const rrt_ilu0_chain c = chain_next(M);
  for (int l = 1, e; l <= M->nsched[side]; l = e + 1) {
    e = rrt_ilu0_run_end(M, h, side, l); /* levels l .. e */
    for (int m = l; m <= e; m++)
      RRT_CHECK(rrt_halo_wait_needed(ctx, h, m, x));
    int64_t a = M->levptr[side][l - 1], b = M->levptr[side][e];
    if (b > a) RRT_CHECK(run(M, M->d_lev[side] + a, b - a, r, c));
    for (int m = l; m <= e; m++)
      RRT_CHECK(rrt_halo_post(ctx, h, m, x));
  }
  return rrt_halo_wait_all(ctx, h, x);
}

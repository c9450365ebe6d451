/* Distributed level-scheduled ILU(0): analysis (ordering, levels across
 * ranks, plans), numeric factorisation level by level, triangular solves.
 *
 * Rows never move. An ordering only assigns every row a position in the
 * elimination order; row i depends on the columns k of its pattern with
 * pos(k) < pos(i). Within a row, entries are kept sorted by position (L part,
 * diagonal, U part), so the IKJ updates run in the serial order and the
 * factors are bitwise those of the serial ILU(0) of P A P^T. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sparse/sparse_impl.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/options.h"

struct rrt_ilu0 {
  rrt_sparse_t A;
  rrt_ctx_t ctx;
  rrt_ilu0_options opt;
  int64_t nloc, next, nnz, nval;
  int64_t *pos_ext; /* position of every extended row */
  /* Factor storage (value indices): the L parts of all local rows first
   * (row i: lr[2i] .. lr[2i+1]), then the diagonal and U parts (row i:
   * diagonal at ur[2i], U from ur[2i] + 1 to ur[2i+1]), then the U rows of
   * ghost rows. Within a part, rows in elimination order and entries by
   * position. Keeping L and U apart halves the memory each triangular solve
   * streams; the elimination order keeps a level's rows (e.g. one colour)
   * together in memory. */
  int64_t *lr, *ur; /* 2 nloc each: [begin, end) per row */
  int64_t nlv;      /* L entries (the L part is values 0 .. nlv) */
  int32_t *porder;  /* local rows in elimination order */
  int32_t *rorder;  /* and reversed */
  int32_t *fcol;    /* extended column per value index */
  int32_t *fperm;   /* value index -> A's local entry (32-bit: less to stream per factor) */
  int64_t *gofs;    /* ghost U rows in v: nnz + gofs[g] .. nnz + gofs[g + 1] */
  int32_t *piv, *pair_dst, *pair_src;
  int64_t *pair_ptr;
  int nlev[2];        /* L, U: levels (reported) */
  int nsched[2];      /* schedule levels (coarse levels when coarse[side] > 1) */
  int coarse[2];      /* levels per schedule level (1: plain level scheduling) */
  int64_t *hist[2];   /* global rows per level */
  int64_t *levptr[2]; /* local rows per level: levptr[l-1] .. levptr[l] */
  int32_t *levrows[2];
  rrt_halo hf, hl, hu; /* factor rows, L solve, U solve */
  int64_t *d_lr, *d_ur, *d_pair_ptr;
  int32_t *d_col, *d_fperm, *d_piv, *d_pair_dst, *d_pair_src, *d_lev[2];
  double *d_v, *d_y, *d_z, *d_dinv; /* d_dinv: 1 / u_ii per local row */
  float *d_vf;                      /* factors_f32: fl32 of the local factors, else NULL */
  double *h_v;                      /* host staging of the first nnz values */
  /* device backends: the pivots are gathered on the device and only they
   * come back for the zero-pivot check (not the whole factor) */
  int32_t *d_didx; /* ur[2i] */
  double *d_diag, *h_diag;
  int32_t *seq_order; /* cpu, one rank, small levels: rows by position, else NULL */
  double fflops, aflops;
};

#define OPC "rrt_ilu0_create"
/* Average rows per level below which one cpu rank sweeps sequentially. */
#define RRT_ILU0_SEQ_ROWS_PER_LEVEL 8192

static rrt_status upload(rrt_ctx_t ctx, void **dst, const void *src, size_t bytes);

static rrt_status nomem(rrt_ctx_t ctx, const char *op) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "out of memory");
}

static rrt_status mpi_fail(rrt_ctx_t ctx, const char *what) {
  return rrt_error(ctx, RRT_ERR_MPI, OPC, "%s failed", what);
}

/* ---- ordering -------------------------------------------------------------- */

/* Positions of all global rows for RCM / multicolour: the pattern is gathered
 * on every rank and every rank computes the same (deterministic) ordering. */
static rrt_status global_positions(rrt_ilu0_t M, int64_t **pos_out) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int P = ctx->size;
  int64_t n = A->n;
  rrt_status st = RRT_SUCCESS;
  int *cnt = malloc((size_t)P * sizeof(int)), *dis = malloc((size_t)P * sizeof(int));
  int64_t *len = malloc((size_t)(A->nloc + 1) * sizeof(int64_t));
  int64_t *rowptr = malloc(((size_t)n + 1) * sizeof(int64_t)), *col = NULL, *sptr = NULL,
          *scol = NULL, *pos = malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!cnt || !dis || !len || !rowptr || !pos) {
    st = nomem(ctx, OPC);
    goto done;
  }
  for (int p = 0; p < P; p++)
    cnt[p] = (int)(A->offsets[p + 1] - A->offsets[p]), dis[p] = (int)A->offsets[p];
  for (int64_t i = 0; i < A->nloc; i++)
    len[i] = A->rowptr[i + 1] - A->rowptr[i];
  if (MPI_Allgatherv(len, (int)A->nloc, MPI_INT64_T, rowptr + 1, cnt, dis, MPI_INT64_T,
                     ctx->comm)) {
    st = mpi_fail(ctx, "MPI_Allgatherv of row lengths");
    goto done;
  }
  rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++)
    rowptr[i + 1] += rowptr[i];
  for (int p = 0; p < P; p++)
    dis[p] = (int)rowptr[A->offsets[p]],
    cnt[p] = (int)(rowptr[A->offsets[p + 1]] - rowptr[A->offsets[p]]);
  col = malloc(((size_t)rowptr[n] + 1) * sizeof(int64_t));
  if (!col) {
    st = nomem(ctx, OPC);
    goto done;
  }
  if (MPI_Allgatherv(A->col, (int)A->nnz, MPI_INT64_T, col, cnt, dis, MPI_INT64_T, ctx->comm)) {
    st = mpi_fail(ctx, "MPI_Allgatherv of the pattern");
    goto done;
  }
  if ((st = rrt_graph_symmetrize(n, rowptr, col, &sptr, &scol))) {
    st = nomem(ctx, OPC);
    goto done;
  }
  if (M->opt.ordering == RRT_ILU_ORDER_RCM) {
    st = rrt_order_rcm(n, sptr, scol, pos);
  } else {
    int nc = 0;
    st = rrt_order_multicolor(n, sptr, scol, pos, &nc);
  }
  if (st) st = nomem(ctx, OPC);
done:
  free(cnt), free(dis), free(len), free(rowptr), free(col), free(sptr), free(scol);
  if (st) free(pos), pos = NULL;
  *pos_out = pos;
  return st;
}

/* ---- analysis ----------------------------------------------------------------- */

static int cmp_pos(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The factor storage: per row, the entries sorted by position; the L parts
 * of all rows first, then the diagonal and U parts; rows in elimination
 * order (see struct rrt_ilu0). */
static rrt_status factor_order(rrt_ilu0_t M, int64_t *missing) {
  rrt_sparse_t A = M->A;
  int64_t nloc = M->nloc;
  *missing = INT64_MAX;
  M->lr = malloc((2 * (size_t)nloc + 1) * sizeof(int64_t));
  M->ur = malloc((2 * (size_t)nloc + 1) * sizeof(int64_t));
  M->fcol = malloc(((size_t)M->nnz + 1) * sizeof(int32_t));
  M->fperm = malloc(((size_t)M->nnz + 1) * sizeof(int32_t));
  M->porder = malloc(((size_t)nloc + 1) * sizeof(int32_t));
  M->rorder = malloc(((size_t)nloc + 1) * sizeof(int32_t));
  int64_t *byp = malloc(2 * ((size_t)nloc + 1) * sizeof(int64_t)); /* (position, row) */
  int64_t maxlen = 0;
  for (int64_t i = 0; i < nloc; i++)
    if (A->rowptr[i + 1] - A->rowptr[i] > maxlen) maxlen = A->rowptr[i + 1] - A->rowptr[i];
  int64_t *tmp = malloc(((size_t)maxlen + 1) * sizeof(int64_t));
  if (!M->lr || !M->ur || !M->fcol || !M->fperm || !M->porder || !M->rorder || !tmp || !byp) {
    free(tmp), free(byp);
    return nomem(M->ctx, OPC);
  }
  int sorted = 1;
  for (int64_t i = 0; i < nloc; i++) {
    byp[2 * i] = M->pos_ext[i], byp[2 * i + 1] = i;
    if (i > 0 && M->pos_ext[i] < M->pos_ext[i - 1]) sorted = 0;
  }
  if (!sorted) qsort(byp, (size_t)nloc, 2 * sizeof(int64_t), cmp_pos);
  for (int64_t t = 0; t < nloc; t++)
    M->porder[t] = M->rorder[nloc - 1 - t] = (int32_t)byp[2 * t + 1];
  /* L counts, then both parts laid out row by row in elimination order */
  int64_t lcur = 0;
  for (int64_t t = 0; t < nloc; t++) {
    int64_t i = byp[2 * t + 1], nl = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
      nl += M->pos_ext[A->col_ext[p]] < M->pos_ext[i];
    M->lr[2 * i] = lcur, M->lr[2 * i + 1] = lcur + nl;
    lcur += nl;
  }
  M->nlv = lcur;
  int64_t ucur = lcur;
  for (int64_t t = 0; t < nloc; t++) {
    int64_t i = byp[2 * t + 1];
    int64_t nu = (A->rowptr[i + 1] - A->rowptr[i]) - (M->lr[2 * i + 1] - M->lr[2 * i]);
    M->ur[2 * i] = ucur, M->ur[2 * i + 1] = ucur + nu;
    ucur += nu;
  }
  for (int64_t i = 0; i < nloc; i++) {
    int64_t b = A->rowptr[i], len = A->rowptr[i + 1] - b, nl = M->lr[2 * i + 1] - M->lr[2 * i];
    /* insertion by position: stable, and a no-op for the natural order */
    for (int64_t p = 0; p < len; p++) {
      int64_t q = p, pp = M->pos_ext[A->col_ext[b + p]];
      while (q > 0 && M->pos_ext[A->col_ext[tmp[q - 1]]] > pp) {
        tmp[q] = tmp[q - 1];
        q--;
      }
      tmp[q] = b + p;
    }
    for (int64_t p = 0; p < len; p++) {
      int64_t v = p < nl ? M->lr[2 * i] + p : M->ur[2 * i] + (p - nl);
      M->fcol[v] = A->col_ext[tmp[p]];
      M->fperm[v] = (int32_t)tmp[p];
    }
    if (len == nl || M->fcol[M->ur[2 * i]] != i)
      if (A->row_begin + i < *missing) *missing = A->row_begin + i;
  }
  free(tmp), free(byp);
  return RRT_SUCCESS;
}

/* One rank on a GPU backend: the level analysis runs on the device, one
 * sweep launch per level (a row is finished in the launch after all its
 * dependencies were; see ilu0_level_sweep_k). */
static rrt_status levels_device(rrt_ilu0_t M, int32_t *lev[2]) {
  rrt_ctx_t ctx = M->ctx;
  rrt_sparse_t A = M->A;
  int64_t n = M->nloc;
  int64_t *d_rowptr = NULL, *d_pos = NULL;
  int32_t *d_col = NULL, *d_lev = NULL;
  int *d_changed = NULL;
  rrt_status st = upload(ctx, (void **)&d_rowptr, A->rowptr, ((size_t)n + 1) * sizeof(int64_t));
  if (!st) st = upload(ctx, (void **)&d_col, A->col_ext, (size_t)A->nnz * sizeof(int32_t));
  if (!st) st = upload(ctx, (void **)&d_pos, M->pos_ext, (size_t)n * sizeof(int64_t));
  if (!st) st = rrt_malloc(ctx, ((size_t)n + 1) * sizeof(int32_t), (void **)&d_lev);
  if (!st) st = rrt_malloc(ctx, sizeof(int), (void **)&d_changed);
  for (int side = 0; side < 2 && !st; side++) {
    st = rrt_memset(ctx, d_lev, 0, ((size_t)n + 1) * sizeof(int32_t));
    for (int64_t round = 0; !st && round <= n; round++) {
      int changed = 0;
      st = rrt_memset(ctx, d_changed, 0, sizeof(int));
      if (!st)
        st = RRT_KCALL(ctx->dev, rrt_k_ilu0_level_sweep, ctx->compute_stream, n, d_rowptr, d_col,
                       d_pos, side, d_lev, d_changed);
      if (!st)
        st = RRT_KCALL(ctx->dev, rrt_k_ilu0_level_sweep, ctx->compute_stream, n, d_rowptr, d_col,
                       d_pos, -1, d_lev, d_changed);
      if (!st) st = rrt_memcpy_to_host(ctx, &changed, d_changed, sizeof(int));
      if (!changed) break;
    }
    if (!st) st = rrt_memcpy_to_host(ctx, lev[side], d_lev, (size_t)n * sizeof(int32_t));
  }
  rrt_free(ctx, d_rowptr), rrt_free(ctx, d_pos), rrt_free(ctx, d_col), rrt_free(ctx, d_lev);
  rrt_free(ctx, d_changed);
  return st;
}

/* Levels of L (side 0) and U (side 1): sweeps, with the levels of the ghost
 * rows sent by their owners between sweeps, until every row is known. */
static rrt_status levels(rrt_ilu0_t M, int32_t *lev[2], int64_t nreq, const int64_t *req_row,
                         const int32_t *req_src) {
  rrt_ctx_t ctx = M->ctx;
  rrt_sparse_t A = M->A;
  int P = ctx->size;
  rrt_status st = RRT_SUCCESS;
  int32_t *order[2] = {malloc(((size_t)M->nloc + 1) * sizeof(int32_t)),
                       malloc(((size_t)M->nloc + 1) * sizeof(int32_t))};
  int32_t *reply = malloc(2 * ((size_t)nreq + 1) * sizeof(int32_t));
  int32_t *resp = malloc(2 * ((size_t)A->nghost + 1) * sizeof(int32_t));
  int *scnt = calloc((size_t)P, sizeof(int)), *sdis = calloc((size_t)P + 1, sizeof(int));
  int *rcnt = calloc((size_t)P, sizeof(int)), *rdis = calloc((size_t)P + 1, sizeof(int));
  if (!order[0] || !order[1] || !reply || !resp || !scnt || !sdis || !rcnt || !rdis) {
    st = nomem(ctx, OPC);
    goto done;
  }
  /* local rows by position (ascending for L, descending for U) */
  {
    int64_t *key = malloc(((size_t)M->nloc + 1) * sizeof(int64_t));
    if (!key) {
      st = nomem(ctx, OPC);
      goto done;
    }
    for (int64_t i = 0; i < M->nloc; i++)
      order[0][i] = (int32_t)i;
    /* positions are a permutation; sort local rows by them (heap-free: shell sort) */
    for (int64_t i = 0; i < M->nloc; i++)
      key[i] = M->pos_ext[i];
    for (int64_t gap = M->nloc / 2; gap > 0; gap /= 2)
      for (int64_t i = gap; i < M->nloc; i++) {
        int32_t x = order[0][i];
        int64_t j = i;
        while (j >= gap && key[order[0][j - gap]] > key[x])
          order[0][j] = order[0][j - gap], j -= gap;
        order[0][j] = x;
      }
    for (int64_t i = 0; i < M->nloc; i++)
      order[1][i] = order[0][M->nloc - 1 - i];
    free(key);
  }
  for (int64_t t = 0; t < nreq; t++)
    scnt[req_src[t]] += 2;
  for (int64_t g = 0; g < A->nghost; g++)
    rcnt[A->ghost_owner[g]] += 2;
  for (int p = 0; p < P; p++)
    sdis[p + 1] = sdis[p] + scnt[p], rdis[p + 1] = rdis[p] + rcnt[p];
  int64_t *fr = malloc(((size_t)M->nloc + 1) * sizeof(int64_t));
  if (!fr) {
    st = nomem(ctx, OPC);
    goto done;
  }
  /* the sweep reads the original CSR with extended columns */
  for (int round = 0;; round++) {
    int64_t unknown = 0, total = 0;
    for (int side = 0; side < 2; side++)
      unknown +=
          rrt_level_sweep(M->nloc, order[side], A->rowptr, A->col_ext, M->pos_ext, side, lev[side]);
    for (int64_t t = 0; t < nreq; t++) {
      int64_t r = req_row[t] - A->row_begin;
      reply[2 * t] = lev[0][r];
      reply[2 * t + 1] = lev[1][r];
    }
    if (MPI_Alltoallv(reply, scnt, sdis, MPI_INT32_T, resp, rcnt, rdis, MPI_INT32_T, ctx->comm)) {
      st = mpi_fail(ctx, "MPI_Alltoallv of levels");
      break;
    }
    /* replies come back in owner order, i.e. in ghost order */
    for (int64_t g = 0; g < A->nghost; g++) {
      lev[0][M->nloc + g] = resp[2 * g];
      lev[1][M->nloc + g] = resp[2 * g + 1];
    }
    if (MPI_Allreduce(&unknown, &total, 1, MPI_INT64_T, MPI_SUM, ctx->comm)) {
      st = mpi_fail(ctx, "MPI_Allreduce of the level count");
      break;
    }
    if (total == 0) break;
    if (round > M->A->n + 2) {
      st = rrt_error(ctx, RRT_ERR_INTERNAL, OPC, "level analysis does not converge");
      break;
    }
  }
  free(fr);
done:
  free(order[0]), free(order[1]), free(reply), free(resp), free(scnt), free(sdis), free(rcnt),
      free(rdis);
  return st;
}

/* Group local rows by level, in elimination order within a level (L side;
 * reversed for U), as coarse levels need and as the rows are stored.
 * report: also the global level count and histogram (rrt_ilu0_levels);
 * otherwise only the schedule (M->nsched, levptr, levrows). */
static rrt_status level_lists(rrt_ilu0_t M, int side, const int32_t *lev, int report) {
  rrt_ctx_t ctx = M->ctx;
  int mx = 0, gmx = 0;
  for (int64_t i = 0; i < M->nloc; i++)
    if (lev[i] > mx) mx = lev[i];
  if (MPI_Allreduce(&mx, &gmx, 1, MPI_INT, MPI_MAX, ctx->comm))
    return mpi_fail(ctx, "MPI_Allreduce");
  M->nsched[side] = gmx;
  free(M->levptr[side]), free(M->levrows[side]);
  M->levptr[side] = calloc((size_t)gmx + 2, sizeof(int64_t));
  M->levrows[side] = malloc(((size_t)M->nloc + 1) * sizeof(int32_t));
  int64_t *loc = calloc((size_t)gmx + 1, sizeof(int64_t));
  if (!M->levptr[side] || !M->levrows[side] || !loc) {
    free(loc);
    return nomem(ctx, OPC);
  }
  for (int64_t i = 0; i < M->nloc; i++)
    loc[lev[i] - 1]++;
  if (report) {
    M->nlev[side] = gmx;
    M->hist[side] = calloc((size_t)gmx + 1, sizeof(int64_t));
    if (!M->hist[side] || MPI_Allreduce(loc, M->hist[side], gmx, MPI_INT64_T, MPI_SUM, ctx->comm)) {
      free(loc);
      return M->hist[side] ? mpi_fail(ctx, "MPI_Allreduce of the histogram") : nomem(ctx, OPC);
    }
  }
  int64_t *ptr = M->levptr[side];
  for (int l = 0; l < gmx; l++)
    ptr[l + 1] = ptr[l] + loc[l];
  memcpy(loc, ptr, (size_t)gmx * sizeof(int64_t));
  for (int64_t t = 0; t < M->nloc; t++) {
    int32_t i = M->porder[side == 0 ? t : M->nloc - 1 - t];
    M->levrows[side][loc[lev[i] - 1]++] = i;
  }
  free(loc);
  return RRT_SUCCESS;
}

/* Coarse schedule levels (cpu backend, several ranks, small levels): B
 * consecutive levels form one schedule level, processed sequentially in
 * elimination order (valid: a row's dependencies have smaller positions and
 * levels) with the cache-friendly sweeps of one rank, and exchanged once.
 * Only when every rank depends on lower ranks alone for L (higher for U),
 * as natural order on row blocks does: a message may then be needed in the
 * level that produces it (receives are posted ahead) without a cycle.
 * B is all the levels: each rank sweeps its rows once, after the ranks it
 * depends on. Measured on laplace2d:1000 / laplace3d:100 at 2 ranks, this
 * beat every pipelined B tried (18 to 124 levels per schedule level): a
 * band of levels visits short runs of rows all over the block, and that
 * cost more than the overlap gained (see docs/ilu.md). Returns B (1: keep
 * the levels). Collective. */
static int coarse_factor(rrt_ilu0_t M, int side, const int32_t *gflag) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int ok = rrt_ilu_is_cpu(ctx) && ctx->size > 1, all = 0;
  for (int64_t g = 0; g < A->nghost && ok; g++)
    if (gflag[g] & (1 << side))
      ok = side == 0 ? A->ghost_owner[g] < ctx->rank : A->ghost_owner[g] > ctx->rank;
  /* small levels: the same test as the one-rank sequential sweep */
  int64_t rows = A->n / (M->nlev[side] > 0 ? M->nlev[side] : 1);
  ok = ok && (ctx->threads <= 1 || rows < RRT_ILU0_SEQ_ROWS_PER_LEVEL);
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx->comm) || !all) return 1;
  return M->nlev[side] > 1 ? M->nlev[side] : 1;
}

/* Global column of an extended index. */
static int64_t ext_global(const struct rrt_sparse *A, int64_t e) {
  return e < A->nloc ? A->row_begin + e : A->ghost[e - A->nloc];
}

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

static rrt_status upload(rrt_ctx_t ctx, void **dst, const void *src, size_t bytes) {
  RRT_CHECK(rrt_malloc(ctx, bytes ? bytes : 8, dst));
  if (bytes) RRT_CHECK(rrt_memcpy_to_backend(ctx, *dst, src, bytes));
  return RRT_SUCCESS;
}

/* Agreed structural-singularity check: every rank names the same row. */
static rrt_status agree_missing(rrt_ilu0_t M, int64_t missing) {
  int64_t gmin = INT64_MAX;
  if (MPI_Allreduce(&missing, &gmin, 1, MPI_INT64_T, MPI_MIN, M->ctx->comm))
    return mpi_fail(M->ctx, "MPI_Allreduce");
  if (gmin != INT64_MAX)
    return rrt_error(M->ctx, RRT_ERR_SINGULAR, OPC,
                     "zero pivot: global row %lld (0-based) has no diagonal entry, ILU(0) does "
                     "not exist",
                     (long long)gmin);
  return RRT_SUCCESS;
}

static const rrt_ilu0_options ilu0_options_defaults = RRT_ILU0_OPTIONS_INITIALIZER;
static const rrt_options_layout ilu0_options_layout = {
    .name = "rrt_ilu0_options",
    .initializer = "RRT_ILU0_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_ilu0_options),
    .min_size = offsetof(rrt_ilu0_options, ordering),
    .defaults = &ilu0_options_defaults,
};

rrt_status rrt_ilu0_create(rrt_sparse_t A, const rrt_ilu0_options *options, rrt_ilu0_t *out) {
  *out = NULL;
  rrt_ctx_t ctx = A->ctx;
  /* options from an older header: its fields, defaults for the rest */
  rrt_ilu0_options opt;
  char msg[256];
  if (rrt_options_import(&ilu0_options_layout, options, &opt, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC, "%s", msg));
  if (opt.ordering < RRT_ILU_ORDER_NATURAL || opt.ordering > RRT_ILU_ORDER_MULTICOLOR)
    return rrt_agree(
        ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OPC, "ordering %d unknown", (int)opt.ordering));
  double t0 = rrt_phase_begin(ctx);
  rrt_status st = RRT_SUCCESS;
  struct rrt_ilu0 *M = calloc(1, sizeof(*M));
  if (!M) return rrt_agree(ctx, nomem(ctx, OPC));
  M->A = A;
  M->ctx = ctx;
  M->opt = opt;
  M->nloc = A->nloc;
  M->nnz = A->nnz;
  M->next = A->nloc + A->nghost;
  int64_t nloc = M->nloc, ng = A->nghost, nnz = M->nnz;
  int64_t *gpos = NULL, *rec = NULL, *rdata = NULL, *ulen_send = NULL, *ucol_send = NULL;
  int64_t *glen = NULL, *gcol = NULL, *pk = NULL;
  int32_t *dest = NULL, *rsrc = NULL, *lev[2] = {NULL, NULL}, *gflag = NULL,
          *gneed[2] = {NULL, NULL};
  int32_t *gcol_ext = NULL, *pp = NULL, *pi = NULL, *pl = NULL;
  int *need = NULL, *scnt = NULL, *sdis = NULL, *rcnt = NULL, *rdis = NULL;
  rrt_msg_plan sp[2] = {{0}}, rp[2] = {{0}}, fs = {0}, fr = {0};
  int64_t nreq = 0;

  /* 32-bit local value indices (checked on every rank before anything else) */
  {
    int big = A->nnz > INT32_MAX / 2, anybig = 0;
    if (MPI_Allreduce(&big, &anybig, 1, MPI_INT, MPI_MAX, ctx->comm))
      RRT_CHECK_GOTO(mpi_fail(ctx, "MPI_Allreduce"), st, fail);
    if (anybig)
      RRT_CHECK_GOTO(rrt_error(ctx, RRT_ERR_UNSUPPORTED, OPC,
                               "a rank holds more than %d nonzeros; use more ranks", INT32_MAX / 2),
                     st, fail);
  }
  /* 1. positions */
  M->pos_ext = malloc(((size_t)M->next + 1) * sizeof(int64_t));
  if (!M->pos_ext) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
  if (opt.ordering == RRT_ILU_ORDER_NATURAL) {
    for (int64_t e = 0; e < M->next; e++)
      M->pos_ext[e] = ext_global(A, e);
  } else {
    RRT_CHECK_GOTO(global_positions(M, &gpos), st, fail);
    for (int64_t e = 0; e < M->next; e++)
      M->pos_ext[e] = gpos[ext_global(A, e)];
  }
  /* 2. factor order and the structural diagonal check (agreed) */
  int64_t missing;
  RRT_CHECK_GOTO(factor_order(M, &missing), st, fail);
  RRT_CHECK_GOTO(agree_missing(M, missing), st, fail);

  /* 3. which ghosts are needed for L (factor, L solve) and U (U solve) */
  gflag = calloc((size_t)ng + 1, sizeof(int32_t));
  gneed[0] = malloc(((size_t)ng + 1) * sizeof(int32_t));
  gneed[1] = malloc(((size_t)ng + 1) * sizeof(int32_t));
  dest = malloc(((size_t)ng + 1) * sizeof(int32_t));
  rec = malloc(2 * ((size_t)ng + 1) * sizeof(int64_t));
  lev[0] = calloc((size_t)M->next + 1, sizeof(int32_t));
  lev[1] = calloc((size_t)M->next + 1, sizeof(int32_t));
  if (!gflag || !gneed[0] || !gneed[1] || !dest || !rec || !lev[0] || !lev[1])
    RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int32_t e = A->col_ext[p];
      if (e >= nloc) gflag[e - nloc] |= M->pos_ext[e] < M->pos_ext[i] ? 1 : 2;
    }
  for (int64_t g = 0; g < ng; g++) {
    dest[g] = A->ghost_owner[g];
    rec[2 * g] = A->ghost[g];
    rec[2 * g + 1] = gflag[g];
  }
  RRT_CHECK_GOTO(rrt_host_exchange_records(ctx, ng, dest, rec, 2, &nreq, &rdata, &rsrc), st, fail);
  {
    int64_t *rows = malloc(((size_t)nreq + 1) * sizeof(int64_t));
    if (!rows) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    for (int64_t t = 0; t < nreq; t++)
      rows[t] = rdata[2 * t];
    /* 4. levels, across ranks (one rank on a GPU backend: on the device) */
    st = (ctx->size == 1 && !rrt_ilu_is_cpu(ctx)) ? levels_device(M, lev)
                                                  : levels(M, lev, nreq, rows, rsrc);
    free(rows);
    if (st) goto fail;
  }
  for (int side = 0; side < 2; side++) {
    RRT_CHECK_GOTO(level_lists(M, side, lev[side], 1), st, fail);
    M->coarse[side] = coarse_factor(M, side, gflag);
    if (M->coarse[side] > 1) {
      /* schedule levels of local and ghost rows alike (B is global) */
      for (int64_t x = 0; x < M->next; x++)
        if (lev[side][x] > 0) lev[side][x] = (lev[side][x] - 1) / M->coarse[side] + 1;
      RRT_CHECK_GOTO(level_lists(M, side, lev[side], 0), st, fail);
    }
  }
  /* One rank on the cpu backend with small levels: a sequential sweep in
   * elimination order is faster than level scheduling (memory order beats
   * tiny parallel levels); large levels (multicolour) keep the threads. */
  if (ctx->size == 1 && rrt_ilu_is_cpu(ctx) &&
      (ctx->threads <= 1 || nloc < (int64_t)M->nlev[0] * RRT_ILU0_SEQ_ROWS_PER_LEVEL)) {
    M->seq_order = M->porder;
  }
  /* earliest local level reading each ghost */
  for (int64_t g = 0; g < ng; g++)
    gneed[0][g] = gneed[1][g] = INT_MAX;
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int32_t e = A->col_ext[p];
      if (e < nloc) continue;
      int side = M->pos_ext[e] < M->pos_ext[i] ? 0 : 1;
      if (lev[side][i] < gneed[side][e - nloc]) gneed[side][e - nloc] = lev[side][i];
    }

  /* 5. U rows of L ghosts: lengths, then global columns, in ghost order */
  {
    int P = ctx->size;
    scnt = calloc((size_t)P, sizeof(int)), sdis = calloc((size_t)P + 1, sizeof(int));
    rcnt = calloc((size_t)P, sizeof(int)), rdis = calloc((size_t)P + 1, sizeof(int));
    ulen_send = malloc(((size_t)nreq + 1) * sizeof(int64_t));
    glen = malloc(((size_t)ng + 1) * sizeof(int64_t));
    M->gofs = calloc((size_t)ng + 1, sizeof(int64_t));
    if (!scnt || !sdis || !rcnt || !rdis || !ulen_send || !glen || !M->gofs)
      RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    int64_t utot = 0;
    for (int64_t t = 0; t < nreq; t++) {
      int64_t r = rdata[2 * t] - A->row_begin;
      ulen_send[t] = (rdata[2 * t + 1] & 1) ? M->ur[2 * r + 1] - M->ur[2 * r] : 0;
      utot += ulen_send[t];
      scnt[rsrc[t]]++;
    }
    for (int64_t g = 0; g < ng; g++)
      rcnt[A->ghost_owner[g]]++;
    for (int p = 0; p < P; p++)
      sdis[p + 1] = sdis[p] + scnt[p], rdis[p + 1] = rdis[p] + rcnt[p];
    if (MPI_Alltoallv(ulen_send, scnt, sdis, MPI_INT64_T, glen, rcnt, rdis, MPI_INT64_T, ctx->comm))
      RRT_CHECK_GOTO(mpi_fail(ctx, "MPI_Alltoallv of U row lengths"), st, fail);
    for (int64_t g = 0; g < ng; g++)
      M->gofs[g + 1] = M->gofs[g] + glen[g];
    ucol_send = malloc(((size_t)utot + 1) * sizeof(int64_t));
    gcol = malloc(((size_t)M->gofs[ng] + 1) * sizeof(int64_t));
    if (!ucol_send || !gcol) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    int64_t w = 0;
    memset(scnt, 0, (size_t)P * sizeof(int));
    memset(rcnt, 0, (size_t)P * sizeof(int));
    for (int64_t t = 0; t < nreq; t++) {
      int64_t r = rdata[2 * t] - A->row_begin;
      for (int64_t q = 0; q < ulen_send[t]; q++)
        ucol_send[w++] = ext_global(A, M->fcol[M->ur[2 * r] + q]);
      scnt[rsrc[t]] += (int)ulen_send[t];
    }
    for (int64_t g = 0; g < ng; g++)
      rcnt[A->ghost_owner[g]] += (int)glen[g];
    for (int p = 0; p < P; p++)
      sdis[p + 1] = sdis[p] + scnt[p], rdis[p + 1] = rdis[p] + rcnt[p];
    if (MPI_Alltoallv(ucol_send, scnt, sdis, MPI_INT64_T, gcol, rcnt, rdis, MPI_INT64_T, ctx->comm))
      RRT_CHECK_GOTO(mpi_fail(ctx, "MPI_Alltoallv of U row columns"), st, fail);
    gcol_ext = malloc(((size_t)M->gofs[ng] + 1) * sizeof(int32_t));
    if (!gcol_ext) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    for (int64_t q = 0; q < M->gofs[ng]; q++)
      gcol_ext[q] = (int32_t)rrt_sparse_ext_index(A, gcol[q]);
    M->nval = nnz + M->gofs[ng];
    if (M->nval > INT32_MAX / 2)
      RRT_CHECK_GOTO(rrt_error(ctx, RRT_ERR_UNSUPPORTED, OPC, "too many local values"), st, fail);
  }

  /* 6. pivots and update pairs (the IKJ schedule of every row): for the L
   * entry e = l_ik, the U entries u_kj of row k (local or ghost) matched
   * with the entries of row i after e in position order */
  {
    int64_t nlv = M->nlv, maxlen = 0;
    for (int64_t i = 0; i < nloc; i++)
      if (A->rowptr[i + 1] - A->rowptr[i] > maxlen) maxlen = A->rowptr[i + 1] - A->rowptr[i];
    M->piv = malloc(((size_t)nlv + 1) * sizeof(int32_t));
    M->pair_ptr = calloc((size_t)nlv + 1, sizeof(int64_t));
    int64_t cap = nnz + 16, np = 0;
    M->pair_dst = malloc((size_t)cap * sizeof(int32_t));
    M->pair_src = malloc((size_t)cap * sizeof(int32_t));
    int64_t *ridx = malloc(((size_t)maxlen + 1) * sizeof(int64_t));
    if (!M->piv || !M->pair_ptr || !M->pair_dst || !M->pair_src || !ridx) {
      free(ridx);
      RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    }
    double fl = 0.0;
    for (int64_t t0 = 0; t0 < nloc && !st; t0++) {
      int64_t i = M->porder[t0]; /* elimination order: L entries ascend */
      /* value indices of row i in position order: L part, then D and U */
      int64_t nl = M->lr[2 * i + 1] - M->lr[2 * i], end = 0;
      for (int64_t v = M->lr[2 * i]; v < M->lr[2 * i + 1]; v++)
        ridx[end++] = v;
      for (int64_t v = M->ur[2 * i]; v < M->ur[2 * i + 1]; v++)
        ridx[end++] = v;
      for (int64_t t = 0; t < nl; t++) {
        int64_t e = ridx[t];
        int32_t k = M->fcol[e];
        int64_t s0, s1, dk; /* U entries of row k: value indices s0 .. s1, diagonal dk */
        const int32_t *ucol;
        int64_t ubase;
        if (k < nloc) {
          dk = M->ur[2 * k];
          s0 = dk + 1, s1 = M->ur[2 * k + 1];
          ucol = M->fcol, ubase = 0;
        } else {
          int64_t g = k - nloc;
          dk = nnz + M->gofs[g];
          s0 = dk + 1, s1 = nnz + M->gofs[g + 1];
          ucol = gcol_ext, ubase = nnz;
        }
        M->piv[e] = (int32_t)dk;
        fl += 1.0;
        int64_t q = t + 1;
        for (int64_t s = s0; s < s1 && q < end; s++) {
          int32_t j = ucol[s - ubase];
          if (j < 0) continue;
          int64_t pj = M->pos_ext[j];
          while (q < end && M->pos_ext[M->fcol[ridx[q]]] < pj)
            q++;
          if (q < end && M->fcol[ridx[q]] == j) {
            if (np == cap) {
              cap *= 2;
              int32_t *a = realloc(M->pair_dst, (size_t)cap * sizeof(int32_t));
              if (a) M->pair_dst = a;
              int32_t *bb = realloc(M->pair_src, (size_t)cap * sizeof(int32_t));
              if (bb) M->pair_src = bb;
              if (!a || !bb) {
                st = nomem(ctx, OPC);
                break;
              }
            }
            M->pair_dst[np] = (int32_t)ridx[q];
            M->pair_src[np] = (int32_t)s;
            np++;
            fl += 2.0;
          }
        }
        M->pair_ptr[e + 1] = np;
      }
    }
    free(ridx);
    if (st) goto fail;
    double al = 0.0;
    for (int64_t i = 0; i < nloc; i++)
      al += 2.0 * (double)(A->rowptr[i + 1] - A->rowptr[i] - 1) + 1.0;
    double loc[2] = {fl, al}, glob[2];
    if (MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_SUM, ctx->comm))
      RRT_CHECK_GOTO(mpi_fail(ctx, "MPI_Allreduce"), st, fail);
    M->fflops = glob[0], M->aflops = glob[1];
  }

  /* 7. plans: rows others need after each level (L: factor + L solve; U: U solve) */
  {
    int64_t cnt = nreq > ng ? nreq : ng;
    pp = malloc(((size_t)cnt + 1) * sizeof(int32_t));
    pi = malloc(((size_t)cnt + 1) * sizeof(int32_t));
    pl = malloc(((size_t)cnt + 1) * sizeof(int32_t));
    pk = malloc(((size_t)cnt + 1) * sizeof(int64_t));
    if (!pp || !pi || !pl || !pk) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    for (int side = 0; side < 2; side++) {
      int64_t m = 0;
      for (int64_t t = 0; t < nreq; t++) {
        if (!(rdata[2 * t + 1] & (1 << side))) continue;
        int64_t r = rdata[2 * t] - A->row_begin;
        pp[m] = rsrc[t], pi[m] = (int32_t)r, pl[m] = lev[side][r], pk[m] = rdata[2 * t], m++;
      }
      RRT_CHECK_GOTO(rrt_msg_plan_build(m, pp, pi, pl, pk, &sp[side]), st, fail);
      m = 0;
      for (int64_t g = 0; g < ng; g++) {
        if (!(gflag[g] & (1 << side))) continue;
        pp[m] = A->ghost_owner[g], pi[m] = (int32_t)(nloc + g), pl[m] = lev[side][nloc + g];
        pk[m] = A->ghost[g], m++;
      }
      RRT_CHECK_GOTO(rrt_msg_plan_build(m, pp, pi, pl, pk, &rp[side]), st, fail);
    }
    /* the factorisation sends the U part (diagonal included) of the same rows */
    {
      int64_t *start = malloc(((size_t)(nloc > ng ? nloc : ng) + 1) * sizeof(int64_t));
      int64_t *len = malloc(((size_t)(nloc > ng ? nloc : ng) + 1) * sizeof(int64_t));
      if (!start || !len) {
        free(start), free(len);
        RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
      }
      for (int64_t r = 0; r < nloc; r++)
        start[r] = M->ur[2 * r], len[r] = M->ur[2 * r + 1] - M->ur[2 * r];
      st = expand_plan(&sp[0], start, len, 0, &fs);
      for (int64_t g = 0; g < ng && !st; g++)
        start[g] = nnz + M->gofs[g], len[g] = glen[g];
      if (!st) st = expand_plan(&rp[0], start, len, nloc, &fr);
      free(start), free(len);
      if (st) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    }
    need = need_levels(&rp[0], M->nsched[0], gneed[0], nloc);
    if (!need) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hf, &fs, &fr, M->nsched[0], need), st, fail);
    RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hl, &sp[0], &rp[0], M->nsched[0], need), st, fail);
    free(need);
    need = need_levels(&rp[1], M->nsched[1], gneed[1], nloc);
    if (!need) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    RRT_CHECK_GOTO(rrt_halo_init(ctx, &M->hu, &sp[1], &rp[1], M->nsched[1], need), st, fail);
  }

  /* 8. backend copies */
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_lr, M->lr, (2 * (size_t)nloc + 1) * sizeof(int64_t)),
                 st, fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_ur, M->ur, (2 * (size_t)nloc + 1) * sizeof(int64_t)),
                 st, fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_col, M->fcol, (size_t)nnz * sizeof(int32_t)), st, fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_fperm, M->fperm, (size_t)nnz * sizeof(int32_t)), st,
                 fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_piv, M->piv, (size_t)M->nlv * sizeof(int32_t)), st,
                 fail);
  RRT_CHECK_GOTO(
      upload(ctx, (void **)&M->d_pair_ptr, M->pair_ptr, ((size_t)M->nlv + 1) * sizeof(int64_t)), st,
      fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_pair_dst, M->pair_dst,
                        (size_t)M->pair_ptr[M->nlv] * sizeof(int32_t)),
                 st, fail);
  RRT_CHECK_GOTO(upload(ctx, (void **)&M->d_pair_src, M->pair_src,
                        (size_t)M->pair_ptr[M->nlv] * sizeof(int32_t)),
                 st, fail);
  for (int side = 0; side < 2; side++)
    RRT_CHECK_GOTO(
        upload(ctx, (void **)&M->d_lev[side], M->levrows[side], (size_t)nloc * sizeof(int32_t)), st,
        fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)M->nval + 1) * sizeof(double), (void **)&M->d_v), st,
                 fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)M->next + 1) * sizeof(double), (void **)&M->d_y), st,
                 fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)M->next + 1) * sizeof(double), (void **)&M->d_z), st,
                 fail);
  RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&M->d_dinv), st,
                 fail);
  /* touch the factor storage now (the analysis, like PETSc's symbolic phase,
   * pays for the first-touch page faults; every factorisation costs the same) */
  RRT_CHECK_GOTO(rrt_memset(ctx, M->d_v, 0, ((size_t)M->nval + 1) * sizeof(double)), st, fail);
  RRT_CHECK_GOTO(rrt_memset(ctx, M->d_dinv, 0, ((size_t)nloc + 1) * sizeof(double)), st, fail);
  RRT_CHECK_GOTO(rrt_memset(ctx, M->d_y, 0, ((size_t)M->next + 1) * sizeof(double)), st, fail);
  RRT_CHECK_GOTO(rrt_memset(ctx, M->d_z, 0, ((size_t)M->next + 1) * sizeof(double)), st, fail);
  if (opt.factors_f32)
    RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)nnz + 1) * sizeof(float), (void **)&M->d_vf), st, fail);
  M->h_v = malloc(((size_t)nnz + 1) * sizeof(double));
  M->h_diag = malloc(((size_t)nloc + 1) * sizeof(double));
  if (!M->h_v || !M->h_diag) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
  if (!rrt_ilu_is_cpu(ctx)) {
    int32_t *didx = malloc(((size_t)nloc + 1) * sizeof(int32_t));
    if (!didx) RRT_CHECK_GOTO(nomem(ctx, OPC), st, fail);
    for (int64_t i = 0; i < nloc; i++)
      didx[i] = (int32_t)M->ur[2 * i];
    st = upload(ctx, (void **)&M->d_didx, didx, (size_t)nloc * sizeof(int32_t));
    free(didx);
    if (st) goto fail;
    RRT_CHECK_GOTO(rrt_malloc(ctx, ((size_t)nloc + 1) * sizeof(double), (void **)&M->d_diag), st,
                   fail);
  }

fail:
  free(gpos), free(rec), free(rdata), free(ulen_send), free(ucol_send), free(glen), free(gcol);
  free(pk), free(dest), free(rsrc), free(lev[0]), free(lev[1]), free(gflag), free(gneed[0]);
  free(gneed[1]), free(gcol_ext), free(pp), free(pi), free(pl), free(need), free(scnt);
  free(sdis), free(rcnt), free(rdis);
  for (int side = 0; side < 2; side++)
    rrt_msg_plan_free(&sp[side]), rrt_msg_plan_free(&rp[side]);
  rrt_msg_plan_free(&fs), rrt_msg_plan_free(&fr);
  /* every failure above is either agreed (singular) or a local resource
   * problem: agree so no rank goes on to a factorisation the others skip */
  if (st != RRT_ERR_SINGULAR) st = rrt_agree(ctx, st);
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
  rrt_halo_free(ctx, &M->hf), rrt_halo_free(ctx, &M->hl), rrt_halo_free(ctx, &M->hu);
  free(M->pos_ext), free(M->lr), free(M->ur), free(M->fcol), free(M->fperm), free(M->gofs);
  free(M->piv), free(M->pair_dst), free(M->pair_src), free(M->pair_ptr), free(M->h_v);
  free(M->h_diag);
  rrt_free(ctx, M->d_didx), rrt_free(ctx, M->d_diag);
  free(M->porder), free(M->rorder);
  for (int s = 0; s < 2; s++) {
    free(M->hist[s]), free(M->levptr[s]), free(M->levrows[s]);
    rrt_free(ctx, M->d_lev[s]);
  }
  rrt_free(ctx, M->d_lr), rrt_free(ctx, M->d_pair_ptr), rrt_free(ctx, M->d_ur);
  rrt_free(ctx, M->d_col), rrt_free(ctx, M->d_fperm), rrt_free(ctx, M->d_piv),
      rrt_free(ctx, M->d_pair_dst);
  rrt_free(ctx, M->d_pair_src), rrt_free(ctx, M->d_v), rrt_free(ctx, M->d_y), rrt_free(ctx, M->d_z);
  rrt_free(ctx, M->d_dinv), rrt_free(ctx, M->d_vf);
  free(M);
  return RRT_SUCCESS;
}

/* ---- numeric factorisation ----------------------------------------------------- */

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
  if (MPI_Allreduce(&bad, &gbad, 1, MPI_INT64_T, MPI_MIN, ctx->comm))
    return rrt_error(ctx, RRT_ERR_MPI, OPF, "MPI_Allreduce failed");
  if (gbad != INT64_MAX)
    return rrt_error(ctx, RRT_ERR_NUMERIC, OPF,
                     "factors_f32: global row %lld (0-based) has a factor entry beyond the f32 "
                     "range or a pivot that is 0 in f32; use f64 factors",
                     (long long)gbad);
  return rrt_agree(
      ctx, RRT_ILU_DISPATCH(
               ctx, rrt_ilu0_cpu_round_f32(M->nnz, M->nloc, M->d_ur, M->d_v, M->d_vf, M->d_dinv),
               rrt_k_ilu0_round_f32, M->nnz, M->nloc, M->d_ur, M->d_v, M->d_vf, M->d_dinv));
}

/* One schedule level: a coarse level (several levels, cpu) is a sequential
 * sweep in elimination order; a plain level is one parallel loop / launch. */
static rrt_status factor_level(rrt_ilu0_t M, const int32_t *rows, int64_t n) {
  rrt_ctx_t ctx = M->ctx;
  const double *a = M->A->d_val;
  if (M->coarse[0] > 1) {
    rrt_ilu0_cpu_factor_seq(rows, n, M->d_lr, M->d_ur, M->d_piv, M->d_pair_ptr, M->d_pair_dst,
                            M->d_pair_src, a, M->d_fperm, M->d_v, M->d_dinv, M->opt.boost,
                            M->opt.boost_tol, M->opt.boost_value);
    return RRT_SUCCESS;
  }
  return RRT_ILU_DISPATCH(ctx,
                          rrt_ilu0_cpu_factor_rows(rows, n, M->d_lr, M->d_ur, M->d_piv,
                                                   M->d_pair_ptr, M->d_pair_dst, M->d_pair_src, a,
                                                   M->d_fperm, M->d_v, M->d_dinv, M->opt.boost,
                                                   M->opt.boost_tol, M->opt.boost_value),
                          rrt_k_ilu0_factor_rows, rows, n, M->d_lr, M->d_ur, M->d_piv,
                          M->d_pair_ptr, M->d_pair_dst, M->d_pair_src, a, M->d_fperm, M->d_v,
                          M->d_dinv, M->opt.boost, M->opt.boost_tol, M->opt.boost_value);
}

rrt_status rrt_ilu0_factor(rrt_ilu0_t M) {
  rrt_ctx_t ctx = M->ctx;
  rrt_sparse_t A = M->A;
  double t0 = rrt_phase_begin(ctx);
  /* host memory backends (cpu, emu) fill and read the values in place */
  int host = !ctx->dev->is_cuda;
  double *hv = host ? M->d_v : M->h_v;
  /* each row gathers its values from A's backend copy just before it is
   * factored (no separate pass over the values, nothing crosses PCIe) */
  rrt_status st = RRT_SUCCESS;
  if (M->seq_order)
    rrt_ilu0_cpu_factor_seq(M->seq_order, M->nloc, M->d_lr, M->d_ur, M->d_piv, M->d_pair_ptr,
                            M->d_pair_dst, M->d_pair_src, A->d_val, M->d_fperm, M->d_v, M->d_dinv,
                            M->opt.boost, M->opt.boost_tol, M->opt.boost_value);
  else if (M->coarse[0] > 1)
    st = rrt_halo_begin(ctx, &M->hf);
  for (int l = 1; l <= M->nsched[0] && !st && !M->seq_order; l++) {
    st = rrt_halo_wait_needed(ctx, &M->hf, l, M->d_v);
    int64_t a = M->levptr[0][l - 1], b = M->levptr[0][l];
    if (!st && b > a) st = factor_level(M, M->d_lev[0] + a, b - a);
    if (!st) st = rrt_halo_post(ctx, &M->hf, l, M->d_v);
  }
  if (!st) st = rrt_halo_wait_all(ctx, &M->hf, M->d_v);
  /* the pivots on the host: read in place (cpu) or gathered on the device */
  int cpu = rrt_ilu_is_cpu(ctx);
  if (!cpu && !st) {
    st = RRT_KCALL(ctx->dev, rrt_k_ilu0_gather, ctx->compute_stream, M->d_didx, M->nloc, M->d_v,
                   M->d_diag);
    if (!st) st = rrt_memcpy_to_host(ctx, M->h_diag, M->d_diag, (size_t)M->nloc * sizeof(double));
  }
  /* f32 factors: the range check reads every value */
  if (!st && !host && M->d_vf)
    st = rrt_memcpy_to_host(ctx, M->h_v, M->d_v, (size_t)M->nnz * sizeof(double));
  /* a transport or kernel failure here cannot be agreed safely only if a
   * peer is stuck; the transport aborts on timeout, so agreeing is safe */
  st = rrt_agree(ctx, st);
  if (st) return st;
  /* Pivots: the first zero (or non-finite) pivot in elimination order is
   * the serial one, whatever garbage follows it; agree on it everywhere. */
  int64_t bad[2] = {INT64_MAX, INT64_MAX}; /* zero, non-finite: position */
  for (int64_t i = 0; i < M->nloc; i++) {
    double u = cpu ? hv[M->ur[2 * i]] : M->h_diag[i];
    if (u != 0.0 && isfinite(u)) continue; /* the common case: positions not read */
    int64_t p = M->pos_ext[i];
    if (u == 0.0 && p < bad[0]) bad[0] = p;
    if (!isfinite(u) && p < bad[1]) bad[1] = p;
  }
  int64_t gbad[2];
  if (MPI_Allreduce(bad, gbad, 2, MPI_INT64_T, MPI_MIN, ctx->comm))
    return rrt_error(ctx, RRT_ERR_MPI, OPF, "MPI_Allreduce failed");
  int which = gbad[0] <= gbad[1] ? 0 : 1;
  if (gbad[which] != INT64_MAX) {
    int64_t row = INT64_MAX, grow = INT64_MAX;
    for (int64_t i = 0; i < M->nloc; i++)
      if (M->pos_ext[i] == gbad[which]) row = A->row_begin + i;
    if (MPI_Allreduce(&row, &grow, 1, MPI_INT64_T, MPI_MIN, ctx->comm))
      return rrt_error(ctx, RRT_ERR_MPI, OPF, "MPI_Allreduce failed");
    if (which == 0)
      return rrt_error(ctx, RRT_ERR_SINGULAR, OPF,
                       "zero pivot at global row %lld (0-based; position %lld in the elimination "
                       "order)%s",
                       (long long)grow, (long long)gbad[0],
                       M->opt.boost ? "" : "; a pivot boost may help");
    return rrt_error(ctx, RRT_ERR_NUMERIC, OPF,
                     "non-finite pivot at global row %lld (0-based; position %lld)",
                     (long long)grow, (long long)gbad[1]);
  }
  if (M->d_vf) RRT_CHECK(round_f32(M, hv));
  return rrt_phase_end(ctx, "ilu0.factor", t0);
}

/* ---- apply: z = U^-1 L^-1 r ----------------------------------------------------- */

/* One schedule level of the forward (L) and backward (U) solves: f64 or
 * f32 factor values; coarse levels as sequential sweeps (see factor_level). */
static rrt_status lsolve_level(rrt_ilu0_t M, const int32_t *rows, int64_t n, const double *r) {
  rrt_ctx_t ctx = M->ctx;
  if (M->coarse[0] > 1) {
    if (M->d_vf)
      rrt_ilu0_cpu_lsolve_seq_f32(rows, n, M->d_lr, M->d_col, M->d_vf, r, M->d_y);
    else
      rrt_ilu0_cpu_lsolve_seq(rows, n, M->d_lr, M->d_col, M->d_v, r, M->d_y);
    return RRT_SUCCESS;
  }
  if (M->d_vf)
    return RRT_ILU_DISPATCH(
        ctx, rrt_ilu0_cpu_lsolve_rows_f32(rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, r, M->d_y),
        rrt_k_ilu0_lsolve_rows_f32, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_vf, r, M->d_y);
  return RRT_ILU_DISPATCH(
      ctx, rrt_ilu0_cpu_lsolve_rows(rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, r, M->d_y),
      rrt_k_ilu0_lsolve_rows, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v, r, M->d_y);
}

static rrt_status usolve_level(rrt_ilu0_t M, const int32_t *rows, int64_t n) {
  rrt_ctx_t ctx = M->ctx;
  if (M->coarse[1] > 1) {
    if (M->d_vf)
      rrt_ilu0_cpu_usolve_seq_f32(rows, n, M->d_ur, M->d_col, M->d_vf, M->d_dinv, M->d_y, M->d_z);
    else
      rrt_ilu0_cpu_usolve_seq(rows, n, M->d_ur, M->d_col, M->d_v, M->d_dinv, M->d_y, M->d_z);
    return RRT_SUCCESS;
  }
  if (M->d_vf)
    return RRT_ILU_DISPATCH(ctx,
                            rrt_ilu0_cpu_usolve_rows_f32(rows, n, M->d_lr, M->d_ur, M->d_col,
                                                         M->d_vf, M->d_dinv, M->d_y, M->d_z),
                            rrt_k_ilu0_usolve_rows_f32, rows, n, M->d_lr, M->d_ur, M->d_col,
                            M->d_vf, M->d_dinv, M->d_y, M->d_z);
  return RRT_ILU_DISPATCH(ctx,
                          rrt_ilu0_cpu_usolve_rows(rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v,
                                                   M->d_dinv, M->d_y, M->d_z),
                          rrt_k_ilu0_usolve_rows, rows, n, M->d_lr, M->d_ur, M->d_col, M->d_v,
                          M->d_dinv, M->d_y, M->d_z);
}

rrt_status rrt_ilu0_apply(rrt_ilu0_t M, const double *r, double *z) {
  rrt_ctx_t ctx = M->ctx;
  double t0 = rrt_phase_begin(ctx);
  if (M->seq_order) {
    if (M->d_vf)
      rrt_ilu0_cpu_apply_seq_f32(M->porder, M->rorder, M->nloc, M->d_lr, M->d_ur, M->d_col, M->d_vf,
                                 M->d_dinv, r, M->d_y, z);
    else
      rrt_ilu0_cpu_apply_seq(M->porder, M->rorder, M->nloc, M->d_lr, M->d_ur, M->d_col, M->d_v,
                             M->d_dinv, r, M->d_y, z);
    return rrt_phase_end(ctx, "ilu0.apply", t0);
  }
  if (M->coarse[0] > 1) RRT_CHECK(rrt_halo_begin(ctx, &M->hl));
  for (int l = 1; l <= M->nsched[0]; l++) {
    RRT_CHECK(rrt_halo_wait_needed(ctx, &M->hl, l, M->d_y));
    int64_t a = M->levptr[0][l - 1], b = M->levptr[0][l];
    if (b > a) RRT_CHECK(lsolve_level(M, M->d_lev[0] + a, b - a, r));
    RRT_CHECK(rrt_halo_post(ctx, &M->hl, l, M->d_y));
  }
  RRT_CHECK(rrt_halo_wait_all(ctx, &M->hl, M->d_y));
  if (M->coarse[1] > 1) RRT_CHECK(rrt_halo_begin(ctx, &M->hu));
  for (int l = 1; l <= M->nsched[1]; l++) {
    RRT_CHECK(rrt_halo_wait_needed(ctx, &M->hu, l, M->d_z));
    int64_t a = M->levptr[1][l - 1], b = M->levptr[1][l];
    if (b > a) RRT_CHECK(usolve_level(M, M->d_lev[1] + a, b - a));
    RRT_CHECK(rrt_halo_post(ctx, &M->hu, l, M->d_z));
  }
  RRT_CHECK(rrt_halo_wait_all(ctx, &M->hu, M->d_z));
  RRT_CHECK(rrt_vec_copy(ctx, z, M->d_z, M->nloc));
  return rrt_phase_end(ctx, "ilu0.apply", t0);
}

/* ---- queries --------------------------------------------------------------------- */

void rrt_ilu0_levels(rrt_ilu0_t M, int *levels_l, int *levels_u) {
  if (levels_l) *levels_l = M->nlev[0];
  if (levels_u) *levels_u = M->nlev[1];
}

rrt_status rrt_ilu0_level_histogram(rrt_ilu0_t M, int which, int64_t *counts) {
  if (which != 0 && which != 1)
    return rrt_error(M->ctx, RRT_ERR_INVALID_ARG, "rrt_ilu0_level_histogram",
                     "which must be 0 or 1");
  memcpy(counts, M->hist[which], (size_t)M->nlev[which] * sizeof(int64_t));
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_get_factors(rrt_ilu0_t M, double *vals) {
  RRT_CHECK(rrt_memcpy_to_host(M->ctx, M->h_v, M->d_v, (size_t)M->nnz * sizeof(double)));
  for (int64_t f = 0; f < M->nnz; f++)
    vals[M->fperm[f]] = M->h_v[f];
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_get_positions(rrt_ilu0_t M, int64_t *pos) {
  memcpy(pos, M->pos_ext, (size_t)M->nloc * sizeof(int64_t));
  return RRT_SUCCESS;
}

double rrt_ilu0_factor_flops(rrt_ilu0_t M) { return M->fflops; }
double rrt_ilu0_apply_flops(rrt_ilu0_t M) { return M->aflops; }

const char *rrt_ilu_ordering_name(rrt_ilu_ordering o) {
  return o == RRT_ILU_ORDER_RCM ? "rcm" : o == RRT_ILU_ORDER_MULTICOLOR ? "multicolor" : "natural";
}

rrt_status rrt_ilu_ordering_parse(const char *name, rrt_ilu_ordering *o) {
  if (!strcmp(name, "natural"))
    *o = RRT_ILU_ORDER_NATURAL;
  else if (!strcmp(name, "rcm"))
    *o = RRT_ILU_ORDER_RCM;
  else if (!strcmp(name, "multicolor") || !strcmp(name, "multicolour"))
    *o = RRT_ILU_ORDER_MULTICOLOR;
  else
    return RRT_ERR_INVALID_ARG;
  return RRT_SUCCESS;
}

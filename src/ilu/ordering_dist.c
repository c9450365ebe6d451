/* The RCM and multicolour positions without the whole pattern on every
 * rank. Multicolour: the greedy colouring in natural order (the colour of
 * row i is the smallest one none of its lower neighbours in the symmetrised
 * graph has) computed where the rows live, in rounds like the level
 * analysis, so the colours and positions are those of the serial greedy
 * colouring for every rank count and partition. RCM is a breadth-first
 * search, sequential by nature: the pattern is gathered on rank 0 only,
 * which orders it and sends every rank the positions of its own rows. Both
 * end by fetching the positions of the ghost rows from their owners. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"
#include "sched/ilu0_levels.h"

#define OPC RRT_ILU0_OP_CREATE
#define OP_COLOR RRT_ILU0_OP_ANALYSIS("multicolour")
#define OP_RCM RRT_ILU0_OP_ANALYSIS("rcm")

/* ---- one int64 per remote row from its owner ------------------------------------- */

/* Rows of other ranks this rank reads (global ids ascending, so owners
 * ascend too), asked for once; their owners then send one int64 per row
 * as often as the caller runs the fetch. */
typedef struct row_fetch {
  int64_t n, nreq; /* rows asked for; rows other ranks asked this one for */
  int64_t *req;    /* global ids asked for, grouped by asking rank */
  int32_t *req_src;
  size_t *lay; /* send bytes, send offsets, receive bytes, receive offsets (P each) */
  int64_t *buf;
} row_fetch;

static void fetch_free(row_fetch *F) {
  free(F->req), free(F->req_src), free(F->lay), free(F->buf);
  memset(F, 0, sizeof(*F));
}

static void byte_layout(int P, size_t *bytes, size_t *displs) {
  size_t off = 0;
  for (int p = 0; p < P; p++)
    displs[p] = off, off += bytes[p];
}

static rrt_status fetch_init(rrt_ilu0_t M, const char *op, int64_t n, const int64_t *rows,
                             const int32_t *owner, row_fetch *F) {
  int P = M->ctx->size;
  memset(F, 0, sizeof(*F));
  F->n = n;
  RRT_CHECK(rrt_host_exchange_records_named(M->ctx, op, n, owner, rows, 1, &F->nreq, &F->req,
                                            &F->req_src));
  F->lay = calloc(4 * (size_t)P, sizeof(size_t));
  F->buf = malloc(((size_t)F->nreq + 1) * sizeof(int64_t));
  if (!F->lay || !F->buf) return rrt_ilu0_nomem(M->ctx, OPC);
  for (int64_t t = 0; t < F->nreq; t++)
    F->lay[F->req_src[t]] += sizeof(int64_t);
  for (int64_t t = 0; t < n; t++)
    F->lay[2 * P + owner[t]] += sizeof(int64_t);
  byte_layout(P, F->lay, F->lay + P);
  byte_layout(P, F->lay + 2 * P, F->lay + 3 * P);
  return RRT_SUCCESS;
}

/* out[t] = the owner's local[row t] (local: indexed by local row). */
static rrt_status fetch_run(rrt_ilu0_t M, const char *op, row_fetch *F, const int64_t *local,
                            int64_t *out) {
  int P = M->ctx->size;
  for (int64_t t = 0; t < F->nreq; t++)
    F->buf[t] = local[F->req[t] - M->A->row_begin];
  return rrt_host_alltoallv_named(M->ctx, op, F->buf, F->lay, F->lay + P, out, F->lay + 2 * P,
                                  F->lay + 3 * P);
}

/* pos_ext of the ghosts from the positions of the local rows (pos_ext[0 .. nloc)). */
rrt_status rrt_ilu0_ghost_positions(rrt_ilu0_t M, const char *op) {
  rrt_sparse_t A = M->A;
  row_fetch F;
  rrt_status st = fetch_init(M, op, A->nghost, A->ghost, A->ghost_owner, &F);
  if (!st) st = fetch_run(M, op, &F, M->pos_ext, M->pos_ext + M->nloc);
  fetch_free(&F);
  return st;
}

/* ---- multicolour ---------------------------------------------------------------- */

/* The lower neighbours of the local rows in the symmetrised graph, as
 * extended indices: column c < i of row i, and row j < c for an entry
 * (j, c), sent to c's owner when c lives elsewhere. Duplicates (both (i, c)
 * and (c, i) stored) are harmless to the colouring. */
typedef struct lower_graph {
  int64_t *ptr; /* nloc + 1 offsets */
  int32_t *nb;  /* neighbours: local rows, then nloc + t for remote row rem[t] */
  int64_t nrem; /* remote lower neighbours */
  int64_t *rem; /* their global ids, ascending */
  int32_t *rem_owner;
} lower_graph;

static void lower_graph_free(lower_graph *G) {
  free(G->ptr), free(G->nb), free(G->rem), free(G->rem_owner);
  memset(G, 0, sizeof(*G));
}

/* Records (c, j) for the entries (j, c) whose column c lives on another
 * rank and lies above j: j is a lower neighbour of c there. */
static rrt_status remote_transposes(rrt_ilu0_t M, int64_t *nrecv, int64_t **recs) {
  rrt_sparse_t A = M->A;
  int64_t ns = 0;
  for (int64_t p = 0; p < A->nnz && A->nghost > 0; p++) /* no ghosts: no such entry */
    ns += A->col_ext[p] >= A->nloc;
  int64_t *send = malloc(2 * ((size_t)ns + 1) * sizeof(int64_t));
  int32_t *dest = malloc(((size_t)ns + 1) * sizeof(int32_t)), *src = NULL;
  if (!send || !dest) {
    free(send), free(dest);
    return rrt_ilu0_nomem(M->ctx, OPC);
  }
  int64_t w = 0;
  for (int64_t j = 0; j < A->nloc && ns > 0; j++)
    for (int64_t p = A->rowptr[j]; p < A->rowptr[j + 1]; p++) {
      int32_t e = A->col_ext[p];
      if (e < A->nloc || A->col[p] < A->row_begin + j) continue;
      send[2 * w] = A->col[p], send[2 * w + 1] = A->row_begin + j;
      dest[w++] = A->ghost_owner[e - A->nloc];
    }
  rrt_status st =
      rrt_host_exchange_records_named(M->ctx, OP_COLOR, w, dest, send, 2, nrecv, recs, &src);
  free(send), free(dest), free(src);
  return st;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The remote neighbours, nr of them, held as (slot in nb, global id) in
 * rq/rg: G->rem their sorted unique global ids, and each slot set to
 * nloc + its rank there. Only remote entries are visited, none on one rank. */
static rrt_status remote_index(rrt_ilu0_t M, lower_graph *G, int64_t nr, const int64_t *rq,
                               const int64_t *rg) {
  rrt_sparse_t A = M->A;
  G->rem = malloc(((size_t)nr + 1) * sizeof(int64_t));
  G->rem_owner = malloc(((size_t)nr + 1) * sizeof(int32_t));
  if (!G->rem || !G->rem_owner) return rrt_ilu0_nomem(M->ctx, OPC);
  if (nr > 0) memcpy(G->rem, rg, (size_t)nr * sizeof(int64_t));
  qsort(G->rem, (size_t)nr, sizeof(int64_t), cmp_i64);
  int64_t u = 0;
  for (int64_t t = 0; t < nr; t++)
    if (t == 0 || G->rem[t] != G->rem[t - 1]) G->rem[u++] = G->rem[t];
  G->nrem = u;
  for (int64_t t = 0; t < u; t++)
    G->rem_owner[t] = rrt_partition_owner(A->offsets, M->ctx->size, G->rem[t]);
  for (int64_t t = 0; t < nr; t++) {
    const int64_t *hit = bsearch(&rg[t], G->rem, (size_t)u, sizeof(int64_t), cmp_i64);
    G->nb[rq[t]] = (int32_t)(A->nloc + (hit - G->rem));
  }
  return RRT_SUCCESS;
}

/* Lower neighbours per local row (counted into G->ptr[i + 1]) and how many
 * are remote: ghost columns below the row block, and the received records. */
static int64_t count_lower_nb(rrt_ilu0_t M, lower_graph *G, int64_t nrecv, const int64_t *recs) {
  rrt_sparse_t A = M->A;
  int64_t nloc = A->nloc, rb = A->row_begin, nr = nrecv, *cnt = G->ptr + 1;
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int64_t c = A->col[p];
      if (c < rb + i)
        cnt[i]++, nr += c < rb;
      else if (c > rb + i && A->col_ext[p] < nloc)
        cnt[c - rb]++;
    }
  for (int64_t t = 0; t < nrecv; t++)
    cnt[recs[2 * t] - rb]++;
  return nr;
}

/* The neighbours into G->nb (fill: G->ptr, advanced): local ones as local
 * rows, remote ones noted as (slot, global id) in rq/rg for remote_index. */
static void fill_lower_nb(rrt_ilu0_t M, lower_graph *G, int64_t *fill, int64_t nrecv,
                          const int64_t *recs, int64_t *rq, int64_t *rg) {
  rrt_sparse_t A = M->A;
  int64_t nloc = A->nloc, rb = A->row_begin, r = 0;
  for (int64_t i = 0; i < nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int64_t c = A->col[p];
      if (c >= rb && c < rb + i)
        G->nb[fill[i]++] = (int32_t)(c - rb);
      else if (c < rb)
        rq[r] = fill[i]++, rg[r++] = c;
      else if (c > rb + i && A->col_ext[p] < nloc)
        G->nb[fill[c - rb]++] = (int32_t)i;
    }
  for (int64_t t = 0; t < nrecv; t++)
    rq[r] = fill[recs[2 * t] - rb]++, rg[r++] = recs[2 * t + 1];
}

static rrt_status lower_graph_build(rrt_ilu0_t M, lower_graph *G) {
  int64_t nloc = M->nloc, nrecv = 0, *recs = NULL;
  memset(G, 0, sizeof(*G));
  RRT_CHECK(remote_transposes(M, &nrecv, &recs));
  G->ptr = rrt_ilu0_alloc(((size_t)nloc + 2) * sizeof(int64_t));
  if (!G->ptr) {
    free(recs);
    return rrt_ilu0_nomem(M->ctx, OPC);
  }
  memset(G->ptr, 0, ((size_t)nloc + 2) * sizeof(int64_t));
  int64_t nr = count_lower_nb(M, G, nrecv, recs);
  for (int64_t i = 0; i < nloc; i++)
    G->ptr[i + 1] += G->ptr[i];
  G->nb = rrt_ilu0_alloc(((size_t)G->ptr[nloc] + 1) * sizeof(int32_t));
  int64_t *fill = rrt_ilu0_alloc(((size_t)nloc + 1) * sizeof(int64_t));
  int64_t *rq = malloc(2 * ((size_t)nr + 1) * sizeof(int64_t));
  rrt_status st = RRT_SUCCESS;
  if (!G->nb || !fill || !rq) {
    st = rrt_ilu0_nomem(M->ctx, OPC);
  } else {
    memcpy(fill, G->ptr, (size_t)nloc * sizeof(int64_t));
    fill_lower_nb(M, G, fill, nrecv, recs, rq, rq + nr);
    st = remote_index(M, G, nr, rq, rq + nr);
  }
  free(recs), free(fill), free(rq);
  return st;
}

/* One colouring sweep over the uncoloured local rows whose lower
 * neighbours are all coloured (colour -1: not yet); returns how many are
 * left. mark: room for the most lower neighbours of a row + 1 colours. */
static int64_t color_sweep(const lower_graph *G, int64_t nloc, int64_t maxdeg, int64_t *color,
                           int64_t *mark) {
  int64_t unknown = 0;
  for (int64_t i = 0; i < nloc; i++) {
    if (color[i] >= 0) continue;
    int64_t p = G->ptr[i], end = G->ptr[i + 1];
    while (p < end && color[G->nb[p]] >= 0)
      p++;
    if (p < end) {
      unknown++;
      continue;
    }
    /* the smallest colour no lower neighbour has is at most their number */
    for (p = G->ptr[i]; p < end; p++)
      if (color[G->nb[p]] <= maxdeg) mark[color[G->nb[p]]] = i;
    int64_t c = 0;
    while (mark[c] == i)
      c++;
    color[i] = c;
  }
  return unknown;
}

/* Colours of the local rows, rounds of sweeps with the colours of the
 * remote lower neighbours fetched between them: a row is coloured once its
 * lower neighbours are, so rank r finishes by round r + 1 (row blocks in
 * rank order). color: nloc + nrem. */
static rrt_status color_rows(rrt_ilu0_t M, const lower_graph *G, int64_t *color) {
  int64_t nloc = M->nloc, maxdeg = 0;
  for (int64_t i = 0; i < nloc; i++)
    if (G->ptr[i + 1] - G->ptr[i] > maxdeg) maxdeg = G->ptr[i + 1] - G->ptr[i];
  int64_t *mark = malloc(((size_t)maxdeg + 2) * sizeof(int64_t));
  row_fetch F;
  rrt_status st = fetch_init(M, OP_COLOR, G->nrem, G->rem, G->rem_owner, &F);
  if (!st && !mark) st = rrt_ilu0_nomem(M->ctx, OPC);
  for (int64_t c = 0; !st && c < maxdeg + 2; c++)
    mark[c] = -1;
  for (int64_t x = 0; x < nloc + G->nrem; x++)
    color[x] = -1;
  for (int round = 0; !st; round++) {
    int64_t unknown = color_sweep(G, nloc, maxdeg, color, mark), total = 0;
    st = fetch_run(M, OP_COLOR, &F, color, color + nloc);
    if (!st)
      st = rrt_host_allreduce_named(M->ctx, OP_COLOR, &unknown, &total, 1, RRT_DTYPE_I64,
                                    RRT_OP_SUM);
    if (st || total == 0) break;
    if (round > M->ctx->size + 1)
      st = rrt_error(M->ctx, RRT_ERR_INTERNAL, OPC, "multicolour rounds do not converge");
  }
  fetch_free(&F);
  free(mark);
  return st;
}

/* Rows sorted by (colour, global index): position = the rows of lower
 * colours everywhere + the rows of this colour on lower ranks + those
 * before it here. */
static rrt_status color_positions(rrt_ilu0_t M, const int64_t *color) {
  rrt_ctx_t ctx = M->ctx;
  int P = ctx->size;
  int64_t nloc = M->nloc, mx = -1, nc = 0;
  for (int64_t i = 0; i < nloc; i++)
    if (color[i] > mx) mx = color[i];
  mx++;
  RRT_CHECK(rrt_host_allreduce_named(ctx, OP_COLOR, &mx, &nc, 1, RRT_DTYPE_I64, RRT_OP_MAX));
  int64_t *cnt = calloc((size_t)nc + 1, sizeof(int64_t));
  int64_t *all = malloc(((size_t)P * (size_t)nc + 1) * sizeof(int64_t));
  size_t *lay = malloc(2 * (size_t)P * sizeof(size_t));
  rrt_status st = RRT_SUCCESS;
  if (!cnt || !all || !lay) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  for (int64_t i = 0; i < nloc; i++)
    cnt[color[i]]++;
  for (int p = 0; p < P; p++)
    lay[p] = (size_t)nc * sizeof(int64_t), lay[P + p] = (size_t)p * (size_t)nc * sizeof(int64_t);
  RRT_CHECK_GOTO(rrt_host_allgatherv_named(ctx, OP_COLOR, cnt, (size_t)nc * sizeof(int64_t), all,
                                           lay, lay + P),
                 st, done);
  int64_t below = 0; /* rows of lower colours, all ranks */
  for (int64_t c = 0; c < nc; c++) {
    int64_t start = below;
    for (int p = 0; p < P; p++) {
      if (p == ctx->rank) cnt[c] = start;
      start += all[(size_t)p * (size_t)nc + (size_t)c];
    }
    below = start;
  }
  for (int64_t i = 0; i < nloc; i++)
    M->pos_ext[i] = cnt[color[i]]++;
done:
  free(cnt), free(all), free(lay);
  return st;
}

static rrt_status positions_multicolor(rrt_ilu0_t M) {
  lower_graph G;
  int64_t *color = NULL;
  rrt_status st = lower_graph_build(M, &G);
  if (!st && !(color = rrt_ilu0_alloc(((size_t)M->nloc + (size_t)G.nrem + 1) * sizeof(int64_t))))
    st = rrt_ilu0_nomem(M->ctx, OPC);
  if (!st) st = color_rows(M, &G, color);
  lower_graph_free(&G);
  if (!st) st = color_positions(M, color);
  free(color);
  if (!st) st = rrt_ilu0_ghost_positions(M, OP_COLOR);
  return st;
}

/* ---- RCM on rank 0 -------------------------------------------------------------- */

/* Rank 0: the RCM positions of all n rows from the gathered row lengths
 * and columns (rank order is row order). */
static rrt_status rcm_root(int64_t n, const int64_t *len, const int64_t *col, int64_t *pos) {
  int64_t *rowptr = malloc(((size_t)n + 1) * sizeof(int64_t)), *sptr = NULL, *scol = NULL;
  if (!rowptr) return RRT_ERR_OUT_OF_MEMORY;
  rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++)
    rowptr[i + 1] = rowptr[i] + len[i];
  rrt_status st = rrt_graph_symmetrize(n, rowptr, col, &sptr, &scol);
  if (!st) st = rrt_order_rcm(n, sptr, scol, pos);
  free(rowptr), free(sptr), free(scol);
  return st;
}

static rrt_status positions_rcm(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int P = ctx->size, root = ctx->rank == 0;
  int64_t *len = rrt_ilu0_alloc(((size_t)A->nloc + 1) * sizeof(int64_t)), *glen = NULL,
          *gcol = NULL;
  int64_t *gpos = NULL;
  size_t *lay = calloc(4 * (size_t)P, sizeof(size_t));
  rrt_status st = len && lay ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; !st && i < A->nloc; i++)
    len[i] = A->rowptr[i + 1] - A->rowptr[i];
  st = rrt_agree_named(ctx, OP_RCM, st ? rrt_ilu0_nomem(ctx, OPC) : RRT_SUCCESS);
  if (!st)
    st = rrt_host_gatherv_alloc(ctx, OP_RCM, len, (size_t)A->nloc * sizeof(int64_t), 0,
                                (void **)&glen, NULL, NULL);
  if (!st)
    st = rrt_host_gatherv_alloc(ctx, OP_RCM, A->col, (size_t)A->nnz * sizeof(int64_t), 0,
                                (void **)&gcol, NULL, NULL);
  if (!st) { /* the gathers succeeded on every rank: agree on rank 0's outcome */
    if (root) {
      gpos = rrt_ilu0_alloc(((size_t)A->n + 1) * sizeof(int64_t));
      st = gpos ? rcm_root(A->n, glen, gcol, gpos) : RRT_ERR_OUT_OF_MEMORY;
      if (st) st = rrt_ilu0_nomem(ctx, OPC);
    }
    st = rrt_agree_named(ctx, OP_RCM, st);
  }
  free(glen), free(gcol);
  if (!st) {
    /* rank 0 sends every rank the positions of its row block */
    for (int p = 0; root && p < P; p++) {
      lay[p] = (size_t)(A->offsets[p + 1] - A->offsets[p]) * sizeof(int64_t);
      lay[P + p] = (size_t)A->offsets[p] * sizeof(int64_t);
    }
    lay[2 * P] = (size_t)A->nloc * sizeof(int64_t);
    st = rrt_host_alltoallv_named(ctx, OP_RCM, gpos, lay, lay + P, M->pos_ext, lay + 2 * P,
                                  lay + 3 * P);
  }
  free(len), free(lay), free(gpos);
  if (!st) st = rrt_ilu0_ghost_positions(M, OP_RCM);
  return st;
}

rrt_status rrt_ilu0_positions_dist(rrt_ilu0_t M) {
  return M->opt.ordering == RRT_ILU_ORDER_RCM ? positions_rcm(M) : positions_multicolor(M);
}

/* The domain-decomposition orderings (RRT_ILU_ORDER_DD, _DD_COLOR): the
 * interior rows of every subdomain first, the interface rows (coupled to
 * another subdomain in the symmetrised pattern) last.
 *
 * No rank gathers the pattern. Each rank classifies its own rows from its
 * entries: a row is interface when one of its columns lies in another
 * subdomain, or when a row of another subdomain references it; the second
 * case is reported by the rank holding that row, to the owner of the ghost
 * it references (that covers the symmetrised pattern). Subdomains are
 * contiguous row ranges, so "interiors subdomain by subdomain, natural
 * order inside" is the interior rows in index order, and a row's position
 * is a prefix count: only counts travel, then the owners tell the ghosts'
 * positions. The coloured interface gathers the interface pattern alone
 * (O(interface) memory per rank) and every rank colours it alike. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"
#include "sched/dd_order.h"
#include "sched/ilu0_levels.h"

#define OPC RRT_ILU0_OP_CREATE
#define OPD RRT_ILU0_OP_ANALYSIS("dd ordering")

/* What the steps share: subdomain and interface flag of every extended
 * row, and room for one record per ghost. */
typedef struct dd_work {
  int32_t *sub, *iface, *dest;
  int64_t *data;
  int64_t ninterior, ninterface; /* global counts */
} dd_work;

/* malloc agreed on every rank: a rank out of memory fails them all before
 * the next collective instead of leaving them waiting. */
static rrt_status agreed_alloc(rrt_ilu0_t M, void **p, size_t bytes) {
  *p = malloc(bytes ? bytes : 1);
  return rrt_agree_named(M->ctx, OPD, *p ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC));
}

/* Every rank must ask for the same subdomains. */
static rrt_status agree_blocks(rrt_ilu0_t M) {
  int32_t k[2] = {M->opt.dd_blocks, -M->opt.dd_blocks}, g[2];
  RRT_CHECK(rrt_host_allreduce_named(M->ctx, OPD, k, g, 2, RRT_DTYPE_I32, RRT_OP_MAX));
  if (g[0] != -g[1])
    return rrt_error(M->ctx, RRT_ERR_INVALID_ARG, OPC,
                     "dd_blocks differs between ranks (%d to %d); every rank must pass the same",
                     -g[1], g[0]);
  return RRT_SUCCESS;
}

/* all[p * m + j] = rank p's mine[j] (m values per rank, one allreduce). */
static rrt_status rank_counts(rrt_ilu0_t M, const int64_t *mine, int m, int64_t **all) {
  int P = M->ctx->size;
  RRT_CHECK(agreed_alloc(M, (void **)all, (size_t)P * (size_t)m * sizeof(int64_t)));
  memset(*all, 0, (size_t)P * (size_t)m * sizeof(int64_t));
  memcpy(*all + (size_t)M->ctx->rank * (size_t)m, mine, (size_t)m * sizeof(int64_t));
  rrt_status st = rrt_host_allreduce_named(M->ctx, OPD, *all, *all, (size_t)P * (size_t)m,
                                           RRT_DTYPE_I64, RRT_OP_SUM); /* in place */
  if (st) free(*all), *all = NULL;
  return st;
}

/* vals[nloc + g] = the owner's vals[row] for every ghost g (vals: one value
 * per extended row; the local ones are read). Two record exchanges. */
static rrt_status ghost_values(rrt_ilu0_t M, int64_t *vals) {
  rrt_sparse_t A = M->A;
  int64_t nr = 0, nb = 0, *rdata = NULL, *reply = NULL, *bdata = NULL;
  int32_t *rsrc = NULL, *bsrc = NULL;
  rrt_status st = rrt_host_exchange_records_named(M->ctx, OPD, A->nghost, A->ghost_owner, A->ghost,
                                                  1, &nr, &rdata, &rsrc);
  if (!st) st = agreed_alloc(M, (void **)&reply, 2 * (size_t)nr * sizeof(int64_t));
  if (!st) {
    for (int64_t t = 0; t < nr; t++)
      reply[2 * t] = rdata[t], reply[2 * t + 1] = vals[rdata[t] - A->row_begin];
    st = rrt_host_exchange_records_named(M->ctx, OPD, nr, rsrc, reply, 2, &nb, &bdata, &bsrc);
  }
  for (int64_t t = 0; t < nb && !st; t++) {
    int64_t e = rrt_sparse_ext_index(A, bdata[2 * t]);
    if (e >= A->nloc) vals[e] = bdata[2 * t + 1];
  }
  free(rdata), free(rsrc), free(reply), free(bdata), free(bsrc);
  return st;
}

/* Subdomain of every extended row: its owner (dd_blocks 0), or its part of
 * the nonzero-balanced dd_blocks-way split, computed by the owner from the
 * row's place in the global nonzero count (scratch: next int64). */
static rrt_status subdomains(rrt_ilu0_t M, dd_work *w, int64_t *scratch) {
  rrt_sparse_t A = M->A;
  int32_t k = M->opt.dd_blocks;
  if (k == 0) {
    for (int64_t i = 0; i < A->nloc; i++)
      w->sub[i] = M->ctx->rank;
    for (int64_t g = 0; g < A->nghost; g++)
      w->sub[A->nloc + g] = A->ghost_owner[g];
    return RRT_SUCCESS;
  }
  if (A->nnz_global >= (int64_t)1 << 42) /* global: every rank refuses alike */
    return rrt_error(M->ctx, RRT_ERR_UNSUPPORTED, OPC,
                     "dd_blocks > 0 needs fewer than 2^42 nonzeros (use dd_blocks = 0)");
  int64_t *nz = NULL, base = 0;
  RRT_CHECK(rank_counts(M, &A->nnz, 1, &nz));
  for (int p = 0; p < M->ctx->rank; p++)
    base += nz[p];
  free(nz);
  for (int64_t i = 0; i < A->nloc; i++) {
    int64_t mid2 = 2 * (base + A->rowptr[i]) + (A->rowptr[i + 1] - A->rowptr[i]);
    scratch[i] = rrt_dd_part(mid2, A->nnz_global, k);
  }
  RRT_CHECK(ghost_values(M, scratch));
  for (int64_t e = 0; e < M->next; e++)
    w->sub[e] = (int32_t)scratch[e];
  return RRT_SUCCESS;
}

/* Interface flags of the local rows: coupled through this rank's entries,
 * or referenced by another subdomain's row on another rank (its rank
 * flagged the ghost and tells the owner). */
static rrt_status interface_flags(rrt_ilu0_t M, dd_work *w) {
  rrt_sparse_t A = M->A;
  memset(w->iface, 0, (size_t)M->next * sizeof(int32_t));
  int nsub = M->opt.dd_blocks > 0 ? M->opt.dd_blocks : M->ctx->size;
  if (nsub > 1) /* one subdomain: no interface, no pass over the entries */
    rrt_dd_mark_interface(A->nloc, A->rowptr, A->col_ext, w->sub, w->iface);
  int64_t m = 0, nr = 0, *rdata = NULL;
  int32_t *rsrc = NULL;
  for (int64_t g = 0; g < A->nghost; g++)
    if (w->iface[A->nloc + g]) w->dest[m] = A->ghost_owner[g], w->data[m++] = A->ghost[g];
  RRT_CHECK(
      rrt_host_exchange_records_named(M->ctx, OPD, m, w->dest, w->data, 1, &nr, &rdata, &rsrc));
  for (int64_t t = 0; t < nr; t++)
    w->iface[rdata[t] - A->row_begin] = 1;
  free(rdata), free(rsrc);
  return RRT_SUCCESS;
}

/* Positions with the interface in natural order: interior rows count the
 * interior rows of lower ranks, interface rows come after all interiors;
 * then the ghosts' positions from their owners. */
static rrt_status natural_positions(rrt_ilu0_t M, dd_work *w) {
  rrt_sparse_t A = M->A;
  int P = M->ctx->size;
  int64_t mine[2] = {0, 0}, *all = NULL, before[2] = {0, 0};
  for (int64_t i = 0; i < A->nloc; i++)
    mine[w->iface[i] ? 1 : 0]++;
  RRT_CHECK(rank_counts(M, mine, 2, &all));
  w->ninterior = w->ninterface = 0;
  for (int p = 0; p < P; p++) {
    if (p < M->ctx->rank) before[0] += all[2 * p], before[1] += all[2 * p + 1];
    w->ninterior += all[2 * p], w->ninterface += all[2 * p + 1];
  }
  free(all);
  before[1] += w->ninterior;
  for (int64_t i = 0; i < A->nloc; i++)
    M->pos_ext[i] = before[w->iface[i] ? 1 : 0]++;
  return ghost_values(M, M->pos_ext);
}

/* The interface graph on every rank: row t is interface row t (position
 * ninterior + t), columns its interface neighbours. Each rank sends its
 * interface rows (they are consecutive interface indices, in rank order). */
static rrt_status gather_interface(rrt_ilu0_t M, const dd_work *w, int64_t **rowptr,
                                   int64_t **col) {
  rrt_sparse_t A = M->A;
  int64_t nI = w->ninterior, nrow = 0, ncol = 0, *len = NULL, *loc = NULL;
  void *glen = NULL;
  size_t tl = 0, tc = 0;
  for (int64_t i = 0; i < A->nloc; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1] && w->iface[i]; p++)
      ncol += A->col_ext[p] != i && M->pos_ext[A->col_ext[p]] >= nI;
  rrt_status st = agreed_alloc(M, (void **)&len, (size_t)A->nloc * sizeof(int64_t));
  if (!st) st = agreed_alloc(M, (void **)&loc, (size_t)ncol * sizeof(int64_t));
  if (!st) st = agreed_alloc(M, (void **)rowptr, ((size_t)w->ninterface + 1) * sizeof(int64_t));
  for (int64_t i = 0, c = 0; i < A->nloc && !st; i++) {
    if (!w->iface[i]) continue;
    len[nrow] = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int32_t e = A->col_ext[p];
      if (e != i && M->pos_ext[e] >= nI) loc[c++] = M->pos_ext[e] - nI, len[nrow]++;
    }
    nrow++;
  }
  if (!st)
    st = rrt_host_allgatherv_alloc(M->ctx, len, (size_t)nrow * sizeof(int64_t), &glen, NULL, &tl);
  if (!st)
    st = rrt_host_allgatherv_alloc(M->ctx, loc, (size_t)ncol * sizeof(int64_t), (void **)col, NULL,
                                   &tc);
  if (!st && tl != (size_t)w->ninterface * sizeof(int64_t))
    st = rrt_error(M->ctx, RRT_ERR_INTERNAL, OPC, "dd ordering: interface rows do not add up");
  if (!st) {
    (*rowptr)[0] = 0;
    for (int64_t t = 0; t < w->ninterface; t++)
      (*rowptr)[t + 1] = (*rowptr)[t] + ((int64_t *)glen)[t];
  }
  free(len), free(loc), free(glen);
  return st;
}

/* Colour the interface (the same greedy colouring on every rank) and sort
 * its rows by (colour, index): the positions of the interface rows, local
 * and ghost, and one phase per colour. */
static rrt_status color_interface(rrt_ilu0_t M, const dd_work *w) {
  int64_t nI = w->ninterior, nF = w->ninterface;
  int64_t *rowptr = NULL, *col = NULL, *sptr = NULL, *scol = NULL, *start = NULL;
  int32_t *color = NULL;
  int nc = 0;
  rrt_status st = gather_interface(M, w, &rowptr, &col);
  if (!st) {
    rrt_status loc = rrt_graph_symmetrize(nF, rowptr, col, &sptr, &scol);
    color = loc ? NULL : malloc(((size_t)nF + 1) * sizeof(int32_t));
    if (color) loc = rrt_dd_color_greedy(nF, sptr, scol, color, &nc);
    st = rrt_agree_named(M->ctx, OPD, loc || !color ? rrt_ilu0_nomem(M->ctx, OPC) : RRT_SUCCESS);
  }
  if (!st) st = agreed_alloc(M, (void **)&start, ((size_t)nc + 1) * sizeof(int64_t));
  if (!st) st = agreed_alloc(M, (void **)&M->phase_start, ((size_t)nc + 1) * sizeof(int64_t));
  if (!st) {
    /* counting sort by colour, stable in index; rowptr becomes the new
     * interface index of each old one */
    memset(start, 0, ((size_t)nc + 1) * sizeof(int64_t));
    for (int64_t t = 0; t < nF; t++)
      start[color[t] + 1]++;
    M->nphase = nc + 1;
    M->phase_start[0] = 0;
    for (int c = 0; c < nc; c++) {
      M->phase_start[c + 1] = nI + start[c];
      start[c + 1] += start[c];
    }
    for (int64_t t = 0; t < nF; t++)
      rowptr[t] = start[color[t]]++;
    for (int64_t e = 0; e < M->next; e++)
      if (M->pos_ext[e] >= nI) M->pos_ext[e] = nI + rowptr[M->pos_ext[e] - nI];
  }
  free(rowptr), free(col), free(sptr), free(scol), free(start), free(color);
  return st;
}

rrt_status rrt_ilu0_dd_positions(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  dd_work w = {0};
  RRT_CHECK(agree_blocks(M));
  rrt_status st = agreed_alloc(M, (void **)&w.sub, (size_t)M->next * sizeof(int32_t));
  if (!st) st = agreed_alloc(M, (void **)&w.iface, (size_t)M->next * sizeof(int32_t));
  if (!st) st = agreed_alloc(M, (void **)&w.dest, (size_t)A->nghost * sizeof(int32_t));
  if (!st) st = agreed_alloc(M, (void **)&w.data, (size_t)A->nghost * sizeof(int64_t));
  if (!st) st = subdomains(M, &w, M->pos_ext); /* pos_ext: scratch until the positions */
  if (!st) st = interface_flags(M, &w);
  if (!st) st = natural_positions(M, &w);
  if (!st && M->opt.ordering == RRT_ILU_ORDER_DD_COLOR && w.ninterface > 0) {
    st = color_interface(M, &w);
  } else if (!st) {
    /* two phases: the interiors, then the interface */
    st = agreed_alloc(M, (void **)&M->phase_start, 2 * sizeof(int64_t));
    if (!st) {
      M->phase_start[0] = 0, M->phase_start[1] = w.ninterior;
      M->nphase = w.ninterface > 0 ? 2 : 1;
    }
  }
  free(w.sub), free(w.iface), free(w.dest), free(w.data);
  return st;
}

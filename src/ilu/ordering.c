/* ILU(0) orderings: the position of every row in the elimination order
 * (natural, RCM, multicolour), and the ordering names. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"
#include "sched/ilu0_levels.h"

#define OPC RRT_ILU0_OP_CREATE

/* Every rank's rows, gathered in row order: P (bytes, offset) pairs from
 * a prefix array over rows (rowptr-like, in elements of `elem` bytes). */
static void row_layout(int P, const int64_t *offsets, const int64_t *prefix, size_t elem,
                       size_t *bytes, size_t *displs) {
  for (int p = 0; p < P; p++) {
    int64_t a = prefix ? prefix[offsets[p]] : offsets[p];
    int64_t b = prefix ? prefix[offsets[p + 1]] : offsets[p + 1];
    bytes[p] = (size_t)(b - a) * elem;
    displs[p] = (size_t)a * elem;
  }
}

/* Positions of all global rows for RCM / multicolour: the pattern is gathered
 * on every rank and every rank computes the same (deterministic) ordering.
 * Byte counts are size_t: a global pattern past 2^31 entries does not wrap. */
static rrt_status global_positions(rrt_ilu0_t M, int64_t **pos_out) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int P = ctx->size;
  int64_t n = A->n;
  rrt_status st = RRT_SUCCESS;
  size_t *layout = malloc(2 * (size_t)P * sizeof(size_t));
  int64_t *len = malloc((size_t)(A->nloc + 1) * sizeof(int64_t));
  int64_t *rowptr = malloc(((size_t)n + 1) * sizeof(int64_t)), *col = NULL, *sptr = NULL,
          *scol = NULL, *pos = malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!layout || !len || !rowptr || !pos) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  for (int64_t i = 0; i < A->nloc; i++)
    len[i] = A->rowptr[i + 1] - A->rowptr[i];
  row_layout(P, A->offsets, NULL, sizeof(int64_t), layout, layout + P);
  RRT_CHECK_GOTO(rrt_host_allgatherv_named(ctx, RRT_ILU0_OP_ANALYSIS("ordering pattern"), len,
                                           (size_t)A->nloc * sizeof(int64_t), rowptr + 1, layout,
                                           layout + P),
                 st, done);
  rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++)
    rowptr[i + 1] += rowptr[i];
  col = malloc(((size_t)rowptr[n] + 1) * sizeof(int64_t));
  if (!col) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  row_layout(P, A->offsets, rowptr, sizeof(int64_t), layout, layout + P);
  RRT_CHECK_GOTO(rrt_host_allgatherv_named(ctx, RRT_ILU0_OP_ANALYSIS("ordering pattern"), A->col,
                                           (size_t)A->nnz * sizeof(int64_t), col, layout,
                                           layout + P),
                 st, done);
  if ((st = rrt_graph_symmetrize(n, rowptr, col, &sptr, &scol))) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  if (M->opt.ordering == RRT_ILU_ORDER_RCM) {
    st = rrt_order_rcm(n, sptr, scol, pos);
  } else {
    int nc = 0;
    st = rrt_order_multicolor(n, sptr, scol, pos, &nc);
  }
  if (st) st = rrt_ilu0_nomem(ctx, OPC);
done:
  free(layout), free(len), free(rowptr), free(col), free(sptr), free(scol);
  if (st) free(pos), pos = NULL;
  *pos_out = pos;
  return st;
}

rrt_status rrt_ilu0_positions(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  M->pos_ext = rrt_ilu0_alloc(((size_t)M->next + 1) * sizeof(int64_t));
  if (!M->pos_ext) return rrt_ilu0_nomem(M->ctx, OPC);
  if (M->opt.ordering == RRT_ILU_ORDER_NATURAL) {
    for (int64_t e = 0; e < M->next; e++)
      M->pos_ext[e] = rrt_sparse_ext_global(A, e);
    return RRT_SUCCESS;
  }
  int64_t *gpos = NULL;
  RRT_CHECK(global_positions(M, &gpos));
  for (int64_t e = 0; e < M->next; e++)
    M->pos_ext[e] = gpos[rrt_sparse_ext_global(A, e)];
  free(gpos);
  return RRT_SUCCESS;
}

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

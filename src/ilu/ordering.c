/* ILU(0) orderings: the position of every row in the elimination order
 * (natural here; RCM and multicolour in ordering_dist.c, the dd orderings
 * in ordering_dd.c), and the ordering names. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"
#include "sched/ilu0_levels.h"

#define OPC RRT_ILU0_OP_CREATE

rrt_status rrt_ilu0_positions(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  M->pos_ext = rrt_ilu0_alloc(((size_t)M->next + 1) * sizeof(int64_t));
  if (!M->pos_ext) return rrt_ilu0_nomem(M->ctx, OPC);
  /* given: the transpose apply's handle, or ILU(k) in an order computed on
   * A before the fill (the padded matrix has other ghosts) */
  const int64_t *given = M->given_pos ? M->given_pos : M->fill_pos;
  if (given) {
    memcpy(M->pos_ext, given, (size_t)M->nloc * sizeof(int64_t));
    free(M->fill_pos);
    M->fill_pos = NULL;
    return rrt_ilu0_ghost_positions(M, RRT_ILU0_OP_ANALYSIS("given positions"));
  }
  if (M->opt.ordering == RRT_ILU_ORDER_NATURAL) {
    for (int64_t i = 0; i < M->nloc; i++)
      M->pos_ext[i] = A->row_begin + i;
    for (int64_t g = 0; g < A->nghost; g++)
      M->pos_ext[M->nloc + g] = A->ghost[g];
    return RRT_SUCCESS;
  }
  if (M->opt.ordering == RRT_ILU_ORDER_DD || M->opt.ordering == RRT_ILU_ORDER_DD_COLOR)
    return rrt_ilu0_dd_positions(M);
  return rrt_ilu0_positions_dist(M); /* ordering_dist.c */
}

const char *rrt_ilu_ordering_name(rrt_ilu_ordering o) {
  switch (o) {
  case RRT_ILU_ORDER_RCM: return "rcm";
  case RRT_ILU_ORDER_MULTICOLOR: return "multicolor";
  case RRT_ILU_ORDER_DD: return "dd";
  case RRT_ILU_ORDER_DD_COLOR: return "dd-color";
  default: return "natural";
  }
}

rrt_status rrt_ilu_ordering_parse(const char *name, rrt_ilu_ordering *o) {
  if (!strcmp(name, "natural"))
    *o = RRT_ILU_ORDER_NATURAL;
  else if (!strcmp(name, "rcm"))
    *o = RRT_ILU_ORDER_RCM;
  else if (!strcmp(name, "multicolor") || !strcmp(name, "multicolour"))
    *o = RRT_ILU_ORDER_MULTICOLOR;
  else if (!strcmp(name, "dd"))
    *o = RRT_ILU_ORDER_DD;
  else if (!strcmp(name, "dd-color") || !strcmp(name, "dd-colour"))
    *o = RRT_ILU_ORDER_DD_COLOR;
  else
    return RRT_ERR_INVALID_ARG;
  return RRT_SUCCESS;
}

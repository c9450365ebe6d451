/* Ghost columns of the distributed CSR and the SpMV halo lists: which
 * remote rows this rank reads, who owns them, and the message plans that
 * bring their x values (both sides sort by global index, so the lists line
 * up without telling each other). */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "sched/ilu0_levels.h"
#include "sparse/csr.h"

#define OP "rrt_sparse_create"

int64_t rrt_sparse_ext_index(const struct rrt_sparse *A, int64_t g) {
  if (g >= A->row_begin && g < A->row_begin + A->nloc) return g - A->row_begin;
  int64_t lo = 0, hi = A->nghost;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (A->ghost[mid] < g)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < A->nghost && A->ghost[lo] == g) ? A->nloc + lo : -1;
}

int64_t rrt_sparse_ext_global(const struct rrt_sparse *A, int64_t e) {
  return e < A->nloc ? A->row_begin + e : A->ghost[e - A->nloc];
}

rrt_halo_pack rrt_sparse_halo_pack(const struct rrt_sparse *A) {
  return (rrt_halo_pack){A->k->gather, A->k->scatter};
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Remote columns, sorted and unique, their owners, and every entry's
 * extended column. */
static rrt_status find_ghosts(struct rrt_sparse *A) {
  rrt_ctx_t ctx = A->ctx;
  A->col_ext = malloc(((size_t)A->nnz + 1) * sizeof(int32_t));
  A->ghost = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  if (!A->col_ext || !A->ghost) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
  int64_t ng = 0, end = A->row_begin + A->nloc;
  for (int64_t p = 0; p < A->nnz; p++)
    if (A->col[p] < A->row_begin || A->col[p] >= end) A->ghost[ng++] = A->col[p];
  qsort(A->ghost, (size_t)ng, sizeof(int64_t), cmp_i64);
  int64_t w = 0;
  for (int64_t g = 0; g < ng; g++)
    if (g == 0 || A->ghost[g] != A->ghost[g - 1]) A->ghost[w++] = A->ghost[g];
  A->nghost = w;
  if (A->nloc + A->nghost > INT32_MAX / 2)
    return rrt_error(ctx, RRT_ERR_UNSUPPORTED, OP, "more than 2^30 local plus ghost rows");
  A->ghost_owner = malloc(((size_t)w + 1) * sizeof(int32_t));
  if (!A->ghost_owner) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
  for (int64_t g = 0; g < w; g++)
    A->ghost_owner[g] = rrt_partition_owner(A->offsets, A->size, A->ghost[g]);
  for (int64_t p = 0; p < A->nnz; p++)
    A->col_ext[p] = (int32_t)rrt_sparse_ext_index(A, A->col[p]);
  return RRT_SUCCESS;
}

/* The SpMV halo: ask the owners for the ghosts; the requests received are
 * this rank's send list. Collective. */
static rrt_status spmv_halo(struct rrt_sparse *A) {
  rrt_ctx_t ctx = A->ctx;
  int64_t w = A->nghost, nr = 0;
  int64_t *rdata = NULL, *pk = NULL;
  int32_t *rsrc = NULL, *pi = NULL, *pp = NULL;
  rrt_msg_plan sp = {0}, rp = {0};
  rrt_status st;
  RRT_CHECK_GOTO(rrt_host_exchange_records(ctx, w, A->ghost_owner, A->ghost, 1, &nr, &rdata, &rsrc),
                 st, done);
  size_t cnt = (size_t)(nr > w ? nr : w) + 1;
  pi = malloc(cnt * sizeof(int32_t));
  pp = malloc(cnt * sizeof(int32_t));
  pk = malloc(cnt * sizeof(int64_t));
  if (!pi || !pp || !pk) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "out of memory");
    goto done;
  }
  for (int64_t t = 0; t < nr; t++)
    pp[t] = rsrc[t], pi[t] = (int32_t)(rdata[t] - A->row_begin), pk[t] = rdata[t];
  RRT_CHECK_GOTO(rrt_msg_plan_build(nr, pp, pi, NULL, pk, &sp), st, done);
  for (int64_t g = 0; g < w; g++)
    pp[g] = A->ghost_owner[g], pi[g] = (int32_t)(A->nloc + g), pk[g] = A->ghost[g];
  RRT_CHECK_GOTO(rrt_msg_plan_build(w, pp, pi, NULL, pk, &rp), st, done);
  rrt_halo_pack pack = rrt_sparse_halo_pack(A);
  st = rrt_halo_init(ctx, &A->halo, &pack, &sp, &rp, 0, NULL);
done:
  free(rdata), free(rsrc), free(pi), free(pp), free(pk);
  rrt_msg_plan_free(&sp), rrt_msg_plan_free(&rp);
  return st;
}

rrt_status rrt_sparse_build_ghosts(struct rrt_sparse *A) {
  RRT_CHECK(find_ghosts(A));
  return spmv_halo(A);
}

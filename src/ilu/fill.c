/* ILU(k) symbolic factorisation: the level-of-fill pattern of PETSc's
 * -pc_factor_levels k, computed where the rows live, then A padded with
 * explicit zeros at the fill positions (the matrix the ILU(0) analysis and
 * factorisation of the handle run on, owned by the handle).
 *
 * Levels (PETSc's definition): lev(i,j) = 0 where a_ij != 0; eliminating
 * row i with a row k before it (k in row i's pattern, k < i) proposes
 * lev(i,k) + lev(k,j) + 1 for every j in the U part of row k (j > k); an
 * entry is kept when its smallest proposal is <= levels. Row k's U part is
 * its final pattern with its levels, so rows are computed in order.
 *
 * Natural order (here): a rank-ordered pipeline. Row i only
 * reads U rows k with k >= the smallest column of row i in A (fill never
 * lies left of A's first column in a row), so rank r needs the U rows of
 * the window [lo_r, row_begin_r) from the ranks before it, lo_r its
 * smallest column. In step s rank s computes its rows (after the windows
 * from ranks < s arrived in steps 0 .. s-1), then sends every later rank
 * its own rows of that rank's window. Cost: P collective steps, the ranks'
 * symbolic work one after the other (the numeric factorisation and the
 * sweeps stay level scheduled); memory per rank: the local filled rows with
 * their levels plus the window's U rows (a band of the matrix's bandwidth
 * for banded matrices, up to all earlier rows for a row reaching column 0).
 * Other orders (fill_root.c): the positions computed on A first, the
 * pattern of P A P^T filled on rank 0, the padded matrix keeping those
 * positions (M->fill_pos).
 */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/fill.h"
#include "ilu/handle.h"

#define OPC RRT_ILU0_OP_CREATE

/* Agreed: every row has its diagonal in A (ILU(k) keeps PETSc's rule that
 * it must, rather than letting fill supply it). */
static rrt_status check_diagonals(rrt_ilu0_t M, rrt_sparse_t A) {
  int64_t missing = INT64_MAX;
  for (int64_t i = 0; i < A->nloc && missing == INT64_MAX; i++) {
    int found = 0;
    for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      found |= A->col[e] == A->row_begin + i;
    if (!found) missing = A->row_begin + i;
  }
  return rrt_ilu0_agree_missing(M, missing);
}

/* Records of the local U rows [r0, r1) (local indices) into buf at *o:
 * per row its length, its columns, its levels. */
static void pack_urows(const rrt_fill_state *F, int64_t r0, int64_t r1, int64_t *buf, size_t *o) {
  for (int64_t i = r0; i < r1; i++) {
    const int64_t *c;
    const int32_t *l;
    int64_t n;
    rrt_fill_urow(F, F->row_begin + i, &c, &l, &n);
    buf[(*o)++] = n;
    memcpy(buf + *o, c, (size_t)n * sizeof(int64_t));
    *o += (size_t)n;
    for (int64_t e = 0; e < n; e++)
      buf[(*o)++] = l[e];
  }
}

/* Append received window rows (records of pack_urows, in row order). */
static int unpack_urows(rrt_fill_state *F, const int64_t *buf, size_t words) {
  rrt_fill_rows *R = &F->win;
  for (size_t o = 0; o < words;) {
    int64_t n = buf[o++];
    if (rrt_fill_rows_reserve(R, n)) return -1;
    int64_t p = R->ptr[R->n];
    memcpy(R->col + p, buf + o, (size_t)n * sizeof(int64_t));
    for (int64_t e = 0; e < n; e++)
      R->lev[p + e] = (int32_t)buf[o + (size_t)n + (size_t)e];
    o += 2 * (size_t)n;
    R->ptr[++R->n] = p + n;
  }
  return 0;
}

/* Step buffers, allocated once before the pipeline (so every step's
 * collective runs on every rank whatever fails inside a step): send bytes,
 * send offsets, receive bytes, P each. */
typedef struct step_layout {
  size_t *sb, *sd, *rb;
} step_layout;

/* Words of this rank's rows inside rank r's window [lo[r], offsets[r]):
 * the local rows [*r0, *r1) and their record size. */
static size_t window_rows(rrt_sparse_t A, const rrt_fill_state *F, const int64_t *lo, int r,
                          int64_t *r0, int64_t *r1) {
  *r0 = lo[r] > A->row_begin ? lo[r] : A->row_begin;
  *r1 = A->offsets[r] < A->row_begin + A->nloc ? A->offsets[r] : A->row_begin + A->nloc;
  size_t words = 0;
  for (int64_t g = *r0; g < *r1; g++)
    words += 1 + 2 * (size_t)(F->loc.ptr[g - A->row_begin + 1] - F->ldiag[g - A->row_begin] - 1);
  *r0 -= A->row_begin, *r1 -= A->row_begin;
  return words;
}

/* Step s's messages from rank s = this rank (rows computed: ok): each
 * later rank r gets this rank's rows inside its window. On a failure
 * before or here, nothing is sent but the collective still runs. */
static rrt_status send_windows(rrt_ilu0_t M, rrt_fill_state *F, const int64_t *lo, int ok,
                               step_layout *L) {
  rrt_sparse_t A = M->A;
  int P = A->size;
  size_t cap = 0, words = 0;
  int64_t r0, r1, *recv = NULL, *buf = NULL;
  memset(L->sb, 0, (size_t)P * sizeof(size_t)), memset(L->sd, 0, (size_t)P * sizeof(size_t));
  for (int r = A->rank + 1; r < P && ok; r++)
    cap += window_rows(A, F, lo, r, &r0, &r1);
  if (ok) buf = malloc((cap + 1) * sizeof(int64_t));
  rrt_status st = !ok || buf ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  for (int r = A->rank + 1; r < P && buf; r++) {
    window_rows(A, F, lo, r, &r0, &r1);
    L->sd[r] = words * sizeof(int64_t);
    pack_urows(F, r0, r1, buf, &words);
    L->sb[r] = words * sizeof(int64_t) - L->sd[r];
  }
  rrt_status cst = rrt_host_alltoallv_alloc(M->ctx, buf ? (const void *)buf : (const void *)L->sb,
                                            L->sb, L->sd, (void **)&recv, L->rb);
  free(buf), free(recv);
  return st ? st : cst;
}

/* A step in which this rank only listens (it may receive from rank s). */
static rrt_status listen_step(rrt_ilu0_t M, rrt_fill_state *F, int s, step_layout *L) {
  int P = M->A->size;
  int64_t *recv = NULL;
  memset(L->sb, 0, (size_t)P * sizeof(size_t)), memset(L->sd, 0, (size_t)P * sizeof(size_t));
  rrt_status st = rrt_host_alltoallv_alloc(M->ctx, L->sb, L->sb, L->sd, (void **)&recv, L->rb);
  if (!st && L->rb[s] && unpack_urows(F, recv, L->rb[s] / sizeof(int64_t)))
    st = rrt_ilu0_nomem(M->ctx, OPC);
  free(recv);
  return st;
}

/* This rank's step: its rows, then the windows of later ranks. */
static rrt_status own_step(rrt_ilu0_t M, rrt_fill_state *F, const int64_t *lo, step_layout *L) {
  rrt_sparse_t A = M->A;
  int failed = 0;
  for (int64_t i = 0; i < A->nloc && !failed; i++)
    failed = rrt_fill_row(F, i, A->col + A->rowptr[i], A->rowptr[i + 1] - A->rowptr[i]);
  rrt_status st = failed ? rrt_ilu0_nomem(M->ctx, OPC) : RRT_SUCCESS;
  rrt_status cst = send_windows(M, F, lo, !failed, L);
  return st ? st : cst;
}

/* The smallest column of every rank's rows (its row_begin if larger);
 * *lo is malloc'd (P entries). */
static rrt_status gather_lo(rrt_ilu0_t M, int64_t **lo) {
  rrt_sparse_t A = M->A;
  int64_t mine = A->row_begin;
  for (int64_t i = 0; i < A->nloc; i++)
    if (A->rowptr[i + 1] > A->rowptr[i] && A->col[A->rowptr[i]] < mine) mine = A->col[A->rowptr[i]];
  return rrt_host_allgatherv_alloc(M->ctx, &mine, sizeof mine, (void **)lo, NULL, NULL);
}

/* Where A's entries sit in the filled rows (A's row is a subsequence). */
static void map_entries(rrt_ilu0_t M, const int64_t *ptr, const int64_t *col) {
  rrt_sparse_t A = M->A;
  for (int64_t i = 0; i < A->nloc; i++)
    for (int64_t e = A->rowptr[i], f = ptr[i]; e < A->rowptr[i + 1]; e++, f++) {
      while (col[f] != A->col[e])
        f++;
      M->amap[e] = f;
    }
}

/* The padded matrix from the filled local rows ptr/col (collective), which
 * the handle owns and analyses from here on (M->A); A stays M->Auser. */
static rrt_status build_padded(rrt_ilu0_t M, const int64_t *ptr, const int64_t *col) {
  rrt_sparse_t A = M->A;
  int64_t nnz = ptr[A->nloc];
  double *zeros = calloc((size_t)nnz + 1, sizeof(double));
  M->amap = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  rrt_status st = zeros && M->amap ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), st);
  if (!st) map_entries(M, ptr, col);
  if (!st) st = rrt_sparse_create(M->ctx, A->n, A->row_begin, A->nloc, ptr, col, zeros, &M->Afill);
  free(zeros);
  if (st) return st;
  M->Auser = A;
  M->A = M->Afill;
  M->nnz = M->Afill->nnz;
  M->next = M->Afill->nloc + M->Afill->nghost;
  return RRT_SUCCESS;
}

/* Natural order: the rank-ordered pipeline. */
static rrt_status fill_pipeline(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  int64_t *lo = NULL;
  size_t *lay = calloc(3 * (size_t)A->size, sizeof(size_t));
  step_layout L = {lay, lay + A->size, lay + 2 * A->size};
  rrt_status st = gather_lo(M, &lo);
  rrt_fill_state F = {0};
  rrt_status lst = st;
  if (!st &&
      (!lay || rrt_fill_state_init(&F, M->opt.levels, A->row_begin, lo[A->rank], A->nloc, A->nnz)))
    lst = rrt_ilu0_nomem(M->ctx, OPC);
  if (!st) st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), lst);
  /* every rank takes part in every step */
  for (int s = 0; s < A->size && !st; s++) {
    lst = s == A->rank ? own_step(M, &F, lo, &L) : listen_step(M, &F, s, &L);
    st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), lst);
  }
  if (!st) st = build_padded(M, F.loc.ptr, F.loc.col);
  rrt_fill_state_free(&F);
  free(lo), free(lay);
  return st;
}

rrt_status rrt_ilu0_fill(rrt_ilu0_t M) {
  RRT_CHECK(check_diagonals(M, M->A));
  if (M->opt.ordering == RRT_ILU_ORDER_NATURAL) return fill_pipeline(M);
  /* another order: its positions on A, the pattern of P A P^T filled on
   * rank 0 (fill_root.c), then the positions given to the padded matrix */
  RRT_CHECK(rrt_ilu0_positions(M));
  int64_t *ptr = NULL, *col = NULL;
  rrt_status st = rrt_ilu0_fill_root(M, &ptr, &col);
  if (!st) st = build_padded(M, ptr, col);
  free(ptr), free(col);
  if (st) return st;
  /* the positions of the local rows stay; the ghosts are the padded
   * matrix's (rrt_ilu0_positions fetches theirs from fill_pos) */
  M->fill_pos = M->pos_ext;
  M->pos_ext = NULL;
  /* the dd orderings' phases (M->phase_start) stay: positions are global,
   * so they hold for the padded matrix, whose fill the schedule then sees
   * (fill couples interface rows of one colour through an interior; the
   * coarse levels are kept only where its remote reads still allow them) */
  return RRT_SUCCESS;
}

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
 * Distribution (natural ordering only): a rank-ordered pipeline. Row i only
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
 */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"

#define OPC RRT_ILU0_OP_CREATE

/* Rows with levels: row t at ptr[t] .. ptr[t + 1] (global columns, sorted). */
typedef struct lev_rows {
  int64_t n, cap; /* rows, entry capacity */
  int64_t *ptr, *col;
  int32_t *lev;
} lev_rows;

static void lev_rows_free(lev_rows *R) { free(R->ptr), free(R->col), free(R->lev); }

/* Room for `more` entries after the current ones. 0 on success. */
static int lev_rows_reserve(lev_rows *R, int64_t more) {
  int64_t need = R->ptr[R->n] + more;
  if (need <= R->cap) return 0;
  int64_t cap = R->cap * 2 > need ? R->cap * 2 : need + 16;
  int64_t *c = realloc(R->col, (size_t)cap * sizeof(int64_t));
  if (c) R->col = c;
  int32_t *l = realloc(R->lev, (size_t)cap * sizeof(int32_t));
  if (l) R->lev = l;
  if (!c || !l) return -1;
  R->cap = cap;
  return 0;
}

/* One row being eliminated: cur holds its entries so far, tmp the merge. */
typedef struct fill_work {
  int64_t m, cap;
  int64_t *col, *tcol;
  int32_t *lev, *tlev;
} fill_work;

static int work_reserve(fill_work *W, int64_t need) {
  if (need <= W->cap) return 0;
  int64_t cap = need * 2;
  int64_t *a = realloc(W->col, (size_t)cap * sizeof(int64_t));
  if (a) W->col = a;
  int64_t *b = realloc(W->tcol, (size_t)cap * sizeof(int64_t));
  if (b) W->tcol = b;
  int32_t *c = realloc(W->lev, (size_t)cap * sizeof(int32_t));
  if (c) W->lev = c;
  int32_t *d = realloc(W->tlev, (size_t)cap * sizeof(int32_t));
  if (d) W->tlev = d;
  if (!a || !b || !c || !d) return -1;
  W->cap = cap;
  return 0;
}

/* What the row computations read: the local rows so far and the window. */
typedef struct fill_state {
  int levels;
  int64_t row_begin, lo; /* the window is [lo, row_begin) */
  lev_rows loc;          /* local filled rows (all entries) */
  int64_t *ldiag;        /* per local row: index of its diagonal in loc */
  lev_rows win;          /* window rows (U part only, diagonal excluded) */
  fill_work w;
} fill_state;

/* The U part of row k (diagonal excluded): *n entries at *col, *lev. */
static void urow(const fill_state *F, int64_t k, const int64_t **col, const int32_t **lev,
                 int64_t *n) {
  const lev_rows *R = &F->win;
  int64_t b, e;
  if (k >= F->row_begin) {
    R = &F->loc;
    b = F->ldiag[k - F->row_begin] + 1, e = R->ptr[k - F->row_begin + 1];
  } else {
    b = R->ptr[k - F->lo], e = R->ptr[k - F->lo + 1];
  }
  *col = R->col + b, *lev = R->lev + b, *n = e - b;
}

/* Merge the proposals of row k (at index at of the working row, level
 * lik) into the entries after it: the smaller level where both hold one. */
static int merge_urow(fill_state *F, int64_t at, int64_t k, int32_t lik) {
  fill_work *W = &F->w;
  const int64_t *uc;
  const int32_t *ul;
  int64_t un;
  urow(F, k, &uc, &ul, &un);
  if (work_reserve(W, W->m + un)) return -1;
  int64_t a = at + 1, u = 0, o = at + 1;
  memcpy(W->tcol, W->col, (size_t)o * sizeof(int64_t));
  memcpy(W->tlev, W->lev, (size_t)o * sizeof(int32_t));
  while (a < W->m || u < un) {
    int32_t pl = u < un ? lik + 1 + ul[u] : 0;
    if (u < un && pl > F->levels) { /* dropped proposal */
      u++;
      continue;
    }
    if (u >= un || (a < W->m && W->col[a] < uc[u])) {
      W->tcol[o] = W->col[a], W->tlev[o++] = W->lev[a++];
    } else if (a >= W->m || uc[u] < W->col[a]) {
      W->tcol[o] = uc[u++], W->tlev[o++] = pl;
    } else {
      W->tcol[o] = W->col[a], W->tlev[o++] = W->lev[a] < pl ? W->lev[a] : pl;
      a++, u++;
    }
  }
  int64_t *tc = W->col;
  int32_t *tl = W->lev;
  W->col = W->tcol, W->lev = W->tlev, W->tcol = tc, W->tlev = tl;
  W->m = o;
  return 0;
}

/* Local row i (global gi): A's entries at level 0, then every entry left
 * of the diagonal, in increasing column (fill included), eliminated. */
static int fill_row(fill_state *F, rrt_sparse_t A, int64_t i) {
  fill_work *W = &F->w;
  int64_t b = A->rowptr[i], len = A->rowptr[i + 1] - b, gi = F->row_begin + i;
  if (work_reserve(W, len)) return -1;
  memcpy(W->col, A->col + b, (size_t)len * sizeof(int64_t));
  for (int64_t e = 0; e < len; e++)
    W->lev[e] = 0;
  W->m = len;
  for (int64_t at = 0; at < W->m && W->col[at] < gi; at++)
    if (W->lev[at] + 1 <= F->levels && merge_urow(F, at, W->col[at], W->lev[at])) return -1;
  lev_rows *R = &F->loc;
  if (lev_rows_reserve(R, W->m)) return -1;
  int64_t p = R->ptr[R->n];
  memcpy(R->col + p, W->col, (size_t)W->m * sizeof(int64_t));
  memcpy(R->lev + p, W->lev, (size_t)W->m * sizeof(int32_t));
  for (int64_t e = 0; e < W->m; e++)
    if (W->col[e] == gi) F->ldiag[i] = p + e;
  R->ptr[++R->n] = p + W->m;
  return 0;
}

/* Agreed: every row has its diagonal in A (ILU(k) keeps PETSc's rule that
 * it must, rather than letting fill supply it). */
static rrt_status check_diagonals(rrt_ilu0_t M, rrt_sparse_t A) {
  int64_t missing = INT64_MAX, gmin = INT64_MAX;
  for (int64_t i = 0; i < A->nloc && missing == INT64_MAX; i++) {
    int found = 0;
    for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      found |= A->col[e] == A->row_begin + i;
    if (!found) missing = A->row_begin + i;
  }
  RRT_CHECK(rrt_host_allreduce_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill: diagonal check"), &missing,
                                     &gmin, 1, RRT_DTYPE_I64, RRT_OP_MIN));
  if (gmin != INT64_MAX)
    return rrt_error(M->ctx, RRT_ERR_SINGULAR, OPC,
                     "zero pivot: global row %lld (0-based) has no diagonal entry, ILU(%d) does "
                     "not exist",
                     (long long)gmin, M->opt.levels);
  return RRT_SUCCESS;
}

/* Records of the local U rows [r0, r1) (local indices) into buf at *o:
 * per row its length, its columns, its levels. */
static void pack_urows(const fill_state *F, int64_t r0, int64_t r1, int64_t *buf, size_t *o) {
  for (int64_t i = r0; i < r1; i++) {
    const int64_t *c;
    const int32_t *l;
    int64_t n;
    urow(F, F->row_begin + i, &c, &l, &n);
    buf[(*o)++] = n;
    memcpy(buf + *o, c, (size_t)n * sizeof(int64_t));
    *o += (size_t)n;
    for (int64_t e = 0; e < n; e++)
      buf[(*o)++] = l[e];
  }
}

/* Append received window rows (records of pack_urows, in row order). */
static int unpack_urows(fill_state *F, const int64_t *buf, size_t words) {
  lev_rows *R = &F->win;
  for (size_t o = 0; o < words;) {
    int64_t n = buf[o++];
    if (lev_rows_reserve(R, n)) return -1;
    int64_t p = R->ptr[R->n];
    memcpy(R->col + p, buf + o, (size_t)n * sizeof(int64_t));
    for (int64_t e = 0; e < n; e++)
      R->lev[p + e] = (int32_t)buf[o + (size_t)n + (size_t)e];
    o += 2 * (size_t)n;
    R->ptr[++R->n] = p + n;
  }
  return 0;
}

/* Step s's messages from rank s: each later rank r gets the rows of this
 * rank inside its window [lo[r], offsets[r]). */
static rrt_status send_windows(rrt_ilu0_t M, fill_state *F, const int64_t *lo, int64_t **recv,
                               size_t *rbytes) {
  rrt_sparse_t A = M->A;
  int P = A->size, me = A->rank;
  size_t *sb = calloc((size_t)P, sizeof(size_t)), *sd = calloc((size_t)P, sizeof(size_t));
  size_t words = 0, cap = 0;
  for (int r = me + 1; r < P; r++) {
    int64_t r0 = lo[r] > A->row_begin ? lo[r] : A->row_begin;
    int64_t r1 = A->offsets[r] < A->row_begin + A->nloc ? A->offsets[r] : A->row_begin + A->nloc;
    for (int64_t g = r0; g < r1; g++)
      cap += 1 + 2 * (size_t)(F->loc.ptr[g - A->row_begin + 1] - F->ldiag[g - A->row_begin] - 1);
  }
  int64_t *buf = malloc((cap + 1) * sizeof(int64_t));
  rrt_status st = sb && sd && buf ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  for (int r = me + 1; r < P && !st; r++) {
    int64_t r0 = lo[r] > A->row_begin ? lo[r] : A->row_begin;
    int64_t r1 = A->offsets[r] < A->row_begin + A->nloc ? A->offsets[r] : A->row_begin + A->nloc;
    sd[r] = words * sizeof(int64_t);
    if (r1 > r0) pack_urows(F, r0 - A->row_begin, r1 - A->row_begin, buf, &words);
    sb[r] = words * sizeof(int64_t) - sd[r];
  }
  if (!st) st = rrt_host_alltoallv_alloc(M->ctx, buf, sb, sd, (void **)recv, rbytes);
  free(sb), free(sd), free(buf);
  return st;
}

/* A step in which this rank only listens (it may receive from rank s). */
static rrt_status listen_step(rrt_ilu0_t M, fill_state *F, int s) {
  int P = M->A->size;
  size_t *sb = calloc((size_t)P, sizeof(size_t)), *sd = calloc((size_t)P, sizeof(size_t));
  size_t *rb = calloc((size_t)P, sizeof(size_t));
  int64_t *recv = NULL, dummy = 0;
  rrt_status st = sb && sd && rb ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  if (!st) st = rrt_host_alltoallv_alloc(M->ctx, &dummy, sb, sd, (void **)&recv, rb);
  if (!st && rb[s] && unpack_urows(F, recv, rb[s] / sizeof(int64_t)))
    st = rrt_ilu0_nomem(M->ctx, OPC);
  free(sb), free(sd), free(rb), free(recv);
  return st;
}

/* This rank's step: its rows, then the windows of later ranks. */
static rrt_status own_step(rrt_ilu0_t M, fill_state *F, const int64_t *lo) {
  rrt_sparse_t A = M->A;
  int failed = 0;
  for (int64_t i = 0; i < A->nloc && !failed; i++)
    failed = fill_row(F, A, i);
  rrt_status st = failed ? rrt_ilu0_nomem(M->ctx, OPC) : RRT_SUCCESS;
  /* the collective runs even after a local failure (the others are in it) */
  size_t *rb = calloc((size_t)A->size, sizeof(size_t));
  int64_t *recv = NULL;
  rrt_status cst = rb ? send_windows(M, F, lo, &recv, rb) : rrt_ilu0_nomem(M->ctx, OPC);
  free(rb), free(recv);
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

static rrt_status fill_state_init(rrt_ilu0_t M, fill_state *F, int64_t lo) {
  rrt_sparse_t A = M->A;
  F->levels = M->opt.levels;
  F->row_begin = A->row_begin, F->lo = lo;
  F->loc.ptr = calloc((size_t)A->nloc + 1, sizeof(int64_t));
  F->ldiag = calloc((size_t)A->nloc + 1, sizeof(int64_t));
  F->win.ptr = calloc((size_t)(A->row_begin - lo) + 1, sizeof(int64_t));
  if (!F->loc.ptr || !F->ldiag || !F->win.ptr || lev_rows_reserve(&F->loc, A->nnz))
    return rrt_ilu0_nomem(M->ctx, OPC);
  return RRT_SUCCESS;
}

static void fill_state_free(fill_state *F) {
  lev_rows_free(&F->loc), lev_rows_free(&F->win), free(F->ldiag);
  free(F->w.col), free(F->w.tcol), free(F->w.lev), free(F->w.tlev);
}

/* Where A's entries sit in the filled rows (A's row is a subsequence). */
static void map_entries(rrt_ilu0_t M, const lev_rows *R) {
  rrt_sparse_t A = M->A;
  for (int64_t i = 0; i < A->nloc; i++)
    for (int64_t e = A->rowptr[i], f = R->ptr[i]; e < A->rowptr[i + 1]; e++, f++) {
      while (R->col[f] != A->col[e])
        f++;
      M->amap[e] = f;
    }
}

/* The padded matrix from the filled rows (collective), which the handle
 * owns and analyses from here on (M->A); A stays M->Auser. */
static rrt_status build_padded(rrt_ilu0_t M, const fill_state *F) {
  rrt_sparse_t A = M->A;
  const lev_rows *R = &F->loc;
  int64_t nnz = R->ptr[R->n];
  double *zeros = calloc((size_t)nnz + 1, sizeof(double));
  M->amap = malloc(((size_t)A->nnz + 1) * sizeof(int64_t));
  rrt_status st = zeros && M->amap ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPC);
  st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), st);
  if (!st) map_entries(M, R);
  if (!st)
    st = rrt_sparse_create(M->ctx, A->n, A->row_begin, A->nloc, R->ptr, R->col, zeros, &M->Afill);
  free(zeros);
  if (st) return st;
  M->fill_window = F->win.ptr[F->win.n];
  M->Auser = A;
  M->A = M->Afill;
  M->nnz = M->Afill->nnz;
  M->next = M->Afill->nloc + M->Afill->nghost;
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_fill(rrt_ilu0_t M) {
  if (M->opt.ordering != RRT_ILU_ORDER_NATURAL)
    return rrt_agree(M->ctx, rrt_error(M->ctx, RRT_ERR_INVALID_ARG, OPC,
                                       "levels %d with ordering %s: ILU(k) with k > 0 supports "
                                       "the natural ordering only",
                                       M->opt.levels, rrt_ilu_ordering_name(M->opt.ordering)));
  rrt_sparse_t A = M->A;
  RRT_CHECK(check_diagonals(M, A));
  int64_t *lo = NULL;
  rrt_status st = gather_lo(M, &lo);
  fill_state F = {0};
  rrt_status lst = st ? st : fill_state_init(M, &F, lo[A->rank]);
  if (!st) st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), lst);
  /* the pipeline: every rank takes part in every step */
  for (int s = 0; s < A->size && !st; s++) {
    lst = s == A->rank ? own_step(M, &F, lo) : listen_step(M, &F, s);
    st = rrt_agree_named(M->ctx, RRT_ILU0_OP_ANALYSIS("fill"), lst);
  }
  if (!st) st = build_padded(M, &F);
  fill_state_free(&F);
  free(lo);
  return st;
}

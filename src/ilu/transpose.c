/* Transpose apply, z = (LU)^-T r, through the level-scheduled ILU(0) apply
 * of a second handle T.
 *
 * (LU)^T = U^T L^T = (U^T D^-1)(D L^T) = L' U' with D = diag(U): L' is unit
 * lower triangular (l'_ji = u_ij / u_ii) and U' upper triangular with the
 * same diagonal (u'_ji = u_jj l_ij), both in the elimination order of the
 * handle. So T is an ILU(0) handle on the transposed factor pattern At,
 * analysed once with the handle's positions (rrt_ilu0_create_at), whose
 * factor values are L' and U' written in directly (no factorisation); its
 * apply is the existing sweeps: the same bits for every rank count and
 * backend, since every value of L' and U' is one division or one
 * multiplication of the handle's factors. T is built at the first transpose
 * apply (collective) and its values refreshed at the first transpose apply
 * after each rrt_ilu0_factor (one exchange of the factor values).
 *
 * Cost: a second analysis at the first call, then per refresh one
 * all-to-all of the local factor values; memory about that of a second
 * handle (the pattern, its plans and f64 factors; f32 factors are not
 * used: the transpose apply is in f64 whatever factors_f32 says). */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/user_stream.h"
#include "ilu/handle.h"
#include "kernels/ilu0_math.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

#define OPT "rrt_ilu0_apply_transpose"
#define OPT_EX RRT_ILU0_OP_ANALYSIS("transpose")

/* Extended index of entry e's column in M->A, and its position. */
static int64_t col_pos(rrt_ilu0_t M, int64_t e) { return M->pos_ext[M->A->col_ext[e]]; }

/* Owner of every local entry's column (where its transpose lives). */
static rrt_status entry_dests(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  M->tdest = malloc(((size_t)A->nnz + 1) * sizeof(int32_t));
  if (!M->tdest) return rrt_ilu0_nomem(M->ctx, OPT);
  for (int64_t e = 0; e < A->nnz; e++) {
    int64_t x = A->col_ext[e];
    M->tdest[e] = x < A->nloc ? A->rank : A->ghost_owner[x - A->nloc];
  }
  return RRT_SUCCESS;
}

/* A received transposed entry: (row, column) and its record index. */
typedef struct trec {
  int64_t row, col, t;
} trec;

static int cmp_trec(const void *a, const void *b) {
  const trec *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return (x->col > y->col) - (x->col < y->col);
}

/* At's local rows from the received transposed entries (records of (row,
 * col)); tperm[t]: where record t sits in them. */
static rrt_status build_at(rrt_ilu0_t M, int64_t nrecv, const int64_t *recs) {
  rrt_sparse_t A = M->A;
  trec *sorted = malloc(((size_t)nrecv + 1) * sizeof(trec));
  int64_t *rowptr = calloc((size_t)A->nloc + 1, sizeof(int64_t));
  int64_t *cols = malloc(((size_t)nrecv + 1) * sizeof(int64_t));
  double *zeros = calloc((size_t)nrecv + 1, sizeof(double));
  M->tperm = malloc(((size_t)nrecv + 1) * sizeof(int64_t));
  rrt_status st =
      sorted && rowptr && cols && zeros && M->tperm ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPT);
  if (!st) {
    for (int64_t t = 0; t < nrecv; t++)
      sorted[t] = (trec){recs[2 * t], recs[2 * t + 1], t};
    qsort(sorted, (size_t)nrecv, sizeof(trec), cmp_trec);
    for (int64_t s = 0; s < nrecv; s++) {
      rowptr[sorted[s].row - A->row_begin + 1]++;
      cols[s] = sorted[s].col;
      M->tperm[sorted[s].t] = s;
    }
    for (int64_t i = 0; i < A->nloc; i++)
      rowptr[i + 1] += rowptr[i];
  }
  st = rrt_agree_named(M->ctx, OPT_EX, st);
  if (!st) st = rrt_sparse_create(M->ctx, A->n, A->row_begin, A->nloc, rowptr, cols, zeros, &M->At);
  free(sorted), free(rowptr), free(cols), free(zeros);
  return st;
}

/* The transposed pattern and its handle, in the handle's elimination order. */
static rrt_status build_transpose(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  rrt_status st = rrt_agree_named(M->ctx, OPT_EX, entry_dests(M));
  if (st) return st;
  int64_t *recs = malloc(2 * ((size_t)A->nnz + 1) * sizeof(int64_t)), nrecv = 0, *rdata = NULL;
  int32_t *rsrc = NULL;
  st = rrt_agree_named(M->ctx, OPT_EX, recs ? RRT_SUCCESS : rrt_ilu0_nomem(M->ctx, OPT));
  if (st) return st;
  for (int64_t i = 0; i < A->nloc; i++)
    for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      recs[2 * e] = A->col[e], recs[2 * e + 1] = A->row_begin + i;
  st = rrt_host_exchange_records_named(M->ctx, OPT_EX, A->nnz, M->tdest, recs, 2, &nrecv, &rdata,
                                       &rsrc);
  free(recs), free(rsrc);
  if (!st) st = build_at(M, nrecv, rdata);
  free(rdata);
  if (st) return st;
  rrt_ilu0_options o = RRT_ILU0_OPTIONS_INITIALIZER;
  return rrt_ilu0_create_at(M->At, &o, M->pos_ext, &M->T);
}

/* Values to send, one per local entry: u_ij / u_ii for the U part, the
 * others as they are (the receiver scales L's by its own pivot). */
static void send_values(rrt_ilu0_t M, const double *f, double *out) {
  rrt_sparse_t A = M->A;
  for (int64_t i = 0; i < A->nloc; i++) {
    int64_t b = A->rowptr[i], e1 = A->rowptr[i + 1], pi = M->pos_ext[i];
    double d = 0.0;
    for (int64_t e = b; e < e1; e++)
      if (A->col_ext[e] == i) d = f[e];
    for (int64_t e = b; e < e1; e++)
      out[e] = col_pos(M, e) > pi ? rrt_ilu0_div(f[e], d) : f[e];
  }
}

/* At's values from the received ones: the entries right of the diagonal
 * in elimination order (from L) times this row's pivot. */
static void place_values(rrt_ilu0_t M, int64_t nrecv, const double *rv) {
  rrt_sparse_t T = M->At;
  for (int64_t t = 0; t < nrecv; t++)
    T->val[M->tperm[t]] = rv[t];
  for (int64_t j = 0; j < T->nloc; j++) {
    int64_t b = T->rowptr[j], e1 = T->rowptr[j + 1], pj = M->T->pos_ext[j];
    double d = 0.0;
    for (int64_t e = b; e < e1; e++)
      if (T->col_ext[e] == j) d = T->val[e];
    for (int64_t e = b; e < e1; e++)
      if (M->T->pos_ext[T->col_ext[e]] > pj) T->val[e] = rrt_ilu0_mul(T->val[e], d);
  }
}

/* T's factor storage from At's values (the inverse of rrt_ilu0_get_factors)
 * and its 1 / u_ii: what rrt_ilu0_factor would leave, without factoring. */
static rrt_status load_factors(rrt_ilu0_t T) {
  rrt_sparse_t A = T->A;
  double *dinv = malloc(((size_t)T->nloc + 1) * sizeof(double));
  if (!dinv) return rrt_ilu0_nomem(T->ctx, OPT);
  if (T->fperm) {
    for (int64_t f = 0; f < T->nnz; f++)
      T->h_v[f] = A->val[T->fperm[f]];
  } else {
    for (int64_t i = 0; i < T->nloc; i++) {
      const double *row = A->val + A->rowptr[i];
      int64_t nl = T->lr[2 * i + 1] - T->lr[2 * i], nu = T->ur[2 * i + 1] - T->ur[2 * i];
      memcpy(T->h_v + T->lr[2 * i], row, (size_t)nl * sizeof(double));
      memcpy(T->h_v + T->ur[2 * i], row + nl, (size_t)nu * sizeof(double));
    }
  }
  for (int64_t i = 0; i < T->nloc; i++)
    dinv[i] = rrt_ilu0_div(1.0, T->h_v[T->ur[2 * i]]);
  rrt_status st = rrt_memcpy_to_backend(T->ctx, T->d_v, T->h_v, (size_t)T->nnz * sizeof(double));
  if (!st) st = rrt_memcpy_to_backend(T->ctx, T->d_dinv, dinv, (size_t)T->nloc * sizeof(double));
  free(dinv);
  return st;
}

/* L' and U' from the current factors into T (collective). */
static rrt_status refresh(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  double *f = malloc(((size_t)A->nnz + 1) * sizeof(double));
  double *out = malloc(((size_t)A->nnz + 1) * sizeof(double));
  rrt_status st = f && out ? rrt_ilu0_get_factors(M, f) : rrt_ilu0_nomem(M->ctx, OPT);
  if (!st) send_values(M, f, out);
  st = rrt_agree_named(M->ctx, OPT_EX, st);
  int64_t nrecv = 0, *rv = NULL;
  int32_t *rsrc = NULL;
  if (!st)
    st = rrt_host_exchange_records_named(M->ctx, OPT_EX, A->nnz, M->tdest, (const int64_t *)out, 1,
                                         &nrecv, &rv, &rsrc);
  free(f), free(out), free(rsrc);
  if (!st) place_values(M, nrecv, (const double *)rv);
  free(rv);
  if (!st) st = rrt_agree_named(M->ctx, OPT_EX, load_factors(M->T));
  if (!st) M->tstale = 0;
  return st;
}

static rrt_status apply_transpose(rrt_ilu0_t M, const double *r, double *z) {
  double t0 = rrt_phase_begin(M->ctx);
  if (!M->T) {
    rrt_status st = build_transpose(M);
    if (st) { /* a later call starts afresh */
      rrt_sparse_destroy(M->At), free(M->tdest), free(M->tperm);
      M->At = NULL, M->tdest = NULL, M->tperm = NULL;
      return st;
    }
    M->tstale = 1;
  }
  if (M->tstale) RRT_CHECK(refresh(M));
  RRT_CHECK(rrt_ilu0_apply_host(M->T, r, z));
  return rrt_phase_end(M->ctx, "ilu0.apply_transpose", t0);
}

rrt_status rrt_ilu0_apply_transpose(rrt_ilu0_t M, const double *r, double *z) {
  RRT_CHECK(rrt_user_stream_enter(M->ctx, OPT));
  return rrt_user_stream_leave(M->ctx, OPT, apply_transpose(M, r, z));
}

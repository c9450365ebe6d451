/* ILU(0) analysis, the structural part: the factor storage order, which
 * ghost rows each side reads, the U rows of the L ghosts, and the update
 * pairs of every L entry (the IKJ schedule). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/handle.h"

#define OPC RRT_ILU0_OP_CREATE

/* rows[0 .. n) sorted by key[rows[t]] (distinct keys in [0, 2^63)): LSD
 * radix sort, 11 bits a pass, as many passes as the largest key needs.
 * O(n) a pass, unlike a comparison sort of a million rows. tmp: n rows. */
static void radix_sort_rows(int64_t n, const int64_t *key, int32_t *rows, int32_t *tmp) {
  enum { BITS = 11, R = 1 << BITS };
  int64_t mx = 0, cnt[R];
  for (int64_t t = 0; t < n; t++)
    if (key[rows[t]] > mx) mx = key[rows[t]];
  for (int shift = 0; shift < 63 && (mx >> shift) > 0; shift += BITS) {
    memset(cnt, 0, sizeof(cnt));
    for (int64_t t = 0; t < n; t++)
      cnt[(key[rows[t]] >> shift) & (R - 1)]++;
    for (int64_t d = 0, sum = 0; d < R; d++) {
      int64_t c = cnt[d];
      cnt[d] = sum, sum += c;
    }
    for (int64_t t = 0; t < n; t++)
      tmp[cnt[(key[rows[t]] >> shift) & (R - 1)]++] = rows[t];
    memcpy(rows, tmp, (size_t)n * sizeof(int32_t));
  }
}

/* Local rows sorted by position (porder). Rows already in position order
 * (natural order, and any ordering that keeps the row blocks' order) skip
 * the sort. Returns 0 when out of memory. */
static int elimination_order(rrt_ilu0_t M) {
  int64_t nloc = M->nloc;
  int sorted = 1;
  for (int64_t i = 1; i < nloc && sorted; i++)
    sorted = M->pos_ext[i] > M->pos_ext[i - 1];
  for (int64_t t = 0; t < nloc; t++)
    M->porder[t] = (int32_t)t;
  if (sorted) return 1;
  int32_t *tmp = rrt_ilu0_alloc(((size_t)nloc + 1) * sizeof(int32_t));
  if (tmp) radix_sort_rows(nloc, M->pos_ext, M->porder, tmp);
  free(tmp);
  return tmp != NULL;
}

/* Whether x[0 .. n) keeps increasing after *last (updated). */
static int ascending(const int64_t *x, int64_t n, int64_t *last) {
  for (int64_t t = 0; t < n; t++) {
    if (x[t] <= *last) return 0;
    *last = x[t];
  }
  return 1;
}

/* Whether positions increase with the global index (natural order, a dd
 * ordering with one subdomain): then every row, its columns sorted by
 * global index, is already in position order. In global order the
 * extended rows are the ghosts below the row block, the local rows, and
 * the ghosts above it. */
static int rows_in_position_order(rrt_ilu0_t M) {
  rrt_sparse_t A = M->A;
  int64_t below = 0, last = -1;
  while (below < A->nghost && A->ghost[below] < A->row_begin)
    below++;
  return ascending(M->pos_ext + M->nloc, below, &last) && ascending(M->pos_ext, M->nloc, &last) &&
         ascending(M->pos_ext + M->nloc + below, A->nghost - below, &last);
}

/* L entries of every row (counted into lr[2i + 1] for place_entries) and
 * their total. Rows in position order: the entries before the first one
 * at or after the diagonal's position. */
static int64_t count_lower(rrt_ilu0_t M, int in_order) {
  const int64_t *rowptr = M->A->rowptr, *pos = M->pos_ext;
  const int32_t *col = M->A->col_ext;
  int64_t nlv = 0;
  for (int64_t i = 0; i < M->nloc; i++) {
    int64_t pi = pos[i], nl = 0, p = rowptr[i];
    if (in_order) {
      while (p < rowptr[i + 1] && pos[col[p]] < pi)
        p++;
      nl = p - rowptr[i];
    } else {
      for (; p < rowptr[i + 1]; p++)
        nl += pos[col[p]] < pi;
    }
    M->lr[2 * i + 1] = nl;
    nlv += nl;
  }
  return nlv;
}

/* Insert A's entry p (extended column e, position pp) into the row part
 * being written at fcol/fperm[b .. *w), kept sorted by position. */
static void insert_entry(rrt_ilu0_t M, int64_t b, int64_t *w, int32_t e, int64_t pp, int64_t p) {
  int32_t *fcol = M->fcol, *fperm = M->fperm;
  int64_t q = (*w)++;
  while (q > b && M->pos_ext[fcol[q - 1]] > pp) {
    fcol[q] = fcol[q - 1], fperm[q] = fperm[q - 1];
    q--;
  }
  fcol[q] = e, fperm[q] = (int32_t)p;
}

/* Row i's entries by position straight into their value indices: L from
 * lw, diagonal and U from uw, by an insertion sort (rows are short) that
 * appends after one comparison an entry placed after the part's last. */
static void sort_row(rrt_ilu0_t M, int64_t i, int64_t lw, int64_t uw) {
  const int32_t *col = M->A->col_ext;
  const int64_t *pos = M->pos_ext;
  int32_t *fcol = M->fcol, *fperm = M->fperm;
  int64_t pi = pos[i], lb = lw, ub = uw, llast = -1, ulast = -1;
  for (int64_t p = M->A->rowptr[i]; p < M->A->rowptr[i + 1]; p++) {
    int32_t e = col[p];
    int64_t pp = pos[e];
    if (pp < pi && pp > llast)
      fcol[lw] = e, fperm[lw++] = (int32_t)p, llast = pp;
    else if (pp < pi)
      insert_entry(M, lb, &lw, e, pp, p);
    else if (pp > ulast)
      fcol[uw] = e, fperm[uw++] = (int32_t)p, ulast = pp;
    else
      insert_entry(M, ub, &uw, e, pp, p);
  }
}

/* A row in position order: its first nl entries are the L part,
 * the rest the diagonal and U part, copied as they are (so the slots take
 * A's values in A's order and need no fperm: rrt_ilu0_factor_args). */
static void copy_row(rrt_ilu0_t M, int64_t i, int64_t nl, int64_t lw, int64_t uw) {
  const int32_t *col = M->A->col_ext + M->A->rowptr[i];
  int64_t len = M->A->rowptr[i + 1] - M->A->rowptr[i];
  /* loops, not memcpy: rows are a few entries, and two library calls a row
   * cost more than the copies */
  for (int64_t p = 0; p < nl; p++)
    M->fcol[lw + p] = col[p];
  for (int64_t p = nl; p < len; p++)
    M->fcol[uw + p - nl] = col[p];
}

/* Both parts laid out row by row in elimination order (L from 0, U from
 * nlv), every row's entries by position into their value indices; the
 * lowest global row without a diagonal entry, or INT64_MAX. One sweep in
 * elimination order writes fcol and fperm front to back; in_order: every
 * row is in position order (rows_in_position_order), so copied. */
static int64_t place_entries(rrt_ilu0_t M, int in_order) {
  rrt_sparse_t A = M->A;
  int64_t missing = INT64_MAX, lcur = 0, ucur = M->nlv;
  for (int64_t t = 0; t < M->nloc; t++) {
    int64_t i = M->porder[t], len = A->rowptr[i + 1] - A->rowptr[i], nl = M->lr[2 * i + 1];
    if (in_order)
      copy_row(M, i, nl, lcur, ucur);
    else
      sort_row(M, i, lcur, ucur);
    M->lr[2 * i] = lcur, M->lr[2 * i + 1] = lcur + nl;
    M->ur[2 * i] = ucur, M->ur[2 * i + 1] = ucur + (len - nl);
    if (len == nl || M->fcol[ucur] != i)
      if (A->row_begin + i < missing) missing = A->row_begin + i;
    lcur += nl, ucur += len - nl;
  }
  return missing;
}

rrt_status rrt_ilu0_agree_missing(rrt_ilu0_t M, int64_t missing) {
  int64_t gmin = INT64_MAX;
  RRT_CHECK(rrt_host_allreduce_named(M->ctx, RRT_ILU0_OP_ANALYSIS("diagonal check"), &missing,
                                     &gmin, 1, RRT_DTYPE_I64, RRT_OP_MIN));
  if (gmin != INT64_MAX)
    return rrt_error(M->ctx, RRT_ERR_SINGULAR, OPC,
                     "zero pivot: global row %lld (0-based) has no diagonal entry, ILU(%d) does "
                     "not exist",
                     (long long)gmin, M->opt.levels);
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_factor_order(rrt_ilu0_t M) {
  int64_t nloc = M->nloc;
  M->lr = rrt_ilu0_alloc((2 * (size_t)nloc + 1) * sizeof(rrt_ilu0_idx));
  M->ur = rrt_ilu0_alloc((2 * (size_t)nloc + 1) * sizeof(rrt_ilu0_idx));
  M->fcol = rrt_ilu0_alloc(((size_t)M->nnz + 1) * sizeof(int32_t));
  M->porder = rrt_ilu0_alloc(((size_t)nloc + 1) * sizeof(int32_t));
  if (!M->lr || !M->ur || !M->fcol || !M->porder || !elimination_order(M))
    return rrt_ilu0_nomem(M->ctx, OPC);
  int in_order = rows_in_position_order(M);
  /* rows copied as A holds them take their values without a permutation */
  if (!in_order && !(M->fperm = rrt_ilu0_alloc(((size_t)M->nnz + 1) * sizeof(int32_t))))
    return rrt_ilu0_nomem(M->ctx, OPC);
  M->nlv = count_lower(M, in_order);
  return rrt_ilu0_agree_missing(M, place_entries(M, in_order));
}

/* Which ghosts the L part (bit 0) and the U part (bit 1) of the local rows
 * read: the factor storage holds each part's columns together. */
static void ghost_flags(rrt_ilu0_t M, int32_t *gflag) {
  int64_t nloc = M->nloc;
  if (M->A->nghost == 0) return; /* one rank: no pass over the entries */
  for (int64_t v = 0; v < M->nnz; v++) {
    int32_t e = M->fcol[v];
    if (e >= nloc) gflag[e - nloc] |= v < M->nlv ? 1 : 2;
  }
}

rrt_status rrt_ilu0_ghost_requests(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  rrt_sparse_t A = M->A;
  int64_t ng = A->nghost;
  S->gflag = calloc((size_t)ng + 1, sizeof(int32_t));
  int64_t *rec = malloc(2 * ((size_t)ng + 1) * sizeof(int64_t));
  if (!S->gflag || !rec) {
    free(rec);
    return rrt_ilu0_nomem(M->ctx, OPC);
  }
  ghost_flags(M, S->gflag);
  for (int64_t g = 0; g < ng; g++) {
    rec[2 * g] = A->ghost[g];
    rec[2 * g + 1] = S->gflag[g];
  }
  rrt_status st =
      rrt_host_exchange_records_named(M->ctx, RRT_ILU0_OP_ANALYSIS("ghost requests"), ng,
                                      A->ghost_owner, rec, 2, &S->nreq, &S->req, &S->req_src);
  free(rec);
  return st;
}

/* Byte counts and offsets per rank of a message set in int64 items. */
static void item_layout(int P, const int64_t *items, size_t *bytes, size_t *displs) {
  size_t off = 0;
  for (int p = 0; p < P; p++) {
    bytes[p] = (size_t)items[p] * sizeof(int64_t);
    displs[p] = off;
    off += bytes[p];
  }
}

/* Lengths of the U rows asked for (0 where only U needs the row) and back. */
static rrt_status exchange_ulen(rrt_ilu0_t M, rrt_ilu0_setup *S, int64_t *ulen_send, int64_t *cnt,
                                size_t *lay) {
  rrt_sparse_t A = M->A;
  int P = M->ctx->size;
  memset(cnt, 0, 2 * (size_t)P * sizeof(int64_t));
  for (int64_t t = 0; t < S->nreq; t++) {
    int64_t r = S->req[2 * t] - A->row_begin;
    ulen_send[t] = (S->req[2 * t + 1] & 1) ? M->ur[2 * r + 1] - M->ur[2 * r] : 0;
    cnt[S->req_src[t]]++;
  }
  for (int64_t g = 0; g < A->nghost; g++)
    cnt[P + A->ghost_owner[g]]++;
  item_layout(P, cnt, lay, lay + P);
  item_layout(P, cnt + P, lay + 2 * P, lay + 3 * P);
  return rrt_host_alltoallv_named(M->ctx, RRT_ILU0_OP_ANALYSIS("ghost U rows"), ulen_send, lay,
                                  lay + P, S->glen, lay + 2 * P, lay + 3 * P);
}

/* The U rows' global columns, in ghost order. */
static rrt_status exchange_ucols(rrt_ilu0_t M, rrt_ilu0_setup *S, const int64_t *ulen_send,
                                 int64_t *cnt, size_t *lay, int64_t *gcol) {
  rrt_sparse_t A = M->A;
  int P = M->ctx->size;
  int64_t utot = 0;
  for (int64_t t = 0; t < S->nreq; t++)
    utot += ulen_send[t];
  int64_t *ucol_send = malloc(((size_t)utot + 1) * sizeof(int64_t));
  if (!ucol_send) return rrt_ilu0_nomem(M->ctx, OPC);
  memset(cnt, 0, 2 * (size_t)P * sizeof(int64_t));
  int64_t w = 0;
  for (int64_t t = 0; t < S->nreq; t++) {
    int64_t r = S->req[2 * t] - A->row_begin;
    for (int64_t q = 0; q < ulen_send[t]; q++)
      ucol_send[w++] = rrt_sparse_ext_global(A, M->fcol[M->ur[2 * r] + q]);
    cnt[S->req_src[t]] += ulen_send[t];
  }
  for (int64_t g = 0; g < A->nghost; g++)
    cnt[P + A->ghost_owner[g]] += S->glen[g];
  item_layout(P, cnt, lay, lay + P);
  item_layout(P, cnt + P, lay + 2 * P, lay + 3 * P);
  rrt_status st = rrt_host_alltoallv_named(M->ctx, RRT_ILU0_OP_ANALYSIS("ghost U rows"), ucol_send,
                                           lay, lay + P, gcol, lay + 2 * P, lay + 3 * P);
  free(ucol_send);
  return st;
}

rrt_status rrt_ilu0_ghost_urows(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  rrt_sparse_t A = M->A;
  rrt_ctx_t ctx = M->ctx;
  int P = ctx->size;
  int64_t ng = A->nghost;
  rrt_status st = RRT_SUCCESS;
  int64_t *cnt = malloc(2 * (size_t)P * sizeof(int64_t)), *gcol = NULL;
  size_t *lay = malloc(4 * (size_t)P * sizeof(size_t));
  int64_t *ulen_send = malloc(((size_t)S->nreq + 1) * sizeof(int64_t));
  S->glen = malloc(((size_t)ng + 1) * sizeof(int64_t));
  M->gofs = calloc((size_t)ng + 1, sizeof(rrt_ilu0_idx));
  if (!cnt || !lay || !ulen_send || !S->glen || !M->gofs) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  RRT_CHECK_GOTO(exchange_ulen(M, S, ulen_send, cnt, lay), st, done);
  int64_t gtotal = 0;
  for (int64_t g = 0; g < ng; g++)
    gtotal += S->glen[g];
  gcol = malloc(((size_t)gtotal + 1) * sizeof(int64_t));
  S->gcol_ext = malloc(((size_t)gtotal + 1) * sizeof(int32_t));
  if (!gcol || !S->gcol_ext) {
    st = rrt_ilu0_nomem(ctx, OPC);
    goto done;
  }
  RRT_CHECK_GOTO(exchange_ucols(M, S, ulen_send, cnt, lay, gcol), st, done);
  /* after the exchange, so a rank that fails here took part in it */
  if (M->nnz + gtotal > INT32_MAX / 2) { /* the value indices are 32-bit */
    st = rrt_error(ctx, RRT_ERR_UNSUPPORTED, OPC,
                   "rank %d: %lld local values and %lld values of ghost U rows exceed %d; use "
                   "more ranks",
                   ctx->rank, (long long)M->nnz, (long long)gtotal, INT32_MAX / 2);
    goto done;
  }
  for (int64_t g = 0; g < ng; g++)
    M->gofs[g + 1] = M->gofs[g] + (rrt_ilu0_idx)S->glen[g];
  for (int64_t q = 0; q < M->gofs[ng]; q++) { /* absent: next (see row_pairs) */
    int64_t e = rrt_sparse_ext_index(A, gcol[q]);
    S->gcol_ext[q] = (int32_t)(e < 0 ? M->next : e);
  }
  M->nval = M->nnz + M->gofs[ng];
done:
  free(cnt), free(lay), free(ulen_send), free(gcol);
  return st;
}

/* Room for `more` update pairs after np (the arrays double when full). */
static int grow_pairs(rrt_ilu0_t M, int64_t np, int64_t more, int64_t *cap) {
  if (np + more <= *cap) return 1;
  while (*cap < np + more)
    *cap *= 2;
  int32_t *a = realloc(M->pair_dst, (size_t)*cap * sizeof(int32_t));
  if (a) M->pair_dst = a;
  int32_t *b = realloc(M->pair_src, (size_t)*cap * sizeof(int32_t));
  if (b) M->pair_src = b;
  return a && b;
}

/* slot[fcol[v]] = val for the value indices v0 .. v1 of one row part. */
static void set_slots(const int32_t *fcol, int64_t v0, int64_t v1, int32_t *slot, int use_v) {
  for (int64_t v = v0; v < v1; v++)
    slot[fcol[v]] = use_v ? (int32_t)v : -1;
}

/* The U entries of row k (local or ghost): value indices *s0 .. *s1 (the
 * diagonal at *s0 - 1) and their columns, ucol[0 .. *s1 - *s0). */
static const int32_t *urow(rrt_ilu0_t M, const rrt_ilu0_setup *S, int32_t k, int64_t *s0,
                           int64_t *s1) {
  if (k < M->nloc) {
    *s0 = M->ur[2 * k] + 1, *s1 = M->ur[2 * k + 1];
    return M->fcol + *s0;
  }
  int64_t g = k - M->nloc, b = M->gofs[g];
  *s0 = M->nnz + b + 1, *s1 = M->nnz + M->gofs[g + 1];
  return S->gcol_ext + b + 1;
}

/* Update pairs of the L entries of local row i: for the L entry
 * e = l_ik, the U entries u_kj of row k (local or ghost) whose column j row
 * i also holds, in the order of row k's U entries (the serial IKJ order).
 * slot[j] is the value index of row i's entry in column j (-1: none; a
 * ghost column nobody here holds reads slot[next], always -1): set for the
 * row, read once per U entry of row k, reset after. A matched j lies after
 * e in position order (pos(j) > pos(k)), so no position is compared.
 * Returns the new pair count, -1 when out of memory, -2 past INT32_MAX
 * pairs (pair_ptr is 32-bit). */
static int64_t row_pairs(rrt_ilu0_t M, const rrt_ilu0_setup *S, int64_t i, int32_t *slot,
                         int64_t np, int64_t *cap) {
  int64_t l0 = M->lr[2 * i], l1 = M->lr[2 * i + 1], u0 = M->ur[2 * i], u1 = M->ur[2 * i + 1];
  set_slots(M->fcol, l0, l1, slot, 1), set_slots(M->fcol, u0, u1, slot, 1);
  for (int64_t e = l0; e < l1 && np >= 0; e++) {
    int64_t s0, s1;
    const int32_t *ucol = urow(M, S, M->fcol[e], &s0, &s1);
    if (np > INT32_MAX - (s1 - s0)) {
      np = -2;
      break;
    }
    if (!grow_pairs(M, np, s1 - s0, cap)) {
      np = -1;
      break;
    }
    int32_t *dst = M->pair_dst, *src = M->pair_src;
    for (int64_t q = 0; q < s1 - s0; q++) {
      int32_t d = slot[ucol[q]];
      if (d >= 0) dst[np] = d, src[np++] = (int32_t)(s0 + q);
    }
    M->pair_ptr[e + 1] = (rrt_ilu0_idx)np;
  }
  set_slots(M->fcol, l0, l1, slot, 0), set_slots(M->fcol, u0, u1, slot, 0);
  return np;
}

rrt_status rrt_ilu0_update_pairs(rrt_ilu0_t M, rrt_ilu0_setup *S) {
  rrt_ctx_t ctx = M->ctx;
  int64_t nloc = M->nloc, nlv = M->nlv;
  M->pair_ptr = rrt_ilu0_alloc(((size_t)nlv + 1) * sizeof(rrt_ilu0_idx));
  int64_t cap = M->nnz + 16, np = 0;
  M->pair_dst = rrt_ilu0_alloc((size_t)cap * sizeof(int32_t));
  M->pair_src = rrt_ilu0_alloc((size_t)cap * sizeof(int32_t));
  if (!M->pair_ptr || !M->pair_dst || !M->pair_src) return rrt_ilu0_nomem(ctx, OPC);
  /* slot: next + 1 int32, the size of the L levels, whose pages are
   * already mapped (a fresh array would cost a page fault every 4 KiB) */
  int32_t *slot = S->lev[0];
  memset(slot, 0xff, ((size_t)M->next + 1) * sizeof(int32_t)); /* -1 */
  M->pair_ptr[0] = 0;
  for (int64_t t = 0; t < nloc && np >= 0; t++) /* elimination order: L entries ascend */
    np = row_pairs(M, S, M->porder[t], slot, np, &cap);
  /* a failed rank still takes part in the sum below (the outcome is agreed) */
  rrt_status st = RRT_SUCCESS;
  if (np == -2)
    st = rrt_error(ctx, RRT_ERR_UNSUPPORTED, OPC,
                   "rank %d: more than %d update pairs (the IKJ schedule); use more ranks",
                   ctx->rank, INT32_MAX);
  else if (np < 0)
    st = rrt_ilu0_nomem(ctx, OPC);
  if (st) np = 0;
  /* factor: 1 flop per L entry (the multiplier), 2 per update pair; apply:
   * 2 per off-diagonal entry, 1 per row (a multiply by 1/u_ii). Integers,
   * so the sums are exact in any order. */
  double loc[2] = {(double)nlv + 2.0 * (double)np, 2.0 * (double)(M->nnz - nloc) + (double)nloc},
         glob[2];
  RRT_CHECK(rrt_host_allreduce_named(ctx, RRT_ILU0_OP_ANALYSIS("update pairs"), loc, glob, 2,
                                     RRT_DTYPE_F64, RRT_OP_SUM));
  M->fflops = glob[0], M->aflops = glob[1];
  return st;
}

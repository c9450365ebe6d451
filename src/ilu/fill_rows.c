/* ILU(k) symbolic factorisation, one row at a time (fill.h): the
 * elimination of a row with the U rows (with levels) before it. Used by the
 * pipeline of natural order (fill.c) and the gathered pattern of the other
 * orders (fill_root.c). */
#include <stdlib.h>
#include <string.h>

#include "ilu/fill.h"

void rrt_fill_rows_free(rrt_fill_rows *R) { free(R->ptr), free(R->col), free(R->lev); }

/* Room for `more` entries after the current ones. 0 on success. */
int rrt_fill_rows_reserve(rrt_fill_rows *R, int64_t more) {
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

static int work_reserve(rrt_fill_work *W, int64_t need) {
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

/* The U part of row k (diagonal excluded): *n entries at *col, *lev. */
void rrt_fill_urow(const rrt_fill_state *F, int64_t k, const int64_t **col, const int32_t **lev,
                   int64_t *n) {
  const rrt_fill_rows *R = &F->win;
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
static int merge_urow(rrt_fill_state *F, int64_t at, int64_t k, int32_t lik) {
  rrt_fill_work *W = &F->w;
  const int64_t *uc;
  const int32_t *ul;
  int64_t un;
  rrt_fill_urow(F, k, &uc, &ul, &un);
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

/* Local row i (global gi) with A's sorted columns acol[0 .. len): those at
 * level 0, then every entry left of the diagonal, in increasing column
 * (fill included), eliminated. */
int rrt_fill_row(rrt_fill_state *F, int64_t i, const int64_t *acol, int64_t len) {
  rrt_fill_work *W = &F->w;
  int64_t gi = F->row_begin + i;
  if (work_reserve(W, len)) return -1;
  memcpy(W->col, acol, (size_t)len * sizeof(int64_t));
  for (int64_t e = 0; e < len; e++)
    W->lev[e] = 0;
  W->m = len;
  for (int64_t at = 0; at < W->m && W->col[at] < gi; at++)
    if (W->lev[at] + 1 <= F->levels && merge_urow(F, at, W->col[at], W->lev[at])) return -1;
  rrt_fill_rows *R = &F->loc;
  if (rrt_fill_rows_reserve(R, W->m)) return -1;
  int64_t p = R->ptr[R->n];
  memcpy(R->col + p, W->col, (size_t)W->m * sizeof(int64_t));
  memcpy(R->lev + p, W->lev, (size_t)W->m * sizeof(int32_t));
  for (int64_t e = 0; e < W->m; e++)
    if (W->col[e] == gi) F->ldiag[i] = p + e;
  R->ptr[++R->n] = p + W->m;
  return 0;
}

int rrt_fill_state_init(rrt_fill_state *F, int levels, int64_t row_begin, int64_t lo, int64_t nrows,
                        int64_t nnz) {
  F->levels = levels;
  F->row_begin = row_begin, F->lo = lo;
  F->loc.ptr = calloc((size_t)nrows + 1, sizeof(int64_t));
  F->ldiag = calloc((size_t)nrows + 1, sizeof(int64_t));
  F->win.ptr = calloc((size_t)(row_begin - lo) + 1, sizeof(int64_t));
  if (!F->loc.ptr || !F->ldiag || !F->win.ptr) return -1;
  return rrt_fill_rows_reserve(&F->loc, nnz);
}

void rrt_fill_state_free(rrt_fill_state *F) {
  rrt_fill_rows_free(&F->loc), rrt_fill_rows_free(&F->win), free(F->ldiag);
  free(F->w.col), free(F->w.tcol), free(F->w.lev), free(F->w.tlev);
}

/* ILU(k) in an elimination order other than natural: the pattern of
 * P A P^T filled on rank 0, as RCM gathers its pattern there. Rows of one
 * rank interleave with other ranks' rows in such orders, so the pipeline of
 * fill.c (rank after rank) does not apply. Each rank sends its rows in
 * position space (position, global row, the positions of its columns);
 * rank 0 fills them in position order (fill_rows.c) and sends every rank
 * the filled columns of its rows in global indices. Memory on rank 0: the
 * whole pattern and the filled one with its levels (O(filled nnz)); on the
 * others their rows. */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "ilu/fill.h"
#include "ilu/handle.h"

#define OPC RRT_ILU0_OP_CREATE
#define OPF RRT_ILU0_OP_ANALYSIS("fill (gathered)")

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* This rank's rows as records: position, global row, length, the
 * positions of its columns. *words int64 at *out (malloc'd). */
static rrt_status pack_rows(rrt_ilu0_t M, int64_t **out, size_t *words) {
  rrt_sparse_t A = M->A;
  size_t w = 3 * (size_t)A->nloc + (size_t)A->nnz, o = 0;
  int64_t *buf = malloc((w + 1) * sizeof(int64_t));
  if (!buf) return rrt_ilu0_nomem(M->ctx, OPC);
  for (int64_t i = 0; i < A->nloc; i++) {
    buf[o++] = M->pos_ext[i], buf[o++] = A->row_begin + i;
    buf[o++] = A->rowptr[i + 1] - A->rowptr[i];
    for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      buf[o++] = M->pos_ext[A->col_ext[e]];
  }
  *out = buf, *words = o;
  return RRT_SUCCESS;
}

/* Rank 0's view of the whole matrix in position space. */
typedef struct root_pattern {
  int64_t n;
  int64_t *orig;      /* position -> global row */
  int64_t *ptr, *col; /* rows by position, columns as sorted positions */
} root_pattern;

static void root_pattern_free(root_pattern *R) { free(R->orig), free(R->ptr), free(R->col); }

static int root_pattern_build(root_pattern *R, int64_t n, const int64_t *rec, size_t words) {
  R->n = n;
  R->orig = malloc(((size_t)n + 1) * sizeof(int64_t));
  R->ptr = calloc((size_t)n + 1, sizeof(int64_t));
  R->col = malloc((words + 1) * sizeof(int64_t));
  int64_t *at = malloc(((size_t)n + 1) * sizeof(int64_t)); /* record of each position */
  if (!R->orig || !R->ptr || !R->col || !at) {
    free(at);
    return -1;
  }
  for (size_t o = 0; o < words; o += 3 + (size_t)rec[o + 2])
    R->orig[rec[o]] = rec[o + 1], R->ptr[rec[o] + 1] = rec[o + 2], at[rec[o]] = (int64_t)o;
  for (int64_t p = 0; p < n; p++)
    R->ptr[p + 1] += R->ptr[p];
  for (int64_t p = 0; p < n; p++) {
    int64_t *c = R->col + R->ptr[p], len = R->ptr[p + 1] - R->ptr[p];
    memcpy(c, rec + at[p] + 3, (size_t)len * sizeof(int64_t));
    qsort(c, (size_t)len, sizeof(int64_t), cmp_i64);
  }
  free(at);
  return 0;
}

/* The filled rows back in global indices, grouped by owner (rows ascend):
 * per row its length and its sorted columns; sb[r] bytes for rank r. */
static int pack_result(rrt_ilu0_t M, const root_pattern *R, const rrt_fill_state *F, int64_t **out,
                       size_t *sb, size_t *sd) {
  rrt_sparse_t A = M->A;
  int64_t n = R->n, *posof = malloc(((size_t)n + 1) * sizeof(int64_t));
  int64_t *buf = malloc(((size_t)n + (size_t)F->loc.ptr[n] + 1) * sizeof(int64_t));
  if (!posof || !buf) {
    free(posof), free(buf);
    return -1;
  }
  for (int64_t p = 0; p < n; p++)
    posof[R->orig[p]] = p;
  size_t o = 0;
  for (int r = 0; r < A->size; r++) {
    sd[r] = o * sizeof(int64_t);
    for (int64_t g = A->offsets[r]; g < A->offsets[r + 1]; g++) {
      int64_t p = posof[g], b = F->loc.ptr[p], len = F->loc.ptr[p + 1] - b;
      buf[o++] = len;
      for (int64_t e = 0; e < len; e++)
        buf[o + (size_t)e] = R->orig[F->loc.col[b + e]];
      qsort(buf + o, (size_t)len, sizeof(int64_t), cmp_i64);
      o += (size_t)len;
    }
    sb[r] = o * sizeof(int64_t) - sd[r];
  }
  free(posof);
  *out = buf;
  return 0;
}

/* Rank 0: fill the gathered pattern in position order and pack it. */
static rrt_status fill_on_root(rrt_ilu0_t M, const int64_t *rec, size_t words, int64_t **out,
                               size_t *sb, size_t *sd) {
  root_pattern R = {0};
  rrt_fill_state F = {0};
  int64_t n = M->A->n;
  int bad = root_pattern_build(&R, n, rec, words) ||
            rrt_fill_state_init(&F, M->opt.levels, 0, 0, n, (int64_t)words);
  for (int64_t p = 0; p < n && !bad; p++)
    bad = rrt_fill_row(&F, p, R.col + R.ptr[p], R.ptr[p + 1] - R.ptr[p]);
  if (!bad) bad = pack_result(M, &R, &F, out, sb, sd);
  rrt_fill_state_free(&F);
  root_pattern_free(&R);
  return bad ? rrt_ilu0_nomem(M->ctx, OPC) : RRT_SUCCESS;
}

/* The local rows' received filled columns as a CSR (malloc'd ptr, col). */
static rrt_status unpack_rows(rrt_ilu0_t M, const int64_t *buf, size_t words, int64_t **ptr,
                              int64_t **col) {
  int64_t nloc = M->A->nloc;
  *ptr = malloc(((size_t)nloc + 1) * sizeof(int64_t));
  *col = malloc((words + 1) * sizeof(int64_t));
  if (!*ptr || !*col) return rrt_ilu0_nomem(M->ctx, OPC);
  (*ptr)[0] = 0;
  size_t o = 0;
  for (int64_t i = 0; i < nloc; i++) {
    int64_t len = buf[o++];
    memcpy(*col + (*ptr)[i], buf + o, (size_t)len * sizeof(int64_t));
    (*ptr)[i + 1] = (*ptr)[i] + len, o += (size_t)len;
  }
  return RRT_SUCCESS;
}

rrt_status rrt_ilu0_fill_root(rrt_ilu0_t M, int64_t **ptr, int64_t **col) {
  rrt_ctx_t ctx = M->ctx;
  int P = M->A->size;
  int64_t *rec = NULL, *all = NULL, *out = NULL, *mine = NULL;
  size_t words = 0, total = 0, *lay = calloc(3 * (size_t)P, sizeof(size_t));
  rrt_status st = lay ? pack_rows(M, &rec, &words) : rrt_ilu0_nomem(ctx, OPC);
  st = rrt_agree_named(ctx, OPF, st);
  if (!st)
    st = rrt_host_gatherv_alloc(ctx, OPF, rec, words * sizeof(int64_t), 0, (void **)&all, NULL,
                                &total);
  if (!st && M->A->rank == 0)
    st = fill_on_root(M, all, total / sizeof(int64_t), &out, lay, lay + P);
  st = rrt_agree_named(ctx, OPF, st); /* rank 0's outcome */
  if (!st)
    st = rrt_host_alltoallv_alloc(ctx, out ? (const void *)out : (const void *)lay, lay, lay + P,
                                  (void **)&mine, lay + 2 * P);
  if (!st)
    st = rrt_agree_named(ctx, OPF, unpack_rows(M, mine, lay[2 * P] / sizeof(int64_t), ptr, col));
  free(rec), free(all), free(out), free(mine), free(lay);
  return st;
}

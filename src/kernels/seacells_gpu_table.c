/* SEACells kernel tables of the emu and cuda backends: the kernels of
 * kernels/cuda/seacells.cu built for the SIMT emulator (_emu) and by nvcc
 * (_cuda). The drivers' host arrays are copied into backend memory for the
 * kernels and the results back; K rows and the fixed operands of the B
 * update are uploaded once per update. The two tables share one
 * implementation over the wrappers of their build. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "kernels/cuda/seacells.h"
#include "kernels/seacells_table.h"
#include "ringrt/memory.h"

/* The wrappers of one build. */
typedef struct gpu_build {
  rrt_status (*knn_tile)(rrt_stream stream, const double *q, int64_t nq, int64_t q0,
                         const double *r, int64_t nr, int64_t r0, int d, int k, double *best_d,
                         int32_t *best_i);
  rrt_status (*a_solve)(rrt_stream stream, int64_t nl, int m, int fw_iter, int capa,
                        const int64_t *kptr, const int32_t *kcol, const double *kval,
                        const int32_t *bfirst, const int32_t *bcnt, const int32_t *bent_j,
                        const double *bent_w, const int64_t *t1p, const int32_t *t1c,
                        const double *t1v, int first, int32_t *a_idx, double *a_w, int *a_nnz,
                        double *scratch);
  rrt_status (*b_argmin)(rrt_stream stream, int64_t nl, int64_t c0, int m, const int64_t *kptr,
                         const int32_t *kcol, const double *kval, const int32_t *bfirst,
                         const int32_t *bcnt, const int32_t *bent_j, const double *bent_w,
                         const int32_t *hfirst, const int32_t *hcnt, const int32_t *hent_j,
                         const double *hent_w, const int64_t *t1p, const int32_t *t1c,
                         const double *t1v, double *part_v, int64_t *part_i, double *scratch,
                         int *iscratch);
  rrt_status (*argmin_reduce)(rrt_stream stream, int nparts, int m, const double *part_v,
                              const int64_t *part_i, double *best_v, int64_t *best_i);
} gpu_build;

int rrt_sc_b_argmin_blocks(int64_t nl) {
  int64_t nb = (nl + 63) / 64; /* must match the launch in seacells.cu */
  return (int)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
}

static rrt_status oom(rrt_ctx_t ctx, const char *what) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what);
}

/* A backend copy of `bytes` of host memory h (NULL: uninitialised) in *d.
 * With cap, a buffer that holds *cap bytes is kept when they suffice and
 * otherwise replaced with some headroom (the B update uploads M Bg at every
 * Frank-Wolfe step: no allocation per step once it has grown); without,
 * the buffer is replaced at the exact size. */
static rrt_status up_into(rrt_ctx_t ctx, void **d, size_t *cap, const void *h, size_t bytes) {
  if (!*d || !cap || bytes > *cap) {
    size_t want = cap ? bytes + bytes / 4 + 64 : (bytes ? bytes : 8);
    if (*d) rrt_free(ctx, *d);
    *d = NULL;
    if (cap) *cap = 0;
    RRT_CHECK(rrt_malloc(ctx, want, d));
    if (cap) *cap = want;
  }
  return h && bytes ? rrt_memcpy_to_backend(ctx, *d, h, bytes) : RRT_SUCCESS;
}

static rrt_status up(rrt_ctx_t ctx, void **d, const void *h, size_t bytes) {
  return up_into(ctx, d, NULL, h, bytes);
}

/* Free the n backend pointers that start a work struct. */
static void free_all(rrt_ctx_t ctx, void **p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rrt_free(ctx, p[i]);
    p[i] = NULL;
  }
}

/* Backend copies of X = M rows and of a by-cell matrix. */
typedef struct dev_rows {
  void *ptr, *col, *val;
} dev_rows;
typedef struct dev_bycell {
  void *first, *cnt, *j, *w;
} dev_bycell;
typedef dev_rows dev_kk; /* an m x m matrix by sparse rows */

static rrt_status up_rows(rrt_ctx_t ctx, dev_rows *d, const rrt_sc_mrows *x) {
  size_t nz = (size_t)x->ptr[x->nl];
  RRT_CHECK(up(ctx, &d->ptr, x->ptr, (size_t)(x->nl + 1) * sizeof(int64_t)));
  RRT_CHECK(up(ctx, &d->col, x->col, nz * sizeof(int32_t)));
  return up(ctx, &d->val, x->val, nz * sizeof(double));
}

/* cap: the four buffers' capacities, kept across calls (NULL: exact size) */
static rrt_status up_bycell(rrt_ctx_t ctx, dev_bycell *d, size_t cap[4], const rrt_sc_bycell *y) {
  size_t n = (size_t)y->n, ne = (size_t)y->nent;
  RRT_CHECK(up_into(ctx, &d->first, cap ? &cap[0] : NULL, y->first, n * sizeof(int32_t)));
  RRT_CHECK(up_into(ctx, &d->cnt, cap ? &cap[1] : NULL, y->cnt, n * sizeof(int32_t)));
  RRT_CHECK(up_into(ctx, &d->j, cap ? &cap[2] : NULL, y->j, ne * sizeof(int32_t)));
  return up_into(ctx, &d->w, cap ? &cap[3] : NULL, y->w, ne * sizeof(double));
}

static rrt_status up_kk(rrt_ctx_t ctx, dev_kk *d, const rrt_sc_kk *t) {
  size_t nz = (size_t)t->ptr[t->m];
  RRT_CHECK(up(ctx, &d->ptr, t->ptr, (size_t)(t->m + 1) * sizeof(int64_t)));
  RRT_CHECK(up(ctx, &d->col, t->col, nz * sizeof(int32_t)));
  return up(ctx, &d->val, t->val, nz * sizeof(double));
}

/* ---- kNN: the queries and the running lists live in backend memory ---------- */

typedef struct gpu_knn_work {
  void *q, *best_d, *best_i; /* backend copies (freed by free_all: keep first) */
  const gpu_build *b;
  rrt_sc_knn_args a;
} gpu_knn_work;

static rrt_status gpu_knn_begin(const gpu_build *b, rrt_ctx_t ctx, const rrt_sc_knn_args *a,
                                void **work) {
  gpu_knn_work *w = calloc(1, sizeof *w);
  *work = w;
  if (!w) return oom(ctx, "kNN state");
  w->b = b;
  w->a = *a;
  size_t lk = (size_t)a->nq * (size_t)a->k, qb = (size_t)a->nq * (size_t)a->d * sizeof(double);
  RRT_CHECK(rrt_malloc(ctx, qb, &w->q));
  RRT_CHECK(rrt_malloc(ctx, lk * sizeof(double), &w->best_d));
  RRT_CHECK(rrt_malloc(ctx, lk * sizeof(int32_t), &w->best_i));
  RRT_CHECK(rrt_memcpy_to_backend(ctx, w->q, a->q, qb));
  RRT_CHECK(rrt_memcpy_to_backend(ctx, w->best_d, a->best_d, lk * sizeof(double)));
  return rrt_memcpy_to_backend(ctx, w->best_i, a->best_i, lk * sizeof(int32_t));
}

static rrt_status gpu_knn_tile(rrt_ctx_t ctx, void *work, const double *r, int64_t nr, int64_t r0) {
  gpu_knn_work *w = work;
  const rrt_sc_knn_args *a = &w->a;
  RRT_CHECK(w->b->knn_tile(ctx->compute_stream, w->q, a->nq, a->q0, r, nr, r0, a->d, a->k,
                           w->best_d, w->best_i));
  return rrt_synchronize(ctx);
}

static rrt_status gpu_knn_end(rrt_ctx_t ctx, void *work) {
  gpu_knn_work *w = work;
  size_t lk = (size_t)w->a.nq * (size_t)w->a.k;
  RRT_CHECK(rrt_memcpy_to_host(ctx, w->a.best_d, w->best_d, lk * sizeof(double)));
  return rrt_memcpy_to_host(ctx, w->a.best_i, w->best_i, lk * sizeof(int32_t));
}

static void gpu_knn_free(rrt_ctx_t ctx, void *work) {
  gpu_knn_work *w = work;
  if (!w) return;
  free_all(ctx, (void **)w, 3);
  free(w);
}

/* ---- A update: one thread block per cell --------------------------------------- */

static rrt_status gpu_a_update(const gpu_build *b, rrt_ctx_t ctx, const rrt_sc_a_args *a) {
  struct {
    dev_rows x;
    dev_bycell y;
    dev_kk t1;
    void *aidx, *aw, *annz, *scratch;
  } d;
  memset(&d, 0, sizeof d);
  const int64_t nl = a->x.nl;
  const size_t na = (size_t)nl * a->capa;
  const int64_t grid = nl < 4096 ? nl : 4096;
  rrt_status st = RRT_SUCCESS;
  RRT_CHECK_GOTO(up_rows(ctx, &d.x, &a->x), st, out);
  RRT_CHECK_GOTO(up_bycell(ctx, &d.y, NULL, &a->y), st, out);
  RRT_CHECK_GOTO(up_kk(ctx, &d.t1, &a->t1a), st, out);
  RRT_CHECK_GOTO(up(ctx, &d.aidx, a->a_idx, na * sizeof(int32_t)), st, out);
  RRT_CHECK_GOTO(up(ctx, &d.aw, a->a_w, na * sizeof(double)), st, out);
  RRT_CHECK_GOTO(up(ctx, &d.annz, a->a_nnz, (size_t)nl * sizeof(int)), st, out);
  RRT_CHECK_GOTO(up(ctx, &d.scratch, NULL, (size_t)(grid + 1) * 4 * a->m * sizeof(double)), st,
                 out);
  st = b->a_solve(ctx->compute_stream, nl, a->m, a->fw_iter, a->capa, d.x.ptr, d.x.col, d.x.val,
                  d.y.first, d.y.cnt, d.y.j, d.y.w, d.t1.ptr, d.t1.col, d.t1.val, a->first, d.aidx,
                  d.aw, d.annz, d.scratch);
  if (st == RRT_SUCCESS) st = rrt_synchronize(ctx);
  if (st != RRT_SUCCESS) {
    st = rrt_error(ctx, st, "seacells", "A update kernel failed");
    goto out;
  }
  RRT_CHECK_GOTO(rrt_memcpy_to_host(ctx, a->a_idx, d.aidx, na * sizeof(int32_t)), st, out);
  RRT_CHECK_GOTO(rrt_memcpy_to_host(ctx, a->a_w, d.aw, na * sizeof(double)), st, out);
  RRT_CHECK_GOTO(rrt_memcpy_to_host(ctx, a->a_nnz, d.annz, (size_t)nl * sizeof(int)), st, out);
out:
  free_all(ctx, (void **)&d, sizeof d / sizeof(void *));
  return st;
}

/* ---- B update: fixed operands uploaded once, M Bg at every step ------------------ */

typedef struct gpu_b_work {
  /* backend memory first (freed by free_all) */
  dev_rows x;
  dev_bycell h, y;
  dev_kk t1;
  void *scratch, *iscratch, *pv, *pi, *bv, *bi;
  const gpu_build *b;
  rrt_sc_b_args a;
  int nparts;
  size_t ycap[4]; /* bytes held by the M Bg buffers in y */
} gpu_b_work;

enum { GPU_B_BUFFERS = 3 + 4 + 4 + 3 + 6 };

static void gpu_b_free(rrt_ctx_t ctx, void *work) {
  gpu_b_work *w = work;
  if (!w) return;
  free_all(ctx, (void **)w, GPU_B_BUFFERS);
  free(w);
}

static rrt_status gpu_b_begin(const gpu_build *b, rrt_ctx_t ctx, const rrt_sc_b_args *a,
                              void **work) {
  gpu_b_work *w = calloc(1, sizeof *w);
  *work = w;
  if (!w) return oom(ctx, "B update");
  w->b = b;
  w->a = *a;
  const size_t m = (size_t)a->m, np = (size_t)rrt_sc_b_argmin_blocks(a->x.nl);
  w->nparts = (int)np;
  RRT_CHECK(up_rows(ctx, &w->x, &a->x));
  RRT_CHECK(up_bycell(ctx, &w->h, NULL, &a->h));
  RRT_CHECK(up_kk(ctx, &w->t1, &a->t1b));
  RRT_CHECK(up(ctx, &w->scratch, NULL, np * 3 * m * sizeof(double)));
  RRT_CHECK(up(ctx, &w->iscratch, NULL, np * 2 * m * sizeof(int)));
  RRT_CHECK(up(ctx, &w->pv, NULL, np * m * sizeof(double)));
  RRT_CHECK(up(ctx, &w->pi, NULL, np * m * sizeof(int64_t)));
  RRT_CHECK(up(ctx, &w->bv, NULL, m * sizeof(double)));
  return up(ctx, &w->bi, NULL, m * sizeof(int64_t));
}

static rrt_status gpu_b_argmin(rrt_ctx_t ctx, void *work, const rrt_sc_bycell *y, double *best_v,
                               int64_t *best_i) {
  gpu_b_work *w = work;
  const rrt_sc_b_args *a = &w->a;
  rrt_stream cs = ctx->compute_stream;
  RRT_CHECK(up_bycell(ctx, &w->y, w->ycap, y));
  RRT_CHECK(w->b->b_argmin(cs, a->x.nl, a->c0, a->m, w->x.ptr, w->x.col, w->x.val, w->y.first,
                           w->y.cnt, w->y.j, w->y.w, w->h.first, w->h.cnt, w->h.j, w->h.w,
                           w->t1.ptr, w->t1.col, w->t1.val, w->pv, w->pi, w->scratch, w->iscratch));
  RRT_CHECK(w->b->argmin_reduce(cs, w->nparts, a->m, w->pv, w->pi, w->bv, w->bi));
  RRT_CHECK(rrt_memcpy_to_host(ctx, best_v, w->bv, (size_t)a->m * sizeof(double)));
  return rrt_memcpy_to_host(ctx, best_i, w->bi, (size_t)a->m * sizeof(int64_t));
}

/* ---- the tables ------------------------------------------------------------------- */

#define RRT_SC_GPU_TABLE(sfx)                                                                      \
  static const gpu_build sfx##_build = {rrt_k_sc_knn_tile_##sfx, rrt_k_sc_a_solve_##sfx,           \
                                        rrt_k_sc_b_argmin_##sfx, rrt_k_sc_argmin_reduce_##sfx};    \
  static rrt_status sfx##_knn_begin(rrt_ctx_t ctx, const rrt_sc_knn_args *a, void **work) {        \
    return gpu_knn_begin(&sfx##_build, ctx, a, work);                                              \
  }                                                                                                \
  static rrt_status sfx##_a_update(rrt_ctx_t ctx, const rrt_sc_a_args *a) {                        \
    return gpu_a_update(&sfx##_build, ctx, a);                                                     \
  }                                                                                                \
  static rrt_status sfx##_b_begin(rrt_ctx_t ctx, const rrt_sc_b_args *a, void **work) {            \
    return gpu_b_begin(&sfx##_build, ctx, a, work);                                                \
  }                                                                                                \
  const rrt_sc_kernels rrt_sc_kernels_##sfx = {#sfx,          sfx##_knn_begin, gpu_knn_tile,       \
                                               gpu_knn_end,   gpu_knn_free,    sfx##_a_update,     \
                                               sfx##_b_begin, gpu_b_argmin,    gpu_b_free};

RRT_SC_GPU_TABLE(emu)
#if RINGRT_HAVE_CUDA
RRT_SC_GPU_TABLE(cuda)
#endif

/* SEACells kernel table of the cpu backend (kernels/cpu/seacells.c on host
 * memory), and the choice of a table for a backend. */
#include <stdlib.h>

#include "comm/error.h"
#include "kernels/cpu/seacells.h"
#include "kernels/seacells_table.h"

static rrt_status oom(rrt_ctx_t ctx, const char *what) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what);
}

/* ---- kNN: the queries and lists are the caller's host arrays ---------------- */

static rrt_status cpu_knn_begin(rrt_ctx_t ctx, const rrt_sc_knn_args *a, void **work) {
  rrt_sc_knn_args *w = malloc(sizeof *w);
  *work = w;
  if (!w) return oom(ctx, "kNN state");
  *w = *a;
  return RRT_SUCCESS;
}

static rrt_status cpu_knn_tile(rrt_ctx_t ctx, void *work, const double *r, int64_t nr, int64_t r0) {
  (void)ctx;
  const rrt_sc_knn_args *a = work;
  return rrt_sc_cpu_knn_tile(a->q, a->nq, a->q0, r, nr, r0, a->d, a->k, a->best_d, a->best_i);
}

static rrt_status cpu_knn_end(rrt_ctx_t ctx, void *work) {
  (void)ctx, (void)work;
  return RRT_SUCCESS;
}

static void cpu_knn_free(rrt_ctx_t ctx, void *work) {
  (void)ctx;
  free(work);
}

/* ---- A update ------------------------------------------------------------------ */

static rrt_status cpu_a_update(rrt_ctx_t ctx, const rrt_sc_a_args *a) {
  rrt_status st = rrt_sc_cpu_a_solve(a->x.nl, a->order, a->m, a->fw_iter, a->capa, a->x.ptr,
                                     a->x.col, a->x.val, a->y.first, a->y.cnt, a->y.j, a->y.w,
                                     &a->t1a, a->first, a->a_idx, a->a_w, a->a_nnz);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, "seacells", "out of memory: A update scratch (%d metacells)", a->m);
  return RRT_SUCCESS;
}

/* ---- B update: within budget, the K A^T rows kept over the steps -------------- */

typedef struct cpu_b_work {
  rrt_sc_b_args a;
  rrt_sc_rowset kat; /* beg NULL: formed per cell at each step, or held by archetype */
  int64_t *sptr;     /* with the K A^T rows: their cells by archetype (signs argmin) */
  int32_t *scell;
  double *sval;
  int32_t *jorder;  /* the archetypes in the order the argmin takes them */
  rrt_sc_wide wide; /* the archetypes it takes cell-major */
} cpu_b_work;

static void cpu_b_free(rrt_ctx_t ctx, void *work) {
  (void)ctx;
  cpu_b_work *w = work;
  if (!w) return;
  rrt_sc_rowset_free(&w->kat);
  free(w->sptr), free(w->scell), free(w->sval), free(w->jorder);
  rrt_sc_wide_free(&w->wide);
  free(w);
}

static rrt_status cpu_b_begin(rrt_ctx_t ctx, const rrt_sc_b_args *a, void **work) {
  cpu_b_work *w = calloc(1, sizeof *w);
  *work = w;
  if (!w) return oom(ctx, "B update");
  w->a = *a;
  /* the K A^T rows are the same at every step: kept when they fit the
   * budget (a bound linear in n), else formed per cell at each step (the
   * same bits: a hub-heavy graph has rows of up to m entries) */
  (void)rrt_sc_cpu_xh_rows(a->x.nl, a->m, a->order, a->x.ptr, a->x.col, a->x.val, a->h.first,
                           a->h.cnt, a->h.j, a->h.w, a->kat_budget, &w->kat);
  if (w->kat.beg && !getenv("RRT_SC_DENSE_ARGMIN"))
    (void)rrt_sc_cpu_kat_cells(a->x.nl, a->m, &w->kat, &w->sptr, &w->scell, &w->sval);
  if (w->sptr) { /* the signs argmin reads them by archetype only (and wide) */
    rrt_sc_rowset_free(&w->kat);
    (void)rrt_sc_cpu_kat_order(a->x.nl, a->m, a->order, w->sptr, w->scell, &w->jorder);
    rrt_sc_cpu_wide_make(a->x.nl, a->m, a->order, w->sptr, w->scell, w->sval, &a->t1b, &w->wide);
  }
  return RRT_SUCCESS;
}

static rrt_status cpu_b_argmin(rrt_ctx_t ctx, void *work, const rrt_sc_bycell *y, double *best_v,
                               int64_t *best_i) {
  (void)ctx;
  const cpu_b_work *w = work;
  const rrt_sc_b_args *a = &w->a;
  if (w->sptr) {
    rrt_status st = rrt_sc_cpu_b_argmin_signs(
        a->x.nl, a->c0, a->m, a->order, w->jorder, a->x.ptr, a->x.col, a->x.val, y->first, y->cnt,
        y->j, y->w, &w->wide, w->sptr, w->scell, w->sval, &a->t1b, best_v, best_i);
    return st == RRT_SUCCESS ? st : oom(ctx, "K Bg rows");
  }
  rrt_sc_cpu_b_argmin(a->x.nl, a->c0, a->m, a->x.ptr, a->x.col, a->x.val, y->first, y->cnt, y->j,
                      y->w, a->h.first, a->h.cnt, a->h.j, a->h.w, w->kat.beg ? &w->kat : NULL,
                      &a->t1b, best_v, best_i);
  return RRT_SUCCESS;
}

const rrt_sc_kernels rrt_sc_kernels_cpu = {"cpu",       cpu_knn_begin, cpu_knn_tile,
                                           cpu_knn_end, cpu_knn_free,  cpu_a_update,
                                           cpu_b_begin, cpu_b_argmin,  cpu_b_free};

const rrt_sc_kernels *rrt_sc_kernels_for(rrt_backend backend) {
  switch (backend) {
  case RRT_BACKEND_CPU: return &rrt_sc_kernels_cpu;
  case RRT_BACKEND_EMU: return &rrt_sc_kernels_emu;
#if RINGRT_HAVE_CUDA
  case RRT_BACKEND_CUDA: return &rrt_sc_kernels_cuda;
#endif
  default: return NULL;
  }
}

/* `ringrt seacells --summary-out`: the metacell x gene matrix of the
 * run's assignments, as an AnnData file. The summary itself is the
 * library's rrt_seacells_summarize (src/seacells/summary.c: hard sums or
 * soft weighted means, each metacell summed by one rank, the same bits for
 * any rank count); this front
 *  1. reads only this rank's cells' rows of the matrix (io/h5ad_rows.h),
 *  2. passes them with the run's assignments and the label codes,
 *  3. has rank 0 write obs, then the rows of each rank in turn, appending
 *     them to the file: it holds one rank's finished rows at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/host_coll.h"
#include "io/h5ad_result.h"
#include "io/h5ad_rows.h"
#include "seacells_h5ad_out.h"

/* This rank's finished rows, packed as rank 0 appends them: dense rows x
 * cols values, or CSR: int64 rows, nnz, ptr[rows + 1], int32 col (even
 * count), float64 val. */
typedef struct packed {
  char *buf;
  size_t bytes;
} packed;

/* The rows as rank 0 appends them (see packed). */
static rrt_status pack_rows(packed *out, const rrt_seacells_summary_rows *o) {
  int sparse = o->sparse;
  size_t ce = (size_t)((o->nnz + 1) / 2 * 2), nv = (size_t)o->nnz * 8;
  out->bytes = sparse ? (size_t)(2 + o->rows + 1) * 8 + ce * 4 + nv : nv;
  out->buf = malloc(out->bytes + 1);
  if (!out->buf) return RRT_ERR_OUT_OF_MEMORY;
  char *p = out->buf;
  if (sparse) {
    int64_t hd[3] = {o->rows, o->nnz, 0}; /* and ptr[0] = 0 when there is no row */
    memcpy(p, hd, o->rows ? 16 : 24), p += o->rows ? 16 : 24;
    if (o->rows) memcpy(p, o->ptr, (size_t)(o->rows + 1) * 8), p += (size_t)(o->rows + 1) * 8;
    if (o->nnz) memcpy(p, o->col, (size_t)o->nnz * 4);
    p += ce * 4;
  }
  if (nv) memcpy(p, o->val, nv);
  return RRT_SUCCESS;
}

/* Per-metacell values of the summary (the same on every rank). */
typedef struct mc_stats {
  const double *size;   /* hard: cells; soft: the sum of weights (Pseudo-sizes) */
  const double *purity; /* share of the majority label (NaN without labels) */
  const int32_t *major; /* majority label code (-1: none) */
} mc_stats;

/* Rank 0: the summary's obs (non-empty metacells, in the summary's order:
 * hard by first appearance, soft by metacell). */
typedef struct summary_obs {
  int64_t rows;
  const char **names;
  int64_t *size_i, *arch;
  double *size_f, *purity, *comp, *sep;
  int32_t *major;
  char purity_name[300];
  rrt_h5ad_column col[6];
  int ncol;
} summary_obs;

static void summary_obs_free(summary_obs *so) {
  free(so->names), free(so->size_i), free(so->arch), free(so->size_f), free(so->purity);
  free(so->comp), free(so->sep), free(so->major);
}

static rrt_status summary_obs_make(summary_obs *so, rrt_seacells_t s, const rrt_app_sc_outs *o,
                                   const rrt_app_sc_cells *cl, const mc_stats *ms, int64_t m) {
  memset(so, 0, sizeof *so);
  size_t b = (size_t)m + 1;
  so->names = malloc(b * sizeof(char *)), so->size_i = malloc(b * 8), so->arch = malloc(b * 8);
  so->size_f = malloc(b * 8), so->purity = malloc(b * 8), so->comp = malloc(b * 8);
  so->sep = malloc(b * 8), so->major = malloc(b * 4);
  if (!so->names || !so->size_i || !so->arch || !so->size_f || !so->purity || !so->comp ||
      !so->sep || !so->major)
    return RRT_ERR_OUT_OF_MEMORY;
  const int64_t *ar = rrt_seacells_archetypes(s);
  int64_t *mc_at = malloc(b * sizeof(int64_t)); /* the metacell of each summary row */
  if (!mc_at) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t j = 0; j < m; j++)
    mc_at[o->soft ? j : cl->row_of[j]] = j;
  for (int64_t p = 0; p < m; p++) {
    if (!(ms->size[p] > 0.0)) continue;
    int64_t r = so->rows++, j = mc_at[p];
    so->names[r] = cl->names->items[ar[j]], so->arch[r] = ar[j];
    so->size_i[r] = (int64_t)ms->size[p], so->size_f[r] = ms->size[p];
    so->purity[r] = ms->purity[p], so->major[r] = ms->major[p];
    so->comp[r] = cl->comp[j], so->sep[r] = cl->sep[j];
  }
  free(mc_at);
  /* the reference's names: hard obs from compute_celltype_purity (LABEL,
   * LABEL_purity), soft Pseudo-sizes; compactness/separation as
   * SEACells.evaluate names them (on the input coordinates here: a
   * diffusion-component version would be two more columns) */
  rrt_h5ad_column *c = so->col;
  c[so->ncol++] = o->soft ? (rrt_h5ad_column){.name = "Pseudo-sizes", .f64 = so->size_f}
                          : (rrt_h5ad_column){.name = "size", .i64 = so->size_i};
  c[so->ncol++] = (rrt_h5ad_column){.name = "archetype", .i64 = so->arch};
  if (cl->codes) {
    snprintf(so->purity_name, sizeof so->purity_name, "%s_purity", cl->labels);
    c[so->ncol++] = (rrt_h5ad_column){.name = cl->labels,
                                      .codes = so->major,
                                      .cats = (const char *const *)cl->cats->items,
                                      .ncat = cl->cats->count};
    c[so->ncol++] = (rrt_h5ad_column){.name = so->purity_name, .f64 = so->purity};
  }
  c[so->ncol++] = (rrt_h5ad_column){.name = "compactness", .f64 = so->comp};
  c[so->ncol++] = (rrt_h5ad_column){.name = "separation", .f64 = so->sep};
  return RRT_SUCCESS;
}

/* Rank 0: append one rank's packed rows. */
static rrt_status append_packed(rrt_h5ad_summary *w, int sparse, int64_t cols, const char *p,
                                size_t bytes, char *err, size_t errlen) {
  if (!bytes) return RRT_SUCCESS;
  if (!sparse)
    return rrt_h5ad_summary_dense(w, (int64_t)(bytes / 8) / cols, (const double *)p, err, errlen);
  int64_t hd[2];
  memcpy(hd, p, 16);
  const int64_t *ptr = (const int64_t *)(p + 16);
  const int32_t *col = (const int32_t *)(ptr + hd[0] + 1);
  const double *val = (const double *)(col + (hd[1] + 1) / 2 * 2);
  return rrt_h5ad_summary_csr(w, hd[0], ptr, col, val, err, errlen);
}

/* Rank 0 writes obs and var, then each rank's rows in turn (a gather from
 * one rank at a time). Returns this rank's status; err on rank 0. */
static rrt_status write_summary(rrt_ctx_t ctx, rrt_seacells_t s, const rrt_app_sc_outs *o,
                                const rrt_app_sc_cells *cl, const mc_stats *ms, int sparse,
                                int64_t cols, const packed *mine, char *err, size_t errlen) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  int64_t m = rrt_seacells_n_metacells(s);
  rrt_h5ad_summary *w = NULL;
  summary_obs so;
  rrt_status st = RRT_SUCCESS, wst = RRT_SUCCESS;
  if (rank == 0) {
    char mpath[300], vpath[300];
    rrt_h5ad_source_paths(o->layer, mpath, vpath, sizeof mpath);
    wst = summary_obs_make(&so, s, o, cl, ms, m);
    if (wst == RRT_SUCCESS)
      wst = rrt_h5ad_summary_begin(cl->input, vpath, o->summary_out, 1, sparse, so.rows, cols,
                                   so.names, so.col, so.ncol, &w, err, errlen);
  }
  for (int r = 0; r < P && st == RRT_SUCCESS; r++) {
    void *recv = NULL;
    size_t total = 0;
    st = rrt_host_gatherv_alloc(ctx, "ringrt seacells --summary-out: gathering rows", mine->buf,
                                rank == r ? mine->bytes : 0, 0, &recv, NULL, &total);
    if (st == RRT_SUCCESS && rank == 0 && wst == RRT_SUCCESS)
      wst = append_packed(w, sparse, cols, recv, total, err, errlen);
    free(recv);
  }
  if (rank == 0) {
    if (w && wst == RRT_SUCCESS && st == RRT_SUCCESS)
      wst = rrt_h5ad_summary_end(w, err, errlen);
    else if (w)
      rrt_h5ad_summary_abort(w);
    summary_obs_free(&so);
    if (wst == RRT_ERR_OUT_OF_MEMORY) snprintf(err, errlen, "%s: out of memory", o->summary_out);
  }
  if (st != RRT_SUCCESS) snprintf(err, errlen, "%s", rrt_ctx_last_error(ctx));
  return st != RRT_SUCCESS ? st : wst;
}

/* Read this rank's rows of the chosen matrix, checked against the cells. */
static rrt_status read_rows(const rrt_app_sc_outs *o, const rrt_app_sc_cells *cl, rrt_h5ad_rows *x,
                            char *err, size_t errlen) {
  int64_t rows = 0, cols = 0;
  int sparse = 0;
  rrt_status st = rrt_h5ad_rows_shape(cl->input, o->layer, &rows, &cols, &sparse, err, errlen);
  if (st == RRT_SUCCESS && rows != cl->n) {
    char mpath[300], vpath[300];
    rrt_h5ad_source_paths(o->layer, mpath, vpath, sizeof mpath);
    snprintf(err, errlen, "%s: %s: has %lld rows, the coordinates %lld cells", cl->input, mpath,
             (long long)rows, (long long)cl->n);
    return RRT_ERR_INVALID_ARG;
  }
  if (st == RRT_SUCCESS)
    st = rrt_h5ad_read_rows(cl->input, o->layer, cl->first, cl->count, x, err, errlen);
  return st;
}

/* This rank's cells' (metacell, weight) slots from the run: soft needs
 * every weight of a cell, and the run keeps at most min(m, fw_iter) (run.c's
 * capa; the A update never adds one past it); hard the heaviest (lowest
 * metacell on ties), -1 for a cell without weight. */
static rrt_status run_slots(rrt_seacells_t s, const rrt_app_sc_outs *o, const rrt_app_sc_cells *cl,
                            int *top, int64_t **j, double **w) {
  int64_t m = rrt_seacells_n_metacells(s);
  *top = o->soft ? (int)(m < cl->fw_iter ? m : cl->fw_iter) : 1;
  if (*top < 1) *top = 1;
  *j = malloc((size_t)(cl->count * *top + 1) * sizeof(int64_t));
  *w = malloc((size_t)(cl->count * *top + 1) * sizeof(double));
  if (!*j || !*w) return RRT_ERR_OUT_OF_MEMORY;
  rrt_status st = rrt_seacells_local_assignments(s, *top, NULL, *j, *w);
  for (int64_t i = 0; st == RRT_SUCCESS && !o->soft && i < cl->count; i++)
    (*j)[i] = (*w)[i] > 0.0 ? cl->row_of[(*j)[i]] : -1; /* the metacell's summary row */
  return st;
}

/* What the library may free once it has copied the rows (rows_done). */
typedef struct rows_in {
  rrt_h5ad_rows x;
  int64_t *j;
  double *w;
} rows_in;

static void rows_in_free(void *arg) {
  rows_in *in = arg;
  rrt_h5ad_rows_free(&in->x);
  free(in->j), free(in->w), in->j = NULL, in->w = NULL;
}

int rrt_app_sc_summary(rrt_ctx_t ctx, rrt_app_common *c, rrt_seacells_t s, const rrt_app_sc_outs *o,
                       const rrt_app_sc_cells *cl) {
  if (!o->summary_out) return 0;
  char err[1400] = "";
  rows_in in;
  memset(&in, 0, sizeof in);
  int top = 1;
  rrt_seacells_summary_t sum = NULL;
  packed mine = {NULL, 0};
  int rc = RRT_EXIT_FAILURE;
  rrt_status st = RRT_SUCCESS;
  if (cl->names->count != cl->n) {
    snprintf(err, sizeof err, "%s: obs: no obs names for the %lld cells (the metacells' names)",
             cl->input, (long long)cl->n);
    st = RRT_ERR_INVALID_ARG;
  }
  if (st == RRT_SUCCESS) st = read_rows(o, cl, &in.x, err, sizeof err);
  if (st == RRT_SUCCESS) st = run_slots(s, o, cl, &top, &in.j, &in.w);
  if (st == RRT_ERR_OUT_OF_MEMORY && !err[0]) snprintf(err, sizeof err, "out of memory");
  if (st != RRT_SUCCESS && !err[0]) snprintf(err, sizeof err, "%s", rrt_ctx_last_error(ctx));
  if (rrt_app_any_rank_error(ctx, c, err[0] ? err : NULL)) goto done;
  rrt_seacells_summary_options so = RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER;
  so.soft = o->soft, so.min_weight = o->min_weight;
  so.n_labels = cl->codes ? (int32_t)cl->cats->count : 0;
  so.rows_done = rows_in_free, so.rows_done_arg = &in; /* the rows travel as shares */
  rrt_h5ad_rows *x = &in.x;
  rrt_seacells_matrix xm = {x->rows, x->cols, x->sparse ? x->ptr : NULL, x->col, x->val};
  /* collective, agreed: a failure is a failure on every rank, with the message */
  st = rrt_seacells_summarize(ctx, rrt_seacells_n_metacells(s), &xm, top, in.j, in.w,
                              cl->codes ? cl->codes + cl->first : NULL, &so, &sum);
  /* agreed: every rank has the same message, rank 0 says it */
  if (st != RRT_SUCCESS) {
    rrt_app_any_rank_error(ctx, c, rrt_ctx_rank(ctx) == 0 ? rrt_ctx_last_error(ctx) : NULL);
    goto done;
  }
  rrt_seacells_summary_rows rows;
  mc_stats ms;
  st = rrt_seacells_summary_local_rows(sum, &rows);
  if (st == RRT_SUCCESS) st = rrt_seacells_summary_metacells(sum, &ms.size, &ms.major, &ms.purity);
  if (st == RRT_SUCCESS) st = pack_rows(&mine, &rows);
  if (rrt_app_any_rank_error(ctx, c, st != RRT_SUCCESS ? "out of memory" : NULL)) goto done;
  st = write_summary(ctx, s, o, cl, &ms, rows.sparse, rows.cols, &mine, err, sizeof err);
  if (!rrt_app_any_rank_error(ctx, c, st != RRT_SUCCESS ? (err[0] ? err : "failed") : NULL)) rc = 0;
done:
  rows_in_free(&in);
  rrt_seacells_summary_destroy(sum);
  free(mine.buf);
  return rc;
}

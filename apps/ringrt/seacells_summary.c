/* `ringrt seacells --summary-out`: the metacell x gene matrix, the
 * reference's summarize_by_SEACell (hard: sums over each metacell's cells)
 * and summarize_by_soft_SEACell (soft: weighted means with its
 * sparsify_assignments rule).
 *
 * Distributed without any rank holding more than its share:
 *  1. every rank reads only its own cells' rows of the matrix (io/h5ad_rows.h);
 *  2. each (cell, metacell, weight) share of a row is sent to the rank that
 *     owns the metacell (metacells dealt in contiguous ranges);
 *  3. the owner sums its metacells' rows in ascending cell order (shares
 *     arrive in rank order, ranks hold ascending cells), so every sum is
 *     the same bits for any rank count;
 *  4. rank 0 writes obs, then the rows of each rank in turn, appending them
 *     to the file: it holds one rank's finished rows at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/host_coll.h"
#include "io/h5ad_result.h"
#include "io/h5ad_rows.h"
#include "seacells_h5ad_out.h"

/* One cell's share of a metacell; the row follows (sparse: len int32
 * columns, padded to an even count, then len float64 values). */
typedef struct share_head {
  int64_t cell, j, len;
  double w;
} share_head;

static size_t share_bytes(int sparse, int64_t len) {
  size_t b = sizeof(share_head) + (size_t)len * sizeof(double);
  return sparse ? b + (size_t)((len + 1) / 2 * 2) * sizeof(int32_t) : b;
}

/* Metacells [lo(r), lo(r + 1)) belong to rank r. */
static int64_t mc_lo(int r, int64_t m, int P) { return (int64_t)r * m / P; }

static int mc_owner(int64_t j, int64_t m, int P) {
  int r = (int)(j * P / (m ? m : 1));
  while (r + 1 < P && mc_lo(r + 1, m, P) <= j)
    r++;
  while (r > 0 && mc_lo(r, m, P) > j)
    r--;
  return r;
}

/* The reference's sparsify_assignments for one cell: of its k nonzero
 * weights (descending, with their metacells), keep those >= min(thresh,
 * their 95th percentile as numpy's linear interpolation gives it),
 * renormalised to sum 1. Returns how many are kept (moved to the front). */
static int sparsify(double *w, int64_t *j, int k, double thresh) {
  if (k <= 0) return 0;
  double vi = (k - 1) * 0.95, g = vi - floor(vi);
  int lo = (int)floor(vi), hi = lo + 1 < k ? lo + 1 : k - 1;
  double a = w[k - 1 - lo], b = w[k - 1 - hi], d = b - a; /* ascending ranks lo, hi */
  double p = g >= 0.5 ? b - d * (1 - g) : a + d * g, mins = p > thresh ? thresh : p;
  int kept = 0;
  double sum = 0.0;
  for (int t = 0; t < k; t++)
    if (w[t] >= mins) w[kept] = w[t], j[kept] = j[t], kept++;
  for (int t = 0; t < kept; t++)
    sum += w[t];
  for (int t = 0; t < kept; t++)
    w[t] /= sum;
  return kept;
}

/* This rank's shares: per local cell, up to `top` (metacell, weight). */
typedef struct shares {
  int top;
  int64_t *j; /* count * top, -1 past a cell's last */
  double *w;
} shares;

static rrt_status local_shares(rrt_seacells_t s, const rrt_app_sc_outs *o,
                               const rrt_app_sc_cells *cl, shares *sh) {
  int64_t m = rrt_seacells_n_metacells(s);
  /* soft needs every weight of a cell: the run keeps at most min(m, fw_iter)
   * (run.c's capa; the A update never adds one past it) */
  sh->top = o->soft ? (int)(m < cl->fw_iter ? m : cl->fw_iter) : 1;
  if (sh->top < 1) sh->top = 1;
  sh->j = malloc((size_t)(cl->count * sh->top + 1) * sizeof(int64_t));
  sh->w = malloc((size_t)(cl->count * sh->top + 1) * sizeof(double));
  if (!sh->j || !sh->w) return RRT_ERR_OUT_OF_MEMORY;
  /* the hard assignment is the first of the heaviest (lowest metacell on ties) */
  rrt_status st = rrt_seacells_local_assignments(s, sh->top, NULL, sh->j, sh->w);
  for (int64_t i = 0; st == RRT_SUCCESS && i < cl->count; i++) {
    int64_t *ji = sh->j + i * sh->top;
    double *wi = sh->w + i * sh->top;
    int k = 0;
    while (k < sh->top && ji[k] >= 0 && wi[k] > 0.0)
      k++;
    if (!o->soft) k = k ? 1 : 0, wi[0] = 1.0;
    int kept = o->soft ? sparsify(wi, ji, k, o->min_weight) : k;
    for (int t = kept; t < sh->top; t++)
      ji[t] = -1;
  }
  return st;
}

/* Row i of x: its length and where its columns/values are. */
static int64_t row_of(const rrt_h5ad_rows *x, int64_t i, const int32_t **col, const double **val) {
  if (!x->sparse) {
    *col = NULL, *val = x->val + i * x->cols;
    return x->cols;
  }
  *col = x->col + x->ptr[i], *val = x->val + x->ptr[i];
  return x->ptr[i + 1] - x->ptr[i];
}

/* Pack the shares by owner rank (bytes[r] at displs[r] of *buf). */
static rrt_status pack_shares(const rrt_h5ad_rows *x, const shares *sh, int64_t first, int64_t m,
                              int P, char **buf, size_t *bytes, size_t *displs) {
  memset(bytes, 0, (size_t)P * sizeof(size_t));
  const int32_t *col;
  const double *val;
  for (int64_t i = 0; i < x->rows; i++)
    for (int t = 0; t < sh->top && sh->j[i * sh->top + t] >= 0; t++)
      bytes[mc_owner(sh->j[i * sh->top + t], m, P)] +=
          share_bytes(x->sparse, row_of(x, i, &col, &val));
  size_t total = 0;
  for (int r = 0; r < P; r++)
    displs[r] = total, total += bytes[r];
  *buf = malloc(total + 1);
  if (!*buf) return RRT_ERR_OUT_OF_MEMORY;
  size_t *at = calloc((size_t)P, sizeof(size_t));
  if (!at) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < x->rows; i++)
    for (int t = 0; t < sh->top && sh->j[i * sh->top + t] >= 0; t++) {
      int64_t j = sh->j[i * sh->top + t], len = row_of(x, i, &col, &val);
      int r = mc_owner(j, m, P);
      char *p = *buf + displs[r] + at[r];
      share_head h = {first + i, j, len, sh->w[i * sh->top + t]};
      memcpy(p, &h, sizeof h);
      p += sizeof h;
      if (x->sparse) {
        memcpy(p, col, (size_t)len * sizeof(int32_t));
        p += (size_t)((len + 1) / 2 * 2) * sizeof(int32_t);
      }
      memcpy(p, val, (size_t)len * sizeof(double));
      at[r] += share_bytes(x->sparse, len);
    }
  free(at);
  return RRT_SUCCESS;
}

/* Per-metacell values the owners compute and everyone then shares. */
typedef struct mc_stats {
  double *size;   /* hard: cells; soft: the sum of weights (Pseudo-sizes) */
  double *purity; /* share of the majority label (NaN without labels) */
  double *major;  /* majority label code + 1 (0: none) */
} mc_stats;

/* A metacell's finished rows, packed as rank 0 appends them: dense rows x
 * cols values, or CSR: int64 rows, nnz, ptr[rows + 1], int32 col (even
 * count), float64 val. */
typedef struct packed {
  char *buf;
  size_t bytes;
} packed;

/* Sum the shares of one metacell (in arrival order: ascending cells). */
static void sum_metacell(char **sh, int64_t ns, int sparse, int soft, int64_t cols,
                         const rrt_app_sc_cells *cl, double *acc, double *hist, int64_t ncat,
                         double *size, double *purity, double *major) {
  memset(acc, 0, (size_t)cols * sizeof(double));
  memset(hist, 0, (size_t)(ncat + 1) * sizeof(double));
  double wsum = 0.0;
  for (int64_t e = 0; e < ns; e++) {
    share_head h;
    memcpy(&h, sh[e], sizeof h);
    const char *p = sh[e] + sizeof h;
    const int32_t *col = sparse ? (const int32_t *)p : NULL;
    const double *val =
        (const double *)(p + (sparse ? (size_t)((h.len + 1) / 2 * 2) * sizeof(int32_t) : 0));
    wsum += h.w;
    for (int64_t k = 0; k < h.len; k++)
      acc[col ? col[k] : k] += soft ? h.w * val[k] : val[k];
    if (cl->codes && cl->codes[h.cell] >= 0) hist[cl->codes[h.cell]] += h.w;
  }
  if (soft && wsum > 0.0)
    for (int64_t k = 0; k < cols; k++)
      acc[k] /= wsum;
  *size = soft ? wsum : (double)ns;
  double tot = 0.0, best = 0.0;
  int64_t bk = -1;
  for (int64_t k = 0; k < ncat; k++) {
    tot += hist[k];
    if (hist[k] > best) best = hist[k], bk = k; /* lowest code on ties */
  }
  *purity = cl->codes && tot > 0.0 ? best / tot : NAN;
  *major = (double)(bk + 1);
}

/* The finished rows of an owner's metacells while they are formed. */
typedef struct rows_out {
  int64_t *ptr; /* rows + 1 (CSR) */
  int32_t *col;
  double *val;
  int64_t rows, nnz, cap; /* dense: nnz counts every value */
} rows_out;

/* Append one finished row (its nonzeros when sparse). */
static rrt_status push_row(rows_out *o, int sparse, const double *acc, int64_t cols) {
  int64_t add = cols;
  if (sparse) {
    add = 0;
    for (int64_t k = 0; k < cols; k++)
      add += acc[k] != 0.0;
  }
  if (o->nnz + add > o->cap) {
    int64_t nc = (o->nnz + add) * 2 + 16;
    int32_t *c2 = sparse ? realloc(o->col, (size_t)nc * sizeof(int32_t)) : o->col;
    double *v2 = c2 || !sparse ? realloc(o->val, (size_t)nc * sizeof(double)) : NULL;
    if (c2) o->col = c2;
    if (!v2) return RRT_ERR_OUT_OF_MEMORY;
    o->val = v2, o->cap = nc;
  }
  for (int64_t k = 0; k < cols; k++)
    if (!sparse || acc[k] != 0.0) {
      if (sparse) o->col[o->nnz] = (int32_t)k;
      o->val[o->nnz++] = acc[k];
    }
  int64_t *p2 = realloc(o->ptr, (size_t)(o->rows + 2) * sizeof(int64_t));
  if (!p2) return RRT_ERR_OUT_OF_MEMORY;
  o->ptr = p2;
  o->ptr[0] = 0, o->ptr[++o->rows] = o->nnz;
  return RRT_SUCCESS;
}

/* The rows as rank 0 appends them (see packed). */
static rrt_status pack_rows(packed *out, int sparse, const rows_out *o) {
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

/* The owner's part: sum each of its metacells, pack the non-empty rows. */
static rrt_status owner_sums(char *recv, size_t total, int sparse, int soft, int64_t cols,
                             int64_t lo, int64_t hi, const rrt_app_sc_cells *cl, mc_stats *ms,
                             packed *out) {
  int64_t nm = hi - lo, ncat = cl->cats ? cl->cats->count : 0, nsh = 0;
  int64_t *cnt = calloc((size_t)nm + 1, sizeof(int64_t)), *off = calloc((size_t)nm + 2, 8);
  for (size_t at = 0; cnt && at < total; nsh++) {
    share_head h;
    memcpy(&h, recv + at, sizeof h);
    cnt[h.j - lo]++;
    at += share_bytes(sparse, h.len);
  }
  char **sh = malloc((size_t)(nsh + 1) * sizeof(char *));
  double *acc = malloc((size_t)(cols + 1) * sizeof(double)), *hist = malloc((size_t)(ncat + 1) * 8);
  rows_out ro = {NULL, NULL, NULL, 0, 0, 0};
  rrt_status st = cnt && off && sh && acc && hist ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  for (int64_t k = 0; st == RRT_SUCCESS && k < nm; k++)
    off[k + 1] = off[k] + cnt[k], cnt[k] = 0;
  for (size_t at = 0; st == RRT_SUCCESS && at < total;) { /* stable: keeps the cell order */
    share_head h;
    memcpy(&h, recv + at, sizeof h);
    sh[off[h.j - lo] + cnt[h.j - lo]++] = recv + at;
    at += share_bytes(sparse, h.len);
  }
  for (int64_t k = 0; st == RRT_SUCCESS && k < nm; k++) {
    int64_t j = lo + k;
    sum_metacell(sh + off[k], cnt[k], sparse, soft, cols, cl, acc, hist, ncat, &ms->size[j],
                 &ms->purity[j], &ms->major[j]);
    if (ms->size[j] > 0.0) st = push_row(&ro, sparse, acc, cols);
  }
  if (st == RRT_SUCCESS) st = pack_rows(out, sparse, &ro);
  free(cnt), free(off), free(sh), free(acc), free(hist), free(ro.ptr), free(ro.col), free(ro.val);
  return st;
}

/* Rank 0: the summary's obs (non-empty metacells, in metacell order). */
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
  for (int64_t j = 0; j < m; j++) {
    if (!(ms->size[j] > 0.0)) continue;
    int64_t r = so->rows++;
    so->names[r] = cl->names->items[ar[j]], so->arch[r] = ar[j];
    so->size_i[r] = (int64_t)ms->size[j], so->size_f[r] = ms->size[j];
    so->purity[r] = ms->purity[j], so->major[r] = (int32_t)ms->major[j] - 1;
    so->comp[r] = cl->comp[j], so->sep[r] = cl->sep[j];
  }
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
      wst = rrt_h5ad_summary_begin(cl->input, vpath, o->summary_out, o->force, sparse, so.rows,
                                   cols, so.names, so.col, so.ncol, &w, err, errlen);
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

int rrt_app_sc_summary(rrt_ctx_t ctx, rrt_app_common *c, rrt_seacells_t s, const rrt_app_sc_outs *o,
                       const rrt_app_sc_cells *cl) {
  if (!o->summary_out) return 0;
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  int64_t m = rrt_seacells_n_metacells(s);
  char err[1400] = "";
  rrt_h5ad_rows x;
  memset(&x, 0, sizeof x);
  shares sh = {0, NULL, NULL};
  mc_stats ms = {calloc((size_t)m + 1, 8), calloc((size_t)m + 1, 8), calloc((size_t)m + 1, 8)};
  size_t *bytes = calloc((size_t)P, sizeof(size_t)), *displs = calloc((size_t)P, sizeof(size_t));
  size_t *rbytes = calloc((size_t)P, sizeof(size_t));
  char *send = NULL, *recv = NULL;
  packed mine = {NULL, 0};
  int rc = RRT_EXIT_FAILURE;
  rrt_status st = ms.size && ms.purity && ms.major && bytes && displs && rbytes
                      ? RRT_SUCCESS
                      : RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS && cl->names->count != cl->n) {
    snprintf(err, sizeof err, "%s: obs: no obs names for the %lld cells (the metacells' names)",
             cl->input, (long long)cl->n);
    st = RRT_ERR_INVALID_ARG;
  }
  if (st == RRT_SUCCESS) st = read_rows(o, cl, &x, err, sizeof err);
  if (st == RRT_SUCCESS) st = local_shares(s, o, cl, &sh);
  if (st == RRT_SUCCESS) st = pack_shares(&x, &sh, cl->first, m, P, &send, bytes, displs);
  if (st == RRT_ERR_OUT_OF_MEMORY && !err[0]) snprintf(err, sizeof err, "out of memory");
  if (rrt_app_any_rank_error(ctx, c, err[0] ? err : NULL)) goto done;
  rrt_h5ad_rows_free(&x); /* the rows now travel in send */
  st = rrt_host_alltoallv_alloc(ctx, send, bytes, displs, (void **)&recv, rbytes);
  size_t total = 0;
  for (int r = 0; r < P; r++)
    total += rbytes[r];
  free(send), send = NULL;
  int64_t lo = mc_lo(rank, m, P), hi = mc_lo(rank + 1, m, P);
  if (st == RRT_SUCCESS)
    st = owner_sums(recv, total, x.sparse, o->soft, x.cols, lo, hi, cl, &ms, &mine);
  if (st != RRT_SUCCESS)
    snprintf(err, sizeof err, "%s",
             st == RRT_ERR_OUT_OF_MEMORY ? "out of memory" : rrt_ctx_last_error(ctx));
  free(recv), recv = NULL;
  if (rrt_app_any_rank_error(ctx, c, err[0] ? err : NULL)) goto done;
  /* each metacell has one owner: the sums are the owners' values exactly */
  double *all[3] = {ms.size, ms.purity, ms.major};
  for (int k = 0; k < 3 && st == RRT_SUCCESS; k++) {
    for (int64_t j = 0; j < m; j++)
      if (j < lo || j >= hi) all[k][j] = 0.0;
    st = rrt_host_allreduce(ctx, all[k], all[k], (size_t)m, RRT_DTYPE_F64, RRT_OP_SUM);
  }
  if (st == RRT_SUCCESS)
    st = write_summary(ctx, s, o, cl, &ms, x.sparse, x.cols, &mine, err, sizeof err);
  if (!rrt_app_any_rank_error(ctx, c, st != RRT_SUCCESS ? (err[0] ? err : "failed") : NULL)) rc = 0;
done:
  rrt_h5ad_rows_free(&x);
  free(sh.j), free(sh.w), free(ms.size), free(ms.purity), free(ms.major);
  free(bytes), free(displs), free(rbytes), free(send), free(recv), free(mine.buf);
  return rc;
}

/* rrt_seacells_summarize: the metacell x gene matrix, the reference's
 * summarize_by_SEACell (hard: sums over each metacell's cells) and
 * summarize_by_soft_SEACell (soft: weighted means with its
 * sparsify_assignments rule).
 *
 * Distributed without any rank holding more than its share:
 *  1. every rank holds only its own cells' rows (the caller's);
 *  2. each (cell, metacell, weight) share of a row is sent to the rank that
 *     owns the metacell (metacells dealt in contiguous ranges);
 *  3. the owner sums its metacells' rows in ascending cell order (shares
 *     arrive in rank order, ranks hold ascending cells), so every sum is
 *     the same bits for any rank count;
 *  4. the per-metacell sizes, majority labels and purities are shared by
 *     one allreduce (one owner per metacell: the sums are its values). */
#include "ringrt/seacells.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/options.h"

#define OP "rrt_seacells_summarize"

struct rrt_seacells_summary {
  int64_t m;
  double *size, *purity;
  int32_t *major;
  rrt_seacells_summary_rows rows;
  int64_t *mc, *ptr;
  int32_t *col;
  double *val;
};

/* One cell's share of a metacell; the row follows (sparse: len int32
 * columns, padded to an even count, then len float64 values). */
typedef struct share_head {
  int64_t j, len, code; /* code: the cell's label (-1: none) */
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
  int64_t *j; /* rows * top, -1 past a cell's last */
  double *w;
} shares;

/* A cell's valid slots, heaviest first (lowest metacell on ties):
 * insertion sort, as a cell has few weights. Returns their count. */
static int cell_weights(const int64_t *ji, const double *wi, int top, int64_t *oj, double *ow) {
  int k = 0;
  for (int t = 0; t < top; t++) {
    if (ji[t] < 0 || !(wi[t] > 0.0)) continue;
    int at = k++;
    while (at > 0 && (ow[at - 1] < wi[t] || (ow[at - 1] == wi[t] && oj[at - 1] > ji[t])))
      ow[at] = ow[at - 1], oj[at] = oj[at - 1], at--;
    ow[at] = wi[t], oj[at] = ji[t];
  }
  return k;
}

static rrt_status local_shares(int64_t rows, int top, const int64_t *metacell, const double *weight,
                               const rrt_seacells_summary_options *o, shares *sh) {
  sh->top = o->soft ? top : 1;
  sh->j = malloc((size_t)(rows * sh->top + 1) * sizeof(int64_t));
  sh->w = malloc((size_t)(rows * sh->top + 1) * sizeof(double));
  if (!sh->j || !sh->w) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < rows; i++) {
    int64_t *ji = sh->j + i * sh->top;
    double *wi = sh->w + i * sh->top;
    int kept;
    if (!o->soft) {
      kept = metacell[i * top] >= 0;
      ji[0] = metacell[i * top], wi[0] = 1.0;
    } else {
      kept = sparsify(wi, ji, cell_weights(metacell + i * top, weight + i * top, top, ji, wi),
                      o->min_weight);
    }
    for (int t = kept; t < sh->top; t++)
      ji[t] = -1;
  }
  return RRT_SUCCESS;
}

/* Row i of x: its length and where its columns/values are. */
static int64_t row_of(const rrt_seacells_matrix *x, int64_t i, const int32_t **col,
                      const double **val) {
  if (!x->ptr) {
    *col = NULL, *val = x->val + i * x->cols;
    return x->cols;
  }
  *col = x->col + x->ptr[i], *val = x->val + x->ptr[i];
  return x->ptr[i + 1] - x->ptr[i];
}

/* Pack the shares by owner rank (bytes[r] at displs[r] of *buf). */
static rrt_status pack_shares(const rrt_seacells_matrix *x, const int32_t *label, const shares *sh,
                              int64_t m, int P, char **buf, size_t *bytes, size_t *displs) {
  int sparse = x->ptr != NULL;
  memset(bytes, 0, (size_t)P * sizeof(size_t));
  const int32_t *col;
  const double *val;
  for (int64_t i = 0; i < x->rows; i++)
    for (int t = 0; t < sh->top && sh->j[i * sh->top + t] >= 0; t++)
      bytes[mc_owner(sh->j[i * sh->top + t], m, P)] +=
          share_bytes(sparse, row_of(x, i, &col, &val));
  size_t total = 0;
  for (int r = 0; r < P; r++)
    displs[r] = total, total += bytes[r];
  *buf = malloc(total + 1);
  size_t *at = calloc((size_t)P, sizeof(size_t));
  if (!*buf || !at) {
    free(at);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t i = 0; i < x->rows; i++)
    for (int t = 0; t < sh->top && sh->j[i * sh->top + t] >= 0; t++) {
      int64_t j = sh->j[i * sh->top + t], len = row_of(x, i, &col, &val);
      int r = mc_owner(j, m, P);
      char *p = *buf + displs[r] + at[r];
      share_head h = {j, len, label ? label[i] : -1, sh->w[i * sh->top + t]};
      memcpy(p, &h, sizeof h);
      p += sizeof h;
      if (sparse) {
        if (len) memcpy(p, col, (size_t)len * sizeof(int32_t));
        p += (size_t)((len + 1) / 2 * 2) * sizeof(int32_t);
      }
      if (len) memcpy(p, val, (size_t)len * sizeof(double));
      at[r] += share_bytes(sparse, len);
    }
  free(at);
  return RRT_SUCCESS;
}

/* Sum the shares of one metacell (in arrival order: ascending cells);
 * stats[0..2]: size, purity, majority code + 1 (0: none). */
static void sum_metacell(char **sh, int64_t ns, int sparse, int soft, int64_t cols, int labels,
                         double *acc, double *hist, int64_t ncat, double *stats) {
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
    if (h.code >= 0) hist[h.code] += h.w;
  }
  if (soft && wsum > 0.0)
    for (int64_t k = 0; k < cols; k++)
      acc[k] /= wsum;
  stats[0] = soft ? wsum : (double)ns;
  double tot = 0.0, best = 0.0;
  int64_t bk = -1;
  for (int64_t k = 0; k < ncat; k++) {
    tot += hist[k];
    if (hist[k] > best) best = hist[k], bk = k; /* lowest code on ties */
  }
  stats[1] = labels && tot > 0.0 ? best / tot : NAN;
  stats[2] = (double)(bk + 1);
}

/* Append one finished row of metacell j (its nonzeros when sparse). */
static rrt_status push_row(struct rrt_seacells_summary *s, int64_t *cap, const double *acc,
                           int64_t j) {
  rrt_seacells_summary_rows *o = &s->rows;
  int64_t add = o->cols;
  if (o->sparse) {
    add = 0;
    for (int64_t k = 0; k < o->cols; k++)
      add += acc[k] != 0.0;
  }
  if (o->nnz + add > *cap) {
    int64_t nc = (o->nnz + add) * 2 + 16;
    int32_t *c2 = o->sparse ? realloc(s->col, (size_t)nc * sizeof(int32_t)) : s->col;
    double *v2 = c2 || !o->sparse ? realloc(s->val, (size_t)nc * sizeof(double)) : NULL;
    if (c2) s->col = c2;
    if (!v2) return RRT_ERR_OUT_OF_MEMORY;
    s->val = v2, *cap = nc;
  }
  for (int64_t k = 0; k < o->cols; k++)
    if (!o->sparse || acc[k] != 0.0) {
      if (o->sparse) s->col[o->nnz] = (int32_t)k;
      s->val[o->nnz++] = acc[k];
    }
  s->ptr[o->rows + 1] = o->nnz;
  s->mc[o->rows++] = j;
  return RRT_SUCCESS;
}

/* The owner's part: sum each of its metacells; stats has 3 * m values
 * (sizes, purities, majority + 1), its own metacells filled in. */
static rrt_status owner_sums(struct rrt_seacells_summary *s, char *recv, size_t total, int soft,
                             int labels, int64_t ncat, double *stats) {
  rrt_seacells_summary_rows *o = &s->rows;
  int64_t lo = o->first, nm = o->last - o->first, nsh = 0, m = s->m, cap = 0;
  int64_t *cnt = calloc((size_t)nm + 1, sizeof(int64_t));
  int64_t *off = calloc((size_t)nm + 2, sizeof(int64_t));
  for (size_t at = 0; cnt && at < total; nsh++) {
    share_head h;
    memcpy(&h, recv + at, sizeof h);
    cnt[h.j - lo]++;
    at += share_bytes(o->sparse, h.len);
  }
  char **sh = malloc((size_t)(nsh + 1) * sizeof(char *));
  double *acc = malloc((size_t)(o->cols + 1) * sizeof(double));
  double *hist = malloc((size_t)(ncat + 1) * sizeof(double));
  s->mc = malloc((size_t)(nm + 1) * sizeof(int64_t));
  s->ptr = calloc((size_t)nm + 2, sizeof(int64_t));
  rrt_status st =
      cnt && off && sh && acc && hist && s->mc && s->ptr ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  for (int64_t k = 0; st == RRT_SUCCESS && k < nm; k++)
    off[k + 1] = off[k] + cnt[k], cnt[k] = 0;
  for (size_t at = 0; st == RRT_SUCCESS && at < total;) { /* stable: keeps the cell order */
    share_head h;
    memcpy(&h, recv + at, sizeof h);
    sh[off[h.j - lo] + cnt[h.j - lo]++] = recv + at;
    at += share_bytes(o->sparse, h.len);
  }
  for (int64_t k = 0; st == RRT_SUCCESS && k < nm; k++) {
    int64_t j = lo + k;
    double v[3];
    sum_metacell(sh + off[k], cnt[k], o->sparse, soft, o->cols, labels, acc, hist, ncat, v);
    stats[j] = v[0], stats[m + j] = v[1], stats[2 * m + j] = v[2];
    if (v[0] > 0.0) st = push_row(s, &cap, acc, j);
  }
  free(cnt), free(off), free(sh), free(acc), free(hist);
  return st;
}

/* ---- validation ----------------------------------------------------------------- */

static rrt_status check_rows(rrt_ctx_t ctx, const rrt_seacells_matrix *x) {
  if (x->rows < 0 || x->cols < 0 || x->cols > INT32_MAX)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "bad matrix shape %lld x %lld",
                     (long long)x->rows, (long long)x->cols);
  if (!x->ptr) {
    if (x->rows * x->cols > 0 && !x->val)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "dense matrix: val is NULL");
    return RRT_SUCCESS;
  }
  if (x->ptr[0] != 0) return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "CSR matrix: ptr[0] != 0");
  for (int64_t i = 0; i < x->rows; i++)
    if (x->ptr[i + 1] < x->ptr[i])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "CSR matrix: ptr decreases at local row %lld",
                       (long long)i);
  int64_t nnz = x->ptr[x->rows];
  if (nnz > 0 && (!x->col || !x->val))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "CSR matrix: col or val is NULL");
  for (int64_t e = 0; e < nnz; e++)
    if (x->col[e] < 0 || x->col[e] >= x->cols)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                       "CSR matrix: column %d of entry %lld is outside 0..%lld", (int)x->col[e],
                       (long long)e, (long long)x->cols - 1);
  return RRT_SUCCESS;
}

static rrt_status check_cells(rrt_ctx_t ctx, int64_t m, const rrt_seacells_matrix *x, int top,
                              const int64_t *metacell, const double *weight, const int32_t *label,
                              const rrt_seacells_summary_options *o) {
  if (m < 1) return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "n_metacells = %lld", (long long)m);
  if (top < 1) return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "top = %d (at least 1)", top);
  if (o->soft != 0 && o->soft != 1)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "soft = %d (0 or 1)", o->soft);
  if (o->soft && !isfinite(o->min_weight))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "min_weight = %g", o->min_weight);
  if (o->n_labels < 0)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "n_labels = %d", (int)o->n_labels);
  if (x->rows > 0 && (!metacell || (o->soft && !weight) || (o->n_labels > 0 && !label)))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "metacell, weight (soft) or label is NULL");
  for (int64_t i = 0; i < x->rows; i++) {
    for (int t = 0; t < (o->soft ? top : 1); t++) {
      int64_t j = metacell[i * top + t];
      if (j < -1 || j >= m)
        return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                         "local cell %lld: metacell %lld is outside -1..%lld", (long long)i,
                         (long long)j, (long long)m - 1);
      if (o->soft && (!isfinite(weight[i * top + t]) || weight[i * top + t] < 0.0))
        return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                         "local cell %lld: weight %g (finite and >= 0 needed)", (long long)i,
                         weight[i * top + t]);
    }
    if (o->n_labels > 0 && (label[i] < -1 || label[i] >= o->n_labels))
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                       "local cell %lld: label code %d is outside -1..%d", (long long)i,
                       (int)label[i], (int)o->n_labels - 1);
  }
  return check_rows(ctx, x);
}

/* Every rank must pass the same cols, n_metacells, layout and options. */
static rrt_status check_same(rrt_ctx_t ctx, int64_t m, const rrt_seacells_matrix *x,
                             const rrt_seacells_summary_options *o) {
  double mw = o->soft ? o->min_weight : 0.0;
  int64_t mwb;
  memcpy(&mwb, &mw, sizeof mwb);
  int64_t v[6] = {x->cols, m, x->ptr != NULL, o->soft, o->n_labels, mwb}, lo[6], hi[6];
  RRT_CHECK(rrt_host_allreduce_named(ctx, OP, v, lo, 6, RRT_DTYPE_I64, RRT_OP_MIN));
  RRT_CHECK(rrt_host_allreduce_named(ctx, OP, v, hi, 6, RRT_DTYPE_I64, RRT_OP_MAX));
  static const char *what[6] = {"cols", "n_metacells", "sparse (CSR)",
                                "soft", "n_labels",    "min_weight"};
  for (int k = 0; k < 6; k++)
    if (lo[k] != hi[k])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP,
                       "the ranks pass different %s (every rank must pass the same)", what[k]);
  return RRT_SUCCESS;
}

/* ---- the public entries ------------------------------------------------------------ */

static const rrt_seacells_summary_options options_defaults =
    RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER;
static const rrt_options_layout options_layout = {
    .name = "rrt_seacells_summary_options",
    .initializer = "RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER",
    .size = sizeof(rrt_seacells_summary_options),
    .min_size = offsetof(rrt_seacells_summary_options, soft),
    .defaults = &options_defaults,
    .magic_offset = offsetof(rrt_seacells_summary_options, magic),
    .magic = RRT_SEACELLS_SUMMARY_OPTIONS_MAGIC,
};

void rrt_seacells_summary_destroy(rrt_seacells_summary_t s) {
  if (!s) return;
  free(s->size), free(s->purity), free(s->major);
  free(s->mc), free(s->ptr), free(s->col), free(s->val);
  free(s);
}

rrt_status rrt_seacells_summarize(rrt_ctx_t ctx, int64_t m, const rrt_seacells_matrix *x, int top,
                                  const int64_t *metacell, const double *weight,
                                  const int32_t *label,
                                  const rrt_seacells_summary_options *user_opt,
                                  rrt_seacells_summary_t *result) {
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, OP, "NULL context");
  if (!x || !user_opt || !result)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "NULL argument"));
  *result = NULL;
  rrt_seacells_summary_options o;
  char msg[256];
  if (rrt_options_import(&options_layout, user_opt, &o, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_agree(ctx, rrt_error(ctx, RRT_ERR_INVALID_ARG, OP, "%s", msg));
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  struct rrt_seacells_summary *s = calloc(1, sizeof *s);
  shares sh = {0, NULL, NULL};
  size_t *bytes = calloc((size_t)P, sizeof(size_t)), *displs = calloc((size_t)P, sizeof(size_t));
  size_t *rbytes = calloc((size_t)P, sizeof(size_t));
  char *send = NULL, *recv = NULL;
  double *stats = NULL;
  rrt_status st = check_cells(ctx, m, x, top, metacell, weight, o.n_labels > 0 ? label : NULL, &o);
  if (st == RRT_SUCCESS) {
    stats = calloc((size_t)(3 * m + 1), sizeof(double));
    if (s) s->size = malloc((size_t)(m + 1) * sizeof(double));
    if (s) s->purity = malloc((size_t)(m + 1) * sizeof(double));
    if (s) s->major = malloc((size_t)(m + 1) * sizeof(int32_t));
    if (!s || !bytes || !displs || !rbytes || !stats || !s->size || !s->purity || !s->major)
      st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP, "%lld metacells", (long long)m);
  }
  RRT_CHECK_GOTO(rrt_agree(ctx, st), st, out);
  RRT_CHECK_GOTO(rrt_agree(ctx, check_same(ctx, m, x, &o)), st, out);
  s->m = m;
  s->rows.sparse = x->ptr != NULL, s->rows.cols = x->cols;
  s->rows.first = mc_lo(rank, m, P), s->rows.last = mc_lo(rank + 1, m, P);
  const int32_t *codes = o.n_labels > 0 ? label : NULL;
  st = local_shares(x->rows, top, metacell, weight, &o, &sh);
  if (st == RRT_SUCCESS) st = pack_shares(x, codes, &sh, m, P, &send, bytes, displs);
  if (st != RRT_SUCCESS)
    st = rrt_error(ctx, st, OP, "packing %lld cells' shares (out of memory)", (long long)x->rows);
  if (o.rows_done) o.rows_done(o.rows_done_arg), o.rows_done = NULL; /* x is in send now */
  RRT_CHECK_GOTO(rrt_agree(ctx, st), st, out);
  free(sh.j), free(sh.w), sh.j = NULL, sh.w = NULL;
  RRT_CHECK_GOTO(rrt_host_alltoallv_alloc(ctx, send, bytes, displs, (void **)&recv, rbytes), st,
                 out);
  free(send), send = NULL;
  size_t total = 0;
  for (int r = 0; r < P; r++)
    total += rbytes[r];
  st = owner_sums(s, recv, total, o.soft, codes != NULL, o.n_labels, stats);
  if (st != RRT_SUCCESS)
    st = rrt_error(ctx, st, OP, "summing metacells %lld..%lld (out of memory)",
                   (long long)s->rows.first, (long long)s->rows.last - 1);
  free(recv), recv = NULL;
  RRT_CHECK_GOTO(rrt_agree(ctx, st), st, out);
  /* each metacell has one owner: the sums are the owners' values exactly */
  RRT_CHECK_GOTO(
      rrt_host_allreduce_named(ctx, OP, stats, stats, (size_t)(3 * m), RRT_DTYPE_F64, RRT_OP_SUM),
      st, out);
  for (int64_t j = 0; j < m; j++)
    s->size[j] = stats[j], s->purity[j] = stats[m + j], s->major[j] = (int32_t)stats[2 * m + j] - 1;
  rrt_seacells_summary_rows *r = &s->rows;
  r->metacell = s->mc, r->ptr = r->sparse ? s->ptr : NULL, r->col = r->sparse ? s->col : NULL;
  r->val = s->val;
  *result = s, s = NULL;
out:
  if (o.rows_done) o.rows_done(o.rows_done_arg);
  rrt_seacells_summary_destroy(s);
  free(sh.j), free(sh.w), free(bytes), free(displs), free(rbytes), free(send), free(recv);
  free(stats);
  return st;
}

rrt_status rrt_seacells_summary_metacells(rrt_seacells_summary_t s, const double **size,
                                          const int32_t **majority, const double **purity) {
  if (!s)
    return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_seacells_summary_metacells", "NULL summary");
  if (size) *size = s->size;
  if (majority) *majority = s->major;
  if (purity) *purity = s->purity;
  return RRT_SUCCESS;
}

rrt_status rrt_seacells_summary_local_rows(rrt_seacells_summary_t s,
                                           rrt_seacells_summary_rows *rows) {
  if (!s || !rows)
    return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_seacells_summary_local_rows", "NULL argument");
  *rows = s->rows;
  return RRT_SUCCESS;
}

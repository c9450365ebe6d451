/* SEACells Frank-Wolfe updates of A and B, the replicated k x k products
 * and the RSS (trace form). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

/* By-cell index of the replicated B: entries grouped by cell, archetypes ascending. */
rrt_status rrt_sc_bmat_index(rrt_sc_bmat *b) {
  for (int t = 0; t < b->nent; t++)
    b->cnt[b->touched[t]] = 0, b->first[b->touched[t]] = 0;
  int nt = 0, tot = 0;
  for (int j = 0; j < b->m; j++)
    for (int e = 0; e < b->nnz[j]; e++) {
      int32_t c = b->cell[j * b->cap + e];
      if (b->cnt[c]++ == 0) b->touched[nt++] = c;
      tot++;
    }
  int pos = 0;
  for (int t = 0; t < nt; t++) { /* any order of cells; archetypes stay ascending */
    b->first[b->touched[t]] = pos;
    pos += b->cnt[b->touched[t]];
    b->cnt[b->touched[t]] = 0;
  }
  for (int j = 0; j < b->m; j++)
    for (int e = 0; e < b->nnz[j]; e++) {
      int32_t c = b->cell[j * b->cap + e];
      int p = b->first[c] + b->cnt[c]++;
      b->ent_j[p] = j;
      b->ent_w[p] = b->w[j * b->cap + e];
    }
  b->nent = nt; /* touched cells to reset next time */
  (void)tot;
  return RRT_SUCCESS;
}

rrt_status rrt_sc_b_from_archetypes(rrt_sc_run *s) {
  rrt_sc_bmat *b = &s->b;
  for (int j = 0; j < s->m; j++) {
    b->nnz[j] = 1;
    b->cell[j * b->cap] = (int32_t)s->archetypes[j];
    b->w[j * b->cap] = 1.0;
  }
  return rrt_sc_bmat_index(b);
}

/* T1a = B^T K B = (M B)^T (M B) without a cross-rank sum: every rank
 * builds M B for its rows (s->mb, which the A update and the RSS then use),
 * an allgatherv replicates the local rows (in cell order, whatever the rank
 * count), and the outer products of the rows are summed in that order
 * (rrt_sc_gram, sparse; each rank forms a share of the rows). The result
 * is symmetric bit for bit (products commute), which the A update relies
 * on when it reads a row for a column. */
typedef struct kbrec {
  int32_t cell, j;
  double v;
} kbrec;

/* The gathered records as rows (one per cell present, in cell order). The
 * ranks agree on their allocations first: rrt_sc_gram's gathers are
 * collective, so every rank enters them or none does. */
static rrt_status records_gram(rrt_sc_run *s, const kbrec *all, size_t na, rrt_sc_csr *g) {
  int64_t *ptr = malloc((na + 2) * sizeof(int64_t));
  int32_t *col = malloc((na + 1) * sizeof(int32_t));
  double *val = malloc((na + 1) * sizeof(double));
  rrt_status st = RRT_SUCCESS;
  if (!ptr || !col || !val) st = OOM(s, "B^T K B rows");
  int64_t rows = 0;
  for (size_t e = 0; st == RRT_SUCCESS && e < na; e++) {
    if (e == 0 || all[e].cell != all[e - 1].cell) ptr[rows++] = (int64_t)e;
    col[e] = all[e].j, val[e] = all[e].v;
  }
  st = rrt_agree(s->ctx, st);
  if (st == RRT_SUCCESS) {
    ptr[rows] = (int64_t)na;
    st = rrt_sc_gram(s, rows, ptr, col, val, g);
  }
  free(ptr), free(col), free(val);
  return st;
}

rrt_status rrt_sc_update_t1a(rrt_sc_run *s) {
  const rrt_sc_bmat *b = &s->b;
  rrt_sc_yidx *g = &s->mb;
  kbrec *rec = NULL, *all = NULL;
  size_t tot = 0;
  rrt_status st = rrt_agree(s->ctx, rrt_sc_mprod(s, b->first, b->cnt, b->ent_j, b->ent_w, g));
  if (st != RRT_SUCCESS) return st;
  size_t nr = 0;
  for (int64_t i = 0; i < s->nl; i++)
    nr += (size_t)g->cnt[s->c0 + i];
  rec = malloc((nr + 1) * sizeof(kbrec));
  st = rrt_agree(s->ctx, rec ? RRT_SUCCESS : OOM(s, "B^T K B")); /* before the gather */
  if (st != RRT_SUCCESS) goto out;
  nr = 0;
  for (int64_t i = 0; i < s->nl; i++) {
    int32_t c = (int32_t)(s->c0 + i);
    for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
      rec[nr++] = (kbrec){c, g->ent_j[e], g->ent_w[e]};
  }
  RRT_CHECK_GOTO(
      rrt_host_allgatherv_alloc(s->ctx, rec, nr * sizeof(kbrec), (void **)&all, NULL, &tot), st,
      out);
  free(rec);
  rec = NULL;
  st = records_gram(s, all, tot / sizeof(kbrec), &s->t1a);
out:
  free(rec);
  free(all);
  return rrt_agree(s->ctx, st);
}

/* The kernels' views of the run's M rows and of a by-cell index. */
static rrt_sc_mrows m_rows(const rrt_sc_run *s) {
  return (rrt_sc_mrows){s->nl, s->mrow.ptr, s->mrow.col, s->mrow.val};
}

static rrt_sc_bycell bycell(const rrt_sc_run *s, const rrt_sc_yidx *y) {
  return (rrt_sc_bycell){y->first, y->cnt, y->ent_j, y->ent_w, s->n, y->nent};
}

rrt_status rrt_sc_update_a(rrt_sc_run *s, int first) {
  double t0 = rrt_time_now();
  const rrt_sc_a_args a = {m_rows(s), bycell(s, &s->mb),        s->m,     s->opt.fw_iter, s->capa,
                           first,     rrt_sc_kk_of(s, &s->t1a), s->a_idx, s->a_w,         s->a_nnz,
                           s->order};
  rrt_status st = s->kern->a_update(s->ctx, &a);
  s->sec[RRT_SC_PHASE_UPDATE_A] += rrt_time_now() - t0;
  return rrt_agree(s->ctx, st);
}

typedef struct aent {
  int32_t j, pad;
  double w;
} aent;

/* The gathered A (cnt_all: entries per cell, all: the entries in cell
 * order) as CSR (aptr) and as a by-cell index (afirst/acnt/aj/aw). */
static rrt_status a_replica_index(rrt_sc_run *s, const int32_t *cnt_all, const aent *all,
                                  int64_t **aptr, int32_t **afirst, int32_t **acnt, int32_t **aj,
                                  double **aw) {
  *aptr = malloc((size_t)(s->n + 1) * sizeof(int64_t));
  if (!*aptr) return OOM(s, "A replica");
  (*aptr)[0] = 0;
  for (int64_t c = 0; c < s->n; c++)
    (*aptr)[c + 1] = (*aptr)[c] + cnt_all[c];
  int64_t nz = (*aptr)[s->n];
  *afirst = malloc((size_t)(s->n + 1) * sizeof(int32_t));
  *acnt = malloc((size_t)(s->n + 1) * sizeof(int32_t));
  *aj = malloc((size_t)(nz + 1) * sizeof(int32_t));
  *aw = malloc((size_t)(nz + 1) * sizeof(double));
  if (!*afirst || !*acnt || !*aj || !*aw) return OOM(s, "A replica");
  for (int64_t c = 0; c < s->n; c++)
    (*afirst)[c] = (int32_t)(*aptr)[c], (*acnt)[c] = (int32_t)((*aptr)[c + 1] - (*aptr)[c]);
  for (int64_t e = 0; e < nz; e++)
    (*aj)[e] = all[e].j, (*aw)[e] = all[e].w;
  return RRT_SUCCESS;
}

/* H = M A^T for the local and ghost rows (A replicated by an allgatherv),
 * from which the B update forms the rows of K A^T = M H per cell (storing
 * them would cost up to m entries per cell: the archetypes of a 2-hop
 * neighbourhood), and T1b = A A^T from that replica, in cell order. The
 * ranks agree on their local failures before each collective step (the
 * gathers, then rrt_sc_gram's), so none waits in one that another skipped. */
static rrt_status prepare_b(rrt_sc_run *s, rrt_sc_yidx *h) {
  int64_t nl = s->nl, nloc = 0;
  for (int64_t i = 0; i < nl; i++)
    nloc += s->a_nnz[i];
  aent *mine = malloc((size_t)(nloc + 1) * sizeof(aent)), *all = NULL;
  int32_t *cnt_all = NULL;
  int64_t *aptr = NULL;
  int32_t *afirst = NULL, *acnt = NULL, *aj = NULL;
  double *aw = NULL;
  rrt_status st = rrt_agree(s->ctx, mine ? RRT_SUCCESS : OOM(s, "A replica"));
  if (st != RRT_SUCCESS) goto out;
  int64_t q = 0;
  for (int64_t i = 0; i < nl; i++)
    for (int e = 0; e < s->a_nnz[i]; e++)
      mine[q++] = (aent){s->a_idx[i * s->capa + e], 0, s->a_w[i * s->capa + e]};
  size_t tot = 0;
  RRT_CHECK_GOTO(rrt_host_allgatherv_alloc(s->ctx, s->a_nnz, (size_t)nl * sizeof(int),
                                           (void **)&cnt_all, NULL, &tot),
                 st, out);
  RRT_CHECK_GOTO(rrt_host_allgatherv_alloc(s->ctx, mine, (size_t)nloc * sizeof(aent), (void **)&all,
                                           NULL, &tot),
                 st, out);
  free(mine);
  mine = NULL;
  st = rrt_agree(s->ctx, a_replica_index(s, cnt_all, all, &aptr, &afirst, &acnt, &aj, &aw));
  if (st != RRT_SUCCESS) goto out;
  free(all), free(cnt_all); /* the replica lives on in aptr/afirst/acnt/aj/aw */
  all = NULL, cnt_all = NULL;
  /* T1b = A A^T summed over all cells in cell order (same bits on every
   * rank and for any rank count; symmetric since products commute) */
  RRT_CHECK_GOTO(rrt_sc_gram(s, s->n, aptr, aj, aw, &s->t1b), st, out);
  /* H = M A^T for the local and ghost rows, from the replica */
  RRT_CHECK_GOTO(rrt_sc_mprod(s, afirst, acnt, aj, aw, h), st, out);
out:
  free(mine);
  free(all);
  free(cnt_all);
  free(aptr);
  free(afirst), free(acnt), free(aj), free(aw);
  return st;
}

/* Bg[:, j] += f (e_amin - Bg[:, j]) for every archetype j, sparse, with
 * the cells of each column kept ascending. */
static void fw_move_b(rrt_sc_bmat *b, const rrt_minloc *ml, int t) {
  double f = rrt_sc_fw_step(t);
  for (int j = 0; j < b->m; j++) {
    int32_t amin = (int32_t)ml[j].index, *cells = b->cell + j * b->cap;
    double *w = b->w + j * b->cap;
    int found = 0, nz = 0;
    for (int e = 0; e < b->nnz[j]; e++) {
      double v = rrt_sc_fw_move(w[e], f, cells[e] == amin);
      found |= cells[e] == amin;
      if (v != 0.0) cells[nz] = cells[e], w[nz++] = v;
    }
    if (!found) { /* insert keeping cells ascending */
      int p = nz++;
      while (p > 0 && cells[p - 1] > amin)
        cells[p] = cells[p - 1], w[p] = w[p - 1], p--;
      cells[p] = amin;
      w[p] = rrt_sc_fw_move(0.0, f, 1);
    }
    b->nnz[j] = nz;
  }
  rrt_sc_bmat_index(b);
}

/* One Frank-Wolfe step of B: the local fused gradient + argmin, then the
 * global min-loc (lowest cell on ties), then the move. A local failure has
 * no agreement of its own: it rides on the min-loc (one collective per
 * step; each costs a time slice on a loaded machine) as an entry that wins
 * everywhere, so every rank sees it and then agrees on the statuses. */
static rrt_status fw_step_b(rrt_sc_run *s, void *work, rrt_sc_yidx *g, rrt_minloc *ml, double *bv,
                            int64_t *bi, int t) {
  rrt_sc_bmat *b = &s->b;
  rrt_status lst = rrt_sc_mprod(s, b->first, b->cnt, b->ent_j, b->ent_w, g);
  if (lst == RRT_SUCCESS) {
    const rrt_sc_bycell y = bycell(s, g);
    lst = s->kern->b_argmin(s->ctx, work, &y, bv, bi);
  }
  for (int j = 0; j < s->m; j++) {
    if (lst != RRT_SUCCESS) bv[j] = INFINITY, bi[j] = INT64_MAX;
    ml[j].value = bv[j], ml[j].index = bi[j];
  }
  if (lst != RRT_SUCCESS) ml[0].value = -INFINITY, ml[0].index = -1; /* wins everywhere */
  RRT_CHECK(rrt_allreduce_minloc(s->ctx, ml, (size_t)s->m));
  if (ml[0].index < 0) return rrt_agree(s->ctx, lst); /* some rank failed: all agree */
  fw_move_b(b, ml, t);
  return RRT_SUCCESS;
}

rrt_status rrt_sc_update_b(rrt_sc_run *s) {
  double t0 = rrt_time_now();
  int m = s->m;
  rrt_minloc *ml = malloc((size_t)m * sizeof(rrt_minloc));
  double *bv = malloc((size_t)m * sizeof(double));
  int64_t *bi = malloc((size_t)m * sizeof(int64_t));
  void *work = NULL;
  rrt_status st = RRT_SUCCESS;
  if (!ml || !bv || !bi) st = OOM(s, "B update");
  rrt_sc_yidx h, g; /* M A^T (fixed during the update), M Bg (at each step) */
  memset(&h, 0, sizeof h);
  memset(&g, 0, sizeof g);
  if (st == RRT_SUCCESS) st = prepare_b(s, &h);
  if (st == RRT_SUCCESS) {
    const rrt_sc_b_args a = {
        m_rows(s), bycell(s, &h), s->c0, m, rrt_sc_kk_of(s, &s->t1b), s->kat_budget * s->nl,
        s->order};
    st = s->kern->b_begin(s->ctx, &a, &work);
  }
  st = rrt_agree(s->ctx, st);
  for (int t = 0; st == RRT_SUCCESS && t < s->opt.fw_iter; t++)
    st = fw_step_b(s, work, &g, ml, bv, bi, t);
  if (work) s->kern->b_free(s->ctx, work);
  rrt_sc_csr_free(&s->t1b); /* only the B update uses it */
  rrt_sc_yidx_free(&h);
  rrt_sc_yidx_free(&g);
  free(ml);
  free(bv);
  free(bi);
  s->sec[RRT_SC_PHASE_UPDATE_B] += rrt_time_now() - t0;
  return st;
}

/* First position in [p, end) of the ascending cols whose entry is >= j:
 * a galloping search from p (the targets of one row come ascending). */
static int64_t seek_col(const int32_t *col, int64_t p, int64_t end, int32_t j) {
  int64_t step = 1, hi = p;
  while (hi < end && col[hi] < j)
    p = hi + 1, hi += step, step *= 2;
  if (hi > end) hi = end;
  while (p < hi) {
    int64_t mid = p + (hi - p) / 2;
    if (col[mid] < j)
      p = mid + 1;
    else
      hi = mid;
  }
  return p;
}

/* a^T T1a a over a cell's nz entries (archetypes ai ascending, weights aw),
 * as the dense sum takes it: quad = sum_e aw_e r_e, r_e = sum_f T1a_ef aw_f
 * in f order, the entries T1a lacks (+0 in the dense sum) skipped. The
 * entries are looked up once per pair (T1a is symmetric bit for bit) into
 * v (nz x nz scratch). */
static double quad_form(const rrt_sc_kk *t1a, const int32_t *ai, const double *aw, int nz,
                        double *v) {
  for (int e = 0; e < nz; e++) {
    int64_t p = t1a->ptr[ai[e]], end = t1a->ptr[ai[e] + 1];
    for (int f = e; f < nz; f++) {
      p = seek_col(t1a->col, p, end, ai[f]);
      double x = p < end && t1a->col[p] == ai[f] ? t1a->val[p] : 0.0;
      v[e * nz + f] = x, v[f * nz + e] = x;
    }
  }
  double quad = 0.0;
  for (int e = 0; e < nz; e++) {
    double r = 0.0;
    for (int f = 0; f < nz; f++)
      if (v[e * nz + f] != 0.0) r = r + v[e * nz + f] * aw[f];
    quad = quad + aw[e] * r;
  }
  return quad;
}

/* Cell i's term K_ii - 2 (K B)_i . a_i + a_i^T T1a a_i; kb (m, zero on
 * entry and exit) and v (capa x capa) are scratch. */
static double rss_term(const rrt_sc_run *s, const rrt_sc_kk *t1a, int64_t i, double *kb,
                       double *v) {
  const rrt_sc_yidx *g = &s->mb; /* M B for the current B */
  const int32_t *ai = s->a_idx + i * s->capa;
  const double *aw = s->a_w + i * s->capa;
  for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
    int32_t c = s->mrow.col[p];
    for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
      kb[g->ent_j[e]] = kb[g->ent_j[e]] + s->mrow.val[p] * g->ent_w[e];
  }
  double cross = 0.0;
  for (int e = 0; e < s->a_nnz[i]; e++)
    cross = cross + kb[ai[e]] * aw[e];
  double term = s->kdiag[i] - 2.0 * cross + quad_form(t1a, ai, aw, s->a_nnz[i], v);
  for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
    int32_t c = s->mrow.col[p];
    for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
      kb[g->ent_j[e]] = 0.0;
  }
  return term;
}

/* RSS^2 = sum_i K_ii - 2 (K B)_i . a_i + a_i^T T1a a_i (T1a and M B for the
 * current B, from rrt_sc_update_t1a). The terms are formed in parallel
 * (each one's bits do not depend on the thread) and summed in cell order
 * by rrt_sc_block_sum. */
rrt_status rrt_sc_compute_rss(rrt_sc_run *s, double *rss) {
  double t0 = rrt_time_now();
  double *vals = malloc((size_t)(s->nl + 1) * sizeof(double));
  int fail = !vals;
  const rrt_sc_kk t1a = rrt_sc_kk_of(s, &s->t1a);
#pragma omp parallel if (s->nl >= RRT_SC_PAR_MIN && !fail)
  {
    double *kb = calloc((size_t)s->m, sizeof(double));
    double *v = malloc((size_t)s->capa * s->capa * sizeof(double) + 1);
    if (!kb || !v) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s->nl; r++) { /* rows read together lie together */
      int64_t i = s->order ? s->order[r] : r;
      if (kb && v && vals) vals[i] = rss_term(s, &t1a, i, kb, v);
    }
    free(kb), free(v);
  }
  if (fail) {
    free(vals);
    return rrt_agree(s->ctx, OOM(s, "RSS"));
  }
  double sum = 0.0;
  rrt_status st = rrt_sc_block_sum(s, vals, &sum);
  *rss = sqrt(sum > 0.0 ? sum : 0.0);
  free(vals);
  s->sec[RRT_SC_PHASE_RSS] += rrt_time_now() - t0;
  return st;
}

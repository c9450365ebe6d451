/* SEACells Frank-Wolfe updates of A and B, the replicated k x k products
 * and the RSS (trace form). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "kernels/cuda/seacells.h"
#include "comm/ctx.h"
#include "comm/error.h"
#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

/* By-cell index of the replicated B: entries grouped by cell, archetypes ascending. */
rrt_status sc_bmat_index(sc_bmat *b) {
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

rrt_status sc_b_from_archetypes(sc_run *s) {
  sc_bmat *b = &s->b;
  for (int j = 0; j < s->m; j++) {
    b->nnz[j] = 1;
    b->cell[j * b->cap] = (int32_t)s->archetypes[j];
    b->w[j * b->cap] = 1.0;
  }
  return sc_bmat_index(b);
}

/* T1a = B^T K B = (M B)^T (M B) without a cross-rank sum: every rank
 * builds M B for its rows (s->mb, which the A update and the RSS then use),
 * an allgatherv replicates the local rows (in cell order, whatever the rank
 * count), and every rank sums the outer products of the rows in that order.
 * The result is symmetric bit for bit (products commute), which the A
 * update relies on when it reads a row for a column. */
typedef struct kbrec {
  int32_t cell, j;
  double v;
} kbrec;

rrt_status sc_update_t1a(sc_run *s) {
  int m = s->m;
  const sc_bmat *b = &s->b;
  sc_yidx *g = &s->mb;
  kbrec *rec = NULL, *all = NULL;
  size_t tot = 0;
  rrt_status st = rrt_agree(s->ctx, sc_mprod(s, b->first, b->cnt, b->ent_j, b->ent_w, g));
  if (st != RRT_SUCCESS) return st;
  size_t nr = 0;
  for (int64_t i = 0; i < s->nl; i++)
    nr += (size_t)g->cnt[s->c0 + i];
  rec = malloc((nr + 1) * sizeof(kbrec));
  if (!rec) {
    st = OOM(s, "B^T K B");
    goto out;
  }
  nr = 0;
  for (int64_t i = 0; i < s->nl; i++) {
    int32_t c = (int32_t)(s->c0 + i);
    for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
      rec[nr++] = (kbrec){c, g->ent_j[e], g->ent_w[e]};
  }
  RRT_CHECK_GOTO(sc_allgatherv_host(s, rec, nr * sizeof(kbrec), (void **)&all, &tot), st, out);
  memset(s->t1a, 0, (size_t)m * m * sizeof(double));
  size_t na = tot / sizeof(kbrec);
  for (size_t r0 = 0, r1; r0 < na; r0 = r1) { /* one cell's row: [r0, r1) */
    for (r1 = r0; r1 < na && all[r1].cell == all[r0].cell; r1++)
      ;
    for (size_t e = r0; e < r1; e++)
      for (size_t f = r0; f < r1; f++) {
        double *t = s->t1a + (int64_t)all[e].j * m + all[f].j;
        *t = *t + all[e].v * all[f].v;
      }
  }
out:
  free(rec);
  free(all);
  return rrt_agree(s->ctx, st);
}

/* Device copies for the emu/cuda path (K rows are uploaded once). */
typedef struct sc_dev {
  void *kptr, *kcol, *kval, *bfirst, *bcnt, *bent_j, *bent_w, *t1, *aidx, *aw, *annz, *scratch,
      *iscratch, *hfirst, *hcnt, *hj, *hw, *pv, *pi, *bv, *bi;
} sc_dev;

static rrt_status up(sc_run *s, void **d, const void *h, size_t bytes) {
  if (*d) rrt_free(s->ctx, *d);
  *d = NULL;
  RRT_CHECK(rrt_malloc(s->ctx, bytes ? bytes : 8, d));
  return h && bytes ? rrt_memcpy_to_backend(s->ctx, *d, h, bytes) : RRT_SUCCESS;
}

static void dev_free(sc_run *s, sc_dev *d) {
  void **p = (void **)d;
  for (size_t i = 0; i < sizeof *d / sizeof(void *); i++)
    rrt_free(s->ctx, p[i]);
  memset(d, 0, sizeof *d);
}

/* The kernels take "X rows" (CSR, local cells) and "Y by cell": X = M and
 * Y = M B (or M Bg) gives the rows of K B = M (M B). */
static rrt_status up_y(sc_run *s, sc_dev *d, const sc_yidx *y) {
  size_t n = (size_t)s->n, ne = (size_t)y->nent;
  RRT_CHECK(up(s, &d->bfirst, y->first, n * sizeof(int32_t)));
  RRT_CHECK(up(s, &d->bcnt, y->cnt, n * sizeof(int32_t)));
  RRT_CHECK(up(s, &d->bent_j, y->ent_j, ne * sizeof(int32_t)));
  return up(s, &d->bent_w, y->ent_w, ne * sizeof(double));
}

static rrt_status up_k(sc_run *s, sc_dev *d) {
  size_t nz = (size_t)s->mrow.ptr[s->nl];
  RRT_CHECK(up(s, &d->kptr, s->mrow.ptr, (size_t)(s->nl + 1) * sizeof(int64_t)));
  RRT_CHECK(up(s, &d->kcol, s->mrow.col, nz * sizeof(int32_t)));
  return up(s, &d->kval, s->mrow.val, nz * sizeof(double));
}

rrt_status sc_update_a(sc_run *s, int first) {
  double t0 = rrt_time_now();
  rrt_status st = RRT_SUCCESS;
  if (!s->use_device) {
    rrt_sc_rows rows;
    if (rrt_sc_cpu_sparse_rows(s->m, s->t1a, &rows) != RRT_SUCCESS) {
      st = OOM(s, "T1a rows");
    } else {
      rrt_sc_cpu_a_solve(s->nl, s->m, s->opt.fw_iter, s->capa, s->mrow.ptr, s->mrow.col,
                         s->mrow.val, s->mb.first, s->mb.cnt, s->mb.ent_j, s->mb.ent_w, s->t1a,
                         &rows, first, s->a_idx, s->a_w, s->a_nnz);
      rrt_sc_rows_free(&rows);
    }
  } else {
    sc_dev d;
    memset(&d, 0, sizeof d);
    size_t na = (size_t)s->nl * s->capa, mm = (size_t)s->m * s->m;
    int64_t grid = s->nl < 4096 ? s->nl : 4096;
    RRT_CHECK_GOTO(up_k(s, &d), st, dout);
    RRT_CHECK_GOTO(up_y(s, &d, &s->mb), st, dout);
    RRT_CHECK_GOTO(up(s, &d.t1, s->t1a, mm * sizeof(double)), st, dout);
    RRT_CHECK_GOTO(up(s, &d.aidx, s->a_idx, na * sizeof(int32_t)), st, dout);
    RRT_CHECK_GOTO(up(s, &d.aw, s->a_w, na * sizeof(double)), st, dout);
    RRT_CHECK_GOTO(up(s, &d.annz, s->a_nnz, (size_t)s->nl * sizeof(int)), st, dout);
    RRT_CHECK_GOTO(up(s, &d.scratch, NULL, (size_t)(grid + 1) * 3 * s->m * sizeof(double)), st,
                   dout);
    st = RRT_KCALL(s->ctx->dev, rrt_k_sc_a_solve, s->ctx->compute_stream, s->nl, s->m,
                   s->opt.fw_iter, s->capa, d.kptr, d.kcol, d.kval, d.bfirst, d.bcnt, d.bent_j,
                   d.bent_w, d.t1, first, d.aidx, d.aw, d.annz, d.scratch);
    if (st == RRT_SUCCESS) st = rrt_synchronize(s->ctx);
    if (st != RRT_SUCCESS) {
      st = rrt_error(s->ctx, st, "seacells", "A update kernel failed");
      goto dout;
    }
    RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, s->a_idx, d.aidx, na * sizeof(int32_t)), st, dout);
    RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, s->a_w, d.aw, na * sizeof(double)), st, dout);
    RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, s->a_nnz, d.annz, (size_t)s->nl * sizeof(int)), st,
                   dout);
  dout:
    dev_free(s, &d);
  }
  s->sec[SC_UPDATE_A] += rrt_time_now() - t0;
  return rrt_agree(s->ctx, st);
}

/* H = M A^T for the local and ghost rows (A replicated by an allgatherv),
 * from which the B update forms the rows of K A^T = M H per cell (storing
 * them would cost up to m entries per cell: the archetypes of a 2-hop
 * neighbourhood), and T1b = A A^T from that replica, in cell order. */
static rrt_status prepare_b(sc_run *s, sc_yidx *h) {
  int m = s->m;
  int64_t nl = s->nl;
  rrt_status st = RRT_SUCCESS;
  typedef struct {
    int32_t j, pad;
    double w;
  } aent;
  int64_t nloc = 0;
  for (int64_t i = 0; i < nl; i++)
    nloc += s->a_nnz[i];
  aent *mine = malloc((size_t)(nloc + 1) * sizeof(aent)), *all = NULL;
  int32_t *cnt_all = NULL;
  int64_t *aptr = NULL;
  int32_t *afirst = NULL, *acnt = NULL, *aj = NULL;
  double *aw = NULL;
  if (!mine) {
    st = OOM(s, "A replica");
    goto out;
  }
  int64_t q = 0;
  for (int64_t i = 0; i < nl; i++)
    for (int e = 0; e < s->a_nnz[i]; e++)
      mine[q++] = (aent){s->a_idx[i * s->capa + e], 0, s->a_w[i * s->capa + e]};
  size_t tot = 0;
  RRT_CHECK_GOTO(sc_allgatherv_host(s, s->a_nnz, (size_t)nl * sizeof(int), (void **)&cnt_all, &tot),
                 st, out);
  RRT_CHECK_GOTO(sc_allgatherv_host(s, mine, (size_t)nloc * sizeof(aent), (void **)&all, &tot), st,
                 out);
  free(mine);
  mine = NULL;
  aptr = malloc((size_t)(s->n + 1) * sizeof(int64_t));
  if (!aptr) {
    st = OOM(s, "A replica");
    goto out;
  }
  aptr[0] = 0;
  for (int64_t c = 0; c < s->n; c++)
    aptr[c + 1] = aptr[c] + cnt_all[c];
  /* T1b = A A^T summed over all cells in cell order (same bits on every
   * rank and for any rank count; symmetric since products commute) */
  memset(s->t1b, 0, (size_t)m * m * sizeof(double));
  for (int64_t c = 0; c < s->n; c++)
    for (int64_t e = aptr[c]; e < aptr[c + 1]; e++)
      for (int64_t f = aptr[c]; f < aptr[c + 1]; f++) {
        double *t = s->t1b + (int64_t)all[e].j * m + all[f].j;
        *t = *t + all[e].w * all[f].w;
      }
  /* H = M A^T for the local and ghost rows, from the replica */
  afirst = malloc((size_t)(s->n + 1) * sizeof(int32_t));
  acnt = malloc((size_t)(s->n + 1) * sizeof(int32_t));
  aj = malloc((size_t)(aptr[s->n] + 1) * sizeof(int32_t));
  aw = malloc((size_t)(aptr[s->n] + 1) * sizeof(double));
  if (!afirst || !acnt || !aj || !aw) {
    st = OOM(s, "A replica");
    goto out;
  }
  for (int64_t c = 0; c < s->n; c++)
    afirst[c] = (int32_t)aptr[c], acnt[c] = (int32_t)(aptr[c + 1] - aptr[c]);
  for (int64_t e = 0; e < aptr[s->n]; e++)
    aj[e] = all[e].j, aw[e] = all[e].w;
  free(all), free(cnt_all), free(aptr); /* the replica lives on in afirst/acnt/aj/aw */
  all = NULL, cnt_all = NULL, aptr = NULL;
  RRT_CHECK_GOTO(sc_mprod(s, afirst, acnt, aj, aw, h), st, out);
  free(afirst), free(acnt), free(aj), free(aw);
  afirst = NULL, acnt = NULL, aj = NULL, aw = NULL;
out:
  free(mine);
  free(all);
  free(cnt_all);
  free(aptr);
  free(afirst), free(acnt), free(aj), free(aw);
  return st;
}

rrt_status sc_update_b(sc_run *s) {
  double t0 = rrt_time_now();
  int m = s->m;
  sc_dev d;
  memset(&d, 0, sizeof d);
  rrt_minloc *ml = malloc((size_t)m * sizeof(rrt_minloc));
  double *bv = malloc((size_t)m * sizeof(double));
  int64_t *bi = malloc((size_t)m * sizeof(int64_t));
  rrt_status st = RRT_SUCCESS;
  if (!ml || !bv || !bi) st = OOM(s, "B update");
  sc_yidx h, g; /* M A^T (fixed during the update), M Bg (at each step) */
  memset(&h, 0, sizeof h);
  memset(&g, 0, sizeof g);
  if (st == RRT_SUCCESS) st = prepare_b(s, &h);
  int nparts = rrt_sc_b_argmin_blocks(s->nl);
  rrt_sc_rows t1b_rows = {NULL, NULL, NULL};
  if (st == RRT_SUCCESS && !s->use_device && rrt_sc_cpu_sparse_rows(m, s->t1b, &t1b_rows))
    st = OOM(s, "T1b rows");
  /* the K A^T rows are the same at every step: kept when they fit the
   * budget (a bound linear in n), else formed per cell at each step (the
   * same bits: a hub-heavy graph has rows of up to m entries) */
  int64_t *katptr = NULL;
  int32_t *katcol = NULL;
  double *katval = NULL;
  if (st == RRT_SUCCESS && !s->use_device)
    (void)rrt_sc_cpu_xh_rows(s->nl, m, s->mrow.ptr, s->mrow.col, s->mrow.val, h.first, h.cnt,
                             h.ent_j, h.ent_w, s->kat_budget * s->nl, &katptr, &katcol, &katval);
  if (st == RRT_SUCCESS && s->use_device) {
    size_t n = (size_t)s->n, nz = (size_t)h.nent;
    RRT_CHECK_GOTO(up_k(s, &d), st, agree);
    RRT_CHECK_GOTO(up(s, &d.hfirst, h.first, n * sizeof(int32_t)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.hcnt, h.cnt, n * sizeof(int32_t)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.hj, h.ent_j, nz * sizeof(int32_t)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.hw, h.ent_w, nz * sizeof(double)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.t1, s->t1b, (size_t)m * m * sizeof(double)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.scratch, NULL, (size_t)nparts * 3 * m * sizeof(double)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.iscratch, NULL, (size_t)nparts * 2 * m * sizeof(int)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.pv, NULL, (size_t)nparts * m * sizeof(double)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.pi, NULL, (size_t)nparts * m * sizeof(int64_t)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.bv, NULL, (size_t)m * sizeof(double)), st, agree);
    RRT_CHECK_GOTO(up(s, &d.bi, NULL, (size_t)m * sizeof(int64_t)), st, agree);
  }
agree:
  st = rrt_agree(s->ctx, st);
  sc_bmat *b = &s->b;
  for (int t = 0; st == RRT_SUCCESS && t < s->opt.fw_iter; t++) {
    /* local fused gradient + argmin, then the global min-loc (lowest cell on ties) */
    /* no agreement of its own: a failure rides on the min-loc below (one
     * collective per step; each costs a time slice on a loaded machine) */
    rrt_status mst = sc_mprod(s, b->first, b->cnt, b->ent_j, b->ent_w, &g);
    if (mst != RRT_SUCCESS) {
      for (int j = 0; j < m; j++)
        bv[j] = INFINITY, bi[j] = INT64_MAX;
    } else if (!s->use_device) {
      rrt_sc_cpu_b_argmin(s->nl, s->c0, m, s->mrow.ptr, s->mrow.col, s->mrow.val, g.first, g.cnt,
                          g.ent_j, g.ent_w, h.first, h.cnt, h.ent_j, h.ent_w, katptr, katcol,
                          katval, &t1b_rows, bv, bi);
    } else {
      st = up_y(s, &d, &g);
      if (st == RRT_SUCCESS)
        st = RRT_KCALL(s->ctx->dev, rrt_k_sc_b_argmin, s->ctx->compute_stream, s->nl, s->c0, m,
                       d.kptr, d.kcol, d.kval, d.bfirst, d.bcnt, d.bent_j, d.bent_w, d.hfirst,
                       d.hcnt, d.hj, d.hw, d.t1, d.pv, d.pi, d.scratch, d.iscratch);
      if (st == RRT_SUCCESS)
        st = RRT_KCALL(s->ctx->dev, rrt_k_sc_argmin_reduce, s->ctx->compute_stream, nparts, m, d.pv,
                       d.pi, d.bv, d.bi);
      if (st == RRT_SUCCESS) st = rrt_memcpy_to_host(s->ctx, bv, d.bv, (size_t)m * sizeof(double));
      if (st == RRT_SUCCESS) st = rrt_memcpy_to_host(s->ctx, bi, d.bi, (size_t)m * sizeof(int64_t));
      st = rrt_agree(s->ctx, st);
      if (st != RRT_SUCCESS) break;
    }
    for (int j = 0; j < m; j++)
      ml[j].value = bv[j], ml[j].index = bi[j];
    if (mst != RRT_SUCCESS) ml[0].value = -INFINITY, ml[0].index = -1; /* wins everywhere */
    st = rrt_allreduce_minloc(s->ctx, ml, (size_t)m);
    if (st != RRT_SUCCESS) break;
    if (ml[0].index < 0) { /* some rank failed: every rank sees it and agrees */
      st = rrt_agree(s->ctx, mst);
      break;
    }
    double f = rrt_sc_fw_step(t);
    for (int j = 0; j < m; j++) { /* Bg[:, j] += f (e_amin - Bg[:, j]), sparse */
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
    sc_bmat_index(b);
  }
  dev_free(s, &d);
  rrt_sc_rows_free(&t1b_rows);
  sc_yidx_free(&h);
  sc_yidx_free(&g);
  free(katptr), free(katcol), free(katval);
  free(ml);
  free(bv);
  free(bi);
  s->sec[SC_UPDATE_B] += rrt_time_now() - t0;
  return st;
}

/* RSS^2 = sum_i K_ii - 2 (K B)_i . a_i + a_i^T T1a a_i (T1a and M B for the
 * current B, from sc_update_t1a). */
rrt_status sc_compute_rss(sc_run *s, double *rss) {
  double t0 = rrt_time_now();
  int m = s->m;
  double *vals = malloc((size_t)(s->nl + 1) * sizeof(double));
  double *kb = calloc((size_t)m, sizeof(double));
  if (!vals || !kb) {
    free(vals);
    free(kb);
    return rrt_agree(s->ctx, OOM(s, "RSS"));
  }
  const sc_yidx *g = &s->mb; /* M B for the current B */
  for (int64_t i = 0; i < s->nl; i++) {
    double kii = s->kdiag[i];
    const int32_t *ai = s->a_idx + i * s->capa;
    const double *aw = s->a_w + i * s->capa;
    for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
      int32_t c = s->mrow.col[p];
      for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
        kb[g->ent_j[e]] = kb[g->ent_j[e]] + s->mrow.val[p] * g->ent_w[e];
    }
    double cross = 0.0, quad = 0.0;
    for (int e = 0; e < s->a_nnz[i]; e++) {
      cross = cross + kb[ai[e]] * aw[e];
      double r = 0.0;
      for (int f = 0; f < s->a_nnz[i]; f++)
        r = r + s->t1a[(int64_t)ai[e] * m + ai[f]] * aw[f];
      quad = quad + aw[e] * r;
    }
    vals[i] = kii - 2.0 * cross + quad;
    for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++) {
      int32_t c = s->mrow.col[p];
      for (int32_t e = g->first[c]; e < g->first[c] + g->cnt[c]; e++)
        kb[g->ent_j[e]] = 0.0;
    }
  }
  double sum = 0.0;
  rrt_status st = sc_block_sum(s, vals, &sum);
  *rss = sqrt(sum > 0.0 ? sum : 0.0);
  free(vals);
  free(kb);
  s->sec[SC_RSS] += rrt_time_now() - t0;
  return st;
}

int rrt_sc_b_argmin_blocks(int64_t nl) {
  int64_t nb = (nl + 63) / 64; /* must match the launch in seacells.cu */
  return (int)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
}

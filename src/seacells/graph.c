/* SEACells graph: exact kNN by passing coordinate blocks around the ring,
 * adaptive bandwidths, the union-symmetrised kernel rows of M, ghost rows of
 * M from their owners (kept: products with K = M M go through them), and
 * the diagonal of K. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "kernels/cpu/seacells.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/seacells_math.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

/* The largest block of any rank: the size of the ring buffers. */
static int64_t max_block(const rrt_sc_run *s) {
  int64_t maxnl = 0;
  for (int r = 0; r < s->size; r++) {
    int64_t c = s->plan.cell_start[r + 1] - s->plan.cell_start[r];
    if (c > maxnl) maxnl = c;
  }
  return maxnl;
}

/* Exact kNN: the coordinate blocks travel the ring (as K/V blocks do in
 * attention), each folded into the local lists by the kernels while the
 * next one moves. */
rrt_status rrt_sc_knn(rrt_sc_run *s, int k, int32_t **nbr, double **nbr_d2) {
  rrt_ctx_t ctx = s->ctx;
  int P = s->size, d = s->d;
  size_t blk = (size_t)max_block(s) * d * sizeof(double), lk = (size_t)s->nl * k;
  void *buf[2] = {NULL, NULL}, *work = NULL;
  rrt_status st = RRT_SUCCESS;
  *nbr = malloc((lk ? lk : 1) * sizeof(int32_t));
  *nbr_d2 = malloc((lk ? lk : 1) * sizeof(double));
  if (!*nbr || !*nbr_d2) return OOM(s, "kNN lists");
  for (size_t i = 0; i < lk; i++)
    (*nbr_d2)[i] = INFINITY, (*nbr)[i] = -1;
  RRT_CHECK_GOTO(rrt_malloc(ctx, blk, &buf[0]), st, out);
  RRT_CHECK_GOTO(rrt_malloc(ctx, blk, &buf[1]), st, out);
  RRT_CHECK_GOTO(rrt_memcpy_to_backend(ctx, buf[0], s->x, (size_t)s->nl * d * sizeof(double)), st,
                 out);
  const rrt_sc_knn_args ka = {s->x, s->nl, s->c0, d, k, *nbr_d2, *nbr};
  RRT_CHECK_GOTO(s->kern->knn_begin(ctx, &ka, &work), st, out);
  for (int step = 0; step < P; step++) {
    int src = ((s->rank - step) % P + P) % P;
    int64_t r0 = s->plan.cell_start[src], nr = s->plan.cell_start[src + 1] - r0;
    void *hold = buf[step & 1], *next = buf[(step + 1) & 1];
    rrt_request_t req = NULL;
    /* post the next block's transfer before computing on this one */
    if (step + 1 < P) RRT_CHECK_GOTO(rrt_ring_shift(ctx, hold, next, blk, step, &req), st, out);
    st = s->kern->knn_tile(ctx, work, hold, nr, r0);
    if (st != RRT_SUCCESS)
      st = rrt_error(ctx, st, "seacells", "kNN tile (%s kernels, step %d)", s->kern->name, step);
    rrt_status wst = rrt_request_wait(req);
    if (st == RRT_SUCCESS) st = wst;
    if (st != RRT_SUCCESS) goto out;
  }
  st = s->kern->knn_end(ctx, work);
out:
  if (work) s->kern->knn_free(ctx, work);
  rrt_free(ctx, buf[0]);
  rrt_free(ctx, buf[1]);
  return st;
}

typedef struct edge {
  int32_t to, from; /* the row that receives the entry, its column */
  double d2;
} edge;

static int edge_cmp(const void *a, const void *b) {
  const edge *x = a, *y = b;
  if (x->to != y->to) return x->to < y->to ? -1 : 1;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* Rows of M for the local cells, diagonal 1: kNN edges both ways (union),
 * or only the edges both ends list (intersect). */
static rrt_status build_m(rrt_sc_run *s, double **sigma_all) {
  int P = s->size, k = s->knn;
  int64_t nl = s->nl;
  rrt_status st = RRT_SUCCESS;
  size_t *scount = calloc((size_t)P, sizeof(size_t)), *sdispl = calloc((size_t)P, sizeof(size_t));
  size_t *rcount = calloc((size_t)P, sizeof(size_t));
  edge *out = malloc((size_t)(nl * k + 1) * sizeof(edge)), *in = NULL, *all = NULL;
  if (!scount || !sdispl || !rcount || !out) {
    st = OOM(s, "edges");
    goto done;
  }
  /* bandwidths of every cell (n doubles) so both ends of an edge know both */
  size_t tot = 0;
  RRT_CHECK_GOTO(rrt_host_allgatherv_alloc(s->ctx, s->sigma, (size_t)nl * sizeof(double),
                                           (void **)sigma_all, NULL, &tot),
                 st, done);
  /* transposed edges go to the owner of the neighbour, grouped by owner */
  int64_t ne = 0;
  for (int r = 0; r < P; r++) {
    sdispl[r] = (size_t)ne * sizeof(edge);
    for (int64_t i = 0; i < nl; i++)
      for (int e = 0; e < k; e++) {
        int32_t j = s->nbr[i * k + e];
        if (rrt_cell_blocks_owner(&s->plan, j) == r)
          out[ne++] = (edge){j, (int32_t)(s->c0 + i), s->nbr_d2[i * k + e]};
      }
    scount[r] = (size_t)ne * sizeof(edge) - sdispl[r];
  }
  RRT_CHECK_GOTO(rrt_host_alltoallv_alloc(s->ctx, out, scount, sdispl, (void **)&in, rcount), st,
                 done);
  size_t nin = 0;
  for (int r = 0; r < P; r++)
    nin += rcount[r] / sizeof(edge);
  size_t nall = nin + (size_t)nl * k + (size_t)nl;
  all = malloc(nall * sizeof(edge));
  if (!all) {
    st = OOM(s, "edges");
    goto done;
  }
  size_t na = 0;
  for (size_t e = 0; e < nin; e++)
    all[na++] = in[e];
  for (int64_t i = 0; i < nl; i++) {
    all[na++] = (edge){(int32_t)(s->c0 + i), (int32_t)(s->c0 + i), 0.0};
    for (int e = 0; e < k; e++)
      all[na++] = (edge){(int32_t)(s->c0 + i), s->nbr[i * k + e], s->nbr_d2[i * k + e]};
  }
  qsort(all, na, sizeof(edge), edge_cmp);
  /* d2 is the same bits from both ends ((a-b)^2 == (b-a)^2), so duplicates
   * of the union are dropped without choosing between values */
  s->mrow.rows = nl;
  s->mrow.ptr = calloc((size_t)nl + 1, sizeof(int64_t));
  s->mrow.col = malloc((na ? na : 1) * sizeof(int32_t));
  s->mrow.val = malloc((na ? na : 1) * sizeof(double));
  if (!s->mrow.ptr || !s->mrow.col || !s->mrow.val) {
    st = OOM(s, "M rows");
    goto done;
  }
  int64_t nz = 0;
  int intersect = s->opt.graph == RRT_SEACELLS_GRAPH_INTERSECT;
  for (size_t e = 0; e < na; e++) {
    if (e > 0 && all[e].to == all[e - 1].to && all[e].from == all[e - 1].from) continue;
    /* an edge listed by both ends comes twice (own list, transposed one) */
    int mutual = e + 1 < na && all[e + 1].to == all[e].to && all[e + 1].from == all[e].from;
    if (intersect && all[e].to != all[e].from && !mutual) continue;
    int64_t i = all[e].to - s->c0;
    s->mrow.col[nz] = all[e].from;
    s->mrow.val[nz] = rrt_sc_kernel(all[e].d2, (*sigma_all)[all[e].to], (*sigma_all)[all[e].from]);
    nz++;
    s->mrow.ptr[i + 1] = nz;
  }
  for (int64_t i = 0; i < nl; i++)
    if (s->mrow.ptr[i + 1] < s->mrow.ptr[i]) s->mrow.ptr[i + 1] = s->mrow.ptr[i];
done:
  free(scount);
  free(sdispl);
  free(rcount);
  free(out);
  free(in);
  free(all);
  return st;
}

/* Ghost rows: the M rows of remote neighbours, fetched from their owners. */

typedef struct mentry {
  int32_t col, pad;
  double val;
} mentry;

/* The remote cells local rows reference: unique, ascending (and hence
 * grouped by owner). */
static rrt_status ghost_cells(rrt_sc_run *s, int32_t **need, int64_t *count) {
  int64_t nnz = s->mrow.ptr[s->nl], nn = 0;
  int32_t *v = malloc((size_t)(nnz + 1) * sizeof(int32_t));
  *need = v;
  if (!v) return OOM(s, "ghost list");
  for (int64_t p = 0; p < nnz; p++)
    if (s->mrow.col[p] < s->c0 || s->mrow.col[p] >= s->c0 + s->nl) v[nn++] = s->mrow.col[p];
  rrt_sc_sort_i32(v, nn);
  int64_t u = 0;
  for (int64_t i = 0; i < nn; i++)
    if (u == 0 || v[i] != v[u - 1]) v[u++] = v[i];
  *count = u;
  return RRT_SUCCESS;
}

/* 1: the requests, each to the owner of the cell; on return *req holds the
 * cells other ranks asked of this one, rc[r] bytes of them from rank r. */
static rrt_status ghost_requests(rrt_sc_run *s, const int32_t *need, int64_t nn, int32_t **req,
                                 size_t *rc) {
  int P = s->size;
  size_t *sc = calloc((size_t)P, sizeof(size_t)), *sd = calloc((size_t)P, sizeof(size_t));
  rrt_status st = RRT_SUCCESS;
  if (!sc || !sd) {
    st = OOM(s, "ghost list");
    goto done;
  }
  for (int64_t i = 0, r = 0; r < P; r++) {
    sd[r] = (size_t)i * sizeof(int32_t);
    while (i < nn && rrt_cell_blocks_owner(&s->plan, need[i]) == r)
      i++;
    sc[r] = (size_t)i * sizeof(int32_t) - sd[r];
  }
  st = rrt_host_alltoallv_alloc(s->ctx, need, sc, sd, (void **)req, rc);
done:
  free(sc), free(sd);
  return st;
}

/* 2: the lengths of the requested rows, then 3: their entries, each in the
 * order requested, back to the requesters; on return this rank's answers
 * (*rlens, *rent) in the order of its own requests. */
static rrt_status ghost_answers(rrt_sc_run *s, const int32_t *req, const size_t *rc,
                                int32_t **rlens, mentry **rent) {
  int P = s->size;
  int64_t nreq = 0, nent = 0;
  for (int r = 0; r < P; r++)
    nreq += (int64_t)(rc[r] / sizeof(int32_t));
  int32_t *lens = malloc((size_t)(nreq + 1) * sizeof(int32_t));
  mentry *ent = NULL;
  size_t *cnt = calloc(5 * (size_t)P, sizeof(size_t)); /* lc, ld, ec, ed, received */
  rrt_status st = RRT_SUCCESS;
  if (!lens || !cnt) {
    st = OOM(s, "ghost rows");
    goto done;
  }
  for (int64_t q = 0; q < nreq; q++) {
    int64_t i = req[q] - s->c0;
    lens[q] = (int32_t)(s->mrow.ptr[i + 1] - s->mrow.ptr[i]);
    nent += lens[q];
  }
  ent = malloc((size_t)(nent + 1) * sizeof(mentry));
  if (!ent) {
    st = OOM(s, "ghost rows");
    goto done;
  }
  size_t *lc = cnt, *ld = cnt + P, *ec = cnt + 2 * P, *ed = cnt + 3 * P, *rc2 = cnt + 4 * P;
  int64_t q = 0, e = 0;
  for (int r = 0; r < P; r++) {
    ld[r] = (size_t)q * sizeof(int32_t);
    ed[r] = (size_t)e * sizeof(mentry);
    for (int64_t end = q + (int64_t)(rc[r] / sizeof(int32_t)); q < end; q++) {
      int64_t i = req[q] - s->c0;
      for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++)
        ent[e++] = (mentry){s->mrow.col[p], 0, s->mrow.val[p]};
    }
    lc[r] = (size_t)q * sizeof(int32_t) - ld[r];
    ec[r] = (size_t)e * sizeof(mentry) - ed[r];
  }
  st = rrt_host_alltoallv_alloc(s->ctx, lens, lc, ld, (void **)rlens, rc2);
  if (st == RRT_SUCCESS) st = rrt_host_alltoallv_alloc(s->ctx, ent, ec, ed, (void **)rent, rc2);
done:
  free(lens), free(ent), free(cnt);
  return st;
}

/* The ghost rows as CSR over the nn cells asked for, from the answers. */
static rrt_status ghost_rows(rrt_sc_run *s, rrt_sc_ghosts *g, int64_t nn, const int32_t *rlens,
                             const mentry *rent) {
  g->rows.rows = nn;
  g->rows.ptr = malloc((size_t)(nn + 1) * sizeof(int64_t));
  int64_t tot = 0;
  for (int64_t i = 0; i < nn; i++)
    tot += rlens[i];
  g->rows.col = malloc((size_t)(tot + 1) * sizeof(int32_t));
  g->rows.val = malloc((size_t)(tot + 1) * sizeof(double));
  if (!g->rows.ptr || !g->rows.col || !g->rows.val) return OOM(s, "ghost rows");
  g->rows.ptr[0] = 0;
  for (int64_t i = 0; i < nn; i++)
    g->rows.ptr[i + 1] = g->rows.ptr[i] + rlens[i];
  for (int64_t p = 0; p < tot; p++)
    g->rows.col[p] = rent[p].col, g->rows.val[p] = rent[p].val;
  return RRT_SUCCESS;
}

static rrt_status fetch_ghosts(rrt_sc_run *s, rrt_sc_ghosts *g) {
  int32_t *need = NULL, *req = NULL, *rlens = NULL;
  mentry *rent = NULL;
  int64_t nn = 0;
  size_t *rc = calloc((size_t)s->size, sizeof(size_t));
  memset(g, 0, sizeof *g);
  rrt_status st = rc ? ghost_cells(s, &need, &nn) : OOM(s, "ghost list");
  if (st == RRT_SUCCESS) st = ghost_requests(s, need, nn, &req, rc);
  if (st == RRT_SUCCESS) st = ghost_answers(s, req, rc, &rlens, &rent);
  if (st == RRT_SUCCESS) {
    g->count = nn;
    g->cell = need;
    need = NULL;
    st = ghost_rows(s, g, nn, rlens, rent);
  }
  free(need), free(req), free(rlens), free(rent), free(rc);
  return st;
}

/* K_ii = sum over l of M_il M_li (M is symmetric bit for bit: both ends
 * of an edge compute the same d2 and the same product of bandwidths). */
static rrt_status build_kdiag(rrt_sc_run *s) {
  s->kdiag = malloc((size_t)(s->nl + 1) * sizeof(double));
  if (!s->kdiag) return OOM(s, "K diagonal");
  for (int64_t i = 0; i < s->nl; i++) {
    double v = 0.0;
    for (int64_t p = s->mrow.ptr[i]; p < s->mrow.ptr[i + 1]; p++)
      v = v + s->mrow.val[p] * s->mrow.val[p];
    s->kdiag[i] = v;
  }
  return RRT_SUCCESS;
}

rrt_status rrt_sc_finish_graph(rrt_sc_run *s) {
  rrt_status st = fetch_ghosts(s, &s->ghost);
  if (st == RRT_SUCCESS) st = build_kdiag(s);
  if (st == RRT_SUCCESS) st = rrt_sc_locality_order(s);
  return st;
}

void rrt_sc_graph_convention(int64_t n, int n_neighbors, int *count, int *kbw) {
  *count = n < RRT_SC_DENSE_KNN_MAX ? n_neighbors - 1 : n_neighbors;
  *kbw = n_neighbors / 2;
}

rrt_status rrt_sc_build_graph(rrt_sc_run *s) {
  double t0 = rrt_time_now();
  rrt_status st = rrt_agree(s->ctx, rrt_sc_knn(s, s->knn, &s->nbr, &s->nbr_d2));
  if (st != RRT_SUCCESS) return st;
  int k = s->knn, kb = s->kbw;
  s->sigma = malloc((size_t)(s->nl + 1) * sizeof(double));
  if (!s->sigma) return rrt_agree(s->ctx, OOM(s, "bandwidths"));
  for (int64_t i = 0; i < s->nl; i++)
    s->sigma[i] = sqrt(s->nbr_d2[i * k + kb - 1]);
  double t1 = rrt_time_now();
  s->sec[RRT_SC_PHASE_KNN] += t1 - t0;
  double *sigma_all = NULL;
  st = build_m(s, &sigma_all);
  free(sigma_all);
  if (st == RRT_SUCCESS) st = rrt_sc_finish_graph(s);
  s->sec[RRT_SC_PHASE_KERNEL] += rrt_time_now() - t1;
  st = rrt_agree(s->ctx, st);
  if (st == RRT_SUCCESS && s->opt.verbose) { /* graph sizes: what the memory scales with */
    int64_t nz[2] = {s->mrow.ptr[s->nl], s->ghost.rows.ptr ? s->ghost.rows.ptr[s->ghost.count] : 0};
    st = rrt_host_allreduce(s->ctx, nz, nz, 2, RRT_DTYPE_I64, RRT_OP_SUM);
    if (st == RRT_SUCCESS && s->rank == 0)
      fprintf(stderr, "seacells: graph: M %.1f nonzeros per cell, %.1f ghost entries per cell\n",
              (double)nz[0] / (double)s->n, (double)nz[1] / (double)s->n);
  }
  return st;
}

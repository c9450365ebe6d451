/* The A update on the cpu (see rrt_sc_cpu_a_solve in kernels/cpu/seacells.h).
 *
 * Per cell, gradient g_j = 2 (u_j - t2_j) with u = T1a a >= 0 and t2 the
 * cell's K B row >= 0. Outside T (the archetypes of the K B row) g_j = 2 u_j
 * >= 0, and u_j > 0 exactly where some T1a row of the current vertices has
 * an entry (R). So the argmin is the minimum over T or the lowest archetype
 * outside T and R (g = 0 there), except when there is no such archetype
 * and T's minimum is positive: then the cell takes the full path, which
 * keeps u over every archetype it reaches. The fast path keeps u only over
 * T and marks R once per new vertex: per cell a cost in |T| and the rows
 * marked, not in (archetypes reached) x (Frank-Wolfe steps).
 *
 * "u_j > 0 on R" holds while no product underflows: u_j is at least
 * tau a_min / (T + 2)^2 (tau the smallest T1a entry, a_min the smallest
 * weight the cell starts from; each step scales u by at least 1 - f), and
 * the fast path runs only when that bound is far above the smallest
 * normal double. Both paths give the dense loop's bits (the one in
 * src/kernels/cuda/seacells.cu). */
#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"

/* Per-thread scratch: dense m-vectors that stay zero outside the cell's
 * lists (reset after each cell). */
typedef struct a_scratch {
  double *t2, *u, *a, *row;
  double *av;                /* the fast path's weights by vertex slot (vtx[q]'s is av[q]) */
  int32_t *set, *vtx, *slot; /* slot[j]: j's place in vtx, valid where in_v[j] */
  char *in, *row_in, *in_v;
} a_scratch;

typedef struct a_cell {
  int m, fw_iter, capa, first;
  const int64_t *kptr;
  const int32_t *kcol;
  const double *kval;
  const int32_t *bfirst, *bcnt, *bent_j;
  const double *bent_w;
  const rrt_sc_kk *t1a;
} a_cell;

static void a_add(a_scratch *w, int *ns, int32_t j) {
  if (!w->in[j]) w->in[j] = 1, w->set[(*ns)++] = j;
}

/* Archetypes whose u entry can become nonzero once row l of T1a enters. */
static void a_add_row(a_scratch *w, int *ns, const rrt_sc_kk *r, int32_t l) {
  if (w->row_in[l]) return;
  w->row_in[l] = 1;
  for (int64_t q = r->ptr[l]; q < r->ptr[l + 1]; q++)
    a_add(w, ns, r->col[q]);
}

/* t2 = row i of K B, summed over the K row in column order; its archetypes
 * (T) are the first entries of the set. */
static int a_t2(const a_cell *c, a_scratch *w, int64_t i) {
  int ns = 0;
  for (int64_t p = c->kptr[i]; p < c->kptr[i + 1]; p++) {
    int32_t cc = c->kcol[p];
    for (int32_t e = c->bfirst[cc]; e < c->bfirst[cc] + c->bcnt[cc]; e++) {
      a_add(w, &ns, c->bent_j[e]);
      w->t2[c->bent_j[e]] = w->t2[c->bent_j[e]] + c->kval[p] * c->bent_w[e];
    }
  }
  return ns;
}

/* The column of cell i from the set's nonzero weights (ascending; the
 * first capa of them), and the scratch reset over the set. Only the
 * nonzeros are sorted (the vertices: the set also holds every archetype
 * the T1a rows reached). vtx is free by now and holds them. */
static void a_store(const a_cell *c, a_scratch *w, int ns, int64_t i, int32_t *a_idx, double *a_w,
                    int *a_nnz) {
  int nz = 0;
  for (int q = 0; q < ns; q++)
    if (w->a[w->set[q]] != 0.0) w->vtx[nz++] = w->set[q];
  rrt_sc_sort_i32(w->vtx, nz);
  nz = nz < c->capa ? nz : c->capa;
  for (int q = 0; q < nz; q++) {
    a_idx[i * c->capa + q] = w->vtx[q];
    a_w[i * c->capa + q] = w->a[w->vtx[q]];
  }
  for (int q = 0; q < ns; q++) {
    int32_t j = w->set[q];
    w->t2[j] = 0.0, w->u[j] = 0.0, w->a[j] = 0.0, w->in[j] = 0, w->row_in[j] = 0;
  }
  a_nnz[i] = nz;
}

/* The full path: u over every archetype reached. */
/* The Frank-Wolfe vertex of one step: the lowest-gradient archetype of the
 * set's first nset entries or the lowest archetype outside the set (*z,
 * advanced past members; gradient exactly 0 there), lowest index on ties;
 * -1 when there is neither. */
static int a_vertex(const a_scratch *w, int nset, int m, int *z, double *gbest) {
  while (*z < m && w->in[*z])
    (*z)++;
  int amin = -1;
  double gb = 0.0;
  if (*z < m) amin = *z, gb = rrt_sc_grad(0.0, 0.0);
  for (int q = 0; q < nset; q++) {
    int32_t j = w->set[q];
    double g = rrt_sc_grad(w->u[j], w->t2[j]);
    if (amin < 0 || rrt_sc_argmin_better(g, j, gb, amin)) gb = g, amin = j;
  }
  *gbest = gb;
  return amin;
}

static void a_full(const a_cell *c, a_scratch *w, int64_t i, int32_t *a_idx, double *a_w,
                   int *a_nnz) {
  const rrt_sc_kk *t1a = c->t1a;
  int m = c->m, ns = a_t2(c, w, i);
  /* u = T1a a for the current column (ascending archetype); the zero
   * entries of T1a add +0 to a non-negative sum, so skipping them keeps
   * the dense loop's bits */
  if (!c->first) {
    for (int e = 0; e < a_nnz[i]; e++) {
      int32_t l = a_idx[i * c->capa + e];
      double al = a_w[i * c->capa + e];
      w->a[l] = al;
      a_add(w, &ns, l);
      a_add_row(w, &ns, t1a, l);
      for (int64_t q = t1a->ptr[l]; q < t1a->ptr[l + 1]; q++)
        w->u[t1a->col[q]] = w->u[t1a->col[q]] + t1a->val[q] * al;
    }
  }
  int z = 0; /* lowest archetype outside the set: gradient exactly 0 there */
  for (int t = 0; t < c->fw_iter; t++) {
    double gbest;
    int amin = a_vertex(w, ns, m, &z, &gbest);
    a_add(w, &ns, amin);
    a_add_row(w, &ns, t1a, amin);
    double f = rrt_sc_fw_step(t);
    /* row amin of T1a, dense over the set (its columns are in it) */
    const int64_t r0 = t1a->ptr[amin], r1 = t1a->ptr[amin + 1];
    for (int64_t q = r0; q < r1; q++)
      w->row[t1a->col[q]] = t1a->val[q];
    for (int q = 0; q < ns; q++) {
      int32_t j = w->set[q];
      w->a[j] = rrt_sc_fw_move(w->a[j], f, j == amin);
      w->u[j] = f == 1.0 ? w->row[j] : w->u[j] + f * (w->row[j] - w->u[j]);
    }
    for (int64_t q = r0; q < r1; q++)
      w->row[t1a->col[q]] = 0.0;
  }
  a_store(c, w, ns, i, a_idx, a_w, a_nnz);
}

/* Unmark the set's entries past T (R) and the rows marked (the vertices'). */
static void a_unmark_r(a_scratch *w, int nt, int *ns, int nv) {
  for (int q = nt; q < *ns; q++)
    w->in[w->set[q]] = 0;
  for (int q = 0; q < nv; q++)
    w->row_in[w->vtx[q]] = 0;
  *ns = nt;
}

/* One Frank-Wolfe move of the vertices' weights (slot `at` is the
 * vertex): contiguous, so it vectorises. */
static void fw_move_slots(double *restrict av, int nv, double f, int at) {
  for (int q = 0; q < nv; q++)
    av[q] = rrt_sc_fw_move(av[q], f, q == at);
}

/* The fast path; returns 0 (scratch clean, nothing written) when the cell
 * needs the full path. */
static int a_fast(const a_cell *c, a_scratch *w, int64_t i, int32_t *a_idx, double *a_w,
                  int *a_nnz) {
  const rrt_sc_kk *t1a = c->t1a;
  int m = c->m, nt = a_t2(c, w, i), ns = nt, nv = 0;
  /* u over T from the current column, each u_j summed over it ascending */
  if (!c->first)
    for (int e = 0; e < a_nnz[i]; e++) {
      int32_t l = a_idx[i * c->capa + e];
      double al = a_w[i * c->capa + e];
      w->in_v[l] = 1, w->slot[l] = nv, w->av[nv] = al, w->vtx[nv++] = l;
      a_add_row(w, &ns, t1a, l);
      for (int q = 0; q < nt; q++) {
        double v = rrt_sc_kk_at(t1a, l, w->set[q]);
        if (v != 0.0) w->u[w->set[q]] = w->u[w->set[q]] + v * al;
      }
    }
  int z = 0, ok = 1;
  for (int t = 0; t < c->fw_iter && ok; t++) {
    double gbest;
    int amin = a_vertex(w, nt, m, &z, &gbest);
    if (z == m && (amin < 0 || !(gbest <= 0.0))) { /* the minimum may be a positive u_j on R */
      ok = 0;
      break;
    }
    double f = rrt_sc_fw_step(t);
    if (f == 1.0) a_unmark_r(w, nt, &ns, nv), z = 0; /* a = e_amin: u is row amin from here */
    a_add_row(w, &ns, t1a, amin);
    if (!w->in_v[amin]) w->in_v[amin] = 1, w->slot[amin] = nv, w->av[nv] = 0.0, w->vtx[nv++] = amin;
    fw_move_slots(w->av, nv, f, w->slot[amin]);
    for (int q = 0; q < nt; q++) {
      int32_t j = w->set[q];
      double r = rrt_sc_kk_at(t1a, amin, j);
      w->u[j] = f == 1.0 ? r : w->u[j] + f * (r - w->u[j]);
    }
  }
  /* the vertices join the set (their weights are the only nonzero ones) */
  for (int q = 0; q < nv; q++) {
    a_add(w, &ns, w->vtx[q]);
    w->a[w->vtx[q]] = w->av[q];
    w->in_v[w->vtx[q]] = 0;
  }
  if (!ok) {
    for (int q = 0; q < ns; q++) {
      int32_t j = w->set[q];
      w->t2[j] = 0.0, w->u[j] = 0.0, w->a[j] = 0.0, w->in[j] = 0, w->row_in[j] = 0;
    }
    return 0;
  }
  a_store(c, w, ns, i, a_idx, a_w, a_nnz);
  return 1;
}

/* May cell i take the fast path: no u_j on R can underflow to 0. */
static int a_fast_ok(const a_cell *c, double tau, int64_t i, const double *a_w, const int *a_nnz) {
  double amin = 1.0;
  if (!c->first)
    for (int e = 0; e < a_nnz[i]; e++)
      amin = a_w[i * c->capa + e] < amin ? a_w[i * c->capa + e] : amin;
  double steps = (double)c->fw_iter + 2.0;
  return tau * amin / (steps * steps) > 0x1p-960;
}

rrt_status rrt_sc_cpu_a_solve(int64_t nl, const int32_t *order, int m, int fw_iter, int capa,
                              const int64_t *kptr, const int32_t *kcol, const double *kval,
                              const int32_t *bfirst, const int32_t *bcnt, const int32_t *bent_j,
                              const double *bent_w, const rrt_sc_kk *t1a_rows, int first,
                              int32_t *a_idx, double *a_w, int *a_nnz) {
  const a_cell c = {m,    fw_iter, capa, first,  kptr,   kcol,
                    kval, bfirst,  bcnt, bent_j, bent_w, t1a_rows};
  double tau = INFINITY; /* the smallest T1a entry (a stored 0 turns the fast path off) */
  for (int64_t q = 0; q < t1a_rows->ptr[m]; q++)
    if (!(t1a_rows->val[q] >= tau)) tau = t1a_rows->val[q];
  if (!(tau >= 0.0)) tau = 0.0;
  int failed = 0;
#pragma omp parallel if (nl >= RRT_SC_PAR_MIN)
  {
    a_scratch w;
    w.t2 = calloc((size_t)m * 5, sizeof(double));
    w.u = w.t2 + m, w.a = w.t2 + 2 * m, w.row = w.t2 + 3 * m, w.av = w.t2 + 4 * m;
    w.set = malloc((size_t)m * 3 * sizeof(int32_t));
    w.vtx = w.set + m, w.slot = w.set + 2 * m;
    w.in = calloc((size_t)m * 3, 1);
    w.row_in = w.in + m, w.in_v = w.in + 2 * m;
    const int have = w.t2 && w.set && w.in;
    if (!have) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 64)
    for (int64_t r = 0; r < nl; r++) {
      if (!have) continue;              /* every thread still takes its share of the loop */
      int64_t i = order ? order[r] : r; /* neighbours' rows lie near each other in this order */
      if (!a_fast_ok(&c, tau, i, a_w, a_nnz) || !a_fast(&c, &w, i, a_idx, a_w, a_nnz))
        a_full(&c, &w, i, a_idx, a_w, a_nnz);
    }
    free(w.t2);
    free(w.set);
    free(w.in);
  }
  return failed ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

/* Context parallelism by all-to-all (DeepSpeed-Ulysses; TransformerEngine's
 * cp_comm_type "a2a").
 *
 * Forward: one all-to-all turns this rank's sequence shard of Q, K and V
 * (every head) into head shards over the whole sequence: rank j receives
 * query heads [j * hq, (j + 1) * hq) and the K/V heads they use
 * (sched/cp_model.h: split when heads_kv % P == 0, else replicated in the
 * smallest groups), every row placed at its global position, so whatever
 * the input layout the local problem is in natural order. A plan of this
 * rank alone (P = 1, contiguous, the same masks and documents:
 * rrt_attn_plan_local) runs the local attention with the ring's kernels; a
 * second all-to-all returns O and the LSE to the rows' owners.
 *
 * Backward: Q, K, V, O, dO and the LSE go out the same way, the local
 * backward runs, and dQ (storage dtype: a permutation) and the f32 dK/dV
 * sums come back; the owner adds the copies of a replicated K/V head in a
 * fixed order (ranks, then local heads, ascending) and rounds once.
 *
 * The rows are packed on the host: this mode needs host-addressable backend
 * memory (cpu, emu; cp_plan.c refuses cuda). Each all-to-all is one grouped
 * point-to-point exchange (rrt_p2p_group: every wait has the timeout). */
#include <stdlib.h>
#include <string.h>

#include "attn/cp_impl.h"
#include "comm/error.h"
#include "kernels/attn_math.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

/* ---- sizes ------------------------------------------------------------------ */

static int64_t len_of(const rrt_attn_plan_t p, int j) {
  return p->cpx->off[j + 1] - p->cpx->off[j];
}
static const int64_t *pos_of(const rrt_attn_plan_t p, int j) {
  return p->cpx->pos + p->cpx->off[j];
}

static rrt_status tensors_alloc(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const size_t es = rrt_dtype_size(d->dtype), D = (size_t)d->head_dim, B = (size_t)d->batch;
  const size_t S = (size_t)d->seq, hq = (size_t)x->h.hq, hkv = (size_t)x->h.hkv;
  const size_t nq = B * S * hq * D * es, nk = B * S * hkv * D * es;
  void **q[] = {&x->qf, &x->of, &x->dof, &x->dqf}, **k[] = {&x->kf, &x->vf, &x->dkf, &x->dvf};
  for (int i = 0; i < 4; i++) {
    RRT_CHECK(rrt_malloc(p->ctx, nq, q[i]));
    RRT_CHECK(rrt_malloc(p->ctx, nk, k[i]));
  }
  RRT_CHECK(rrt_malloc(p->ctx, B * hq * S * sizeof(float), (void **)&x->lsef));
  /* the largest exchange: the backward's inputs (Q, O, dO, K, V, LSE) or
   * outputs (dQ; dK, dV in f32), over at most P * kv_rows rows */
  const size_t rows = B * (size_t)p->P * (size_t)p->sched->kv_rows;
  x->xbytes = rows * ((3 * hq + 2 * hkv) * D * es + hq * sizeof(float) + 2 * hkv * D * 4) + 1;
  RRT_CHECK(rrt_malloc(p->ctx, x->xbytes, (void **)&x->sbuf));
  RRT_CHECK(rrt_malloc(p->ctx, x->xbytes, (void **)&x->rbuf));
  const size_t L = (size_t)len_of(p, p->rank);
  x->dkv_acc = malloc(2 * B * L * (size_t)d->heads_kv * D * sizeof(float) + 1);
  return x->dkv_acc ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

/* The head split, every rank's positions, the local plan and its tensors. */
rrt_status rrt_attn_a2a_create(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const int P = p->P;
  rrt_cp_heads_split(d->heads_q, d->heads_kv, P, &x->h);
  x->kvmap = malloc(sizeof(int) * (size_t)(P * x->h.hkv));
  x->off = malloc(sizeof(int64_t) * (size_t)(P + 1));
  x->pos = malloc(sizeof(int64_t) * (size_t)(d->seq + 1));
  x->sz = calloc(4 * (size_t)P, sizeof(size_t));
  if (!x->kvmap || !x->off || !x->pos || !x->sz)
    return rrt_error(p->ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "a2a maps");
  for (int j = 0; j < P; j++)
    for (int i = 0; i < x->h.hkv; i++)
      x->kvmap[j * x->h.hkv + i] = rrt_cp_kv_head(&x->h, d->heads_q, d->heads_kv, j, i);
  x->off[0] = 0;
  for (int j = 0; j < P; j++) {
    rrt_ring_sched_positions(p->sched, j, x->pos + x->off[j]);
    x->off[j + 1] = x->off[j] + p->sched->len[j];
  }
  rrt_attn_desc ld = *d;
  ld.heads_q = x->h.hq;
  ld.heads_kv = x->h.hkv;
  ld.layout = RRT_ATTN_CONTIGUOUS;
  ld.cp_comm = RRT_CP_RING;
  RRT_CHECK(rrt_attn_plan_local(p->ctx, &ld, &x->inner));
  rrt_status st = tensors_alloc(p);
  if (st != RRT_SUCCESS)
    return rrt_error(p->ctx, st, rrt_attn_op_create, "a2a buffers (%zu bytes each way)", x->xbytes);
  return RRT_SUCCESS;
}

/* ---- packing (host) ----------------------------------------------------------- */

/* dst[b][l][0..n) = src[b][l][heads] of a [B][L][H] shard of head rows of
 * hb bytes; heads = map[0..n) or first .. first + n - 1 (map NULL). */
static char *pack_heads(char *dst, const char *src, int64_t B, int64_t L, int H, const int *map,
                        int first, int n, size_t hb) {
  for (int64_t r = 0; r < B * L; r++)
    if (!map) {
      memcpy(dst + (size_t)r * n * hb, src + ((size_t)r * H + first) * hb, n * hb);
    } else {
      for (int i = 0; i < n; i++)
        memcpy(dst + ((size_t)r * n + i) * hb, src + ((size_t)r * H + map[i]) * hb, hb);
    }
  return dst + (size_t)(B * L) * n * hb;
}

/* shard[b][l][first .. first + n) = src[b][l][0..n). */
static const char *unpack_heads(char *shard, const char *src, int64_t B, int64_t L, int H,
                                int first, int n, size_t hb) {
  for (int64_t r = 0; r < B * L; r++)
    memcpy(shard + ((size_t)r * H + first) * hb, src + (size_t)r * n * hb, n * hb);
  return src + (size_t)(B * L) * n * hb;
}

/* Rows of the whole sequence [B][S] (rows of rb bytes) at positions pos of
 * one shard: dst[b][l] = full[b][pos[l]] (to = 0), or the reverse (to = 1). */
static size_t move_rows(char *full, char *blk, int64_t B, int64_t L, const int64_t *pos, int64_t S,
                        size_t rb, int to_full) {
  for (int64_t b = 0; b < B; b++)
    for (int64_t l = 0; l < L; l++) {
      char *f = full + ((size_t)(b * S + pos[l])) * rb, *s = blk + (size_t)(b * L + l) * rb;
      memcpy(to_full ? f : s, to_full ? s : f, rb);
    }
  return (size_t)(B * L) * rb;
}

/* LSE [B][heads][len] blocks: full [B][hq][S] at positions pos (to_full),
 * or a shard's [B][H][L] heads first .. first + hq. */
static size_t lse_full(float *full, float *blk, int64_t B, int hq, int64_t L, const int64_t *pos,
                       int64_t S, int to_full) {
  for (int64_t b = 0; b < B; b++)
    for (int h = 0; h < hq; h++)
      for (int64_t l = 0; l < L; l++) {
        float *f = full + ((size_t)(b * hq + h)) * (size_t)S + (size_t)pos[l];
        float *s = blk + ((size_t)(b * hq + h)) * (size_t)L + (size_t)l;
        *(to_full ? f : s) = *(to_full ? s : f);
      }
  return (size_t)(B * hq * L) * sizeof(float);
}

static size_t lse_shard(float *shard, float *blk, int64_t B, int H, int first, int hq, int64_t L,
                        int to_shard) {
  for (int64_t b = 0; b < B; b++)
    for (int h = 0; h < hq; h++) {
      float *sh = shard + ((size_t)(b * H + first + h)) * (size_t)L;
      float *bl = blk + ((size_t)(b * hq + h)) * (size_t)L;
      memcpy(to_shard ? sh : bl, to_shard ? bl : sh, (size_t)L * sizeof(float));
    }
  return (size_t)(B * hq * L) * sizeof(float);
}

/* ---- the exchange --------------------------------------------------------------- */

/* One all-to-all(v): sb[j] bytes at soff[j] of sbuf to rank j, rb[j] bytes
 * from rank j at roff[j] of rbuf (this rank's own part copied). Each
 * rank's sizes are the mirror of its peers', from the same plan. */
static rrt_status exchange(rrt_attn_plan_t p, const char *op, const size_t *sb, const size_t *soff,
                           const size_t *rb, const size_t *roff) {
  rrt_attn_cpx *x = p->cpx;
  const int P = p->P, r = p->rank;
  memcpy(x->rbuf + roff[r], x->sbuf + soff[r], sb[r]);
  rrt_p2p *m = malloc(2 * (size_t)P * sizeof *m);
  if (!m) return rrt_error(p->ctx, RRT_ERR_OUT_OF_MEMORY, op, "all-to-all lists");
  int ns = 0, nr = 0;
  double sent = 0;
  for (int j = 0; j < P; j++) {
    if (j == r) continue;
    if (sb[j]) m[ns++] = (rrt_p2p){j, x->sbuf + soff[j], sb[j]};
    if (rb[j]) m[P + nr++] = (rrt_p2p){j, x->rbuf + roff[j], rb[j]};
    sent += (double)sb[j];
  }
  rrt_request_t req = NULL;
  rrt_status st = ns + nr ? rrt_p2p_group(p->ctx, m, ns, m + P, nr, &req) : RRT_SUCCESS;
  free(m);
  RRT_CHECK(st);
  RRT_CHECK(rrt_request_wait(req));
  x->xsent[x->nx] = sent;
  return RRT_SUCCESS;
}

static void prefix(const size_t *b, size_t *off, int P) {
  off[0] = 0;
  for (int j = 1; j < P; j++)
    off[j] = off[j - 1] + b[j - 1];
}

/* Start and end of exchange number x->nx (comm spans include the packing). */
static void x_begin(rrt_attn_cpx *x, const char *name, double *t) {
  x->xname[x->nx] = name;
  *t = rrt_time_now();
}
static void x_end(rrt_attn_cpx *x, double t) {
  x->xb[x->nx] = t;
  x->xe[x->nx] = rrt_time_now();
  x->nx++;
}

/* ---- the runs -------------------------------------------------------------------- */

typedef struct a2a_io {
  const void *q, *k, *v, *o, *dout; /* this rank's shards */
  const float *lse;
  int bwd; /* the backward's inputs: O, dO and the LSE too */
} a2a_io;

/* Sequence shards in, head shards over the whole sequence out (natural order). */
static rrt_status scatter_heads(rrt_attn_plan_t p, const a2a_io *io) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const int P = p->P, r = p->rank, hq = x->h.hq, hkv = x->h.hkv;
  const int64_t B = d->batch, S = d->seq, Lr = len_of(p, r);
  const size_t hb = (size_t)d->head_dim * rrt_dtype_size(d->dtype);
  const size_t per_row = (io->bwd ? 3 : 1) * hq * hb + 2 * hkv * hb + (io->bwd ? hq * 4 : 0);
  size_t *sb = x->sz, *rb = sb + P, *soff = rb + P, *roff = soff + P;
  for (int j = 0; j < P; j++)
    sb[j] = (size_t)(B * Lr) * per_row, rb[j] = (size_t)(B * len_of(p, j)) * per_row;
  prefix(sb, soff, P);
  prefix(rb, roff, P);
  double t;
  x_begin(x, io->bwd ? "a2a in (q k v o do lse)" : "a2a in (q k v)", &t);
  for (int j = 0; j < P; j++) {
    char *s = x->sbuf + soff[j];
    s = pack_heads(s, io->q, B, Lr, d->heads_q, NULL, j * hq, hq, hb);
    s = pack_heads(s, io->k, B, Lr, d->heads_kv, x->kvmap + j * hkv, 0, hkv, hb);
    s = pack_heads(s, io->v, B, Lr, d->heads_kv, x->kvmap + j * hkv, 0, hkv, hb);
    if (!io->bwd) continue;
    s = pack_heads(s, io->o, B, Lr, d->heads_q, NULL, j * hq, hq, hb);
    s = pack_heads(s, io->dout, B, Lr, d->heads_q, NULL, j * hq, hq, hb);
    lse_shard((float *)io->lse, (float *)s, B, d->heads_q, j * hq, hq, Lr, 0);
  }
  RRT_CHECK(exchange(p, io->bwd ? rrt_attn_op_run_bwd : rrt_attn_op_run, sb, soff, rb, roff));
  for (int j = 0; j < P; j++) {
    char *s = x->rbuf + roff[j];
    const int64_t Lj = len_of(p, j), *pj = pos_of(p, j);
    s += move_rows(x->qf, s, B, Lj, pj, S, hq * hb, 1);
    s += move_rows(x->kf, s, B, Lj, pj, S, hkv * hb, 1);
    s += move_rows(x->vf, s, B, Lj, pj, S, hkv * hb, 1);
    if (!io->bwd) continue;
    s += move_rows(x->of, s, B, Lj, pj, S, hq * hb, 1);
    s += move_rows(x->dof, s, B, Lj, pj, S, hq * hb, 1);
    lse_full(x->lsef, (float *)s, B, hq, Lj, pj, S, 1);
  }
  x_end(x, t);
  return RRT_SUCCESS;
}

/* The sizes and offsets (x->sz: send, receive, send offsets, receive
 * offsets) of an exchange that brings rows of per_row bytes back to their
 * owners: rank j gets its B * L_j rows from here, this rank its B * L_r
 * rows from every rank. */
static size_t *owner_layout(rrt_attn_plan_t p, size_t per_row) {
  rrt_attn_cpx *x = p->cpx;
  const int P = p->P;
  const int64_t B = p->d.batch, Lr = len_of(p, p->rank);
  size_t *sb = x->sz, *rb = sb + P;
  for (int j = 0; j < P; j++)
    sb[j] = (size_t)(B * len_of(p, j)) * per_row, rb[j] = (size_t)(B * Lr) * per_row;
  prefix(sb, rb + P, P);
  prefix(rb, rb + 2 * P, P);
  return sb;
}

/* O and the LSE back to the rows' owners. */
static rrt_status gather_out(rrt_attn_plan_t p, void *o, float *lse) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const int P = p->P, r = p->rank, hq = x->h.hq;
  const int64_t B = d->batch, S = d->seq, Lr = len_of(p, r);
  const size_t hb = (size_t)d->head_dim * rrt_dtype_size(d->dtype), per_row = hq * (hb + 4);
  size_t *sb = owner_layout(p, per_row), *rb = sb + P, *soff = rb + P, *roff = soff + P;
  double t;
  x_begin(x, "a2a out (o lse)", &t);
  for (int j = 0; j < P; j++) {
    char *s = x->sbuf + soff[j];
    const int64_t Lj = len_of(p, j), *pj = pos_of(p, j);
    s += move_rows(x->of, s, B, Lj, pj, S, hq * hb, 0);
    lse_full(x->lsef, (float *)s, B, hq, Lj, pj, S, 0);
  }
  RRT_CHECK(exchange(p, rrt_attn_op_run, sb, soff, rb, roff));
  for (int j = 0; j < P; j++) {
    const char *s = x->rbuf + roff[j];
    s = unpack_heads(o, s, B, Lr, d->heads_q, j * hq, hq, hb);
    if (lse) lse_shard(lse, (float *)s, B, d->heads_q, j * hq, hq, Lr, 1);
  }
  x_end(x, t);
  return RRT_SUCCESS;
}

/* dK/dV: the f32 sums of every copy of a K/V head, in the fixed order
 * (ranks ascending, then local heads), rounded once into dk and dv. */
static void sum_dkv(rrt_attn_plan_t p, const size_t *roff, void *dk, void *dv) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const int hq = x->h.hq, hkv = x->h.hkv, H = d->heads_kv, D = d->head_dim;
  const int64_t BL = d->batch * len_of(p, p->rank);
  const size_t n = (size_t)BL * (size_t)H * (size_t)D, hb = (size_t)D * rrt_dtype_size(d->dtype);
  memset(x->dkv_acc, 0, 2 * n * sizeof(float));
  for (int j = 0; j < p->P; j++) {
    const float *s = (const float *)(x->rbuf + roff[j] + (size_t)BL * hq * hb);
    for (int t = 0; t < 2; t++)
      for (int64_t r = 0; r < BL; r++)
        for (int i = 0; i < hkv; i++, s += D) {
          float *a = x->dkv_acc + t * n + ((size_t)r * H + (size_t)x->kvmap[j * hkv + i]) * D;
          for (int e = 0; e < D; e++)
            a[e] += s[e];
        }
  }
  for (size_t i = 0; i < n; i++) {
    rrt_am_store(dk, (int64_t)i, (int)d->dtype, x->dkv_acc[i]);
    rrt_am_store(dv, (int64_t)i, (int)d->dtype, x->dkv_acc[n + i]);
  }
}

/* dQ (storage dtype) and the f32 dK/dV of the local problem back to the owners. */
static rrt_status gather_grads(rrt_attn_plan_t p, const float *dkv, void *dq, void *dk, void *dv) {
  rrt_attn_cpx *x = p->cpx;
  const rrt_attn_desc *d = &p->d;
  const int P = p->P, r = p->rank, hq = x->h.hq, hkv = x->h.hkv;
  const int64_t B = d->batch, S = d->seq, Lr = len_of(p, r);
  const size_t hb = (size_t)d->head_dim * rrt_dtype_size(d->dtype), fb = (size_t)d->head_dim * 4;
  const size_t per_row = hq * hb + 2 * hkv * fb, half = (size_t)(B * S) * hkv * fb;
  size_t *sb = owner_layout(p, per_row), *rb = sb + P, *soff = rb + P, *roff = soff + P;
  double t;
  x_begin(x, "a2a out (dq dk dv)", &t);
  for (int j = 0; j < P; j++) {
    char *s = x->sbuf + soff[j];
    const int64_t Lj = len_of(p, j), *pj = pos_of(p, j);
    s += move_rows(x->dqf, s, B, Lj, pj, S, hq * hb, 0);
    s += move_rows((char *)dkv, s, B, Lj, pj, S, hkv * fb, 0);
    move_rows((char *)dkv + half, s, B, Lj, pj, S, hkv * fb, 0);
  }
  RRT_CHECK(exchange(p, rrt_attn_op_run_bwd, sb, soff, rb, roff));
  for (int j = 0; j < P; j++)
    unpack_heads(dq, x->rbuf + roff[j], B, Lr, d->heads_q, j * hq, hq, hb);
  sum_dkv(p, roff, dk, dv);
  x_end(x, t);
  return RRT_SUCCESS;
}

/* The figures of a run: the local plan's compute, the exchanges' comm. */
static void collect(rrt_attn_plan_t p, double t0, int bwd) {
  rrt_attn_stats *S = &p->stats;
  const rrt_attn_stats *in = &p->cpx->inner->stats;
  rrt_attn_cpx *x = p->cpx;
  memset(S, 0, sizeof *S);
  S->total_s = rrt_time_now() - t0;
  S->steps = 1;
  S->backward = bwd;
  S->compute_s = in->compute_s;
  S->flops = in->flops;
  for (int i = 0; i < x->nx; i++) {
    S->comm_s += x->xe[i] - x->xb[i];
    S->bytes_sent += x->xsent[i];
    rrt_trace_add(p->ctx, RRT_TRACK_COMM, x->xname[i], x->xb[i], x->xe[i]);
  }
  if (bwd) S->handoff_s = S->handoff_exposed_s = x->xe[x->nx - 1] - x->xb[x->nx - 1];
  S->comm_exposed_s = S->comm_s;
  S->hidden_share = S->comm_s > 0 ? 0.0 : 1.0;
}

/* The caller's tensors are read by the host: queued work first. */
static rrt_status sync_all(rrt_attn_plan_t p) {
  if (!p->async) return RRT_SUCCESS;
  RRT_CHECK(p->dev->stream_sync(p->compute_stream));
  return p->dev->stream_sync(p->comm_stream);
}

rrt_status rrt_attn_a2a_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                            const float *sinks, void *o, float *lse) {
  rrt_attn_cpx *x = p->cpx;
  RRT_CHECK(sync_all(p));
  const double t0 = rrt_time_now();
  x->nx = 0;
  const a2a_io io = {q, k, v, NULL, NULL, NULL, 0};
  RRT_CHECK(scatter_heads(p, &io));
  (void)sinks; /* plans with sinks are refused (cp_plan.c) */
  RRT_CHECK(rrt_attn_ring_fwd(x->inner, x->qf, x->kf, x->vf, NULL, x->of, x->lsef));
  RRT_CHECK(gather_out(p, o, lse));
  collect(p, t0, 0);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_a2a_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *dout, void *dq, void *dk,
                            void *dv) {
  rrt_attn_cpx *x = p->cpx;
  rrt_attn_plan_t in = x->inner;
  RRT_CHECK(sync_all(p));
  const double t0 = rrt_time_now();
  x->nx = 0;
  const a2a_io io = {q, k, v, o, dout, lse, 1};
  RRT_CHECK(scatter_heads(p, &io));
  RRT_CHECK(
      rrt_attn_ring_bwd(in, x->qf, x->kf, x->vf, x->of, x->lsef, x->dof, x->dqf, x->dkf, x->dvf));
  /* one rank, one step: the f32 dK|dV sums stay in the first hand-off
   * buffer (ring_bwd.c, bring_home with nsteps 1) */
  RRT_CHECK(gather_grads(p, in->bwd.dkv_acc[0], dq, dk, dv));
  collect(p, t0, 1);
  return RRT_SUCCESS;
}

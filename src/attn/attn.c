/* Ring attention forward: the ring driver.
 *
 * Step s on rank r computes with the K/V block of rank (r - s) mod P. The
 * K/V block travels as one message (K then V) through two ring buffers: the
 * shift that brings step s+1's block is posted before step s's compute, and
 * waited for after it, so the transfer hides behind the compute. The local
 * work of a step comes from the schedule (sched/ring_schedule.h); each item
 * is folded into running f32 accumulators by the LSE merge.
 *
 * Backends: cpu runs kernels/cpu/attn_fwd_cpu.c on host memory; cuda and emu
 * run the kernels of kernels/cuda/attn_fwd.cu through the device layer on the
 * compute stream (RRT_KCALL picks the nvcc or emulator build), with the comm
 * stream ordered after the compute that last read the receive buffer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/desc.h"
#include "comm/ctx.h"
#include "comm/error.h"
#include "kernels/attn_math.h"
#include "kernels/cpu/attn_fwd.h"
#include "kernels/cuda/attn_fwd.h"
#include "ringrt/attn.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"
#include "sched/ring_schedule.h"

static const char OP_CREATE[] = "rrt_attn_plan_create";
static const char OP_RUN[] = "rrt_attn_plan_run";

/* Per-step timing: comm [cb, ce], compute [kb, ke] (seconds, host clock). */
typedef struct step_time {
  double cb, ce, kb, ke;
} step_time;

struct rrt_attn_plan {
  rrt_ctx_t ctx;
  rrt_attn_desc d;
  int P, rank, is_cpu, is_cuda;
  int64_t L; /* local sequence length */
  float scale;
  size_t es;                /* storage element size */
  size_t kv_elems;          /* elements of one of K, V on a rank */
  size_t kv_bytes;          /* K + V message */
  void *kvbuf[2];           /* backend memory: the two ring buffers */
  float *o_acc;             /* backend f32 running output (dtype != f32) */
  float *lse_acc;           /* backend f32 running LSE (when the caller passes none) */
  float *o_part, *lse_part; /* backend partial results (cuda/emu) */
  float *q32, *kv32;        /* host f32 copies for the cpu kernel (dtype != f32) */
  rrt_ring_step *steps;     /* this rank's P steps */
  step_time *times;
  rrt_event *ev; /* cuda: 4 per step + 1 */
  rrt_attn_stats stats;
};

/* ---- validation ----------------------------------------------------------- */

/* Every rank must describe the same problem: compare the fields by a max
 * over (v, -v) pairs, one small allreduce. */
static rrt_status check_same_desc(rrt_ctx_t ctx, const rrt_attn_desc *d) {
  double sc = d->scale;
  int64_t scale_bits;
  memcpy(&scale_bits, &sc, sizeof scale_bits);
  int64_t v[9] = {d->batch,           d->seq,
                  d->heads_q,         d->heads_kv,
                  d->head_dim,        (int64_t)d->causal,
                  (int64_t)d->layout, (int64_t)d->dtype,
                  scale_bits};
  enum { N = 9 };
  int64_t both[2 * N], out[2 * N];
  for (int i = 0; i < N; i++) {
    both[i] = v[i];
    both[N + i] = -v[i];
  }
  RRT_MPI_CHECK(ctx, OP_CREATE, MPI_Allreduce(both, out, 2 * N, MPI_INT64_T, MPI_MAX, ctx->comm));
  static const char *const names[N] = {"batch",  "seq",    "heads_q", "heads_kv", "head_dim",
                                       "causal", "layout", "dtype",   "scale"};
  for (int i = 0; i < N; i++)
    if (out[i] != -out[N + i])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, OP_CREATE,
                       "the descriptor differs between ranks: %s is %lld here, ranges over "
                       "[%lld, %lld]",
                       names[i], (long long)v[i], (long long)-out[N + i], (long long)out[i]);
  return RRT_SUCCESS;
}

/* ---- plan ------------------------------------------------------------------ */

static rrt_status plan_alloc(rrt_attn_plan_t p) {
  rrt_ctx_t ctx = p->ctx;
  const rrt_attn_desc *d = &p->d;
  const size_t q_elems = (size_t)d->batch * (size_t)p->L * (size_t)d->heads_q * (size_t)d->head_dim;
  const size_t lse_elems = (size_t)d->batch * (size_t)d->heads_q * (size_t)p->L;
  p->steps = calloc((size_t)p->P, sizeof *p->steps);
  p->times = calloc((size_t)p->P, sizeof *p->times);
  if (!p->steps || !p->times)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP_CREATE, "plan arrays");
  for (int s = 0; s < p->P; s++)
    if (rrt_ring_step_plan(d->layout, d->causal, d->seq, p->P, p->rank, s, &p->steps[s]) !=
        RRT_SUCCESS)
      return rrt_error(ctx, RRT_ERR_INTERNAL, OP_CREATE, "no schedule for step %d", s);
  for (int i = 0; i < 2; i++)
    RRT_CHECK(rrt_malloc(ctx, p->kv_bytes, &p->kvbuf[i]));
  if (d->dtype != RRT_DTYPE_F32)
    RRT_CHECK(rrt_malloc(ctx, q_elems * sizeof(float), (void **)&p->o_acc));
  RRT_CHECK(rrt_malloc(ctx, lse_elems * sizeof(float), (void **)&p->lse_acc));
  if (p->is_cpu) {
    if (d->dtype != RRT_DTYPE_F32) {
      p->q32 = malloc(q_elems * sizeof(float));
      p->kv32 = malloc(2 * p->kv_elems * sizeof(float));
      if (!p->q32 || !p->kv32)
        return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP_CREATE, "f32 copies (%zu bytes)",
                         (q_elems + 2 * p->kv_elems) * sizeof(float));
    }
  } else {
    RRT_CHECK(rrt_malloc(ctx, q_elems * sizeof(float), (void **)&p->o_part));
    RRT_CHECK(rrt_malloc(ctx, lse_elems * sizeof(float), (void **)&p->lse_part));
  }
  if (p->is_cuda) {
    p->ev = calloc((size_t)(4 * p->P + 1), sizeof *p->ev);
    if (!p->ev) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP_CREATE, "events");
    for (int i = 0; i < 4 * p->P + 1; i++)
      RRT_CHECK(ctx->dev->event_create(&p->ev[i]));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_destroy(rrt_attn_plan_t p) {
  if (!p) return RRT_SUCCESS;
  rrt_ctx_t ctx = p->ctx;
  for (int i = 0; i < 2; i++)
    rrt_free(ctx, p->kvbuf[i]);
  rrt_free(ctx, p->o_acc);
  rrt_free(ctx, p->lse_acc);
  rrt_free(ctx, p->o_part);
  rrt_free(ctx, p->lse_part);
  free(p->q32);
  free(p->kv32);
  if (p->ev)
    for (int i = 0; i < 4 * p->P + 1; i++)
      if (p->ev[i]) ctx->dev->event_destroy(p->ev[i]);
  free(p->ev);
  free(p->steps);
  free(p->times);
  free(p);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_create(rrt_ctx_t ctx, const rrt_attn_desc *desc, rrt_attn_plan_t *plan) {
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, OP_CREATE, "context is NULL");
  if (plan) *plan = NULL;
  char msg[256];
  rrt_status st = RRT_SUCCESS;
  /* From here on `desc` is the full descriptor: the caller's fields, and
   * defaults for those a descriptor from an older header lacks. */
  rrt_attn_desc full_desc;
  if (!plan)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP_CREATE, "plan pointer is NULL");
  else if (rrt_attn_desc_import(desc, &full_desc, msg, sizeof msg) != RRT_SUCCESS ||
           rrt_attn_desc_check(&full_desc, ctx->size, msg, sizeof msg) != RRT_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP_CREATE, "%s", msg);
  RRT_CHECK(rrt_agree(ctx, st));
  desc = &full_desc;
  RRT_CHECK(check_same_desc(ctx, desc));

  rrt_attn_plan_t p = calloc(1, sizeof *p);
  st = p ? RRT_SUCCESS : rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, OP_CREATE, "plan");
  if (p) {
    p->ctx = ctx;
    p->d = *desc;
    p->P = ctx->size;
    p->rank = ctx->rank;
    p->is_cpu = ctx->backend == RRT_BACKEND_CPU;
    p->is_cuda = ctx->dev->is_cuda;
    rrt_attn_seq_local(desc->layout, desc->seq, p->P, &p->L);
    p->scale = desc->scale > 0 ? (float)desc->scale : 1.0f / sqrtf((float)desc->head_dim);
    p->es = rrt_dtype_size(desc->dtype);
    p->kv_elems =
        (size_t)desc->batch * (size_t)p->L * (size_t)desc->heads_kv * (size_t)desc->head_dim;
    p->kv_bytes = 2 * p->kv_elems * p->es;
    st = plan_alloc(p);
  }
  /* an allocation failure on one rank is a failure on all */
  st = rrt_agree(ctx, st);
  if (st != RRT_SUCCESS) {
    rrt_attn_plan_destroy(p);
    return st;
  }
  *plan = p;
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_stats(rrt_attn_plan_t p, rrt_attn_stats *stats) {
  if (!p || !stats) return RRT_ERR_INVALID_ARG;
  *stats = p->stats;
  return RRT_SUCCESS;
}

/* ---- cpu backend ------------------------------------------------------------ */

static void to_f32(float *dst, const void *src, size_t n, rrt_dtype dt) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    dst[i] = rrt_am_load(src, (int64_t)i, (int)dt);
}

static void from_f32(void *dst, const float *src, size_t n, rrt_dtype dt) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    rrt_am_store(dst, (int64_t)i, (int)dt, src[i]);
}

/* Start the running state (O = 0, LSE = -inf) and put this rank's K and V
 * into the first ring buffer, with all threads: single-threaded, these
 * memory passes cost a visible share of a short (e.g. causal) run. */
static void cpu_start(float *o_acc, size_t q_elems, float *lse_acc, size_t lse_elems, void *kvbuf,
                      const void *k, const void *v, size_t half) {
  const size_t chunk = (size_t)1 << 16;
  const size_t nchunks = kvbuf ? (half + chunk - 1) / chunk : 0; /* NULL: no copy */
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < q_elems; i++)
      o_acc[i] = 0.0f;
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < lse_elems; i++)
      lse_acc[i] = rrt_am_neg_inf();
#pragma omp for schedule(static)
    for (size_t c = 0; c < 2 * nchunks; c++) {
      size_t off = (c % nchunks) * chunk, n = half - off < chunk ? half - off : chunk;
      const char *src = (const char *)(c < nchunks ? k : v) + off;
      memcpy((char *)kvbuf + (c < nchunks ? 0 : half) + off, src, n);
    }
  }
}

/* Called by the first OpenMP thread between blocks of the CPU kernel: lets
 * MPI move the pending shift while we compute, and notes when it finished. */
typedef struct progress_state {
  rrt_request_t req;
  int done;
  double t_done;
  rrt_status st;
} progress_state;

static void progress_poll(void *arg) {
  progress_state *ps = arg;
  if (!ps->req || ps->done || ps->st != RRT_SUCCESS) return;
  int done = 0;
  ps->st = rrt_request_test(ps->req, &done);
  if (done) {
    ps->done = 1;
    ps->t_done = rrt_time_now();
  }
}

/* ---- one run ------------------------------------------------------------------ */

/* Local compute of step s with the K/V in `kv` (K then V). */
static rrt_status compute_step(rrt_attn_plan_t p, int s, const void *q, const void *k,
                               const void *v, float *o_acc, float *lse_acc, progress_state *ps) {
  rrt_ctx_t ctx = p->ctx;
  const rrt_ring_step *st = &p->steps[s];
  const rrt_attn_desc *d = &p->d;
  if (st->nitems == 0) return RRT_SUCCESS;
  if (p->is_cpu) {
    const float *k32 = k, *v32 = v;
    if (d->dtype != RRT_DTYPE_F32) {
      to_f32(p->kv32, k, p->kv_elems, d->dtype);
      to_f32(p->kv32 + p->kv_elems, v, p->kv_elems, d->dtype);
      k32 = p->kv32;
      v32 = p->kv32 + p->kv_elems;
    }
    rrt_attn_cpu_args a = {d->batch, d->heads_q, d->heads_kv,   d->head_dim, p->scale,
                           q,        p->L,       k32,           v32,         p->L,
                           o_acc,    lse_acc,    progress_poll, ps,          ctx->env.cpu_isa};
    rrt_status rc = rrt_attn_fwd_cpu(&a, st->items, st->nitems);
    if (rc != RRT_SUCCESS) return rrt_error(ctx, rc, OP_RUN, "cpu kernel, step %d", s);
    return RRT_SUCCESS;
  }
  rrt_attn_kargs ka = {q,          k,           v,           d->batch,      p->L,    p->L,
                       d->heads_q, d->heads_kv, d->head_dim, (int)d->dtype, p->scale};
  for (int n = 0; n < st->nitems; n++) {
    const rrt_attn_item *it = &st->items[n];
    rrt_status rc =
        RRT_KCALL(ctx->dev, rrt_k_attn_fwd, ctx->compute_stream, &ka, it, p->o_part, p->lse_part);
    if (rc == RRT_SUCCESS)
      rc = RRT_KCALL(ctx->dev, rrt_k_attn_merge, ctx->compute_stream, d->batch, d->heads_q,
                     d->head_dim, p->L, it->q_begin, it->q_len, p->o_part, p->lse_part, o_acc,
                     lse_acc);
    if (rc != RRT_SUCCESS)
      return rrt_error(ctx, rc, OP_RUN, "attention kernel launch, step %d item %d", s, n);
    progress_poll(ps); /* emu: kernels are synchronous, poll between them */
  }
  return RRT_SUCCESS;
}

static double ev_time(rrt_attn_plan_t p, double t_base, rrt_event e) {
  float ms = 0.0f;
  p->ctx->dev->event_elapsed_ms(p->ev[4 * p->P], e, &ms);
  return t_base + ms * 1e-3;
}

static rrt_status run(rrt_attn_plan_t p, const void *q, const void *k, const void *v, void *o,
                      float *lse) {
  rrt_ctx_t ctx = p->ctx;
  const rrt_device_ops *dev = ctx->dev;
  const rrt_attn_desc *d = &p->d;
  const size_t q_elems = (size_t)d->batch * (size_t)p->L * (size_t)d->heads_q * (size_t)d->head_dim;
  const size_t lse_elems = (size_t)d->batch * (size_t)d->heads_q * (size_t)p->L;
  const size_t half = p->kv_elems * p->es;
  float *o_acc = d->dtype == RRT_DTYPE_F32 ? (float *)o : p->o_acc;
  float *lse_acc = lse ? lse : p->lse_acc;
  rrt_stream cs = ctx->compute_stream, ms = ctx->comm_stream;
  const int nccl = ctx->transport == RRT_TRANSPORT_NCCL;
  rrt_request_t req = NULL;
  rrt_status st = RRT_SUCCESS;

  if (p->is_cuda) RRT_CHECK(dev->stream_sync(cs));
  const double t0 = rrt_time_now();
  rrt_event ev0 = p->is_cuda ? p->ev[4 * p->P] : NULL;
  if (ev0) RRT_CHECK(dev->event_record(ev0, cs));

  /* running state and the first ring buffer */
  const void *qk = q;
  /* One rank on the cpu: no ring, so the kernel reads K and V in place. */
  const int direct = p->is_cpu && p->P == 1;
  if (p->is_cpu) {
    cpu_start(o_acc, q_elems, lse_acc, lse_elems, direct ? NULL : p->kvbuf[0], k, v, half);
    if (d->dtype != RRT_DTYPE_F32) {
      to_f32(p->q32, q, q_elems, d->dtype);
      qk = p->q32;
    }
  } else {
    rrt_copy_kind kind = p->is_cuda ? RRT_COPY_D2D : RRT_COPY_H2H;
    RRT_CHECK(
        RRT_KCALL(dev, rrt_k_attn_init, cs, o_acc, (int64_t)q_elems, lse_acc, (int64_t)lse_elems));
    RRT_CHECK(dev->memcpy_async(p->kvbuf[0], k, half, kind, cs));
    RRT_CHECK(dev->memcpy_async((char *)p->kvbuf[0] + half, v, half, kind, cs));
  }

  for (int s = 0; s < p->P; s++) {
    step_time *tm = &p->times[s];
    rrt_event *ev = p->is_cuda ? &p->ev[4 * s] : NULL;
    const int cur = s & 1;
    progress_state ps = {NULL, 1, 0.0, RRT_SUCCESS};
    tm->cb = tm->ce = 0.0;
    if (s + 1 < p->P) {
      /* The receive buffer was last read by step s-1's compute: order the
       * shift after everything queued on the compute stream so far. */
      if (ev) {
        RRT_CHECK(dev->event_record(ev[0], cs));
        RRT_CHECK(dev->stream_wait_event(ms, ev[0]));
        RRT_CHECK(dev->event_record(ev[0], ms));
      }
      tm->cb = rrt_time_now();
      RRT_CHECK(rrt_ring_shift(ctx, p->kvbuf[cur], p->kvbuf[cur ^ 1], p->kv_bytes, s, &req));
      if (ev && nccl) RRT_CHECK(dev->event_record(ev[1], ms));
      ps.req = req;
      ps.done = 0;
    }
    tm->kb = rrt_time_now();
    if (ev) RRT_CHECK(dev->event_record(ev[2], cs));
    const void *kc = direct ? k : p->kvbuf[cur];
    const void *vc = direct ? v : (const char *)p->kvbuf[cur] + half;
    st = compute_step(p, s, qk, kc, vc, o_acc, lse_acc, &ps);
    if (ev) RRT_CHECK(dev->event_record(ev[3], cs));
    tm->ke = rrt_time_now();
    if (st == RRT_SUCCESS) st = ps.st;
    if (req) {
      /* never leave a posted shift behind, even after a compute error */
      rrt_status ws = rrt_request_wait(req);
      req = NULL;
      if (st == RRT_SUCCESS) st = ws;
      tm->ce = ps.done ? ps.t_done : rrt_time_now();
      if (ev && !nccl) RRT_CHECK(dev->event_record(ev[1], ms));
    }
    if (st != RRT_SUCCESS) return st;
  }
  if (d->dtype != RRT_DTYPE_F32) {
    if (p->is_cpu)
      from_f32(o, o_acc, q_elems, d->dtype);
    else
      RRT_CHECK(RRT_KCALL(dev, rrt_k_attn_store, cs, o_acc, o, (int)d->dtype, (int64_t)q_elems));
  }
  if (!p->is_cpu) RRT_CHECK(dev->stream_sync(cs));
  const double t1 = rrt_time_now();

  /* statistics and trace */
  rrt_attn_stats *S = &p->stats;
  memset(S, 0, sizeof *S);
  S->total_s = t1 - t0;
  S->steps = p->P;
  S->bytes_sent = (double)(p->P - 1) * (double)p->kv_bytes;
  for (int s = 0; s < p->P; s++) {
    step_time *tm = &p->times[s];
    if (p->is_cuda) {
      rrt_event *ev = &p->ev[4 * s];
      tm->kb = ev_time(p, t0, ev[2]);
      tm->ke = ev_time(p, t0, ev[3]);
      if (s + 1 < p->P) {
        tm->cb = ev_time(p, t0, ev[0]);
        tm->ce = ev_time(p, t0, ev[1]);
      }
    }
    S->flops += 4.0 * d->head_dim * (double)p->steps[s].pairs * (double)d->batch * d->heads_q;
    S->compute_s += tm->ke - tm->kb;
    char name[48];
    snprintf(name, sizeof name, "attn step %d", s);
    rrt_trace_add(ctx, RRT_TRACK_COMPUTE, name, tm->kb, tm->ke);
    if (s + 1 < p->P) {
      double c = tm->ce - tm->cb;
      double lo = tm->cb > tm->kb ? tm->cb : tm->kb;
      double hi = tm->ce < tm->ke ? tm->ce : tm->ke;
      double hidden = hi > lo ? hi - lo : 0.0;
      S->comm_s += c;
      S->comm_exposed_s += c - hidden;
      snprintf(name, sizeof name, "kv shift %d", s);
      rrt_trace_add(ctx, RRT_TRACK_COMM, name, tm->cb, tm->ce);
    }
  }
  S->hidden_share = S->comm_s > 0 ? 1.0 - S->comm_exposed_s / S->comm_s : 1.0;
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_run(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             void *o, float *lse) {
  if (!p) return rrt_error(NULL, RRT_ERR_INVALID_ARG, OP_RUN, "plan is NULL");
  rrt_ctx_t ctx = p->ctx;
  rrt_status st = RRT_SUCCESS;
  if (!q || !k || !v || !o)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, OP_RUN, "NULL tensor (q %p, k %p, v %p, o %p)", q, k,
                   v, o);
  RRT_CHECK(rrt_agree(ctx, st));
  return run(p, q, k, v, o, lse);
}

rrt_status rrt_attn_fwd(rrt_ctx_t ctx, const rrt_attn_desc *desc, const void *q, const void *k,
                        const void *v, void *o, float *lse) {
  rrt_attn_plan_t p = NULL;
  RRT_CHECK(rrt_attn_plan_create(ctx, desc, &p));
  rrt_status st = rrt_attn_plan_run(p, q, k, v, o, lse);
  rrt_attn_plan_destroy(p);
  return st;
}

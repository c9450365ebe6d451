/* Internal: the ring attention plan behind rrt_attn_plan_t, shared by the
 * files of src/attn/ (plan.c makes it from plan_ring.c's and cp_*.c's
 * parts, run.c runs it through ring_fwd.c/ring_bwd.c or a collective mode,
 * stats.c reports a run, progress.c lets the ring move during compute). */
#ifndef RRT_ATTN_PLAN_IMPL_H
#define RRT_ATTN_PLAN_IMPL_H

#include <stddef.h>

#include "comm/device.h"
#include "kernels/attn_table.h"
#include "ringrt/attn.h"
#include "ringrt/transport.h"
#include "sched/cp_model.h"
#include "sched/ring_schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-step timing: comm [cb, ce], compute [kb, ke] (seconds, host clock);
 * backward only: the dK/dV hand-off [hb, he] (host clock on every backend). */
typedef struct rrt_attn_step_time {
  double cb, ce, kb, ke, hb, he;
} rrt_attn_step_time;

/* The backward pass's buffers (backend memory, f32), made by the first
 * backward run of a plan (ring_bwd.c) so a forward-only plan never pays for
 * them. */
typedef struct rrt_attn_bwd_bufs {
  int ready;
  int prepared;          /* the kernel table prepared the backward's items */
  float *dq_acc;         /* dQ (dtype != f32; the caller's dq otherwise) */
  float *delta;          /* rowsum(dO * O) [batch, heads_q, q_rows] */
  float *dkv_part;       /* dK|dV of one step's compute */
  float *dkv_acc[2];     /* the hand-off ring: dK|dV sums of a travelling block */
  size_t dkv_elems;      /* floats of one dK|dV buffer: 2 * kv_elems */
  double home_b, home_e; /* the last run's final transfer (accumulators home) */
  rrt_event order;       /* async: orders a hand-off after the compute that wrote it */
} rrt_attn_bwd_bufs;

/* Events of one step when the device layer runs asynchronously (cuda): the
 * shift [0] queued, [1] done; the compute [2] begun, [3] done. The plan
 * holds RRT_ATTN_STEP_EVENTS per step and one more, the run's start. */
enum { RRT_ATTN_STEP_EVENTS = 4 };

/* The state of the modes beside the ring (cp_allgather.c, cp_a2a.c). */
typedef struct rrt_attn_cpx rrt_attn_cpx;

struct rrt_attn_plan {
  rrt_ctx_t ctx;
  rrt_cp_comm cp;           /* the mode that runs (auto resolved at creation) */
  rrt_cp_model_in model_in; /* the cost model's inputs and numbers (--explain) */
  rrt_cp_cost cost[RRT_CP_COUNT];
  rrt_attn_cpx *cpx; /* allgather / a2a state; NULL for the ring */
  rrt_attn_desc d;
  const rrt_attn_kernels *kern; /* the backend's kernels, chosen at creation */
  rrt_attn_kshape shape;        /* this rank's shard as the kernels see it */
  rrt_attn_work work;           /* the kernels' scratch */
  int work_made;                /* work_create succeeded (work_destroy then runs) */
  int P, rank;
  int nsteps; /* ring steps that run: after the last step on which any rank has work, the
                 ring stops (no compute, no transfer); P when every step has work */
  /* the context's device layer and streams, read once at creation */
  const rrt_device_ops *dev;
  rrt_stream compute_stream, comm_stream;
  int async;                  /* the device layer queues work: step times come from events */
  int shift_on_stream;        /* the shift is queued on the comm stream (NCCL) when posted */
  size_t q_elems;             /* elements of Q (and O) on a rank */
  size_t lse_elems;           /* elements of the LSE on a rank */
  size_t kv_elems;            /* elements of one of K, V on a rank */
  size_t kv_bytes;            /* K + V message */
  void *kvbuf[2];             /* backend memory: the two ring buffers */
  float *o_acc;               /* backend f32 running output (dtype != f32) */
  float *lse_acc;             /* backend f32 running LSE (when the caller passes none) */
  int64_t *mask_lo, *mask_hi; /* backend: the row mask (shape.mask), NULL when unmasked */
  rrt_ring_sched *sched;      /* the layout and mask of every rank (pure) */
  rrt_ring_step *steps;       /* this rank's P steps (steps >= nsteps are empty) */
  rrt_attn_step_time *times;
  rrt_event *ev; /* async: RRT_ATTN_STEP_EVENTS per step + 1 */
  rrt_attn_bwd_bufs bwd;
  rrt_attn_stats stats;
};

/* ops.c: the operations' names in messages */
extern const char rrt_attn_op_create[];  /* "rrt_attn_plan_create" */
extern const char rrt_attn_op_run[];     /* "rrt_attn_plan_run" */
extern const char rrt_attn_op_run_bwd[]; /* "rrt_attn_plan_run_bwd" */

/* ring_bwd.c: one backward run over the ring (arguments checked and
 * agreed, the backward buffers made: rrt_attn_bwd_ready). */
rrt_status rrt_attn_ring_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             const void *o, const float *lse, const void *dout, void *dq, void *dk,
                             void *dv);
/* run.c: the backward buffers and the kernels' preparation (local, not
 * agreed: the caller agrees). */
rrt_status rrt_attn_bwd_ready(rrt_attn_plan_t p);

/* plan_ring.c: the parts of a plan without its mode: sizes, kernel table
 * and device layer (no allocation); the steps' items; the ring's buffers,
 * accumulators, row mask and kernel scratch; their release (and the
 * plan's). */
rrt_status rrt_attn_plan_init(rrt_attn_plan_t p, rrt_ctx_t ctx, const rrt_attn_desc *desc, int P,
                              int rank);
rrt_status rrt_attn_plan_alloc_steps(rrt_attn_plan_t p);
rrt_status rrt_attn_plan_alloc_ring(rrt_attn_plan_t p);
void rrt_attn_plan_free_ring(rrt_attn_plan_t p);
/* plan_ring.c: a plan of this rank alone (P = 1) for `desc` on the context's
 * backend, without agreement or mode: the local attention of the all-to-all
 * mode (released by rrt_attn_plan_free_ring). */
rrt_status rrt_attn_plan_local(rrt_ctx_t ctx, const rrt_attn_desc *desc, rrt_attn_plan_t *plan);

/* cp_plan.c: the cost model's inputs from the ring schedule (every rank
 * the same), `local` the smallest node's rank count; resolves p->cp. */
rrt_status rrt_attn_cp_resolve(rrt_attn_plan_t p, int local);
/* cp_allgather.c / cp_a2a.c: the mode's buffers (at creation; not agreed),
 * runs, and release. */
rrt_status rrt_attn_allgather_create(rrt_attn_plan_t p);
rrt_status rrt_attn_allgather_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                  const float *sinks, void *o, float *lse);
rrt_status rrt_attn_allgather_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                  const void *o, const float *lse, const void *dout, void *dq,
                                  void *dk, void *dv);
rrt_status rrt_attn_allgather_bwd_alloc(rrt_attn_plan_t p);
rrt_status rrt_attn_a2a_create(rrt_attn_plan_t p);
rrt_status rrt_attn_a2a_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                            const float *sinks, void *o, float *lse);
rrt_status rrt_attn_a2a_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *dout, void *dq, void *dk,
                            void *dv);
void rrt_attn_cpx_destroy(rrt_attn_plan_t p);

/* ring_fwd.c: one forward run over the ring (arguments checked and agreed). */
rrt_status rrt_attn_ring_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             const float *sinks, void *o, float *lse);

/* sinks.c: the sink arguments of a run against the plan's descriptor
 * (local; the caller agrees): with_sinks = the caller used a _sinks entry
 * point, which the descriptor's sinks require; sinks (and, for a backward,
 * bwd = 1, dsinks) must then be non-NULL. */
rrt_status rrt_attn_check_sinks(rrt_attn_plan_t p, const char *op, int with_sinks,
                                const float *sinks, int bwd, const float *dsinks);
/* sinks.c: after a backward run (collective): dsinks[h] = -sum over every
 * rank's rows of head h of exp(sinks[h] - lse) * delta (attn.h), per-rank
 * sums in f64 added in rank order. Backend memory in and out. */
rrt_status rrt_attn_sink_grad(rrt_attn_plan_t p, const float *sinks, const float *lse,
                              float *dsinks);

/* plan.c: the kernel table prepares every step's items for the forward
 * (bwd 0, at plan creation) or the backward (bwd 1, at its first run), so
 * the ring loop builds and allocates nothing (the library path's graphs);
 * its errors are named by the table, not agreed. */
rrt_status rrt_attn_prepare_steps(rrt_attn_plan_t p, int bwd);

/* bwd_bufs.c: the backward buffers, made once (a no-op when they exist;
 * not agreed: the caller agrees) and freed with the plan. */
rrt_status rrt_attn_bwd_alloc(rrt_attn_plan_t p);
void rrt_attn_bwd_free(rrt_attn_plan_t p);

/* stats.c: p->stats and the trace from the step times of the run that
 * began at t0 (host clock) and ended at t1. */
void rrt_attn_stats_collect(rrt_attn_plan_t p, double t0, double t1);
/* End of a run with queued work: wait for the streams (step times come from
 * their events; a kernel fault surfaces here, recorded under `op`). */
rrt_status rrt_attn_run_done(rrt_attn_plan_t p, const char *op);
/* The same for a backward run: backward FLOPs, and the dK/dV hand-off
 * (step times hb/he and p->bwd.home_b/home_e) counted in the comm figures. */
void rrt_attn_stats_collect_bwd(rrt_attn_plan_t p, double t0, double t1);

/* progress.c: lets the transport move a posted shift while the kernels
 * compute, and notes when it finished. */
typedef struct rrt_attn_shift_progress {
  rrt_request_t req; /* NULL: nothing posted */
  int done;
  double t_done;
  rrt_status st;
} rrt_attn_shift_progress;

void rrt_attn_shift_poll(void *arg); /* arg: rrt_attn_shift_progress */

/* The progress callback of a step's kernels: none where the transfers run
 * on the comm stream (they move by themselves; a poll there would only
 * make the host wait). */
rrt_attn_progress rrt_attn_progress_for(rrt_attn_plan_t p, void (*poll)(void *), void *arg);

/* After the compute of a step is queued: the transfer in `ps` must land
 * before the next step's compute reads its buffer. Where it completes on
 * the comm stream (shift_on_stream) the compute stream waits for it on the
 * device, and its request goes to *held, for the host to retire after the
 * next step's compute is queued (retiring the previous one now); else the
 * host waits for it here. `st`: the step's status so far; returns the
 * first failure. */
rrt_status rrt_attn_land(rrt_attn_plan_t p, rrt_attn_shift_progress *ps, rrt_status st,
                         rrt_request_t *held);
/* Wait for a held request and release it (end of a run, or an error). */
rrt_status rrt_attn_retire(rrt_request_t *held, rrt_status st);

/* ring_fwd.c: post the K/V shift that brings step s+1's block (ev: the
 * step's events when async, else NULL). */
rrt_status rrt_attn_post_kv_shift(rrt_attn_plan_t p, int s, rrt_event *ev,
                                  rrt_attn_shift_progress *ps);

#ifdef __cplusplus
}
#endif
#endif

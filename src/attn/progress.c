/* Progress of the pending ring shift during compute. MPI moves a message
 * only inside its calls, so the kernels call this between blocks of work
 * (the first OpenMP thread on cpu); it tests the request and notes when the
 * shift finished, for the overlap statistics. A shift on the comm stream
 * (NCCL, the emu engine) moves by itself: the compute stream waits for it
 * on the device (rrt_attn_land), and the host only retires its request. */
#include "attn/plan_impl.h"
#include "comm/request.h"
#include "ringrt/trace.h"

void rrt_attn_shift_poll(void *arg) {
  rrt_attn_shift_progress *ps = arg;
  if (!ps->req || ps->done || ps->st != RRT_SUCCESS) return;
  int done = 0;
  ps->st = rrt_request_test(ps->req, &done);
  if (done) {
    ps->done = 1;
    ps->t_done = rrt_time_now();
  }
}

rrt_attn_progress rrt_attn_progress_for(rrt_attn_plan_t p, void (*poll)(void *), void *arg) {
  return (rrt_attn_progress){p->shift_on_stream ? NULL : poll, arg};
}

rrt_status rrt_attn_retire(rrt_request_t *held, rrt_status st) {
  rrt_request_t req = *held;
  *held = NULL;
  if (!req) return st;
  rrt_status ws = rrt_request_wait(req); /* never leave one behind, even after an error */
  return st != RRT_SUCCESS ? st : ws;
}

rrt_status rrt_attn_land(rrt_attn_plan_t p, rrt_attn_shift_progress *ps, rrt_status st,
                         rrt_request_t *held) {
  if (st == RRT_SUCCESS) st = ps->st;
  if (!ps->req) return st;
  int ordered = 0;
  if (st == RRT_SUCCESS && p->shift_on_stream)
    st = rrt_request_order_stream(ps->req, p->compute_stream, &ordered);
  if (!ordered) { /* the host waits (MPI, staging; or after an error) */
    rrt_status ws = rrt_request_wait(ps->req);
    ps->req = NULL;
    return st != RRT_SUCCESS ? st : ws;
  }
  st = rrt_attn_retire(held, st);
  *held = ps->req;
  ps->req = NULL;
  return st;
}

/* Progress of the pending ring shift during compute. MPI moves a message
 * only inside its calls, so the kernels call this between blocks of work
 * (the first OpenMP thread on cpu, between launches on emu); it tests the
 * request and notes when the shift finished, for the overlap statistics. */
#include "attn/plan_impl.h"
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

/* The SIMT executor and the host device layers on their own (no MPI, no
 * context): every test kernel on the NULL stream (one OS thread), on a
 * stream with several emulator threads and on a deferred emu stream, plus
 * the host layer's contract. */
#include <stdint.h>

#include "test_util.h"
#include "emu_checks.h"

static void check_host_layer(void) {
  const rrt_device_ops *dev = &rrt_device_host;
  void *a = NULL, *b = NULL;
  CHECK_OK(dev->alloc(&a, 0));
  CHECK_OK(dev->alloc(&b, 0));
  CHECK(a && b && a != b); /* zero bytes: unique pointers */
  CHECK(((uintptr_t)a % 64) == 0);
  dev->free(a), dev->free(b);
  rrt_stream s = NULL;
  CHECK_OK(dev->stream_create(&s, 1));
  CHECK(rrt_host_stream_threads(s) >= 1);
  CHECK_OK(dev->stream_set_threads(s, 5));
  CHECK(rrt_host_stream_threads(s) == 5);
  CHECK(dev->stream_set_threads(s, 0) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_host_stream_threads(NULL) == 1);
  rrt_event e0 = NULL, e1 = NULL;
  float ms = -1.0f;
  int done = 0;
  CHECK_OK(dev->event_create(&e0));
  CHECK_OK(dev->event_create(&e1));
  CHECK(dev->event_elapsed_ms(e0, e1, &ms) == RRT_ERR_INVALID_ARG); /* not recorded yet */
  CHECK_OK(dev->event_record(e0, s));
  CHECK_OK(dev->event_record(e1, s));
  CHECK_OK(dev->event_query(e1, &done));
  CHECK(done == 1);
  CHECK_OK(dev->event_elapsed_ms(e0, e1, &ms));
  CHECK(ms >= 0.0f && ms < 1000.0f);
  dev->event_destroy(e0), dev->event_destroy(e1);
  CHECK_OK(dev->stream_destroy(s));
}

int main(void) {
  check_host_layer();
  emu_target one = {&rrt_device_host, NULL, "emu, NULL stream (1 thread)"};
  emu_run_checks(&one);
  rrt_stream s = NULL;
  CHECK_OK(rrt_device_host.stream_create(&s, 0));
  CHECK_OK(rrt_device_host.stream_set_threads(s, 4));
  emu_target four = {&rrt_device_host, s, "emu, 4 threads"};
  emu_run_checks(&four);
  rrt_device_host.stream_destroy(s);
  /* The emu layer's streams queue every launch: a deferred stream runs them
   * only at the checks' synchronisations (faults come back from those). */
  rrt_stream q = NULL;
  CHECK_OK(rrt_device_emu.stream_create(&q, 1));
  CHECK_OK(rrt_device_emu.stream_set_threads(q, 2));
  emu_target queued = {&rrt_device_emu, q, "emu, deferred stream (2 threads)"};
  emu_run_checks(&queued);
  CHECK_OK(rrt_device_emu.stream_destroy(q));
  return test_result();
}

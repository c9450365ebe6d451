/* The emu device layer's streams and events (comm/emu_stream.h), without
 * MPI or a context: work queued on a stream runs later, and events are the
 * only order between streams. Each check builds the situation a missing
 * synchronisation or event wait creates and looks at the bytes: the emu
 * streams must give the old contents there, and the right ones with the
 * wait. A "comm" stream is deferred (the emu comm stream: high priority), a
 * "compute" stream eager (the emu compute stream). */
#include <stdint.h>
#include <string.h>

#include "comm/device.h"
#include "comm/emu_stream.h"
#include "emu_kernels.h"
#include "test_util.h"

static const rrt_device_ops *dev = &rrt_device_emu;

static void *dalloc(size_t bytes) {
  void *p = NULL;
  CHECK_OK(dev->alloc(&p, bytes));
  return p;
}

static int all_equal(const float *x, int n, float v) {
  for (int i = 0; i < n; i++)
    if (x[i] != v) return 0;
  return 1;
}

/* A deferred stream runs nothing until it is synchronised: a copy to the
 * host lands only then. A host source is read when the copy is queued. */
static void check_deferred_copies(void) {
  enum { N = 64 };
  rrt_stream comm = NULL;
  CHECK_OK(dev->stream_create(&comm, 1));
  float h[N], out[N];
  for (int i = 0; i < N; i++)
    h[i] = 1.0f, out[i] = 0.0f;
  float *d = dalloc(N * sizeof(float));
  CHECK_OK(dev->memcpy_async(d, h, sizeof h, RRT_COPY_H2D, comm));
  for (int i = 0; i < N; i++)
    h[i] = 99.0f; /* reused at once, as pageable memory may be */
  CHECK_OK(dev->memcpy_async(out, d, sizeof out, RRT_COPY_D2H, comm));
  CHECK(rrt_emu_stream_pending(comm) == 2);
  CHECK_MSG(all_equal(out, N, 0.0f), "a copy on a deferred stream landed before a sync");
  CHECK_OK(dev->stream_sync(comm));
  CHECK(rrt_emu_stream_pending(comm) == 0);
  CHECK_MSG(all_equal(out, N, 1.0f), "the copy read its host source late (%g)", (double)out[0]);
  CHECK_OK(dev->free(d));
  CHECK_OK(dev->stream_destroy(comm));
}

/* The consumer stream reads a buffer the producer stream writes: with the
 * event wait it gets the new bytes, the wait itself running the producer's
 * work up to the record; the producer's later work stays queued. */
static void check_wait_event(void) {
  enum { N = 256 };
  rrt_stream comm = NULL, compute = NULL;
  rrt_event ev = NULL;
  CHECK_OK(dev->stream_create(&comm, 1));
  CHECK_OK(dev->stream_create(&compute, 0));
  CHECK_OK(dev->event_create(&ev));
  float *buf = dalloc(N * sizeof(float)), *dst = dalloc(N * sizeof(float));
  float h7[N], h9[N], out[N];
  for (int i = 0; i < N; i++)
    h7[i] = 7.0f, h9[i] = 9.0f, out[i] = -1.0f;
  CHECK_OK(dev->memset_async(buf, 0, N * sizeof(float), compute));
  CHECK_OK(dev->stream_sync(compute));
  /* the transfer into buf, then a later one the consumer must not see */
  CHECK_OK(dev->memcpy_async(buf, h7, sizeof h7, RRT_COPY_H2D, comm));
  CHECK_OK(dev->event_record(ev, comm));
  CHECK_OK(dev->stream_wait_event(compute, ev));
  CHECK_OK(dev->memcpy_async(dst, buf, sizeof out, RRT_COPY_D2D, compute));
  CHECK_OK(dev->memcpy_async(buf, h9, sizeof h9, RRT_COPY_H2D, comm));
  CHECK_OK(dev->event_record(ev, comm)); /* recorded again: the queued wait keeps the first */
  CHECK_OK(dev->memcpy_async(out, dst, sizeof out, RRT_COPY_D2H, compute));
  CHECK_OK(dev->stream_sync(compute));
  CHECK_MSG(all_equal(out, N, 7.0f), "consumer read %g, not the transfer's 7 (0: no wait)",
            (double)out[0]);
  CHECK(rrt_emu_stream_pending(comm) == 2); /* the second copy and record wait */
  int done = 1;
  CHECK_OK(dev->event_query(ev, &done)); /* asking runs the work up to the record */
  CHECK(done == 1 && rrt_emu_stream_pending(comm) == 0);
  CHECK_OK(dev->memcpy_async(out, buf, sizeof out, RRT_COPY_D2H, compute));
  CHECK_OK(dev->stream_sync(compute));
  CHECK(all_equal(out, N, 9.0f));
  CHECK_OK(dev->free(buf));
  CHECK_OK(dev->free(dst));
  CHECK_OK(dev->event_destroy(ev));
  CHECK_OK(dev->stream_destroy(compute));
  CHECK_OK(dev->stream_destroy(comm));
}

/* A kernel on the eager stream behind a wait for a transfer that has not
 * run: it stays queued (y untouched) until a synchronisation runs the
 * transfer first; without the wait it would run at once, on x = 0. */
static void check_kernel_behind_wait(void) {
  enum { N = 1000 };
  rrt_stream comm = NULL, compute = NULL;
  rrt_event ev = NULL;
  CHECK_OK(dev->stream_create(&comm, 1));
  CHECK_OK(dev->stream_create(&compute, 0));
  CHECK_OK(dev->event_create(&ev));
  float *x = dalloc(N * sizeof(float)), *y = dalloc(N * sizeof(float));
  float ones[N];
  for (int i = 0; i < N; i++)
    ones[i] = 1.0f, x[i] = 0.0f, y[i] = 0.0f; /* emu device memory is host memory */
  CHECK_OK(dev->memcpy_async(x, ones, sizeof ones, RRT_COPY_H2D, comm));
  CHECK_OK(dev->event_record(ev, comm));
  CHECK_OK(dev->stream_wait_event(compute, ev));
  float a = 2.0f;
  CHECK_OK(emu_axpy_emu(compute, N, a, x, y, 4, 64));
  a = 5.0f; /* the launch copied its arguments */
  CHECK_MSG(all_equal(y, N, 0.0f), "the kernel ran before the transfer it waits for");
  CHECK(rrt_emu_stream_pending(compute) == 2);
  CHECK_OK(dev->stream_sync(compute));
  CHECK_MSG(all_equal(y, N, 2.0f), "y = %g after the sync, want 2", (double)y[0]);
  /* a launch the hardware refuses fails at once, queued stream or not */
  CHECK(emu_axpy_emu(compute, N, a, x, y, 1, 2048) == RRT_ERR_INVALID_ARG);
  CHECK_OK(dev->free(x));
  CHECK_OK(dev->free(y));
  CHECK_OK(dev->event_destroy(ev));
  CHECK_OK(dev->stream_destroy(compute));
  CHECK_OK(dev->stream_destroy(comm));
}

/* A kernel fault on a queued stream comes back from the next
 * synchronisation, once; the stream is usable after it. */
static void check_fault_at_sync(void) {
  rrt_stream comm = NULL;
  CHECK_OK(dev->stream_create(&comm, 1));
  int *d = dalloc(64 * sizeof(int));
  CHECK_OK(emu_divergent_emu(comm, d, 64)); /* queued: nothing ran yet */
  CHECK(dev->stream_sync(comm) == RRT_ERR_INTERNAL);
  CHECK_OK(dev->stream_sync(comm));
  CHECK_OK(dev->free(d));
  CHECK_OK(dev->stream_destroy(comm));
}

/* Lifetimes and timing: an event outlives its stream, a stream is destroyed
 * with work queued (it runs), an event is destroyed with a record queued;
 * elapsed time needs both records done, as in CUDA. */
static void check_lifetimes(void) {
  rrt_stream s = NULL;
  rrt_event a = NULL, b = NULL, gone = NULL;
  CHECK_OK(dev->stream_create(&s, 1));
  CHECK_OK(dev->event_create(&a));
  CHECK_OK(dev->event_create(&b));
  CHECK_OK(dev->event_create(&gone));
  float *d = dalloc(16 * sizeof(float)), out[16];
  memset(out, 0, sizeof out);
  CHECK_OK(dev->event_record(a, s));
  CHECK_OK(dev->memset_async(d, 0x3f, 16 * sizeof(float), s));
  CHECK_OK(dev->memcpy_async(out, d, sizeof out, RRT_COPY_D2H, s));
  CHECK_OK(dev->event_record(b, s));
  CHECK_OK(dev->event_record(gone, s));
  CHECK_OK(dev->event_destroy(gone));
  float ms = -1.0f;
  CHECK(dev->event_elapsed_ms(a, b, &ms) == RRT_ERR_INVALID_ARG); /* not done yet */
  CHECK_OK(dev->stream_destroy(s));
  unsigned char want[sizeof out];
  memset(want, 0x3f, sizeof want);
  CHECK(memcmp(out, want, sizeof out) == 0);
  int done = 0;
  CHECK_OK(dev->event_query(b, &done));
  CHECK(done == 1);
  CHECK_OK(dev->event_elapsed_ms(a, b, &ms));
  CHECK(ms >= 0.0f);
  rrt_stream t = NULL;
  CHECK_OK(dev->stream_create(&t, 0));
  CHECK_OK(dev->stream_wait_event(t, b)); /* done: nothing to wait for */
  CHECK(rrt_emu_stream_pending(t) == 0);
  CHECK_OK(dev->stream_destroy(t));
  CHECK_OK(dev->free(d));
  CHECK_OK(dev->event_destroy(a));
  CHECK_OK(dev->event_destroy(b));
}

int main(void) {
  check_deferred_copies();
  check_wait_event();
  check_kernel_behind_wait();
  check_fault_at_sync();
  check_lifetimes();
  return test_result();
}

/* Device layer on host memory, for the cpu and emu backends.
 *
 * cpu: everything is synchronous: a copy or memset is done when the call
 * returns, so stream and event synchronisation have nothing to wait for. A
 * stream is a small struct that carries the number of OS threads the SIMT
 * emulator spreads the blocks of a launch over; events are timestamps.
 * emu: the same memory, entered in the emulated GPU's memory map, and
 * streams that queue their work (comm/emu_stream.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/device.h"
#include "comm/emu_mem.h"
#include "comm/emu_stream.h"
#include "comm/host_stream.h"

#define RRT_HOST_ALIGN 64 /* a cache line, and enough for any vector load */
#define RRT_HOST_HUGE_BYTES ((size_t)4 << 20)
#define RRT_HOST_HUGE_ALIGN ((size_t)2 << 20)
#define RRT_HOST_EVENT_MAGIC 0x45565431u

typedef struct rrt_host_event {
  unsigned magic;
  int recorded;
  double t; /* seconds, CLOCK_MONOTONIC */
} rrt_host_event;

static rrt_status host_alloc(void **ptr, size_t bytes) {
  if (!ptr) return RRT_ERR_INVALID_ARG;
  *ptr = NULL;
  /* Zero bytes still gives a unique pointer; sizes are rounded to the alignment. */
  size_t n =
      bytes ? (bytes + RRT_HOST_ALIGN - 1) / RRT_HOST_ALIGN * RRT_HOST_ALIGN : RRT_HOST_ALIGN;
  if (n < bytes) return RRT_ERR_OUT_OF_MEMORY; /* overflow */
  void *p = NULL;
  /* Large buffers 2 MiB aligned, so that transparent huge pages (where the
   * system enables them) map them whole. No MADV_HUGEPAGE: under the usual
   * defrag=madvise it makes first touches compact memory synchronously
   * (seconds, depending on what ran before). */
  size_t align = n >= RRT_HOST_HUGE_BYTES ? RRT_HOST_HUGE_ALIGN : RRT_HOST_ALIGN;
  if (posix_memalign(&p, align, n) != 0) return RRT_ERR_OUT_OF_MEMORY;
  *ptr = p;
  return RRT_SUCCESS;
}

static rrt_status host_free(void *ptr) {
  free(ptr);
  return RRT_SUCCESS;
}

static rrt_status host_memcpy(void *dst, const void *src, size_t bytes, rrt_copy_kind kind,
                              rrt_stream stream) {
  (void)stream;
  if (kind < RRT_COPY_H2D || kind > RRT_COPY_H2H) return RRT_ERR_INVALID_ARG;
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst || !src) return RRT_ERR_INVALID_ARG;
  if (dst != src) memmove(dst, src, bytes);
  return RRT_SUCCESS;
}

static rrt_status host_memset(void *dst, int value, size_t bytes, rrt_stream stream) {
  (void)stream;
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst) return RRT_ERR_INVALID_ARG;
  memset(dst, value, bytes);
  return RRT_SUCCESS;
}

static rrt_status host_stream_create(rrt_stream *stream, int high_priority) {
  (void)high_priority; /* everything is synchronous: no priorities */
  if (!stream) return RRT_ERR_INVALID_ARG;
  rrt_host_stream *s = malloc(sizeof *s);
  if (!s) return RRT_ERR_OUT_OF_MEMORY;
  s->magic = RRT_HOST_STREAM_MAGIC;
  s->queue = NULL;
  /* The context has set the OpenMP thread count to the rank's bound cores. */
  s->threads = omp_get_max_threads();
  if (s->threads < 1) s->threads = 1;
  *stream = s;
  return RRT_SUCCESS;
}

static rrt_status host_stream_destroy(rrt_stream stream) {
  rrt_host_stream *s = stream;
  if (s) {
    if (s->magic != RRT_HOST_STREAM_MAGIC || s->queue) return RRT_ERR_INVALID_ARG;
    s->magic = 0;
    free(s);
  }
  return RRT_SUCCESS;
}

static rrt_status host_stream_sync(rrt_stream stream) {
  const rrt_host_stream *s = stream;
  return (s && (s->magic != RRT_HOST_STREAM_MAGIC || s->queue)) ? RRT_ERR_INVALID_ARG : RRT_SUCCESS;
}

static rrt_status host_stream_set_threads(rrt_stream stream, int threads) {
  rrt_host_stream *s = stream;
  if (!s || s->magic != RRT_HOST_STREAM_MAGIC || threads < 1) return RRT_ERR_INVALID_ARG;
  s->threads = threads;
  return RRT_SUCCESS;
}

int rrt_host_stream_threads(rrt_stream stream) {
  const rrt_host_stream *s = stream;
  return (s && s->magic == RRT_HOST_STREAM_MAGIC && s->threads > 0) ? s->threads : 1;
}

static rrt_status host_event_create(rrt_event *event) {
  if (!event) return RRT_ERR_INVALID_ARG;
  rrt_host_event *e = calloc(1, sizeof *e);
  if (!e) return RRT_ERR_OUT_OF_MEMORY;
  e->magic = RRT_HOST_EVENT_MAGIC;
  *event = e;
  return RRT_SUCCESS;
}

static rrt_status host_event_destroy(rrt_event event) {
  rrt_host_event *e = event;
  if (e) {
    if (e->magic != RRT_HOST_EVENT_MAGIC) return RRT_ERR_INVALID_ARG;
    e->magic = 0;
    free(e);
  }
  return RRT_SUCCESS;
}

static rrt_status host_event_record(rrt_event event, rrt_stream stream) {
  (void)stream;
  rrt_host_event *e = event;
  if (!e || e->magic != RRT_HOST_EVENT_MAGIC) return RRT_ERR_INVALID_ARG;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  e->recorded = 1;
  return RRT_SUCCESS;
}

static rrt_status host_event_query(rrt_event event, int *done) {
  const rrt_host_event *e = event;
  if (!e || e->magic != RRT_HOST_EVENT_MAGIC || !done) return RRT_ERR_INVALID_ARG;
  *done = 1; /* work is synchronous: a recorded (or never recorded) event is complete */
  return RRT_SUCCESS;
}

static rrt_status host_event_sync(rrt_event event) {
  const rrt_host_event *e = event;
  return (!e || e->magic != RRT_HOST_EVENT_MAGIC) ? RRT_ERR_INVALID_ARG : RRT_SUCCESS;
}

static rrt_status host_stream_wait_event(rrt_stream stream, rrt_event event) {
  (void)stream;
  return host_event_sync(event);
}

static rrt_status host_event_elapsed_ms(rrt_event start, rrt_event end, float *ms) {
  const rrt_host_event *a = start, *b = end;
  if (!a || !b || !ms || a->magic != RRT_HOST_EVENT_MAGIC || b->magic != RRT_HOST_EVENT_MAGIC)
    return RRT_ERR_INVALID_ARG;
  if (!a->recorded || !b->recorded) return RRT_ERR_INVALID_ARG; /* as CUDA: not recorded */
  *ms = (float)((b->t - a->t) * 1e3);
  return RRT_SUCCESS;
}

/* The emu backend's device memory: host memory entered in the emulated
 * GPU's memory map (comm/emu_mem.h), so that the transport can refuse a
 * buffer NCCL would refuse on the GPU. */
static rrt_status emu_alloc(void **ptr, size_t bytes) {
  rrt_status st = host_alloc(ptr, bytes);
  if (st != RRT_SUCCESS) return st;
  st = rrt_emu_mem_add(*ptr, bytes);
  if (st != RRT_SUCCESS) {
    free(*ptr);
    *ptr = NULL;
  }
  return st;
}

static rrt_status emu_free(void *ptr) {
  if (!ptr) return RRT_SUCCESS;
  /* as cudaFree: a pointer that is not a device allocation is an error */
  if (!rrt_emu_mem_remove(ptr)) return RRT_ERR_INVALID_ARG;
  free(ptr);
  return RRT_SUCCESS;
}

static int emu_owns(const void *ptr, size_t bytes) { return rrt_emu_mem_contains(ptr, bytes); }

const rrt_device_ops rrt_device_host = {
    .name = "host",
    .is_cuda = 0,
    .queues = 0,
    .alloc = host_alloc,
    .free = host_free,
    .alloc_host_pinned = host_alloc,
    .free_host_pinned = host_free,
    .memcpy_async = host_memcpy,
    .memset_async = host_memset,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_sync = host_stream_sync,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .event_query = host_event_query,
    .event_sync = host_event_sync,
    .stream_wait_event = host_stream_wait_event,
    .event_elapsed_ms = host_event_elapsed_ms,
    .stream_set_threads = host_stream_set_threads,
};

const rrt_device_ops rrt_device_emu = {
    .name = "emu",
    .is_cuda = 0,
    .queues = 1,
    .alloc = emu_alloc,
    .free = emu_free,
    .alloc_host_pinned = host_alloc,
    .free_host_pinned = host_free,
    .memcpy_async = rrt_emu_memcpy,
    .memset_async = rrt_emu_memset,
    .stream_create = rrt_emu_stream_create,
    .stream_destroy = rrt_emu_stream_destroy,
    .stream_sync = rrt_emu_stream_sync,
    .event_create = rrt_emu_event_create,
    .event_destroy = rrt_emu_event_destroy,
    .event_record = rrt_emu_event_record,
    .event_query = rrt_emu_event_query,
    .event_sync = rrt_emu_event_sync,
    .stream_wait_event = rrt_emu_stream_wait_event,
    .event_elapsed_ms = rrt_emu_event_elapsed_ms,
    .stream_set_threads = host_stream_set_threads,
    .owns = emu_owns,
};

#if !RINGRT_HAVE_CUDA
int rrt_cuda_device_count(void) { return 0; }
#endif

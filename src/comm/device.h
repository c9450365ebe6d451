/* Internal: the device layer. One small interface, three implementations:
 * host memory for the cpu backend (synchronous, streams and events are
 * trivial), host memory for the emu backend with streams that queue their
 * work and run it later, events being real dependencies (comm/emu_stream.h),
 * and the CUDA runtime (device_cuda.c). Host orchestration of GPU
 * work is written once against this interface; kernels are launched through
 * the wrappers of src/kernels/cuda/ *.cu files (RRT_KCALL below picks the nvcc or
 * the emulator build of a wrapper). */
#ifndef RRT_COMM_DEVICE_H
#define RRT_COMM_DEVICE_H

#include <stddef.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void *rrt_stream; /* cudaStream_t, or NULL on the host layer */
typedef void *rrt_event;  /* cudaEvent_t, or a host timestamp record */

typedef enum rrt_copy_kind {
  RRT_COPY_H2D = 0,
  RRT_COPY_D2H,
  RRT_COPY_D2D,
  RRT_COPY_H2H
} rrt_copy_kind;

typedef struct rrt_device_ops {
  const char *name; /* "host", "cuda" */
  int is_cuda;      /* kernels go to the nvcc build, memory is device memory */
  /* Streams queue work: a call that enqueues returns before the work is
   * done, so results need a stream or event synchronisation, and streams
   * are ordered only by events (cuda, emu). 0: work is done on return. */
  int queues;
  rrt_status (*alloc)(void **ptr, size_t bytes);
  rrt_status (*free)(void *ptr);
  rrt_status (*alloc_host_pinned)(void **ptr, size_t bytes); /* staging buffers */
  rrt_status (*free_host_pinned)(void *ptr);
  rrt_status (*memcpy_async)(void *dst, const void *src, size_t bytes, rrt_copy_kind kind,
                             rrt_stream stream);
  rrt_status (*memset_async)(void *dst, int value, size_t bytes, rrt_stream stream);
  rrt_status (*stream_create)(rrt_stream *stream, int high_priority);
  rrt_status (*stream_destroy)(rrt_stream stream);
  rrt_status (*stream_sync)(rrt_stream stream);
  rrt_status (*event_create)(rrt_event *event);
  rrt_status (*event_destroy)(rrt_event event);
  rrt_status (*event_record)(rrt_event event, rrt_stream stream);
  rrt_status (*event_query)(rrt_event event, int *done); /* *done = 1 when complete */
  rrt_status (*event_sync)(rrt_event event);
  rrt_status (*stream_wait_event)(rrt_stream stream, rrt_event event);
  rrt_status (*event_elapsed_ms)(rrt_event start, rrt_event end, float *ms);
  /* OS threads the SIMT emulator uses for kernels launched on `stream` (host
   * layer; streams start with omp_get_max_threads()). A no-op on cuda. */
  rrt_status (*stream_set_threads)(rrt_stream stream, int threads);
  /* 1 when [ptr, ptr + bytes) is memory of this layer's device (what the
   * transport may hand to NCCL); NULL: not checked (cpu: every buffer is
   * host memory; cuda: NCCL itself faults). */
  int (*owns)(const void *ptr, size_t bytes);
} rrt_device_ops;

extern const rrt_device_ops rrt_device_host; /* comm/device_host.c: cpu */
extern const rrt_device_ops rrt_device_emu;  /* comm/device_host.c: host memory, mapped as
                                                the emulated GPU's (comm/emu_mem.h) */
#if RINGRT_HAVE_CUDA
extern const rrt_device_ops rrt_device_cuda; /* comm/device_cuda.c */
#endif

/** Emulator OS threads of a host-layer stream (1 for a NULL stream). */
int rrt_host_stream_threads(rrt_stream stream);

/** 1 when `stream` is a host-layer stream that queues its work (emu). */
int rrt_host_stream_queues(rrt_stream stream);

/** Queue `run(arg)` on a stream for which rrt_host_stream_queues is 1: it
 *  runs when the stream reaches it (comm/emu_stream.h says when), a failure
 *  becoming the stream's error, and `drop(arg)` follows it (or replaces it
 *  when the stream is destroyed first). How a kernel launch and the emu
 *  backend's queued ring shift go on a stream. On failure (no memory) the
 *  work is not queued and `drop` is not called. */
rrt_status rrt_host_stream_enqueue(rrt_stream stream, rrt_status (*run)(void *arg),
                                   void (*drop)(void *arg), void *arg);

/** Number of usable CUDA devices: 0 when built without CUDA, or when the
 *  runtime reports no device or an insufficient driver (that means "no GPU",
 *  not a failure). */
int rrt_cuda_device_count(void);

/** Why the last kernel launch on this thread failed, as the CUDA runtime
 *  (cudaGetErrorName: cudaGetErrorString) or the emulator (its launch
 *  checks) said it: RRT_LAUNCH notes it (and clears it when a launch
 *  succeeds), and the next rrt_error of this thread appends it to the
 *  message and clears it, so a launch failure names the CUDA error wherever
 *  it is reported. Per thread, as CUDA's own last-error state is. */
void rrt_launch_note(const char *kernel, const char *why);
/** Take (copy and clear) the pending note; 0 when there is none. */
int rrt_launch_note_take(char *buf, size_t len);

/** Call a kernel wrapper `name` from src/kernels/cuda: the nvcc build
 *  (name##_cuda) for a CUDA device layer, the emulator build (name##_emu)
 *  otherwise. Wrappers return rrt_status and take the stream first. */
#if RINGRT_HAVE_CUDA
#define RRT_KCALL(dev, name, ...)                                                                  \
  ((dev)->is_cuda ? name##_cuda(__VA_ARGS__) : name##_emu(__VA_ARGS__))
#else
#define RRT_KCALL(dev, name, ...) ((dev)->is_cuda ? RRT_ERR_UNSUPPORTED : name##_emu(__VA_ARGS__))
#endif

/** Declare both builds of a kernel wrapper in a C header. */
#define RRT_DECLARE_KERNEL(name, params)                                                           \
  rrt_status name##_emu params;                                                                    \
  rrt_status name##_cuda params;

#ifdef __cplusplus
}
#endif
#endif

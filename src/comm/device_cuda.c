/* Device layer on the CUDA runtime, for the cuda backend.
 *
 * Streams are non-blocking (they never serialise with the legacy default
 * stream); the comm stream gets the highest priority the device offers so
 * that transfers overtake queued compute. Failures print the CUDA error
 * string (there is no context at this level) and map to an rrt_status; the
 * caller adds its own context to the message.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "comm/device.h"

static rrt_status cuda_status(cudaError_t e, const char *call) {
  if (e == cudaSuccess) return RRT_SUCCESS;
  fprintf(stderr, "ringrt: %s failed: %s (%s)\n", call, cudaGetErrorString(e), cudaGetErrorName(e));
  if (e == cudaErrorMemoryAllocation) return RRT_ERR_OUT_OF_MEMORY;
  if (e == cudaErrorInvalidValue) return RRT_ERR_INVALID_ARG;
  return RRT_ERR_CUDA;
}

static rrt_status cu_alloc(void **ptr, size_t bytes) {
  if (!ptr) return RRT_ERR_INVALID_ARG;
  *ptr = NULL;
  /* cudaMalloc(0) may give NULL; the contract promises a unique pointer. */
  return cuda_status(cudaMalloc(ptr, bytes ? bytes : 256), "cudaMalloc");
}

static rrt_status cu_free(void *ptr) { return cuda_status(cudaFree(ptr), "cudaFree"); }

static rrt_status cu_alloc_pinned(void **ptr, size_t bytes) {
  if (!ptr) return RRT_ERR_INVALID_ARG;
  *ptr = NULL;
  return cuda_status(cudaMallocHost(ptr, bytes ? bytes : 64), "cudaMallocHost");
}

static rrt_status cu_free_pinned(void *ptr) {
  return cuda_status(cudaFreeHost(ptr), "cudaFreeHost");
}

static rrt_status cu_memcpy(void *dst, const void *src, size_t bytes, rrt_copy_kind kind,
                            rrt_stream stream) {
  static const enum cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                              cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
  if (kind < RRT_COPY_H2D || kind > RRT_COPY_H2H) return RRT_ERR_INVALID_ARG;
  if (bytes == 0) return RRT_SUCCESS;
  return cuda_status(cudaMemcpyAsync(dst, src, bytes, kinds[kind], (cudaStream_t)stream),
                     "cudaMemcpyAsync");
}

static rrt_status cu_memset(void *dst, int value, size_t bytes, rrt_stream stream) {
  if (bytes == 0) return RRT_SUCCESS;
  return cuda_status(cudaMemsetAsync(dst, value, bytes, (cudaStream_t)stream), "cudaMemsetAsync");
}

static rrt_status cu_stream_create(rrt_stream *stream, int high_priority) {
  if (!stream) return RRT_ERR_INVALID_ARG;
  int least = 0, greatest = 0; /* numerically lower is higher priority */
  rrt_status st = cuda_status(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                              "cudaDeviceGetStreamPriorityRange");
  if (st != RRT_SUCCESS) return st;
  cudaStream_t s = NULL;
  st = cuda_status(
      cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, high_priority ? greatest : least),
      "cudaStreamCreateWithPriority");
  *stream = st == RRT_SUCCESS ? (rrt_stream)s : NULL;
  return st;
}

static rrt_status cu_stream_destroy(rrt_stream stream) {
  if (!stream) return RRT_SUCCESS; /* the default stream is not ours to destroy */
  return cuda_status(cudaStreamDestroy((cudaStream_t)stream), "cudaStreamDestroy");
}

static rrt_status cu_stream_sync(rrt_stream stream) {
  return cuda_status(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}

static rrt_status cu_stream_set_threads(rrt_stream stream, int threads) {
  (void)stream, (void)threads; /* only the emulator has OS threads per stream */
  return RRT_SUCCESS;
}

static rrt_status cu_event_create(rrt_event *event) {
  if (!event) return RRT_ERR_INVALID_ARG;
  cudaEvent_t e = NULL;
  rrt_status st = cuda_status(cudaEventCreate(&e), "cudaEventCreate"); /* with timing */
  *event = st == RRT_SUCCESS ? (rrt_event)e : NULL;
  return st;
}

static rrt_status cu_event_destroy(rrt_event event) {
  if (!event) return RRT_SUCCESS;
  return cuda_status(cudaEventDestroy((cudaEvent_t)event), "cudaEventDestroy");
}

static rrt_status cu_event_record(rrt_event event, rrt_stream stream) {
  return cuda_status(cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream), "cudaEventRecord");
}

static rrt_status cu_event_query(rrt_event event, int *done) {
  if (!done) return RRT_ERR_INVALID_ARG;
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  *done = e == cudaSuccess;
  return e == cudaErrorNotReady ? RRT_SUCCESS : cuda_status(e, "cudaEventQuery");
}

static rrt_status cu_event_sync(rrt_event event) {
  return cuda_status(cudaEventSynchronize((cudaEvent_t)event), "cudaEventSynchronize");
}

static rrt_status cu_stream_wait_event(rrt_stream stream, rrt_event event) {
  return cuda_status(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0),
                     "cudaStreamWaitEvent");
}

static rrt_status cu_event_elapsed_ms(rrt_event start, rrt_event end, float *ms) {
  if (!ms) return RRT_ERR_INVALID_ARG;
  return cuda_status(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end),
                     "cudaEventElapsedTime");
}

const rrt_device_ops rrt_device_cuda = {
    .name = "cuda",
    .is_cuda = 1,
    .queues = 1,
    .alloc = cu_alloc,
    .free = cu_free,
    .alloc_host_pinned = cu_alloc_pinned,
    .free_host_pinned = cu_free_pinned,
    .memcpy_async = cu_memcpy,
    .memset_async = cu_memset,
    .stream_create = cu_stream_create,
    .stream_destroy = cu_stream_destroy,
    .stream_sync = cu_stream_sync,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_sync = cu_event_sync,
    .stream_wait_event = cu_stream_wait_event,
    .event_elapsed_ms = cu_event_elapsed_ms,
    .stream_set_threads = cu_stream_set_threads,
};

int rrt_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess) return n;
  (void)cudaGetLastError(); /* clear the error so later calls do not see it */
  /* No device, no or too old a driver, or a driver that cannot start: there
   * is no usable GPU, which is not a failure. Anything else is unexpected but
   * still means no GPU; say so. */
  if (e != cudaErrorNoDevice && e != cudaErrorInsufficientDriver &&
      e != cudaErrorInitializationError && e != cudaErrorCompatNotSupportedOnDevice &&
      e != cudaErrorSystemDriverMismatch && e != cudaErrorDevicesUnavailable &&
      e != cudaErrorSystemNotReady && e != cudaErrorNotSupported && e != cudaErrorStubLibrary)
    fprintf(stderr, "ringrt: cudaGetDeviceCount: %s (%s); treating as no GPU\n",
            cudaGetErrorString(e), cudaGetErrorName(e));
  return 0;
}

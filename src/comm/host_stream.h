/* Internal: the stream of the host device layers (comm/device_host.c for
 * the cpu backend, comm/emu_stream.c for the emu backend). One struct for
 * both, so that the SIMT executor reads the thread count of either. */
#ifndef RRT_COMM_HOST_STREAM_H
#define RRT_COMM_HOST_STREAM_H

#define RRT_HOST_STREAM_MAGIC 0x53545231u

struct rrt_emu_queue; /* comm/emu_stream.c */

typedef struct rrt_host_stream {
  unsigned magic;
  int threads;                 /* emulator OS threads */
  struct rrt_emu_queue *queue; /* emu: the work queued on it; NULL: synchronous (cpu) */
} rrt_host_stream;

/** The stream behind a handle, or NULL for NULL or a handle of another kind. */
static inline rrt_host_stream *rrt_host_stream_of(void *stream) {
  rrt_host_stream *s = (rrt_host_stream *)stream;
  return s && s->magic == RRT_HOST_STREAM_MAGIC ? s : (rrt_host_stream *)0;
}

#endif

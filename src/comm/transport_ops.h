/* Internal: a transport engine as a table of function pointers.
 *
 * Each engine file (transport_mpi.c, transport_staged.c, transport_nccl.c)
 * defines one const table; context creation points ctx->tx at the one the
 * backend needs, once. transport.c validates every public call and then
 * calls through ctx->tx, so no function switches on the transport and no
 * function needs #if for a missing engine. Arguments reaching a table entry
 * have been validated. */
#ifndef RRT_COMM_TRANSPORT_OPS_H
#define RRT_COMM_TRANSPORT_OPS_H

#include <stddef.h>

#include "ringrt/context.h"
#include "ringrt/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_transport_ops {
  const char *name;   /* "mpi", "mpi-staged", "nccl" (as rrt_transport_name) */
  rrt_transport kind; /* what rrt_ctx_transport() reports */
  /* MPI touches the buffers from the host: on a device layer whose streams
   * queue work (emu), the front (transport.c) first runs what is queued on
   * the context's streams, as the staged engine copies after them. */
  int host_buffers;
  /* ring_shift runs on the comm stream: its request's event fires once the
   * data has landed, so a consumer stream can wait for it on the device
   * (rrt_request_order_stream) instead of the host (NCCL; emu's engine). */
  int shift_on_stream;
  /* p2p_group too: queued on the comm stream after the compute stream, its
   * request completing with an event (NCCL; emu's engine). */
  int p2p_on_stream;
  rrt_status (*ring_shift)(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes, int step,
                           rrt_request_t *req);
  rrt_status (*p2p_group)(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                          int nrecvs, rrt_request_t *req);
  rrt_status (*allreduce)(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                          rrt_dtype dtype, rrt_op op);
  /* Equal blocks; NULL when the engine has no faster path than allgatherv
   * (transport.c then builds the equal-block layout). */
  rrt_status (*allgather)(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes);
  rrt_status (*allgatherv)(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                           const size_t *recv_bytes, const size_t *displs);
  rrt_status (*bcast)(rrt_ctx_t ctx, void *buf, size_t bytes, int root);
} rrt_transport_ops;

/** MPI on host memory (cpu backend). */
extern const rrt_transport_ops rrt_transport_mpi;
/** The emu backend's: MPI, the ring shift queued on the comm stream as NCCL
 *  queues it on a GPU (transport_emu.c). */
extern const rrt_transport_ops rrt_transport_emu;
/** MPI with host staging of device memory (cuda without NCCL). */
extern const rrt_transport_ops rrt_transport_staged;
#if RINGRT_HAVE_NCCL
/** NCCL on device memory (cuda). */
extern const rrt_transport_ops rrt_transport_nccl;
#endif

#ifdef __cplusplus
}
#endif
#endif

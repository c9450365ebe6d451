/* ringrt: moving data between ranks.
 *
 * One interface for every workload. Buffers live in backend memory (see
 * memory.h): device memory with NCCL for cuda, host memory with MPI for cpu
 * and emu, device memory staged through host for cuda without NCCL.
 *
 * Every blocking wait honours the context timeout (RINGRT_TIMEOUT): on expiry
 * it prints the operation, the peer and the step to stderr and aborts the job
 * (MPI_Abort / ncclCommAbort) with a non-zero exit, since a rank that stops
 * waiting cannot leave its peers in a state that lets them continue.
 */
#ifndef RINGRT_TRANSPORT_H
#define RINGRT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rrt_dtype {
  RRT_DTYPE_F32 = 0,
  RRT_DTYPE_F64,
  RRT_DTYPE_I32,
  RRT_DTYPE_I64,
  RRT_DTYPE_U8,
  RRT_DTYPE_BF16, /**< storage only (uint16 bits) */
  RRT_DTYPE_F16   /**< storage only (uint16 bits) */
} rrt_dtype;

/** Size in bytes of one element. */
RRT_API size_t rrt_dtype_size(rrt_dtype dtype);
/** "f32", "f64", "i32", "i64", "u8", "bf16", "f16". */
RRT_API const char *rrt_dtype_name(rrt_dtype dtype);

typedef enum rrt_op { RRT_OP_SUM = 0, RRT_OP_MIN, RRT_OP_MAX } rrt_op;

/** Completion handle of a non-blocking operation. */
typedef struct rrt_request *rrt_request_t;

/** Ring shift: send `bytes` from `send` to rank (r+1) % P and receive `bytes`
 *  from rank (r-1+P) % P into `recv`, in one NCCL group / one Isend+Irecv
 *  pair so no ordering can deadlock. Non-blocking: the buffers must stay
 *  untouched until the request completes. `step` is only reported in
 *  timeout messages. With P = 1 the data is copied locally. 0 bytes is valid. */
RRT_API rrt_status rrt_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                  int step, rrt_request_t *req);

/** Test for completion without blocking: *done = 1 when complete. The
 *  request stays valid until rrt_request_wait() or rrt_request_free(). */
RRT_API rrt_status rrt_request_test(rrt_request_t req, int *done);
/** Wait (honouring the timeout) and free the request; NULL is fine. */
RRT_API rrt_status rrt_request_wait(rrt_request_t req);
/** Free a request. One still in flight is waited for first (timeout
 *  applies), since MPI/NCCL may still be using its buffers. NULL is fine. */
RRT_API void rrt_request_free(rrt_request_t req);

/** One message of a grouped point-to-point exchange. */
typedef struct rrt_p2p {
  int peer;  /**< rank in the context communicator */
  void *buf; /**< backend memory (read for sends, written for receives) */
  size_t bytes;
} rrt_p2p;

/** Grouped point-to-point exchange (halo exchange): post all sends and
 *  receives at once (one NCCL group); lists may be empty and uneven between
 *  ranks, but every send must be matched by the peer's receive of the same size.
 *  Several messages to the same peer are matched in list order. */
RRT_API rrt_status rrt_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends,
                                 const rrt_p2p *recvs, int nrecvs, rrt_request_t *req);

/** Blocking allreduce of `count` elements (send == recv is in place). */
RRT_API rrt_status rrt_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                                 rrt_dtype dtype, rrt_op op);

/** A value and the global index it came from. */
typedef struct rrt_minloc {
  double value;
  int64_t index;
} rrt_minloc;

/** Element-wise min-loc over ranks, in place, on HOST memory for every
 *  backend (these arrays are small): the smallest value wins; equal values go
 *  to the lowest index, so the answer does not depend on rank order. NaN
 *  values never win. */
RRT_API rrt_status rrt_allreduce_minloc(rrt_ctx_t ctx, rrt_minloc *inout, size_t count);

/** Every rank contributes `bytes`; recv holds size * bytes in rank order. */
RRT_API rrt_status rrt_allgather(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes);

/** Every rank contributes `bytes` (0 is fine); recv_bytes[r] and displs[r]
 *  (byte offsets in recv) describe rank r's part on every rank. */
RRT_API rrt_status rrt_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                  const size_t *recv_bytes, const size_t *displs);

/** Broadcast `bytes` from `root`. */
RRT_API rrt_status rrt_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);

/** Barrier (honours the timeout). */
RRT_API rrt_status rrt_barrier(rrt_ctx_t ctx);

/** Agree on a local result before communicating: every rank passes its own
 *  status; every rank gets RRT_SUCCESS only if all succeeded. Otherwise the
 *  failing rank returns its own status and the others RRT_ERR_REMOTE, and
 *  every rank's last error names the lowest failing rank and its message.
 *  Use it after validating inputs, before any blocking exchange, so a bad
 *  input on one rank is an error on all ranks rather than a hang. */
RRT_API rrt_status rrt_agree(rrt_ctx_t ctx, rrt_status local);

#ifdef __cplusplus
}
#endif
#endif

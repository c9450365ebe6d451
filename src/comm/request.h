/* Internal: the completion handle behind rrt_request_t, its lifecycle and
 * the timed wait. The engines that fill requests are declared in
 * comm/transport_mpi.h (the MPI engine) and comm/transport_ops.h (the
 * table every engine provides).
 *
 * A request completes when every MPI request it holds has completed (MPI and
 * staged transports) or when its CUDA event has fired (NCCL). For the staged
 * transport completion also includes the copy of the received host bytes
 * back to device memory. All waiting goes through comm/wait.c, which applies
 * the context timeout.
 */
#ifndef RRT_COMM_REQUEST_H
#define RRT_COMM_REQUEST_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/ctx.h"
#include "ringrt/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A host -> device copy done when a staged request completes. */
typedef struct rrt_stage_copy {
  void *dev;
  const void *host;
  size_t bytes;
} rrt_stage_copy;

struct rrt_request {
  rrt_ctx_t ctx;
  const char *op; /* static API name, e.g. "rrt_ring_shift" (messages and trace) */
  int peer;       /* peer reported on timeout when no MPI request says better, -1 if none */
  int step;       /* reported on timeout; -1 when not meaningful */
  double t0;      /* post time (rrt_time_now), for the comm track of the trace */
  int finished;   /* completion work (copy back, trace) done */
  int untraced;   /* part of another request (the emu engine's queued shift), which is traced */
  int coll;       /* a collective: every rank of the context takes part */
  uint64_t seq;   /* with coll: its number among the context's collectives (1, 2, ...) */

  /* MPI: requests with, for timeout messages, their peer and direction. */
  int nmpi, cap_mpi;
  MPI_Request *mpi;
  int *mpi_peer;          /* -1 for collectives */
  unsigned char *mpi_dir; /* RRT_DIR_* */

  /* NCCL (or any device-stream work): an event recorded on the comm stream
   * after the operation; NULL when unused. poll_error, when set, is called
   * while waiting and returns an error status (with the message recorded)
   * when the communicator reported an asynchronous failure. */
  rrt_event event;
  rrt_status (*poll_error)(rrt_request_t req);

  /* Staging (MPI_STAGED): pinned host memory freed on release, and the
   * copies to device memory done on completion. */
  void *stage;
  int ncopies, cap_copies;
  rrt_stage_copy *copies;

  /* MPI objects that must outlive the operation (freed on release). */
  MPI_Datatype *types;
  int ntypes, cap_types;
  MPI_Op mpi_op;
  void *scratch; /* e.g. int count/displacement arrays of a non-blocking collective */
  char dummy;    /* a valid, unaliased address for zero-byte buffers */
};

enum { RRT_DIR_COLL = 0, RRT_DIR_SEND = 1, RRT_DIR_RECV = 2 };

/* ---- request lifecycle (comm/request.c) -------------------------------- */

/** Allocate an empty request (t0 = now). */
rrt_status rrt_request_create(rrt_ctx_t ctx, const char *op, int peer, int step,
                              rrt_request_t *req);
/** Mark the request a collective and give it the context's next sequence
 *  number (once; rrt_request_add_mpi does it for RRT_DIR_COLL, device
 *  engines call it for their collectives). The roll call of a timeout
 *  compares these numbers across ranks. */
void rrt_request_mark_collective(rrt_request_t req);
/** Room for one more MPI request; returns the slot (set to MPI_REQUEST_NULL)
 *  or NULL with the error recorded on the context. */
MPI_Request *rrt_request_add_mpi(rrt_request_t req, int peer, int dir);
/** Queue a host -> device copy for completion (staged transport). */
rrt_status rrt_request_add_copy(rrt_request_t req, void *dev, const void *host, size_t bytes);
/** Keep a derived datatype alive until release. */
rrt_status rrt_request_keep_type(rrt_request_t req, MPI_Datatype type);
/** A device-layer status st of req's operation: RRT_SUCCESS passes; else
 *  the error, recorded as "<what> failed" under req's op. */
rrt_status rrt_request_dev_check(rrt_request_t req, rrt_status st, const char *what);
/** Engines that run on the comm stream (NCCL; the emu engine's ring
 *  shift), before posting: order the comm stream after everything queued on
 *  the compute stream (the send buffer's writer, the receive buffer's last
 *  reader). */
rrt_status rrt_request_after_compute(rrt_request_t req);
/** ... and after posting: the completion event (req->event), recorded on the
 *  comm stream; the request completes when it fires. */
rrt_status rrt_request_record_done(rrt_request_t req);
/** Release everything the request holds (no waiting) and free it. */
void rrt_request_release(rrt_request_t req);

/* ---- waiting (comm/wait.c) --------------------------------------------- */

/** Non-blocking check; on completion runs the completion work once. */
rrt_status rrt_request_poll(rrt_request_t req, int *done);
/** Wait with the context timeout (aborting the job on expiry), run the
 *  completion work, and keep the request. */
rrt_status rrt_request_wait_keep(rrt_request_t req);
/** A request that completes on the comm stream (its event; no MPI requests,
 *  no staged copies: NCCL, the emu engine's ring shift): make `stream` wait
 *  for it on the device and set *ordered = 1; the request must still be
 *  waited for (errors, release) but the host need not wait before queueing
 *  the work that reads its buffers. *ordered = 0: the host must wait. */
rrt_status rrt_request_order_stream(rrt_request_t req, rrt_stream stream, int *ordered);
/* ---- the roll call of a timeout (comm/roll_call.c) ---------------------- */

/** While waiting: answer any roll call of a rank that timed out with what
 *  `req` is (cheap: one MPI_Iprobe on ctx->roll_comm; a no-op without it). */
void rrt_roll_call_answer(rrt_request_t req);
/** On timeout: ask every rank what it is waiting in, listen for a short
 *  grace period, and write into `buf` which ranks did not arrive (for a
 *  collective) or what the pending peer is doing (point to point). Writes
 *  "" when the context has no roll communicator. */
void rrt_roll_call(rrt_request_t req, int pending_peer, char *buf, size_t len);

/** Wait, then release (the body of every blocking collective). */
rrt_status rrt_request_wait_release(rrt_request_t req);
/** End of a blocking call: `posted` is the status of posting into `req`;
 *  on failure release the request and return it, else wait and release. */
rrt_status rrt_request_wait_posted(rrt_request_t req, rrt_status posted);

#ifdef __cplusplus
}
#endif
#endif

/* Internal: the completion handle behind rrt_request_t, and the internal
 * interface of the transports (MPI on host memory, NCCL, MPI with staging).
 *
 * A request completes when every MPI request it holds has completed (MPI and
 * staged transports) or when its CUDA event has fired (NCCL). For the staged
 * transport completion also includes the copy of the received host bytes
 * back to device memory. All waiting goes through comm/wait.c, which applies
 * the context timeout.
 */
#ifndef RRT_COMM_REQUEST_H
#define RRT_COMM_REQUEST_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>

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
/** Room for one more MPI request; returns the slot (set to MPI_REQUEST_NULL)
 *  or NULL with the error recorded on the context. */
MPI_Request *rrt_request_add_mpi(rrt_request_t req, int peer, int dir);
/** Queue a host -> device copy for completion (staged transport). */
rrt_status rrt_request_add_copy(rrt_request_t req, void *dev, const void *host, size_t bytes);
/** Keep a derived datatype alive until release. */
rrt_status rrt_request_keep_type(rrt_request_t req, MPI_Datatype type);
/** Release everything the request holds (no waiting) and free it. */
void rrt_request_release(rrt_request_t req);

/* ---- waiting (comm/wait.c) --------------------------------------------- */

/** Non-blocking check; on completion runs the completion work once. */
rrt_status rrt_request_poll(rrt_request_t req, int *done);
/** Wait with the context timeout (aborting the job on expiry), run the
 *  completion work, and keep the request. */
rrt_status rrt_request_wait_keep(rrt_request_t req);
/** Wait, then release (the body of every blocking collective). */
rrt_status rrt_request_wait_release(rrt_request_t req);

/* ---- MPI on host memory (comm/transport_mpi.c) -------------------------- */

/* Message tags: one per operation kind, so a ring shift and a halo exchange
 * in flight at once never match each other's messages. Within one kind,
 * MPI's non-overtaking rule matches messages between a pair of ranks in the
 * order they were posted, which is the order the API promises. */
#define RRT_TAG_RING 0x5201
#define RRT_TAG_P2P 0x5202

/* Point-to-point messages are cut into pieces of at most this many bytes so
 * that counts fit in an int; collectives use a derived datatype instead. */
#define RRT_MPI_MAX_CHUNK ((size_t)1 << 30)

/* Where int counts end and the block of the derived datatypes used beyond
 * (collectives); the tests shrink both to run that path on small buffers. */
typedef struct rrt_mpi_limits {
  size_t max_count; /* largest byte count passed to MPI as an int */
  size_t block;     /* block of the derived datatype above that */
} rrt_mpi_limits;
#define RRT_MPI_LIMITS_DEFAULT ((rrt_mpi_limits){(size_t)INT_MAX, (size_t)1 << 30})

rrt_status rrt_mpi_post_ring(rrt_request_t req, const void *send, void *recv, size_t bytes,
                             size_t max_chunk);
rrt_status rrt_mpi_post_p2p(rrt_request_t req, const rrt_p2p *sends, int nsends,
                            const rrt_p2p *recvs, int nrecvs, size_t max_chunk);
rrt_status rrt_mpi_post_allreduce(rrt_request_t req, const void *send, void *recv, size_t count,
                                  rrt_dtype dtype, rrt_op op);
rrt_status rrt_mpi_post_allgatherv(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                   const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_mpi_post_bcast(rrt_request_t req, void *buf, size_t bytes, int root);
rrt_status rrt_mpi_post_allgatherv_ex(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                      const size_t *recv_bytes, const size_t *displs,
                                      rrt_mpi_limits lim);
rrt_status rrt_mpi_post_bcast_ex(rrt_request_t req, void *buf, size_t bytes, int root,
                                 rrt_mpi_limits lim);

/** Ring shift on host memory with an explicit chunk size (tests use a small
 *  one to exercise the path taken above INT_MAX bytes). */
rrt_status rrt_mpi_ring_shift_chunked(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                      int step, size_t max_chunk, rrt_request_t *req);
rrt_status rrt_mpi_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes, int step,
                              rrt_request_t *req);
rrt_status rrt_mpi_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                             int nrecvs, rrt_request_t *req);
rrt_status rrt_mpi_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                             rrt_dtype dtype, rrt_op op);
rrt_status rrt_mpi_allreduce_minloc(rrt_ctx_t ctx, rrt_minloc *inout, size_t count);
rrt_status rrt_mpi_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                              const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_mpi_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);
rrt_status rrt_mpi_allgatherv_ex(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                 const size_t *recv_bytes, const size_t *displs,
                                 rrt_mpi_limits lim);
rrt_status rrt_mpi_bcast_ex(rrt_ctx_t ctx, void *buf, size_t bytes, int root, rrt_mpi_limits lim);
rrt_status rrt_mpi_barrier(rrt_ctx_t ctx);
rrt_status rrt_mpi_agree(rrt_ctx_t ctx, rrt_status local);

/* ---- MPI with host staging of device memory (comm/transport_staged.c) --- */

rrt_status rrt_staged_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                 int step, rrt_request_t *req);
rrt_status rrt_staged_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends,
                                const rrt_p2p *recvs, int nrecvs, rrt_request_t *req);
rrt_status rrt_staged_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                                rrt_dtype dtype, rrt_op op);
rrt_status rrt_staged_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                 const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_staged_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);

/* ---- NCCL on device memory (comm/transport_nccl.c, built with NCCL) ----- */

#if RINGRT_HAVE_NCCL
rrt_status rrt_nccl_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes, int step,
                               rrt_request_t *req);
rrt_status rrt_nccl_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                              int nrecvs, rrt_request_t *req);
rrt_status rrt_nccl_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                              rrt_dtype dtype, rrt_op op);
rrt_status rrt_nccl_allgather(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes);
rrt_status rrt_nccl_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                               const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_nccl_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);
#endif

#ifdef __cplusplus
}
#endif
#endif

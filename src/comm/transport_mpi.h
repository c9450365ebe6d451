/* Internal: the MPI engine on host memory (comm/transport_mpi.c).
 *
 * The transport of the cpu and emu backends, the engine under the staged
 * transport, and the base of every host-memory collective (host_coll.c,
 * agree.c, minloc.c, the trace write). Post functions add MPI requests to
 * a request that the caller then waits for (wait.c, with the timeout); the
 * blocking helpers create, post and wait in one call. Byte counts are
 * size_t: messages are cut into int-sized pieces, collectives describe a
 * large block with one derived datatype. */
#ifndef RRT_COMM_TRANSPORT_MPI_H
#define RRT_COMM_TRANSPORT_MPI_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>

#include "comm/request.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message tags: one per operation kind, so a ring shift, a halo exchange
 * and a gather in flight at once never match each other's messages. Within
 * one kind, MPI's non-overtaking rule matches messages between a pair of
 * ranks in the order they were posted, which is the order the API promises. */
#define RRT_TAG_RING 0x5201
#define RRT_TAG_P2P 0x5202
#define RRT_TAG_GATHER 0x5203

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

/* ---- post into a request ------------------------------------------------ */

rrt_status rrt_mpi_post_ring(rrt_request_t req, const void *send, void *recv, size_t bytes,
                             size_t max_chunk);
rrt_status rrt_mpi_post_p2p(rrt_request_t req, const rrt_p2p *sends, int nsends,
                            const rrt_p2p *recvs, int nrecvs, size_t max_chunk);
/** One point-to-point message with an explicit tag (cut into pieces). */
rrt_status rrt_mpi_post_send(rrt_request_t req, const void *buf, size_t bytes, int peer, int tag);
rrt_status rrt_mpi_post_recv(rrt_request_t req, void *buf, size_t bytes, int peer, int tag);
rrt_status rrt_mpi_post_allreduce(rrt_request_t req, const void *send, void *recv, size_t count,
                                  rrt_dtype dtype, rrt_op op);
/** Allreduce of `count` elements of `elem` bytes with an MPI type and op of
 *  the caller's (min-loc), in pieces whose counts fit in an int. */
rrt_status rrt_mpi_post_reduce(rrt_request_t req, const void *send, void *recv, size_t count,
                               size_t elem, MPI_Datatype type, MPI_Op mop);
rrt_status rrt_mpi_post_allgatherv(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                   const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_mpi_post_bcast(rrt_request_t req, void *buf, size_t bytes, int root);
rrt_status rrt_mpi_post_allgatherv_ex(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                      const size_t *recv_bytes, const size_t *displs,
                                      rrt_mpi_limits lim);
rrt_status rrt_mpi_post_bcast_ex(rrt_request_t req, void *buf, size_t bytes, int root,
                                 rrt_mpi_limits lim);
rrt_status rrt_mpi_post_barrier(rrt_request_t req);

/* ---- blocking helpers (create, post, wait) and the ring entry ----------- */

/** Ring shift on host memory with an explicit chunk size (tests use a small
 *  one to exercise the path taken above INT_MAX bytes). */
rrt_status rrt_mpi_ring_shift_chunked(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                      int step, size_t max_chunk, rrt_request_t *req);
rrt_status rrt_mpi_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                             int nrecvs, rrt_request_t *req);
rrt_status rrt_mpi_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                             rrt_dtype dtype, rrt_op op);
rrt_status rrt_mpi_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                              const size_t *recv_bytes, const size_t *displs);
rrt_status rrt_mpi_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);
rrt_status rrt_mpi_allgatherv_ex(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                 const size_t *recv_bytes, const size_t *displs,
                                 rrt_mpi_limits lim);
rrt_status rrt_mpi_bcast_ex(rrt_ctx_t ctx, void *buf, size_t bytes, int root, rrt_mpi_limits lim);
rrt_status rrt_mpi_barrier(rrt_ctx_t ctx);

#ifdef __cplusplus
}
#endif
#endif

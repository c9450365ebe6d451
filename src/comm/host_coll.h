/* Internal: collectives on HOST memory for every backend.
 *
 * Workloads exchange setup metadata (row counts, plan records, level
 * histograms) and small per-rank results in host memory even when their data
 * lives on a GPU. These go over MPI on the context communicator through the
 * request machinery of the transport, so every wait honours RINGRT_TIMEOUT
 * and names the operation; byte counts are size_t end to end (messages are
 * cut into int-sized pieces inside), so nothing wraps past 2^31.
 * Every function is collective over the context. The functions that
 * allocate what they receive agree on the allocation before moving data, so
 * a rank out of memory is an error on every rank, not a hang. */
#ifndef RRT_COMM_HOST_COLL_H
#define RRT_COMM_HOST_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Allreduce of `count` elements in host memory (send == recv is in place). */
rrt_status rrt_host_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                              rrt_dtype dtype, rrt_op op);
/** Broadcast `bytes` of host memory from `root`. */
rrt_status rrt_host_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root);
/** Allgatherv with known sizes: recv_bytes[r] bytes of rank r land at
 *  recv + displs[r] (byte offsets). */
rrt_status rrt_host_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                               const size_t *recv_bytes, const size_t *displs);
/** Allgatherv that learns the sizes: *recv is malloc'd and holds every
 *  rank's bytes in rank order; recv_bytes (size P, may be NULL) and *total
 *  (may be NULL) describe it. On failure *recv is NULL. */
rrt_status rrt_host_allgatherv_alloc(rrt_ctx_t ctx, const void *send, size_t bytes, void **recv,
                                     size_t *recv_bytes, size_t *total);
/** Every rank sends send_bytes[r] bytes at send + send_displs[r] to rank r
 *  and learns what it receives: *recv is malloc'd and holds the bytes from
 *  each rank in rank order, recv_bytes[r] (size P) from rank r. On failure
 *  *recv is NULL. */
rrt_status rrt_host_alltoallv_alloc(rrt_ctx_t ctx, const void *send, const size_t *send_bytes,
                                    const size_t *send_displs, void **recv, size_t *recv_bytes);
/** Sparse all-to-all of records of k int64 each: record t goes to rank
 *  dest[t] (any order). On return *nrecv records from every rank (this one
 *  included) in rank order (malloc'd *rdata) and (*rsrc)[t] the sender of each. */
rrt_status rrt_host_exchange_records(rrt_ctx_t ctx, int64_t nitems, const int32_t *dest,
                                     const int64_t *data, int k, int64_t *nrecv, int64_t **rdata,
                                     int32_t **rsrc);
/** All-to-all with sizes both sides know (the ILU(0) analysis exchanges
 *  replies whose lengths follow from the requests): send_bytes[r] bytes at
 *  send + send_displs[r] go to rank r, recv_bytes[r] bytes from rank r land
 *  at recv + recv_displs[r] (byte counts and offsets, size P each). */
rrt_status rrt_host_alltoallv(rrt_ctx_t ctx, const void *send, const size_t *send_bytes,
                              const size_t *send_displs, void *recv, const size_t *recv_bytes,
                              const size_t *recv_displs);

/** rrt_agree naming `op` in its messages and timeout (rrt_agree itself
 *  is rrt_agree_named(ctx, "rrt_agree", local)). */
rrt_status rrt_agree_named(rrt_ctx_t ctx, const char *op, rrt_status local);
/** rrt_host_allreduce / rrt_host_bcast naming `op` (the caller's operation,
 *  e.g. "rrt_ctx_create") in errors and in the timeout message. */
rrt_status rrt_host_allreduce_named(rrt_ctx_t ctx, const char *op, const void *send, void *recv,
                                    size_t count, rrt_dtype dtype, rrt_op reduce);
rrt_status rrt_host_bcast_named(rrt_ctx_t ctx, const char *op, void *buf, size_t bytes, int root);
rrt_status rrt_host_allgatherv_named(rrt_ctx_t ctx, const char *op, const void *send, size_t bytes,
                                     void *recv, const size_t *recv_bytes, const size_t *displs);
/** rrt_host_exchange_records / rrt_host_alltoallv naming `op` (a workload's
 *  phase, e.g. "ilu0 analysis: levels") in errors and timeouts. */
rrt_status rrt_host_exchange_records_named(rrt_ctx_t ctx, const char *op, int64_t nitems,
                                           const int32_t *dest, const int64_t *data, int k,
                                           int64_t *nrecv, int64_t **rdata, int32_t **rsrc);
rrt_status rrt_host_alltoallv_named(rrt_ctx_t ctx, const char *op, const void *send,
                                    const size_t *send_bytes, const size_t *send_displs, void *recv,
                                    const size_t *recv_bytes, const size_t *recv_displs);
/** Gather to `root` that learns the sizes, naming `op` in errors and
 *  timeouts. On root *recv is malloc'd and holds every rank's bytes in rank
 *  order; recv_bytes (size P, may be NULL) and *total (may be NULL)
 *  describe it. On the other ranks *recv is NULL and *total 0. Point-to-
 *  point messages with size_t counts; a failure to allocate on root is an
 *  error on every rank. */
rrt_status rrt_host_gatherv_alloc(rrt_ctx_t ctx, const char *op, const void *send, size_t bytes,
                                  int root, void **recv, size_t *recv_bytes, size_t *total);

#ifdef __cplusplus
}
#endif
#endif

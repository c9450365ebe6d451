/* Internal: a context that holds only communicators, for the agreements a
 * program makes before its real context exists or after it is gone (the
 * `ringrt` tool agrees on its arguments and on its exit code this way).
 *
 * Its communicators come from MPI_Comm_idup waited for with the timeout, so
 * a rank that never arrives ends the job with a message instead of a hang;
 * afterwards the host collectives (host_coll.h, rrt_agree_named) and their
 * roll call work on it as on a full context. It has no backend, device,
 * streams or trace: only host collectives may be called on it. */
#ifndef RRT_COMM_BOOT_H
#define RRT_COMM_BOOT_H

#include <mpi.h>

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Collective over `comm`. `timeout_s` > 0 is the deadline of every wait;
 *  otherwise RINGRT_TIMEOUT, else 600 s. `op` names the operation in errors
 *  and in the timeout message. Destroy with rrt_ctx_destroy. */
rrt_status rrt_boot_create(MPI_Comm comm, double timeout_s, const char *op, rrt_ctx_t *out);

/** The communicators of a context being made (rrt_boot_create and
 *  rrt_ctx_create): ctx->comm and ctx->roll_comm duplicated from `parent`
 *  with MPI_Comm_idup, waited for with ctx->timeout_s; sets rank and size.
 *  ctx->rank must already hold the rank in `parent` (for messages). */
rrt_status rrt_boot_dup(rrt_ctx_t ctx, MPI_Comm parent, const char *op);

#ifdef __cplusplus
}
#endif
#endif

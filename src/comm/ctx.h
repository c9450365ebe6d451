/* Internal: the runtime context behind the opaque rrt_ctx_t. */
#ifndef RRT_COMM_CTX_H
#define RRT_COMM_CTX_H

#include <mpi.h>
#include <stdint.h>

#include "ringrt/context.h"
#include "comm/device.h"
#include "comm/env.h"
#include "comm/stage_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rrt_trace_state;   /* comm/trace_state.h */
struct rrt_transport_ops; /* comm/transport_ops.h */
struct rrt_nccl_lib;      /* comm/nccl_lib.h */
struct rrt_p2p;           /* ringrt/transport.h */

struct rrt_ctx {
  MPI_Comm comm;      /* duplicate of the caller's communicator */
  MPI_Comm roll_comm; /* the roll call of a timed-out wait (comm/roll_call.c); its own
                         duplicate so it never matches library traffic */
  int rank, size, local_rank, local_size;
  char host[64];

  rrt_env env;                        /* knobs, read once at creation (comm/env.c) */
  rrt_backend backend;                /* resolved: CPU, CUDA or EMU */
  rrt_transport transport;            /* resolved; always tx->kind */
  const struct rrt_transport_ops *tx; /* the engine, chosen once at creation */
  const rrt_device_ops *dev;          /* device layer of the backend */
  int device;                         /* CUDA ordinal, -1 for none */
  size_t smem_optin;                  /* the device's opt-in limit of dynamic shared memory a block
                                         (cuda: the GPU's; emu: RINGRT_EMU_ARCH's, comm/emu_arch.h; cpu: 0) */
  rrt_stream compute_stream; /* cuda: cudaStream_t; host: synchronous, carries emu threads */
  rrt_stream comm_stream;    /* cuda: high-priority stream for transfers */
  rrt_stream user_stream;    /* the caller's stream (rrt_ctx_set_stream), NULL for none */
  rrt_event user_event;      /* orders it with ringrt's streams (comm/user_stream.c) */
  int user_depth;            /* calls in progress that bracket with it (nesting) */
  void *nccl_comm;           /* ncclComm_t when transport == NCCL */
  struct rrt_nccl_lib *nccl; /* the NCCL functions (comm/nccl_lib.h), loaded with nccl_comm */
  double timeout_s;
  uint64_t coll_count;  /* collectives posted so far: the roll call's sequence number */
  rrt_comm_stats stats; /* messages and bytes so far (comm/comm_stats.c); collectives: coll_count */

  /* Called by rrt_fatal_abort before MPI_Abort (NULL: nothing to do). Set
   * by whoever owns state that must be aborted rather than left behind:
   * nccl_init.c while the NCCL communicator lives (a communicator with
   * operations in flight must be aborted, or MPI_Abort may wait on the GPU
   * forever). Keeps error.c free of any engine's code. */
  void (*abort_hook)(void *arg);
  void *abort_arg;

  rrt_stage_pool stage_pool; /* pinned staging buffers (comm/stage_pool.h) */

  /* CPU binding (comm/bind.h) */
  char cores[128];
  int numa_node;
  int threads;

  struct rrt_trace_state *trace; /* phase totals and trace intervals */
  char last_error[1024];
};

/* Lifecycle pieces, each in its own file (NCCL: comm/nccl_init.h). */
rrt_status
rrt_bind_rank(rrt_ctx_t ctx); /* comm/bind_hwloc.c or bind_os.c: binding + threads (when asked) */
/* comm/bind.c: not asked to bind (a library's default; the `ringrt` tool
 * asks): no affinity or thread count of the process changes, and the
 * OpenMP thread count in force is the rank's. */
void rrt_bind_leave_alone(rrt_ctx_t ctx);
/* comm/comm_stats.c: count the messages of a point-to-point list pair
 * (those to or from another rank) in ctx->stats. */
void rrt_comm_count(rrt_ctx_t ctx, const struct rrt_p2p *sends, int nsends,
                    const struct rrt_p2p *recvs, int nrecvs);
rrt_status rrt_trace_state_create(rrt_ctx_t ctx); /* comm/trace.c */
void rrt_trace_state_destroy(rrt_ctx_t ctx);      /* comm/trace.c */

#ifdef __cplusplus
}
#endif
#endif

/* Internal: the halo exchange, in levels. One exchange for every workload
 * that moves rows between ranks along a message plan (sched/msg_plan.h):
 * the SpMV ghosts (one level) and the ILU(0) factorisation and triangular
 * solves (one message set per level).
 *
 * Sends gather src[send.idx] into a buffer, receives scatter into
 * dst[recv.idx]. One rrt_p2p_group per level carries that level's sends and
 * receives; a level's receives are waited for only before the level that
 * first needs them (the smallest need of its messages). Receives posted
 * ahead (rrt_halo_begin) are one group per message, each waited for before
 * its own need: a level's messages from several peers may be needed at
 * different levels, and a message needed in the level that sends it must
 * not wait for one needed later (that one's sender may be waiting for this
 * rank's level). Values travel through the transport (NCCL or
 * MPI, backend memory), so every wait honours RINGRT_TIMEOUT. Where the
 * transport queues the exchange on the comm stream (NCCL, emu), the compute
 * stream waits for it on the device: no host round trip per level.
 *
 * The gather and scatter are the caller's kernels (rrt_halo_pack), given at
 * init: comm moves data, it does not pick a workload's kernels. */
#ifndef RRT_COMM_HALO_H
#define RRT_COMM_HALO_H

#include <stdint.h>

#include "comm/device.h"
#include "ringrt/transport.h"
#include "sched/msg_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Pack or unpack n values on the compute stream: to[t] = from[idx[t]]
 *  (gather) or to[idx[t]] = from[t] (scatter). */
typedef rrt_status (*rrt_halo_pack_fn)(rrt_stream s, const int32_t *idx, int64_t n,
                                       const double *from, double *to);

typedef struct rrt_halo_pack {
  rrt_halo_pack_fn gather, scatter;
} rrt_halo_pack;

typedef struct rrt_halo {
  rrt_msg_plan send, recv;
  rrt_halo_pack pack;
  int nlev;                 /* levels 0..nlev */
  int *send_lev, *recv_lev; /* nlev + 2: message ranges per level */
  int *need;                /* nlev + 1: level before which level l's receives are needed */
  int *mneed;               /* per receive message: the level before which it is needed */
  int32_t *d_send_idx, *d_recv_idx;
  double *d_send_buf, *d_recv_buf;
  rrt_request_t *req;  /* nlev + 1 outstanding requests */
  rrt_request_t *sreq; /* after rrt_halo_begin: the sends, apart from the receives */
  rrt_request_t *rreq; /* after rrt_halo_begin: one receive per message */
  rrt_request_t *held; /* exchanges the compute stream waits for on the device, retired
                          before their level is posted again */
  int lo;              /* levels below lo have no receive left to wait for */
  int mlo;             /* posted ahead: messages below mlo are received */
  int preposted;       /* rrt_halo_begin posted every level's receives */
} rrt_halo;

/** Build the device side of a halo from two host plans (taken over).
 *  need[m]: the level before which receive message m is needed (>= its
 *  level); NULL: every message at the level after its own. */
rrt_status rrt_halo_init(rrt_ctx_t ctx, rrt_halo *h, const rrt_halo_pack *pack, rrt_msg_plan *send,
                         rrt_msg_plan *recv, int nlev, const int *need);
void rrt_halo_free(rrt_ctx_t ctx, rrt_halo *h);
/** Post the receives of every level now (MPI transports only: NCCL would
 *  serialise them before the sends), one request per message. Lets a level
 *  wait for messages of the same level number (need[m] == level[m]), which
 *  coarse levels need. */
rrt_status rrt_halo_begin(rrt_ctx_t ctx, rrt_halo *h);
/** Level l is computed: gather and post its messages (src: source array). */
rrt_status rrt_halo_post(rrt_ctx_t ctx, rrt_halo *h, int level, const double *src);
/** Whether rrt_halo_post posts anything at level l (sends, or receives not
 *  posted ahead): levels that do not may be computed together. */
int rrt_halo_posts(const rrt_halo *h, int level);
/** Before computing level l: wait for the receives needed there, scatter into dst. */
rrt_status rrt_halo_wait_needed(rrt_ctx_t ctx, rrt_halo *h, int level, double *dst);
/** Wait for everything outstanding (sends too), scatter remaining receives. */
rrt_status rrt_halo_wait_all(rrt_ctx_t ctx, rrt_halo *h, double *dst);

#ifdef __cplusplus
}
#endif
#endif

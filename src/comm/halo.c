/* Halo exchanges in levels (see halo.h). Values travel through rrt_p2p_group (NCCL or MPI,
 * backend memory); packing runs the caller's gather / scatter kernels. */
#include <stdlib.h>
#include <string.h>

#include "comm/halo.h"

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/request.h"
#include "ringrt/memory.h"

static int *level_ranges(const rrt_msg_plan *p, int nlev) {
  int *lev = calloc((size_t)nlev + 2, sizeof(int));
  if (!lev) return NULL;
  for (int m = 0; m < p->nmsg; m++)
    lev[p->level[m] + 1]++;
  for (int l = 0; l <= nlev; l++)
    lev[l + 1] += lev[l];
  return lev;
}

static rrt_status to_backend(rrt_ctx_t ctx, void **dst, const void *src, size_t bytes) {
  RRT_CHECK(rrt_malloc(ctx, bytes ? bytes : 8, dst));
  if (bytes) RRT_CHECK(rrt_memcpy_to_backend(ctx, *dst, src, bytes));
  return RRT_SUCCESS;
}

rrt_status rrt_halo_init(rrt_ctx_t ctx, rrt_halo *h, const rrt_halo_pack *pack, rrt_msg_plan *send,
                         rrt_msg_plan *recv, int nlev, const int *need) {
  memset(h, 0, sizeof(*h));
  h->pack = *pack;
  h->send = *send;
  h->recv = *recv;
  memset(send, 0, sizeof(*send));
  memset(recv, 0, sizeof(*recv));
  h->nlev = nlev;
  h->send_lev = level_ranges(&h->send, nlev);
  h->recv_lev = level_ranges(&h->recv, nlev);
  h->need = malloc(((size_t)nlev + 1) * sizeof(int));
  h->mneed = malloc(((size_t)h->recv.nmsg + 1) * sizeof(int));
  h->req = calloc((size_t)nlev + 1, sizeof(rrt_request_t));
  h->sreq = calloc((size_t)nlev + 1, sizeof(rrt_request_t));
  h->rreq = calloc((size_t)h->recv.nmsg + 1, sizeof(rrt_request_t));
  h->held = calloc((size_t)nlev + 1, sizeof(rrt_request_t));
  if (!h->send_lev || !h->recv_lev || !h->need || !h->mneed || !h->req || !h->sreq || !h->rreq ||
      !h->held)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_halo", "out of memory");
  /* a level's group is needed at the first need of its messages */
  for (int l = 0; l <= nlev; l++)
    h->need[l] = l + 1;
  for (int m = 0; m < h->recv.nmsg; m++) {
    int l = h->recv.level[m];
    h->mneed[m] = need ? need[m] : l + 1;
    if (m == h->recv_lev[l] || h->mneed[m] < h->need[l]) h->need[l] = h->mneed[m];
  }
  int64_t ns = h->send.ptr[h->send.nmsg], nr = h->recv.ptr[h->recv.nmsg];
  RRT_CHECK(to_backend(ctx, (void **)&h->d_send_idx, h->send.idx, (size_t)ns * sizeof(int32_t)));
  RRT_CHECK(to_backend(ctx, (void **)&h->d_recv_idx, h->recv.idx, (size_t)nr * sizeof(int32_t)));
  RRT_CHECK(rrt_malloc(ctx, (size_t)(ns ? ns : 1) * sizeof(double), (void **)&h->d_send_buf));
  RRT_CHECK(rrt_malloc(ctx, (size_t)(nr ? nr : 1) * sizeof(double), (void **)&h->d_recv_buf));
  return RRT_SUCCESS;
}

void rrt_halo_free(rrt_ctx_t ctx, rrt_halo *h) {
  if (!h) return;
  for (int l = 0; l <= h->nlev; l++) {
    if (h->req && h->req[l]) rrt_request_wait(h->req[l]);
    if (h->sreq && h->sreq[l]) rrt_request_wait(h->sreq[l]);
    if (h->held && h->held[l]) rrt_request_wait(h->held[l]);
  }
  for (int m = 0; h->rreq && m < h->recv.nmsg; m++)
    if (h->rreq[m]) rrt_request_wait(h->rreq[m]);
  rrt_msg_plan_free(&h->send);
  rrt_msg_plan_free(&h->recv);
  free(h->send_lev), free(h->recv_lev), free(h->need), free(h->mneed), free(h->req), free(h->sreq);
  free(h->rreq), free(h->held);
  if (ctx) {
    rrt_free(ctx, h->d_send_idx), rrt_free(ctx, h->d_recv_idx);
    rrt_free(ctx, h->d_send_buf), rrt_free(ctx, h->d_recv_buf);
  }
  memset(h, 0, sizeof(*h));
}

/* Messages [m0, m1) of a plan as p2p entries (sp: a 64-entry buffer, or malloc'd). */
static rrt_p2p *p2p_list(const rrt_msg_plan *p, double *buf, int m0, int m1, rrt_p2p *sp) {
  if (m1 - m0 > 64) sp = malloc((size_t)(m1 - m0) * sizeof(rrt_p2p));
  if (!sp) return NULL;
  for (int m = m0; m < m1; m++)
    sp[m - m0] = (rrt_p2p){p->peer[m], buf + p->ptr[m],
                           (size_t)(p->ptr[m + 1] - p->ptr[m]) * sizeof(double)};
  return sp;
}

/* Level l's exchange of the previous round, ordered on the device: the
 * streams have passed it long since; its request is retired here, before
 * the slot is used again. */
static rrt_status retire_held(rrt_halo *h, int l) {
  if (!h->held[l]) return RRT_SUCCESS;
  rrt_status st = rrt_request_wait(h->held[l]);
  h->held[l] = NULL;
  return st;
}

rrt_status rrt_halo_begin(rrt_ctx_t ctx, rrt_halo *h) {
  for (int l = 0; l <= h->nlev; l++)
    RRT_CHECK(retire_held(h, l));
  /* in level order, as the senders post them (MPI matches in order) */
  for (int m = 0; m < h->recv.nmsg; m++) {
    rrt_p2p recv, *rp = p2p_list(&h->recv, h->d_recv_buf, m, m + 1, &recv);
    RRT_CHECK(rrt_p2p_group(ctx, NULL, 0, rp, 1, &h->rreq[m]));
  }
  h->preposted = 1;
  h->mlo = 0;
  return RRT_SUCCESS;
}

int rrt_halo_posts(const rrt_halo *h, int level) {
  if (level > h->nlev) return 0;
  int sends = h->send_lev[level + 1] > h->send_lev[level];
  int recvs = !h->preposted && h->recv_lev[level + 1] > h->recv_lev[level];
  return sends || recvs;
}

rrt_status rrt_halo_post(rrt_ctx_t ctx, rrt_halo *h, int level, const double *src) {
  if (!rrt_halo_posts(h, level)) return RRT_SUCCESS;
  int s0 = h->send_lev[level], s1 = h->send_lev[level + 1];
  int r0 = h->recv_lev[level], r1 = h->recv_lev[level + 1];
  if (h->preposted) r0 = r1 = 0; /* receives already posted */
  RRT_CHECK(retire_held(h, level));
  int64_t a = h->send.ptr[s0], b = h->send.ptr[s1];
  /* No synchronisation after the gather: every transport orders itself after
   * the compute stream (NCCL and emu on the device, the staged engine and
   * MPI on the host; comm/transport_ops.h). */
  if (b > a)
    RRT_CHECK(
        h->pack.gather(ctx->compute_stream, h->d_send_idx + a, b - a, src, h->d_send_buf + a));
  rrt_p2p sends[64], recvs[64];
  rrt_p2p *sp = p2p_list(&h->send, h->d_send_buf, s0, s1, sends);
  rrt_p2p *rp = p2p_list(&h->recv, h->d_recv_buf, r0, r1, recvs);
  rrt_status st = RRT_SUCCESS;
  if (!sp || !rp)
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_halo", "out of memory");
  else
    st = rrt_p2p_group(ctx, sp, s1 - s0, rp, r1 - r0,
                       h->preposted ? &h->sreq[level] : &h->req[level]);
  if (sp && sp != sends) free(sp);
  if (rp && rp != recvs) free(rp);
  return st;
}

/* Level l's receives into dst. An exchange on the comm stream (NCCL, emu)
 * orders the compute stream after itself on the device and is held until
 * the next round; otherwise the host waits for it. Either way the scatter
 * is queued on the compute stream after the data. */
static rrt_status finish_level(rrt_ctx_t ctx, rrt_halo *h, int l, double *dst) {
  if (!h->req[l]) return RRT_SUCCESS;
  int ordered = 0;
  rrt_status st = rrt_request_order_stream(h->req[l], ctx->compute_stream, &ordered);
  if (ordered) {
    h->held[l] = h->req[l];
  } else { /* the host waits (MPI, staging; or after an error) */
    rrt_status ws = rrt_request_wait(h->req[l]);
    if (st == RRT_SUCCESS) st = ws;
  }
  h->req[l] = NULL;
  RRT_CHECK(st);
  int64_t a = h->recv.ptr[h->recv_lev[l]], b = h->recv.ptr[h->recv_lev[l + 1]];
  if (b > a)
    RRT_CHECK(
        h->pack.scatter(ctx->compute_stream, h->d_recv_idx + a, b - a, h->d_recv_buf + a, dst));
  return RRT_SUCCESS;
}

/* A receive posted ahead (message m) into dst: the host waits for it (only
 * MPI transports post ahead), then the scatter is queued. */
static rrt_status finish_message(rrt_ctx_t ctx, rrt_halo *h, int m, double *dst) {
  if (!h->rreq[m]) return RRT_SUCCESS;
  rrt_status st = rrt_request_wait(h->rreq[m]);
  h->rreq[m] = NULL;
  RRT_CHECK(st);
  int64_t a = h->recv.ptr[m], b = h->recv.ptr[m + 1];
  if (b > a)
    RRT_CHECK(
        h->pack.scatter(ctx->compute_stream, h->d_recv_idx + a, b - a, h->d_recv_buf + a, dst));
  return RRT_SUCCESS;
}

/* Posted ahead: the messages needed up to `level` (their own level is at
 * most their need, so the scan stops at the first of a later level). */
static rrt_status wait_messages(rrt_ctx_t ctx, rrt_halo *h, int level, double *dst) {
  for (int m = h->mlo; m < h->recv.nmsg && h->recv.level[m] <= level; m++)
    if (h->mneed[m] <= level) RRT_CHECK(finish_message(ctx, h, m, dst));
  while (h->mlo < h->recv.nmsg && !h->rreq[h->mlo])
    h->mlo++;
  return RRT_SUCCESS;
}

rrt_status rrt_halo_wait_needed(rrt_ctx_t ctx, rrt_halo *h, int level, double *dst) {
  if (h->preposted) return wait_messages(ctx, h, level, dst);
  /* levels whose receives are needed now (need[l] <= level), all before
   * `level` (need[l] > l without receives posted ahead) */
  for (int l = h->lo; l < level && l <= h->nlev; l++)
    if (h->req[l] && h->recv_lev[l + 1] > h->recv_lev[l] && h->need[l] <= level)
      RRT_CHECK(finish_level(ctx, h, l, dst));
  while (h->lo < level && h->lo <= h->nlev &&
         (!h->req[h->lo] || h->recv_lev[h->lo + 1] == h->recv_lev[h->lo]))
    h->lo++;
  return RRT_SUCCESS;
}

rrt_status rrt_halo_wait_all(rrt_ctx_t ctx, rrt_halo *h, double *dst) {
  for (int m = h->preposted ? h->mlo : h->recv.nmsg; m < h->recv.nmsg; m++)
    RRT_CHECK(finish_message(ctx, h, m, dst));
  for (int l = 0; l <= h->nlev; l++) {
    RRT_CHECK(finish_level(ctx, h, l, dst));
    if (h->sreq[l]) {
      rrt_status st = rrt_request_wait(h->sreq[l]);
      h->sreq[l] = NULL;
      RRT_CHECK(st);
    }
  }
  h->lo = h->mlo = 0;
  h->preposted = 0;
  return RRT_SUCCESS;
}

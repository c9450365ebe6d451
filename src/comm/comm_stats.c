/* ringrt's traffic counts (rrt_ctx_comm_stats): point-to-point messages
 * and bytes, counted where they are posted (the transport front for
 * rrt_p2p_group and rrt_ring_shift, host_coll.c for ringrt's own all-to-all
 * and gather exchanges), and the collectives the requests already number
 * for the roll call (ctx->coll_count). Plain counters: a context is used
 * by one thread at a time. */
#include "comm/ctx.h"
#include "comm/error.h"
#include "ringrt/transport.h"

/* Messages of one list that cross to another rank, and their bytes. */
static void count_list(const rrt_p2p *list, int n, int self, uint64_t *msgs, uint64_t *bytes) {
  for (int i = 0; i < n; i++)
    if (list[i].peer != self) (*msgs)++, *bytes += list[i].bytes;
}

void rrt_comm_count(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                    int nrecvs) {
  rrt_comm_stats *s = &ctx->stats;
  if (sends) count_list(sends, nsends, ctx->rank, &s->msgs_sent, &s->bytes_sent);
  if (recvs) count_list(recvs, nrecvs, ctx->rank, &s->msgs_recv, &s->bytes_recv);
}

rrt_status rrt_ctx_comm_stats(rrt_ctx_t ctx, rrt_comm_stats *stats) {
  if (!ctx)
    return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_ctx_comm_stats", "the context is NULL");
  if (!stats) return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_comm_stats", "stats is NULL");
  *stats = ctx->stats;
  stats->collectives = ctx->coll_count;
  return RRT_SUCCESS;
}

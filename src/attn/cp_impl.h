/* Internal: the state of the context-parallel modes beside the ring, shared
 * by cp_plan.c (the choice), cp_allgather.c and cp_a2a.c (the runs). */
#ifndef RRT_ATTN_CP_IMPL_H
#define RRT_ATTN_CP_IMPL_H

#include "attn/plan_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rrt_attn_cpx {
  /* every mode: did step s of rank r have items ([r * P + s]; the ring's
   * schedule). The all-gather's dK/dV sums skip the same terms the ring's
   * hand-off skips, so both add the same numbers in the same order. */
  unsigned char *has_items;
  /* all-gather: the P K|V blocks (backend memory, block r at r * kv_bytes);
   * backward: P f32 dK|dV parts of this rank and P received from the others */
  void *gathered;
  float *parts, *recv;
  /* all-to-all */
  rrt_attn_plan_t inner; /* the local problem: heads/P heads over the whole sequence */
  rrt_cp_heads h;
  int *kvmap;   /* [j * h.hkv + i]: global K/V head of rank j's local K/V head i */
  int64_t *pos; /* every rank's global positions, rank j's at pos + off[j] */
  int64_t *off; /* P + 1 */
  size_t *sz;   /* an exchange's sizes and offsets: send, recv, send offsets, recv offsets */
  void *qf, *kf, *vf, *of, *dof, *dqf, *dkf, *dvf; /* the local problem's tensors (backend) */
  float *lsef;                                     /* its LSE [batch, hq, seq] */
  char *sbuf, *rbuf; /* exchange buffers (backend memory, host-addressable) */
  size_t xbytes;     /* bytes of each */
  float *dkv_acc;    /* f32 dK|dV sums of this rank's rows [2][batch][L][heads_kv][D] (host) */
  /* the last run's exchanges (for the stats and the trace) */
  double xb[4], xe[4], xsent[4];
  const char *xname[4];
  int nx;
};

#ifdef __cplusplus
}
#endif
#endif

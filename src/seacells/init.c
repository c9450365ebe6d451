/* SEACells initial archetypes: greedy CSSP on K (cssp.c, deterministic),
 * seeded max-min sampling on the coordinates, the reference's waypoints
 * then greedy (waypoint.c), or given cells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/seacells_math.h"
#include "ringrt/trace.h"
#include "ringrt/transport.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

static rrt_status init_maxmin(rrt_sc_run *s) {
  int d = s->d;
  double *mind = malloc((size_t)(s->nl + 1) * sizeof(double)),
         *pt = malloc((size_t)d * sizeof(double));
  if (!mind || !pt) {
    free(mind), free(pt);
    return OOM(s, "max-min");
  }
  for (int64_t i = 0; i < s->nl; i++)
    mind[i] = INFINITY;
  int64_t p = (int64_t)(rrt_sc_mix64(s->opt.seed) % (uint64_t)s->n);
  rrt_status st = RRT_SUCCESS;
  for (int j = 0; j < s->m && st == RRT_SUCCESS; j++) {
    if (j > 0) st = rrt_sc_argmax(s, mind, &p);
    if (st != RRT_SUCCESS) break;
    s->archetypes[j] = p;
    int owner = rrt_cell_blocks_owner(&s->plan, p);
    if (owner == s->rank) memcpy(pt, s->x + (p - s->c0) * d, (size_t)d * sizeof(double));
    st = rrt_host_bcast(s->ctx, pt, (size_t)d * sizeof(double), owner);
    for (int64_t i = 0; st == RRT_SUCCESS && i < s->nl; i++) {
      double d2 = rrt_sc_sqdist(s->x + i * d, pt, d);
      if (d2 < mind[i]) mind[i] = d2;
      if (s->c0 + i == p) mind[i] = -INFINITY; /* never chosen twice */
    }
  }
  free(mind);
  free(pt);
  return st;
}

rrt_status rrt_sc_init_archetypes(rrt_sc_run *s) {
  double t0 = rrt_time_now();
  rrt_status st = RRT_SUCCESS;
  switch (s->opt.init) {
  case RRT_SEACELLS_INIT_GIVEN:
    for (int j = 0; j < s->m; j++)
      s->archetypes[j] = s->opt.archetypes[j];
    break;
  case RRT_SEACELLS_INIT_MAXMIN: st = init_maxmin(s); break;
  case RRT_SEACELLS_INIT_WAYPOINT: st = rrt_sc_init_waypoint(s); break;
  default: st = rrt_sc_cssp(s, s->m, s->archetypes); break;
  }
  s->sec[RRT_SC_PHASE_INIT] += rrt_time_now() - t0;
  return rrt_agree(s->ctx, st);
}

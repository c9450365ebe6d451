/* The reference SEACells' default initial archetypes
 * (SEACells.initialize_archetypes with waypoint_proportion = 1):
 *  1. diffusion components as palantir computes them
 *     (rrt_sc_diffusion_components, n_waypoint_eigs = 10: components 1..9
 *     of the multiscale space);
 *  2. palantir's _max_min_sampling over them: per component, a start cell
 *     drawn by np.random.default_rng(20).integers(n) (one generator for all
 *     components, rrt_np_rng), then int(m / 9) - 1 cells each farthest (1-D
 *     distance along that component) from those chosen, lowest cell on ties
 *     (np.argmax); the union in order of choice;
 *  3. greedy CSSP (m - waypoints + 10 columns) for the rest, skipping cells
 *     already chosen, the first m in all.
 * The reference shuffles the waypoints (np.random.choice without a seed);
 * here they stay in the order chosen, so the set is the reference's and the
 * metacell numbering is fixed. */
#include <math.h>
#include <stdlib.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "seacells/internal.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

enum { WP_EIGS = RRT_SC_DM_EIGS, WP_SEED = 20 };

static int seen(const int64_t *v, int n, int64_t c) {
  for (int i = 0; i < n; i++)
    if (v[i] == c) return 1;
  return 0;
}

/* palantir's max-min: the waypoints (unique, in order) into wp, their count
 * returned in *nwp. */
static rrt_status maxmin_waypoints(rrt_sc_run *s, const double *dc, int nd, int64_t *wp, int *nwp) {
  int target = s->m < (nd > 3 ? nd : 3) ? (nd > 3 ? nd : 3) : s->m, iters = target / nd;
  double *mind = malloc((size_t)(s->nl + 1) * sizeof(double));
  if (!mind) return OOM(s, "waypoints");
  rrt_np_rng rng;
  rrt_np_rng_seed(&rng, WP_SEED);
  rrt_status st = RRT_SUCCESS;
  *nwp = 0;
  for (int c = 0; c < nd && st == RRT_SUCCESS; c++) {
    int64_t p = rrt_np_rng_integers(&rng, s->n);
    for (int t = 0; t < iters && st == RRT_SUCCESS; t++) {
      if (t > 0) st = rrt_sc_argmax(s, mind, &p);
      if (st != RRT_SUCCESS) break;
      if (!seen(wp, *nwp, p)) wp[(*nwp)++] = p;
      int owner = rrt_cell_blocks_owner(&s->plan, p);
      double v = owner == s->rank ? dc[(p - s->c0) * nd + c] : 0.0;
      st = rrt_host_bcast(s->ctx, &v, sizeof v, owner);
      for (int64_t i = 0; st == RRT_SUCCESS && i < s->nl; i++) {
        double dist = fabs(dc[i * nd + c] - v);
        mind[i] = t == 0 || dist < mind[i] ? dist : mind[i];
      }
    }
  }
  free(mind);
  return st;
}

rrt_status rrt_sc_init_waypoint(rrt_sc_run *s) {
  int nd = WP_EIGS - 1, m = s->m, nwp = 0;
  double *dc = NULL;
  RRT_CHECK(rrt_sc_diffusion_components(s, WP_EIGS, &dc, NULL));
  int cap = m > nd ? m : (nd > 3 ? nd : 3);
  int64_t *wp = malloc((size_t)cap * sizeof(int64_t)), *greedy = NULL;
  rrt_status st = wp ? maxmin_waypoints(s, dc, nd, wp, &nwp) : OOM(s, "waypoints");
  free(dc);
  if (nwp > m) nwp = m;
  int have = nwp;
  for (int j = 0; j < nwp; j++)
    s->archetypes[j] = wp[j];
  /* greedy for the rest: the reference asks for 10 more than it needs; if
   * more than 10 of them are waypoints, ask for enough to be sure */
  for (int round = 0; st == RRT_SUCCESS && have < m && round < 2; round++) {
    int64_t count = round == 0 ? (int64_t)(m - nwp) + 10 : (int64_t)m + nwp;
    if (count > s->n) count = s->n;
    free(greedy);
    greedy = malloc((size_t)count * sizeof(int64_t));
    if (!greedy) {
      st = OOM(s, "greedy archetypes");
      break;
    }
    st = rrt_sc_cssp(s, (int)count, greedy);
    have = nwp;
    for (int64_t j = 0; st == RRT_SUCCESS && j < count && have < m; j++)
      if (!seen(s->archetypes, have, greedy[j])) s->archetypes[have++] = greedy[j];
  }
  if (st == RRT_SUCCESS && have < m)
    st = rrt_error(s->ctx, RRT_ERR_NUMERIC, "seacells", "waypoint init: %d of %d archetypes", have,
                   m);
  free(wp), free(greedy);
  return st;
}

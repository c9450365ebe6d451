/* Context-parallel modes: names, Ulysses' head split and the cost model of
 * `auto` (cp_model.h says what the model counts). */
#include "sched/cp_model.h"

#include <string.h>

static const char *const cp_names[RRT_CP_COUNT] = {"ring", "a2a", "allgather", "a2a+ring", "auto"};

const char *rrt_cp_comm_name(rrt_cp_comm cp) {
  return (unsigned)cp < RRT_CP_COUNT ? cp_names[cp] : "unknown";
}

rrt_status rrt_cp_comm_parse(const char *name, rrt_cp_comm *cp) {
  for (int i = 0; name && cp && i < RRT_CP_COUNT; i++) {
    if (strcmp(name, cp_names[i]) == 0) {
      *cp = (rrt_cp_comm)i;
      return RRT_SUCCESS;
    }
  }
  return RRT_ERR_INVALID_ARG;
}

static int gcd(int a, int b) {
  while (b) {
    int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

void rrt_cp_heads_split(int heads_q, int heads_kv, int P, rrt_cp_heads *h) {
  const int g = heads_q / heads_kv;
  h->hq = heads_q / P;
  /* local query heads come in runs of g_loc that share one K/V head: g_loc
   * divides g, so no run straddles a K/V head; g_loc divides hq, so every
   * rank's range starts a run */
  h->g_loc = gcd(h->hq, g);
  h->hkv = h->hq / h->g_loc;
  h->split = heads_kv % P == 0;
}

int rrt_cp_kv_head(const rrt_cp_heads *h, int heads_q, int heads_kv, int j, int i) {
  return (j * h->hq + i * h->g_loc) / (heads_q / heads_kv);
}

rrt_cp_machine rrt_cp_machine_default(int gpu) {
  if (gpu) return (rrt_cp_machine){5e-6, 10e-6, 150e9, 50e9, 300e12};
  return (rrt_cp_machine){2e-6, 10e-6, 5e9, 12.5e9, 30e9};
}

static double maxd(double a, double b) { return a > b ? a : b; }

/* The ring: n steps, the shift of step s+1's block hidden behind step s. */
static void cost_ring(const rrt_cp_model_in *in, double blk, double fl, double a, double bw,
                      rrt_cp_cost *c) {
  const int n = in->ring_steps;
  const double dkv = blk / (double)in->elem * 4.0; /* f32 dK|dV of a block */
  const double k = fl * in->pairs_max / n / in->m.flops;
  c->ok = 1;
  c->steps = n;
  c->msgs = n - 1;
  c->bytes = (n - 1) * blk;
  c->bytes_bwd = (n - 1) * blk + (n > 1 ? n * dkv : 0.0);
  c->t_compute = k * n;
  c->t_comm = (n - 1) * (a + blk / bw);
  c->t_total = k + (n - 1) * maxd(k, a + blk / bw);
}

/* ceil(log2(P)): the latency rounds of a recursive-doubling all-gather. */
static int log2_ceil(int P) {
  int r = 0;
  while ((1 << r) < P)
    r++;
  return r;
}

/* All-gather K/V up front (log2 P latency rounds, as MPI's recursive
 * doubling or Bruck), then the ring's compute without waits. */
static void cost_allgather(const rrt_cp_model_in *in, double blk, double fl, double a, double bw,
                           rrt_cp_cost *c) {
  const int P = in->P, n = in->ring_steps;
  const double dkv = blk / (double)in->elem * 4.0;
  c->ok = 1;
  c->steps = P > 1 ? 1 : 0;
  c->msgs = P - 1;
  c->bytes = (P - 1) * blk;
  c->bytes_bwd = (P - 1) * blk + (n - 1) * dkv;
  c->t_compute = fl * in->pairs_max / in->m.flops;
  c->t_comm = log2_ceil(P) * a + (P - 1) * blk / bw;
  c->t_total = c->t_compute + c->t_comm;
}

/* Ulysses: two all-to-alls around a balanced local attention. */
static void cost_a2a(const rrt_cp_model_in *in, double fl, double a, double bw, rrt_cp_cost *c) {
  const int P = in->P;
  if (in->heads_q % P != 0) return; /* ok = 0 */
  rrt_cp_heads h;
  rrt_cp_heads_split(in->heads_q, in->heads_kv, P, &h);
  const double row = (double)in->batch * (double)in->kv_rows * in->head_dim; /* per head */
  const double e = (double)in->elem, peers = P - 1;
  const double q = peers * row * h.hq * e, kv = 2 * peers * row * h.hkv * e;
  const double lse = peers * (double)in->batch * (double)in->kv_rows * h.hq * 4.0;
  c->ok = 1;
  c->steps = P > 1 ? 2 : 0;
  c->msgs = 2 * (P - 1);
  c->bytes = 2 * q + kv + lse;
  /* in: Q, K, V, O, dO, LSE; out: dQ, and dK/dV (f32 sums when replicated) */
  c->bytes_bwd = 3 * q + kv + lse + q + (h.split ? kv : kv * 4.0 / e);
  c->t_compute = fl * in->pairs_total / P / in->m.flops;
  c->t_comm = c->msgs * a + c->bytes / bw;
  c->t_total = c->t_compute + c->t_comm;
}

rrt_cp_comm rrt_cp_model(const rrt_cp_model_in *in, rrt_cp_cost cost[RRT_CP_COUNT]) {
  memset(cost, 0, sizeof(rrt_cp_cost) * RRT_CP_COUNT);
  const int one_node = in->local >= in->P;
  const double a = one_node ? in->m.alpha_intra : in->m.alpha_inter;
  const double bw = one_node ? in->m.bw_intra : in->m.bw_inter;
  const double blk = 2.0 * (double)in->batch * (double)in->kv_rows * in->heads_kv * in->head_dim *
                     (double)in->elem;
  const double fl = 4.0 * in->head_dim * (double)in->heads_q * (double)in->batch;
  cost_ring(in, blk, fl, a, bw, &cost[RRT_CP_RING]);
  cost_allgather(in, blk, fl, a, bw, &cost[RRT_CP_ALLGATHER]);
  cost_a2a(in, fl, a, bw, &cost[RRT_CP_A2A]);
  /* a2a+ring is not modelled (not built yet): never chosen */
  return rrt_cp_choose(cost);
}

rrt_cp_comm rrt_cp_choose(rrt_cp_cost cost[RRT_CP_COUNT]) {
  rrt_cp_comm best = RRT_CP_RING;
  for (int m = 0; m < RRT_CP_AUTO; m++)
    if (cost[m].ok && cost[m].t_total < cost[best].t_total) best = (rrt_cp_comm)m;
  cost[RRT_CP_AUTO] = cost[best];
  return best;
}

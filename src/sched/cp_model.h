/* Context-parallel modes (rrt_cp_comm): how Ulysses splits the heads, and
 * the cost model that `auto` chooses by. Pure: sizes in, numbers out; no
 * MPI, no backend memory (unit-tested in tests/attn/test_cp_model.c).
 *
 * The model (docs/attn.md "Choosing a mode"), per rank, forward pass:
 *   blk   = one rank's K+V block: 2 * batch * kv_rows * heads_kv * head_dim * elem
 *   ring      bytes (n-1) blk over n = ring steps; per step max(compute/n, a + blk/bw)
 *             (the shift hides behind the step's compute), plus the first step's compute
 *   allgather bytes (P-1) blk in ceil(log2 P) latency rounds (recursive doubling),
 *             then the compute (nothing hidden)
 *   a2a       bytes (P-1)/P of Q and O, the K/V heads each peer needs (split or
 *             replicated, rrt_cp_heads), the LSE; 2 (P-1) messages; compute balanced
 *             (every rank the whole mask on heads/P heads)
 * compute = 4 * head_dim * heads_q * batch * pairs / flops, pairs = the most mask pairs
 * on one rank (ring, allgather: from the ring schedule) or the total / P (a2a).
 * a = latency per message, bw = bandwidth: intra-node values when all P ranks
 * share a node, inter-node otherwise. The backward adds, ring: the K/V ring
 * again and n f32 dK/dV hand-offs; allgather: the K/V again and (n-1) f32
 * dK/dV blocks of the reduce-scatter; a2a: Q, K, V, O, dO, LSE in and dQ,
 * dK, dV out. `auto` takes the least predicted forward time; ties go to the
 * lower enum (ring first). */
#ifndef RRT_SCHED_CP_MODEL_H
#define RRT_SCHED_CP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Ulysses' head split over P ranks: rank j holds query heads
 *  [j * hq, (j + 1) * hq) and hkv local K/V heads, each serving g_loc
 *  consecutive local query heads (the inner problem's GQA ratio). split:
 *  heads_kv % P == 0, every K/V head on one rank; else K/V heads are
 *  replicated in the smallest groups that keep the ratio uniform
 *  (g_loc = gcd(hq, heads_q / heads_kv)). heads_q % P must be 0. */
typedef struct rrt_cp_heads {
  int hq, hkv, g_loc, split;
} rrt_cp_heads;

void rrt_cp_heads_split(int heads_q, int heads_kv, int P, rrt_cp_heads *h);
/** The global K/V head of local K/V head i on rank j. */
int rrt_cp_kv_head(const rrt_cp_heads *h, int heads_q, int heads_kv, int j, int i);

/** The machine the model assumes (per rank). */
typedef struct rrt_cp_machine {
  double alpha_intra, alpha_inter; /* seconds per message */
  double bw_intra, bw_inter;       /* bytes per second per rank */
  double flops;                    /* attention FLOP/s per rank */
} rrt_cp_machine;

/** Defaults: backend 0 = a CPU node (MPI in shared memory, 100 Gb/s
 *  across), 1 = a GPU node (NVLink inside, 400 Gb/s across). */
rrt_cp_machine rrt_cp_machine_default(int gpu);

typedef struct rrt_cp_model_in {
  int64_t batch, kv_rows; /* kv_rows: the longest shard */
  int heads_q, heads_kv, head_dim;
  size_t elem;        /* bytes of one stored element */
  int P, local;       /* ranks, ranks per node (the smallest node) */
  int ring_steps;     /* steps the ring runs (rrt_ring_sched_nsteps) */
  double pairs_max;   /* most mask pairs on one rank over its ring steps (per batch, head) */
  double pairs_total; /* all mask pairs (per batch, head) */
  rrt_cp_machine m;
} rrt_cp_model_in;

typedef struct rrt_cp_cost {
  int ok;                            /* the mode can run these sizes */
  double bytes;                      /* bytes sent per rank, forward */
  double bytes_bwd;                  /* bytes sent per rank, backward */
  int msgs;                          /* messages per rank, forward */
  int steps;                         /* compute steps (ring), collectives otherwise */
  double t_comm, t_compute, t_total; /* predicted forward seconds */
} rrt_cp_cost;

/** Costs of every mode (index rrt_cp_comm; RRT_CP_AUTO's entry is the
 *  chosen mode's). Returns the choice. */
rrt_cp_comm rrt_cp_model(const rrt_cp_model_in *in, rrt_cp_cost cost[RRT_CP_COUNT]);
/** The choice among the modes whose cost is ok (after a caller ruled some
 *  out): the least t_total, ties to the lower enum; fills the AUTO entry. */
rrt_cp_comm rrt_cp_choose(rrt_cp_cost cost[RRT_CP_COUNT]);

#ifdef __cplusplus
}
#endif
#endif

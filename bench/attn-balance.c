/* Load balance of the ring attention layouts for packed documents (varlen),
 * from the pure schedule (src/sched/ring_schedule.h): no MPI, no kernels.
 *
 * usage: attn-balance [SEEDS]   (built as build/tests/attn/attn_balance)
 *
 * Document lengths are drawn from a long-tailed mix (log-normal, median
 * 1024 tokens, sigma 1.2, clipped to [16, 32768]: many short documents and
 * a few long ones, as in pretraining data packed to a fixed length), packed
 * to T = 32k and 128k tokens, causal within each document. For P = 2, 4, 8
 * and each layout it prints, averaged over SEEDS draws (default 5):
 *   run:  max over ranks / mean of the pairs a rank computes over the run;
 *   sync: sum over steps of the slowest rank's pairs / the mean per rank,
 *         the cost of a ring whose steps wait for each other (the real one);
 *   tiles: as sync, but each step's work counted in the 64 x 64 tiles a
 *         flash kernel computes (a query tile runs every key tile its
 *         rows' visible ranges touch), against the same ideal: balance
 *         and the waste of small or ragged items together;
 *   items: mean items per rank and run (kernel calls);
 * and, with a causal window of 4096, the steps that run. Markdown table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/attn_math.h"
#include "sched/ring_schedule.h"

enum { TILE = 64 };

static uint64_t rng_state;

static double uniform(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

/* Offsets of documents drawn until T tokens (the last one cut to fit). */
static int64_t draw_docs(int64_t T, int64_t *cu, int64_t cap) {
  int64_t n = 0;
  cu[0] = 0;
  while (cu[n] < T && n + 1 < cap) {
    double z = sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
    int64_t len = (int64_t)(1024.0 * exp(1.2 * z));
    len = len < 16 ? 16 : len > 32768 ? 32768 : len;
    cu[n + 1] = cu[n] + len < T ? cu[n] + len : T;
    n++;
  }
  cu[n] = T;
  return n;
}

/* Pairs a flash kernel computes for an item: per query tile, every key tile
 * between the first row's first visible key and the last row's last. */
static double tile_work(const rrt_attn_item *it, rrt_attn_kmask mask) {
  double w = 0;
  for (int64_t i0 = 0; i0 < it->q_len; i0 += TILE) {
    int64_t i1 = i0 + TILE < it->q_len ? i0 + TILE : it->q_len, jb, je, jb1, je1;
    rrt_attn_item_keys(it, mask, i0, &jb, &je);
    rrt_attn_item_keys(it, mask, i1 - 1, &jb1, &je1);
    if (je1 > jb) w += (double)((je1 + TILE - 1) / TILE - jb / TILE) * TILE * TILE;
  }
  return w;
}

typedef struct balance {
  double run, sync, tiles, items;
  int nsteps;
} balance;

static balance measure(const rrt_attn_desc *d, int P) {
  balance b = {0, 0, 0, 0, 0};
  rrt_ring_sched *s = NULL;
  if (rrt_ring_sched_create(d, P, &s) != RRT_SUCCESS) exit(1);
  double *per_rank = calloc((size_t)P, sizeof(double)), total = 0, sync = 0, tiles = 0;
  int64_t **lo = calloc((size_t)P, sizeof *lo), **hi = calloc((size_t)P, sizeof *hi);
  for (int r = 0; r < P; r++) {
    lo[r] = malloc((size_t)(s->len[r] + 1) * sizeof **lo);
    hi[r] = malloc((size_t)(s->len[r] + 1) * sizeof **hi);
    rrt_ring_sched_row_mask(s, r, lo[r], hi[r]);
  }
  b.nsteps = rrt_ring_sched_nsteps(s);
  for (int st = 0; st < b.nsteps; st++) {
    double step_max = 0, tile_max = 0;
    for (int r = 0; r < P; r++) {
      rrt_ring_step step;
      if (rrt_ring_step_plan(s, r, st, &step) != RRT_SUCCESS) exit(1);
      double tw = 0;
      for (int n = 0; n < step.nitems; n++)
        tw += tile_work(&step.items[n], (rrt_attn_kmask){lo[r], hi[r]});
      tile_max = tw > tile_max ? tw : tile_max;
      per_rank[r] += (double)step.pairs;
      total += (double)step.pairs;
      step_max = (double)step.pairs > step_max ? (double)step.pairs : step_max;
      b.items += step.nitems;
      rrt_ring_step_free(&step);
    }
    sync += step_max;
    tiles += tile_max;
  }
  for (int r = 0; r < P; r++)
    free(lo[r]), free(hi[r]);
  free(lo);
  free(hi);
  double mx = 0;
  for (int r = 0; r < P; r++)
    mx = per_rank[r] > mx ? per_rank[r] : mx;
  b.run = mx / (total / P);
  b.sync = sync / (total / P);
  b.tiles = tiles / (total / P);
  b.items /= P;
  free(per_rank);
  rrt_ring_sched_destroy(s);
  return b;
}

int main(int argc, char **argv) {
  const int seeds = argc > 1 ? atoi(argv[1]) : 5;
  static const int64_t totals[2] = {32768, 131072};
  static const int ranks[3] = {2, 4, 8};
  static int64_t cu[1 << 14];
  printf("| tokens | P | layout | run max/mean | sync max/mean | tiles | items/rank | steps, "
         "window 4096 |\n"
         "|---|---|---|---|---|---|---|---|\n");
  for (int t = 0; t < 2; t++)
    for (int pi = 0; pi < 3; pi++)
      for (int lay = 0; lay < RRT_ATTN_LAYOUT_COUNT; lay++) {
        balance sum = {0, 0, 0, 0, 0};
        double docs = 0, steps_w = 0;
        for (int sd = 0; sd < seeds; sd++) {
          rng_state = 0x9E3779B97F4A7C15ull * (uint64_t)(sd + 1);
          rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
          d.seq = totals[t], d.head_dim = 64, d.causal = 1, d.layout = (rrt_attn_layout)lay;
          d.num_docs = draw_docs(d.seq, cu, sizeof cu / sizeof *cu);
          d.cu_seqlens = cu;
          docs += (double)d.num_docs;
          balance b = measure(&d, ranks[pi]);
          sum.run += b.run, sum.sync += b.sync, sum.tiles += b.tiles, sum.items += b.items;
          d.window_left = 4096;
          steps_w += measure(&d, ranks[pi]).nsteps;
        }
        printf("| %lldk (%.0f docs) | %d | %s | %.3f | %.3f | %.2f | %.0f | %.1f of %d |\n",
               (long long)(totals[t] / 1024), docs / seeds, ranks[pi],
               rrt_attn_layout_name((rrt_attn_layout)lay), sum.run / seeds, sum.sync / seeds,
               sum.tiles / seeds, sum.items / seeds, steps_w / seeds, ranks[pi]);
      }
  return 0;
}

/* The cost model of cp_comm auto (src/sched/cp_model.h) on sizes no test
 * machine has: bytes and messages per rank, steps, and the predicted
 * forward time of every mode for P = 8 .. 128, a model table, not a
 * measurement. Assumptions: causal attention in the zigzag layout (every
 * rank the same work: pairs_max = total / P, P ring steps), bf16, head_dim
 * 128, batch 1, 8 ranks a node (GPU machine defaults of
 * rrt_cp_machine_default(1): 5/10 us latency, 150/50 GB/s, 300 TFLOP/s).
 *
 *   attn_cp_model [S]     (default S = 131072; markdown on stdout) */
#include <stdio.h>
#include <stdlib.h>

#include "sched/cp_model.h"

int main(int argc, char **argv) {
  const int64_t S = argc > 1 ? atoll(argv[1]) : 131072;
  const int Ps[] = {8, 16, 32, 64, 128}, Hs[][2] = {{32, 32}, {32, 8}, {32, 4}};
  printf("S = %lld, causal zigzag, bf16, head_dim 128, 8 ranks a node (model, not measured)\n\n",
         (long long)S);
  printf("| P | heads q/kv | mode | fwd MB/rank | bwd MB/rank | msgs | steps | fwd ms | auto |\n");
  printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++)
    for (size_t h = 0; h < sizeof Hs / sizeof *Hs; h++) {
      const int P = Ps[i];
      const double pairs = (double)S * (double)(S + 1) / 2.0;
      rrt_cp_model_in in = {
          1,     (S + P - 1) / P,          Hs[h][0], Hs[h][1], 128, 2, P, 8, P, pairs / P,
          pairs, rrt_cp_machine_default(1)};
      rrt_cp_cost c[RRT_CP_COUNT];
      const rrt_cp_comm best = rrt_cp_model(&in, c);
      for (int m = 0; m < RRT_CP_AUTO; m++) {
        if (!c[m].ok) continue;
        printf("| %d | %d/%d | %s | %.1f | %.1f | %d | %d | %.3f | %s |\n", P, Hs[h][0], Hs[h][1],
               rrt_cp_comm_name((rrt_cp_comm)m), c[m].bytes / 1e6, c[m].bytes_bwd / 1e6, c[m].msgs,
               c[m].steps, c[m].t_total * 1e3, m == (int)best ? "<-" : "");
      }
    }
  return 0;
}

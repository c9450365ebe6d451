/* The context-parallel modes' pure parts without MPI (sched/cp_model.h):
 * Ulysses' head split against its definition (every local query head's
 * K/V head is the global one of its group, local groups uniform), the
 * cost model's byte counts against formulas written out here, and the
 * choices of `auto` on sizes where the answer is clear. */
#include <stdio.h>
#include <string.h>

#include "sched/cp_model.h"
#include "test_util.h"

/* Every query head j * hq + t of rank j uses local K/V head t / g_loc,
 * which must be the global group's head (h / g) - the GQA rule. */
static void check_split(int Hq, int Hkv, int P) {
  rrt_cp_heads h;
  rrt_cp_heads_split(Hq, Hkv, P, &h);
  const int g = Hq / Hkv;
  CHECK(h.hq * P == Hq && h.hq % h.g_loc == 0 && h.hkv * h.g_loc == h.hq);
  CHECK(h.split == (Hkv % P == 0));
  if (h.split) CHECK_MSG(h.hkv == Hkv / P, "Hq %d Hkv %d P %d: hkv %d", Hq, Hkv, P, h.hkv);
  for (int j = 0; j < P; j++)
    for (int t = 0; t < h.hq; t++) {
      const int global_q = j * h.hq + t;
      CHECK_MSG(rrt_cp_kv_head(&h, Hq, Hkv, j, t / h.g_loc) == global_q / g,
                "Hq %d Hkv %d P %d rank %d head %d", Hq, Hkv, P, j, t);
    }
}

static rrt_cp_model_in dense(int64_t S, int Hq, int Hkv, int P, int local, int causal) {
  const double L = (double)(S / P), pairs = causal ? S * (S + 1) / 2.0 : (double)S * S;
  rrt_cp_model_in in = {1,     S / P,
                        Hq,    Hkv,
                        128,   2,
                        P,     local,
                        P,     causal ? (pairs / P) : L * S,
                        pairs, rrt_cp_machine_default(0)};
  return in;
}

static void check_bytes(void) {
  rrt_cp_cost c[RRT_CP_COUNT];
  rrt_cp_model_in in = dense(8192, 32, 8, 4, 4, 1);
  rrt_cp_model(&in, c);
  const double blk = 2.0 * 2048 * 8 * 128 * 2; /* K+V of one rank, bf16 */
  CHECK(c[RRT_CP_RING].ok && c[RRT_CP_RING].bytes == 3 * blk && c[RRT_CP_RING].steps == 4);
  CHECK(c[RRT_CP_ALLGATHER].bytes == 3 * blk);
  /* a2a: 3/4 of Q and O (8 heads each per peer), K/V 2 heads per peer, LSE */
  const double row = 2048.0 * 128 * 2;
  const double a2a = 3 * (2 * 8 * row + 2 * 2 * row) + 3 * 2048.0 * 8 * 4;
  CHECK_MSG(c[RRT_CP_A2A].bytes == a2a, "a2a bytes %.0f, expected %.0f", c[RRT_CP_A2A].bytes, a2a);
  CHECK(!c[RRT_CP_A2A_RING].ok);
  /* heads_q not divisible: a2a cannot run */
  in.heads_q = 30, in.heads_kv = 6;
  rrt_cp_model(&in, c);
  CHECK(!c[RRT_CP_A2A].ok);
}

static void check_choices(void) {
  rrt_cp_cost c[RRT_CP_COUNT];
  /* long sequence, few ranks: compute hides the ring's transfers */
  rrt_cp_model_in in = dense(65536, 32, 8, 4, 4, 0);
  CHECK(rrt_cp_model(&in, c) == RRT_CP_RING);
  CHECK(c[RRT_CP_AUTO].t_total == c[RRT_CP_RING].t_total);
  /* contiguous causal: the ring's slowest rank does most of the work; a2a
   * balances it */
  in = dense(65536, 32, 8, 4, 4, 1);
  in.pairs_max = in.pairs_total * 7 / 16; /* the last rank of 4, contiguous */
  CHECK(rrt_cp_model(&in, c) == RRT_CP_A2A);
  /* short sequence over many ranks: latency-bound steps; one collective wins */
  in = dense(1024, 8, 1, 64, 64, 0);
  in.m.flops = 1e15;
  const rrt_cp_comm m = rrt_cp_model(&in, c);
  CHECK_MSG(m != RRT_CP_RING, "chose %s", rrt_cp_comm_name(m));
  /* the choice is the least predicted time of the modes that run */
  for (int i = 0; i < RRT_CP_AUTO; i++)
    if (c[i].ok) CHECK(c[RRT_CP_AUTO].t_total <= c[i].t_total);
}

int main(void) {
  const int shapes[][2] = {{12, 4}, {12, 1}, {12, 6}, {12, 12}, {32, 8}, {8, 2}, {64, 8}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int P = 1; P <= 16; P++)
      if (shapes[s][0] % P == 0) check_split(shapes[s][0], shapes[s][1], P);
  check_bytes();
  check_choices();
  rrt_cp_comm cp;
  CHECK(rrt_cp_comm_parse("allgather", &cp) == RRT_SUCCESS && cp == RRT_CP_ALLGATHER);
  CHECK(strcmp(rrt_cp_comm_name(RRT_CP_A2A_RING), "a2a+ring") == 0);
  return test_result();
}

/* Ring schedules without MPI: for every layout and P = 1..8, every (query,
 * key) pair the mask keeps is computed exactly once over the P steps, no
 * masked pair is computed, items skip what they should, and the layout
 * helpers are mutual inverses. */
#include <stdlib.h>
#include <string.h>

#include "sched/ring_schedule.h"
#include "test_util.h"

/* Global position of a key/query row of an item. */
static int64_t item_qpos(const rrt_attn_item *it, rrt_attn_layout lay, int64_t S, int P, int r,
                         int64_t i) {
  if (it->masked || lay != RRT_ATTN_ZIGZAG) return it->q_pos0 + i * it->q_stride;
  return rrt_attn_global_pos(lay, S, P, r, it->q_begin + i);
}

static void check_layout(rrt_attn_layout lay, int P, int64_t S, int causal) {
  unsigned char *hits = calloc((size_t)(S * S), 1);
  int64_t len = 0;
  CHECK(rrt_attn_seq_local(lay, S, P, &len) == RRT_SUCCESS);
  int64_t total_pairs = 0;
  for (int r = 0; r < P; r++) {
    /* helpers are inverse of each other and cover every position once */
    for (int64_t l = 0; l < len; l++) {
      int64_t pos = rrt_attn_global_pos(lay, S, P, r, l);
      int rr = -1;
      int64_t ll = -1;
      rrt_attn_locate(lay, S, P, pos, &rr, &ll);
      CHECK_MSG(rr == r && ll == l && pos >= 0 && pos < S, "layout %d P %d r %d l %ld", lay, P, r,
                (long)l);
    }
    int64_t step_pairs_first = -1;
    for (int s = 0; s < P; s++) {
      rrt_ring_step st;
      CHECK(rrt_ring_step_plan(lay, causal, S, P, r, s, &st) == RRT_SUCCESS);
      CHECK(st.kv_src == ((r - s) % P + P) % P);
      int64_t pairs = 0;
      for (int n = 0; n < st.nitems; n++) {
        const rrt_attn_item *it = &st.items[n];
        int64_t kept = 0;
        for (int64_t i = 0; i < it->q_len; i++) {
          int64_t ql = it->q_begin + i;
          int64_t qp = rrt_attn_global_pos(lay, S, P, r, ql);
          CHECK(item_qpos(it, lay, S, P, r, i) == qp);
          for (int64_t j = 0; j < it->k_len; j++) {
            int64_t kl = it->k_begin + j;
            int64_t kp = rrt_attn_global_pos(lay, S, P, st.kv_src, kl);
            if (it->masked) CHECK(it->k_pos0 + j * it->k_stride == kp);
            int visible = !causal || kp <= qp;
            /* a full item must not contain masked pairs */
            if (!it->masked)
              CHECK_MSG(visible, "full item holds masked pair q %ld k %ld", (long)qp, (long)kp);
            if (it->masked && kp > qp) continue;
            kept++;
            hits[qp * S + kp]++;
          }
        }
        CHECK(kept == rrt_attn_item_pairs(it));
        CHECK_MSG(kept > 0, "item with no visible pair listed (layout %d P %d r %d s %d)", lay, P,
                  r, s);
        pairs += kept;
      }
      CHECK(pairs == st.pairs);
      total_pairs += pairs;
      /* zigzag: after step 0 every step costs the same on every rank */
      if (lay == RRT_ATTN_ZIGZAG && causal && s > 0) {
        int64_t expect = (len / 2) * len;
        CHECK_MSG(pairs == expect, "zigzag P %d r %d s %d pairs %ld != %ld", P, r, s, (long)pairs,
                  (long)expect);
      }
      if (s == 1) step_pairs_first = pairs;
    }
    (void)step_pairs_first;
  }
  for (int64_t q = 0; q < S; q++)
    for (int64_t k = 0; k < S; k++) {
      int want = (!causal || k <= q) ? 1 : 0;
      CHECK_MSG(hits[q * S + k] == want, "layout %d P %d causal %d pair (%ld,%ld) hit %d times",
                lay, P, causal, (long)q, (long)k, hits[q * S + k]);
    }
  int64_t expect_total = causal ? S * (S + 1) / 2 : S * S;
  CHECK(total_pairs == expect_total);
  free(hits);
}

int main(void) {
  for (int lay = 0; lay < RRT_ATTN_LAYOUT_COUNT; lay++)
    for (int P = 1; P <= 8; P++)
      for (int causal = 0; causal <= 1; causal++) {
        int64_t S = 2 * P * 3; /* chunks of 3: not a power of two */
        check_layout((rrt_attn_layout)lay, P, S, causal);
        if (lay != RRT_ATTN_ZIGZAG) check_layout((rrt_attn_layout)lay, P, P * 5, causal);
      }
  /* contiguous causal: later sources are skipped entirely */
  rrt_ring_step st;
  CHECK(rrt_ring_step_plan(RRT_ATTN_CONTIGUOUS, 1, 16, 4, 1, 2, &st) == RRT_SUCCESS);
  CHECK(st.kv_src == 3 && st.nitems == 0 && st.pairs == 0);
  /* invalid splits */
  int64_t len;
  CHECK(rrt_attn_seq_local(RRT_ATTN_ZIGZAG, 12, 4, &len) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_attn_seq_local(RRT_ATTN_CONTIGUOUS, 10, 4, &len) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_attn_seq_local(RRT_ATTN_STRIPE, 10, 4, &len) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_ring_step_plan(RRT_ATTN_ZIGZAG, 1, 12, 4, 0, 0, &st) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_ring_step_plan(RRT_ATTN_STRIPE, 1, 16, 4, 0, 4, &st) == RRT_ERR_INVALID_ARG);
  rrt_attn_layout l;
  CHECK(rrt_attn_layout_parse("zigzag", &l) == RRT_SUCCESS && l == RRT_ATTN_ZIGZAG);
  CHECK(rrt_attn_layout_parse("ring", &l) == RRT_ERR_INVALID_ARG);
  return test_result();
}

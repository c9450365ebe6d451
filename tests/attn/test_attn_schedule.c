/* Ring schedules without MPI, against the definitions of ringrt/attn.h
 * re-derived here: for random lengths (uneven, shorter than P), layouts,
 * windows, documents and P = 1..5, the shards hold the positions the
 * layout defines; every (query, key) pair of the global problem is
 * computed exactly once over all ranks and steps iff the mask keeps it;
 * items are trimmed, fully visible ones say so, pair counts are exact, and
 * no rank has work at or after nsteps. Plus the dense layout helpers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_math.h"
#include "sched/ring_schedule.h"
#include "test_util.h"

typedef struct tcase {
  rrt_attn_desc d;
  int P;
  int64_t cu[16];
} tcase;

static uint64_t rng = 88172645463325252ull;
static int64_t rnd(int64_t n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (int64_t)(rng % (uint64_t)n);
}

/* document of a position (dense: 0) */
static int64_t doc_of(const rrt_attn_desc *d, int64_t pos) {
  int64_t doc = 0;
  while (d->cu_seqlens && d->cu_seqlens[doc + 1] <= pos)
    doc++;
  return doc;
}

static int64_t fl(int64_t i, int64_t n, int64_t parts) { return i * n / parts; }

/* The layouts' definition: which rank holds position pos. */
static int owner(const rrt_attn_desc *d, int P, int64_t pos) {
  switch (d->layout) {
  case RRT_ATTN_STRIPE: return (int)(pos % P);
  case RRT_ATTN_ZIGZAG: {
    int64_t doc = doc_of(d, pos), ds = d->cu_seqlens ? d->cu_seqlens[doc] : 0;
    int64_t n = d->cu_seqlens ? d->cu_seqlens[doc + 1] - ds : d->seq, c = 0;
    while (fl(c + 1, n, 2 * P) <= pos - ds)
      c++;
    return c < P ? (int)c : (int)(2 * P - 1 - c);
  }
  default: {
    int r = 0;
    while (fl(r + 1, d->seq, P) <= pos)
      r++;
    return r;
  }
  }
}

/* The mask's definition: does query position q see key position k? */
static int visible(const rrt_attn_desc *d, int64_t q, int64_t k) {
  if (doc_of(d, q) != doc_of(d, k)) return 0;
  if (d->causal && k > q) return 0;
  if (d->window_left >= 0 && k < q - d->window_left) return 0;
  if (!d->causal && d->window_right >= 0 && k > q + d->window_right) return 0;
  return 1;
}

/* Positions of every rank, from the definition, checked against the
 * shards; pos[r] filled (malloc'd). */
static void check_positions(const tcase *t, const rrt_ring_sched *s, int64_t **pos) {
  const rrt_attn_desc *d = &t->d;
  int64_t total = 0, kv = 0;
  for (int r = 0; r < t->P; r++) {
    int64_t len = -1;
    CHECK(rrt_attn_shard_len(d, t->P, r, &len) == RRT_SUCCESS && len == s->len[r]);
    pos[r] = malloc((size_t)(len + 1) * sizeof(int64_t));
    CHECK(rrt_attn_shard_positions(d, t->P, r, pos[r]) == RRT_SUCCESS);
    int64_t n = 0;
    for (int64_t p = 0; p < d->seq; p++)
      if (owner(d, t->P, p) == r) {
        CHECK_MSG(n < len && pos[r][n] == p,
                  "%s S %lld P %d rank %d row %lld: position %lld, "
                  "expected %lld",
                  rrt_attn_layout_name(d->layout), (long long)d->seq, t->P, r, (long long)n,
                  (long long)(n < len ? pos[r][n] : -1), (long long)p);
        n++;
      }
    CHECK(n == len);
    total += len;
    kv = len > kv ? len : kv;
  }
  CHECK(total == d->seq && kv == s->kv_rows);
}

/* One item of (rank r, src): every pair checked and counted in hits. */
static int64_t check_item(const tcase *t, const rrt_attn_item *it, int r, int src, int64_t **pos,
                          rrt_attn_kmask mask, unsigned char *hits) {
  const rrt_attn_desc *d = &t->d;
  const int64_t S = d->seq;
  int64_t kept = 0, first_row = -1, last_row = -1, kmin = it->k_len, kmax = -1;
  CHECK(it->q_len > 0 && it->k_len > 0);
  for (int64_t i = 0; i < it->q_len; i++) {
    const int64_t qp = pos[r][it->q_begin + i];
    CHECK(it->q_pos0 + i * it->q_stride == qp);
    int64_t jb, je;
    rrt_attn_item_keys(it, mask, i, &jb, &je); /* what the kernels will compute */
    for (int64_t j = 0; j < it->k_len; j++) {
      const int64_t kp = pos[src][it->k_begin + j];
      CHECK(it->k_pos0 + j * it->k_stride == kp);
      const int vis = visible(d, qp, kp);
      CHECK_MSG(vis == (j >= jb && j < je), "row mask of q %lld k %lld", (long long)qp,
                (long long)kp);
      if (!it->masked)
        CHECK_MSG(vis, "full item holds masked pair q %lld k %lld", (long long)qp, (long long)kp);
      if (!vis) continue;
      kept++;
      hits[qp * S + kp]++;
      if (first_row < 0) first_row = i;
      last_row = i;
      kmin = j < kmin ? j : kmin;
      kmax = j > kmax ? j : kmax;
    }
  }
  /* trimmed: the first/last rows and keys see something; a masked item
   * is not secretly full */
  CHECK(first_row == 0 && last_row == it->q_len - 1 && kmin == 0 && kmax == it->k_len - 1);
  if (it->masked) CHECK(kept < it->q_len * it->k_len);
  return kept;
}

static void check_case(const tcase *t) {
  const rrt_attn_desc *d = &t->d;
  const int64_t S = d->seq;
  char msg[200];
  CHECK_MSG(rrt_attn_desc_check(d, t->P, msg, sizeof msg) == RRT_SUCCESS, "%s", msg);
  rrt_ring_sched *s = NULL;
  CHECK(rrt_ring_sched_create(d, t->P, &s) == RRT_SUCCESS);
  int64_t *pos[8];
  check_positions(t, s, pos);
  unsigned char *hits = calloc((size_t)(S * S), 1);
  const int nsteps = rrt_ring_sched_nsteps(s);
  int last_busy = 0;
  for (int r = 0; r < t->P; r++) {
    int64_t *lo = malloc((size_t)(s->len[r] + 1) * 8), *hi = malloc((size_t)(s->len[r] + 1) * 8);
    rrt_ring_sched_row_mask(s, r, lo, hi);
    const rrt_attn_kmask mask = {lo, hi};
    for (int st = 0; st < t->P; st++) {
      rrt_ring_step step;
      CHECK(rrt_ring_step_plan(s, r, st, &step) == RRT_SUCCESS);
      CHECK(step.kv_src == ((r - st) % t->P + t->P) % t->P);
      int64_t pairs = 0;
      for (int n = 0; n < step.nitems; n++)
        pairs += check_item(t, &step.items[n], r, step.kv_src, pos, mask, hits);
      CHECK(pairs == step.pairs);
      if (step.nitems) last_busy = st > last_busy ? st : last_busy;
      rrt_ring_step_free(&step);
    }
    free(lo);
    free(hi);
  }
  CHECK_MSG(nsteps == last_busy + 1, "nsteps %d, last step with work %d", nsteps, last_busy);
  int64_t total = 0;
  for (int64_t q = 0; q < S; q++)
    for (int64_t k = 0; k < S; k++) {
      total += visible(d, q, k);
      CHECK_MSG(hits[q * S + k] == visible(d, q, k),
                "%s S %lld P %d causal %d window (%d, %d) docs %lld: pair (%lld, %lld) hit %d",
                rrt_attn_layout_name(d->layout), (long long)S, t->P, d->causal, d->window_left,
                d->window_right, (long long)d->num_docs, (long long)q, (long long)k,
                hits[q * S + k]);
    }
  CHECK(rrt_attn_mask_pairs(d) == (double)total);
  CHECK(rrt_attn_flops(d) == 4.0 * d->head_dim * (double)total * d->heads_q * (double)d->batch);
  for (int r = 0; r < t->P; r++)
    free(pos[r]);
  free(hits);
  rrt_ring_sched_destroy(s);
}

/* A random problem: S 1..40, windows and documents half the time. */
static void random_case(tcase *t) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.head_dim = 8;
  d.heads_q = d.heads_kv = 1;
  d.seq = 1 + rnd(40);
  d.layout = (rrt_attn_layout)rnd(RRT_ATTN_LAYOUT_COUNT);
  d.causal = (int)rnd(2);
  d.window_left = rnd(2) ? -1 : (int)rnd(8);
  d.window_right = rnd(2) ? -1 : (int)rnd(8);
  t->P = 1 + (int)rnd(5);
  if (rnd(2)) {
    int64_t n = 1 + rnd(8);
    t->cu[0] = 0;
    for (int64_t i = 1; i < n; i++) /* sorted cuts, empty documents allowed */
      t->cu[i] = rnd(d.seq + 1);
    for (int64_t i = 1; i < n; i++)
      for (int64_t j = i; j > 1 && t->cu[j] < t->cu[j - 1]; j--) {
        int64_t x = t->cu[j];
        t->cu[j] = t->cu[j - 1], t->cu[j - 1] = x;
      }
    t->cu[n] = d.seq;
    d.num_docs = n;
  }
  t->d = d;
  t->d.cu_seqlens = d.num_docs ? t->cu : NULL;
}

/* Dense layouts of any length: global_pos and locate are inverses and
 * agree with the shards; even splits keep the classic seq_local. */
static void check_dense_helpers(void) {
  for (int P = 1; P <= 6; P++)
    for (int64_t S = 1; S <= 30; S++)
      for (int lay = 0; lay < RRT_ATTN_LAYOUT_COUNT; lay++) {
        rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
        d.seq = S, d.head_dim = 4, d.layout = (rrt_attn_layout)lay;
        for (int r = 0; r < P; r++) {
          int64_t len, pos[32];
          CHECK(rrt_attn_shard_len(&d, P, r, &len) == RRT_SUCCESS);
          CHECK(rrt_attn_shard_positions(&d, P, r, pos) == RRT_SUCCESS);
          for (int64_t l = 0; l < len; l++) {
            int rr = -1;
            int64_t ll = -1;
            CHECK(rrt_attn_global_pos(d.layout, S, P, r, l) == pos[l]);
            rrt_attn_locate(d.layout, S, P, pos[l], &rr, &ll);
            CHECK_MSG(rr == r && ll == l, "%s S %lld P %d pos %lld: rank %d local %lld",
                      rrt_attn_layout_name(d.layout), (long long)S, P, (long long)pos[l], rr,
                      (long long)ll);
          }
        }
      }
  int64_t len;
  CHECK(rrt_attn_seq_local(RRT_ATTN_ZIGZAG, 16, 4, &len) == RRT_SUCCESS && len == 4);
  CHECK(rrt_attn_seq_local(RRT_ATTN_ZIGZAG, 12, 4, &len) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_attn_seq_local(RRT_ATTN_STRIPE, 10, 4, &len) == RRT_ERR_INVALID_ARG);
}

/* Known cases: contiguous causal skips later sources and stops nothing
 * (rank P-1 works on every step); a window of 4 over 4 ranks of 16 rows
 * runs 2 steps; zigzag costs the same on every step after the first. */
static void check_known(void) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 64, d.head_dim = 4, d.causal = 1;
  rrt_ring_sched *s;
  rrt_ring_step st;
  CHECK(rrt_ring_sched_create(&d, 4, &s) == RRT_SUCCESS);
  CHECK(rrt_ring_step_plan(s, 1, 2, &st) == RRT_SUCCESS);
  CHECK(st.kv_src == 3 && st.nitems == 0 && st.pairs == 0 && !st.items);
  CHECK(rrt_ring_sched_nsteps(s) == 4);
  CHECK(rrt_ring_step_plan(s, 0, 4, &st) == RRT_ERR_INVALID_ARG);
  rrt_ring_sched_destroy(s);
  d.window_left = 4;
  CHECK(rrt_ring_sched_create(&d, 4, &s) == RRT_SUCCESS);
  CHECK(rrt_ring_sched_nsteps(s) == 2);
  rrt_ring_sched_destroy(s);
  d.window_left = -1, d.layout = RRT_ATTN_ZIGZAG;
  CHECK(rrt_ring_sched_create(&d, 4, &s) == RRT_SUCCESS);
  for (int r = 0; r < 4; r++)
    for (int k = 1; k < 4; k++) {
      CHECK(rrt_ring_step_plan(s, r, k, &st) == RRT_SUCCESS);
      CHECK_MSG(st.pairs == 8 * 16 && st.nitems == 2, "zigzag r %d s %d: %lld pairs", r, k,
                (long long)st.pairs);
      rrt_ring_step_free(&st);
    }
  rrt_ring_sched_destroy(s);
  rrt_attn_layout l;
  CHECK(rrt_attn_layout_parse("zigzag", &l) == RRT_SUCCESS && l == RRT_ATTN_ZIGZAG);
  CHECK(rrt_attn_layout_parse("ring", &l) == RRT_ERR_INVALID_ARG);
}

int main(void) {
  check_dense_helpers();
  check_known();
  for (int n = 0; n < 3000 && test_result() == 0; n++) {
    tcase t;
    random_case(&t);
    check_case(&t);
  }
  return test_result();
}

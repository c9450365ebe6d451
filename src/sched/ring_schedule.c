/* Ring attention schedule: the items of a (rank, step) from the segments
 * of the two shards (ring_layout.c), and the number of steps that run. */
#include "sched/ring_schedule.h"

#include <stdlib.h>
#include <string.h>

/* Visible keys [jb, je) of key segment k (indices relative to it) for a
 * query that sees key positions [lo, hi]: both ends nondecreasing in lo/hi
 * (the same arithmetic as rrt_attn_item_keys of kernels/attn_math.h). */
static void seg_keys(const rrt_attn_seg *k, int64_t lo, int64_t hi, int64_t *jb, int64_t *je) {
  const int64_t dlo = lo - k->pos0, dhi = hi - k->pos0, ks = k->stride;
  int64_t b = dlo <= 0 ? 0 : (dlo + ks - 1) / ks;
  int64_t e = dhi < 0 ? 0 : dhi / ks + 1;
  b = b < k->len ? b : k->len;
  e = e < k->len ? e : k->len;
  *jb = b;
  *je = e > b ? e : b;
}

static int64_t seg_last(const rrt_attn_seg *g) { return g->pos0 + (g->len - 1) * g->stride; }

static void set_item(rrt_attn_item *it, const rrt_attn_seg *q, int64_t qi, int64_t qn,
                     const rrt_attn_seg *k, int64_t kj, int64_t kn, int masked) {
  *it = (rrt_attn_item){q->begin + qi, qn, q->pos0 + qi * q->stride, q->stride,
                        k->begin + kj, kn, k->pos0 + kj * k->stride, k->stride,
                        masked};
}

/* The item of the pair (q, k) of one document, trimmed to the rows and
 * keys that see anything; its kept pairs in *pairs. 0: nothing visible. */
static int pair_item(const rrt_ring_sched *s, const rrt_attn_seg *q, const rrt_attn_seg *k,
                     rrt_attn_item *it, int64_t *pairs) {
  int64_t lo0, hi0, lon, hin;
  rrt_ring_sched_bounds(s, q->doc, q->pos0, &lo0, &hi0);
  rrt_ring_sched_bounds(s, q->doc, seg_last(q), &lon, &hin);
  if (hin < k->pos0 || lo0 > seg_last(k)) return 0; /* the bounding box misses */
  if (lon <= k->pos0 && hi0 >= seg_last(k)) {       /* every row sees every key */
    set_item(it, q, 0, q->len, k, 0, k->len, 0);
    *pairs = q->len * k->len;
    return 1;
  }
  int64_t fi = -1, li = -1, jb_f = 0, je_f = 0, jb_l = 0, je_l = 0, n = 0;
  for (int64_t i = 0; i < q->len; i++) {
    int64_t lo, hi, jb, je;
    rrt_ring_sched_bounds(s, q->doc, q->pos0 + i * q->stride, &lo, &hi);
    seg_keys(k, lo, hi, &jb, &je);
    if (je == jb) continue;
    if (fi < 0) fi = i, jb_f = jb, je_f = je;
    li = i, jb_l = jb, je_l = je;
    n += je - jb;
  }
  if (fi < 0) return 0;
  /* ends are monotone: equal at both ends means every row sees the range */
  set_item(it, q, fi, li - fi + 1, k, jb_f, je_l - jb_f, !(jb_l == jb_f && je_f == je_l));
  *pairs = n;
  return 1;
}

/* Walk the same-document (query, key) segment pairs of (rank, src). With
 * out == NULL, stop at the first visible pair and return 1 (work exists);
 * otherwise append every item to out (0, or -1 when out of memory). */
static int walk_pairs(const rrt_ring_sched *s, int rank, int src, rrt_ring_step *out, int *cap) {
  const rrt_attn_seg *qs = s->segs + s->seg_off[rank], *ks = s->segs + s->seg_off[src];
  const int64_t nq = s->seg_off[rank + 1] - s->seg_off[rank];
  const int64_t nk = s->seg_off[src + 1] - s->seg_off[src];
  int64_t k0 = 0;
  for (int64_t a = 0; a < nq; a++) {
    while (k0 < nk && ks[k0].doc < qs[a].doc)
      k0++;
    for (int64_t b = k0; b < nk && ks[b].doc == qs[a].doc; b++) {
      rrt_attn_item it;
      int64_t pairs;
      if (!pair_item(s, &qs[a], &ks[b], &it, &pairs)) continue;
      if (!out) return 1;
      if (out->nitems == *cap) {
        int c = *cap ? 2 * *cap : 4;
        rrt_attn_item *v = realloc(out->items, (size_t)c * sizeof *v);
        if (!v) return -1;
        out->items = v, *cap = c;
      }
      out->items[out->nitems++] = it;
      out->pairs += pairs;
    }
  }
  return 0;
}

static int src_of(const rrt_ring_sched *s, int rank, int step) {
  return ((rank - step) % s->P + s->P) % s->P;
}

rrt_status rrt_ring_step_plan(const rrt_ring_sched *s, int rank, int step, rrt_ring_step *st) {
  memset(st, 0, sizeof *st);
  if (rank < 0 || rank >= s->P || step < 0 || step >= s->P) return RRT_ERR_INVALID_ARG;
  st->kv_src = src_of(s, rank, step);
  int cap = 0;
  if (walk_pairs(s, rank, st->kv_src, st, &cap) < 0) {
    rrt_ring_step_free(st);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  return RRT_SUCCESS;
}

void rrt_ring_step_free(rrt_ring_step *st) {
  free(st->items);
  st->items = NULL;
  st->nitems = 0;
  st->pairs = 0;
}

int rrt_ring_sched_nsteps(const rrt_ring_sched *s) {
  for (int step = s->P - 1; step > 0; step--)
    for (int r = 0; r < s->P; r++)
      if (walk_pairs(s, r, src_of(s, r, step), NULL, NULL)) return step + 1;
  return 1;
}

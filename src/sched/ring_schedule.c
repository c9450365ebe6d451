/* Ring attention schedule and layout arithmetic: the one place that knows
 * where a global position lives for each layout. */
#include "sched/ring_schedule.h"

#include <string.h>

static const char *const layout_names[RRT_ATTN_LAYOUT_COUNT] = {"contiguous", "zigzag", "stripe"};

const char *rrt_attn_layout_name(rrt_attn_layout layout) {
  return (unsigned)layout < RRT_ATTN_LAYOUT_COUNT ? layout_names[layout] : "unknown";
}

rrt_status rrt_attn_layout_parse(const char *name, rrt_attn_layout *layout) {
  for (int i = 0; name && i < RRT_ATTN_LAYOUT_COUNT; i++) {
    if (strcmp(name, layout_names[i]) == 0) {
      *layout = (rrt_attn_layout)i;
      return RRT_SUCCESS;
    }
  }
  return RRT_ERR_INVALID_ARG;
}

rrt_status rrt_attn_seq_local(rrt_attn_layout layout, int64_t seq, int nranks, int64_t *seq_local) {
  if (nranks < 1 || seq < 1 || (unsigned)layout >= RRT_ATTN_LAYOUT_COUNT)
    return RRT_ERR_INVALID_ARG;
  int64_t parts = layout == RRT_ATTN_ZIGZAG ? 2 * (int64_t)nranks : nranks;
  if (seq % parts != 0) return RRT_ERR_INVALID_ARG;
  *seq_local = seq / nranks;
  return RRT_SUCCESS;
}

int64_t rrt_attn_global_pos(rrt_attn_layout layout, int64_t seq, int nranks, int rank,
                            int64_t local) {
  int64_t len = seq / nranks;
  switch (layout) {
  case RRT_ATTN_ZIGZAG: {
    int64_t c = seq / (2 * (int64_t)nranks);
    return local < c ? rank * c + local : (2 * (int64_t)nranks - 1 - rank) * c + (local - c);
  }
  case RRT_ATTN_STRIPE: return local * nranks + rank;
  default: return rank * len + local;
  }
}

void rrt_attn_locate(rrt_attn_layout layout, int64_t seq, int nranks, int64_t pos, int *rank,
                     int64_t *local) {
  int64_t len = seq / nranks;
  switch (layout) {
  case RRT_ATTN_ZIGZAG: {
    int64_t c = seq / (2 * (int64_t)nranks);
    int64_t chunk = pos / c;
    if (chunk < nranks) {
      *rank = (int)chunk;
      *local = pos - chunk * c;
    } else {
      *rank = (int)(2 * (int64_t)nranks - 1 - chunk);
      *local = c + (pos - chunk * c);
    }
    return;
  }
  case RRT_ATTN_STRIPE:
    *rank = (int)(pos % nranks);
    *local = pos / nranks;
    return;
  default:
    *rank = (int)(pos / len);
    *local = pos % len;
    return;
  }
}

int64_t rrt_attn_item_pairs(const rrt_attn_item *it) {
  if (!it->masked) return it->q_len * it->k_len;
  int64_t n = 0;
  for (int64_t i = 0; i < it->q_len; i++) {
    int64_t d = it->q_pos0 + i * it->q_stride - it->k_pos0; /* need k_stride * j <= d */
    if (d < 0) continue;
    int64_t j = d / it->k_stride + 1;
    n += j < it->k_len ? j : it->k_len;
  }
  return n;
}

static void add_item(rrt_ring_step *st, int64_t qb, int64_t ql, int64_t qp, int64_t qs, int64_t kb,
                     int64_t kl, int64_t kp, int64_t ks, int causal) {
  rrt_attn_item *it = &st->items[st->nitems++];
  it->q_begin = qb;
  it->q_len = ql;
  it->q_pos0 = qp;
  it->q_stride = qs;
  it->k_begin = kb;
  it->k_len = kl;
  it->k_pos0 = kp;
  it->k_stride = ks;
  it->masked = causal;
  st->pairs += rrt_attn_item_pairs(it);
}

rrt_status rrt_ring_step_plan(rrt_attn_layout layout, int causal, int64_t seq, int nranks, int rank,
                              int step, rrt_ring_step *st) {
  int64_t len;
  if (rrt_attn_seq_local(layout, seq, nranks, &len) != RRT_SUCCESS) return RRT_ERR_INVALID_ARG;
  if (rank < 0 || rank >= nranks || step < 0 || step >= nranks) return RRT_ERR_INVALID_ARG;
  memset(st, 0, sizeof *st);
  int src = ((rank - step) % nranks + nranks) % nranks;
  st->kv_src = src;
  int64_t P = nranks;

  if (!causal) {
    /* Every pair is visible; positions only matter for masking, but are
     * filled where they are affine so the item stays self-describing. */
    int64_t qs = layout == RRT_ATTN_STRIPE ? P : 1;
    add_item(st, 0, len, rrt_attn_global_pos(layout, seq, nranks, rank, 0), qs, 0, len,
             rrt_attn_global_pos(layout, seq, nranks, src, 0), qs, 0);
    return RRT_SUCCESS;
  }
  switch (layout) {
  case RRT_ATTN_CONTIGUOUS:
    /* earlier source: all visible; own block: the diagonal; later: skipped */
    if (src <= rank) add_item(st, 0, len, rank * len, 1, 0, len, src * len, 1, src == rank);
    break;
  case RRT_ATTN_ZIGZAG: {
    /* halves: local [0, c) is chunk r, [c, 2c) is chunk 2P-1-r */
    int64_t c = len / 2;
    int64_t qc[2] = {rank, 2 * P - 1 - rank}, kc[2] = {src, 2 * P - 1 - src};
    for (int qh = 0; qh < 2; qh++)
      for (int kh = 0; kh < 2; kh++)
        if (qc[qh] >= kc[kh])
          add_item(st, qh * c, c, qc[qh] * c, 1, kh * c, c, kc[kh] * c, 1, qc[qh] == kc[kh]);
    break;
  }
  case RRT_ATTN_STRIPE:
    /* key j*P+src <= query i*P+r: j <= i for src <= r, j < i otherwise;
     * a strict-or-not triangle on every step, masked by positions */
    add_item(st, 0, len, rank, P, 0, len, src, P, 1);
    break;
  default: return RRT_ERR_INVALID_ARG;
  }
  return RRT_SUCCESS;
}

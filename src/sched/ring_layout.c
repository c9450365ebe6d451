/* Ring attention layouts: where each global position lives (the layouts of
 * ringrt/attn.h, for any length and for packed documents), the segments of
 * every rank's shard, and the row mask. The one place that knows the
 * layouts; ring_schedule.c builds the steps on the segments. */
#include <stdlib.h>
#include <string.h>

#include "sched/ring_schedule.h"

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

/* floor(i * n / parts), the start of part i of n items (128-bit product:
 * seq * ranks may exceed int64). */
static int64_t split_at(int64_t i, int64_t n, int64_t parts) {
  return (int64_t)((__int128)i * n / parts);
}

/* The part of n items in `parts` floor splits that holds item x. */
static int64_t part_of(int64_t x, int64_t n, int64_t parts) {
  return (int64_t)(((__int128)(x + 1) * parts - 1) / n);
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
  const int64_t P = nranks, C = 2 * P;
  switch (layout) {
  case RRT_ATTN_ZIGZAG: {
    int64_t c0 = split_at(rank, seq, C), n0 = split_at(rank + 1, seq, C) - c0;
    return local < n0 ? c0 + local : split_at(C - 1 - rank, seq, C) + (local - n0);
  }
  case RRT_ATTN_STRIPE: return local * P + rank;
  default: return split_at(rank, seq, P) + local;
  }
}

void rrt_attn_locate(rrt_attn_layout layout, int64_t seq, int nranks, int64_t pos, int *rank,
                     int64_t *local) {
  const int64_t P = nranks, C = 2 * P;
  switch (layout) {
  case RRT_ATTN_ZIGZAG: {
    int64_t c = part_of(pos, seq, C), off = pos - split_at(c, seq, C);
    if (c < P) {
      *rank = (int)c;
      *local = off;
    } else {
      *rank = (int)(C - 1 - c);
      *local = split_at(*rank + 1, seq, C) - split_at(*rank, seq, C) + off;
    }
    return;
  }
  case RRT_ATTN_STRIPE:
    *rank = (int)(pos % P);
    *local = pos / P;
    return;
  default:
    *rank = (int)part_of(pos, seq, P);
    *local = pos - split_at(*rank, seq, P);
    return;
  }
}

/* ---- segments ------------------------------------------------------------ */

typedef struct seg_buf {
  rrt_attn_seg *v;
  int64_t n, cap;
} seg_buf;

static int seg_add(seg_buf *b, int64_t begin, int64_t len, int64_t pos0, int64_t stride,
                   int64_t doc) {
  if (b->n == b->cap) {
    int64_t cap = b->cap ? 2 * b->cap : 16;
    rrt_attn_seg *v = realloc(b->v, (size_t)cap * sizeof *v);
    if (!v) return 1;
    b->v = v, b->cap = cap;
  }
  b->v[b->n++] = (rrt_attn_seg){begin, len, pos0, stride, doc};
  return 0;
}

/* contiguous: [floor(rS/P), floor((r+1)S/P)) of the packed sequence, cut
 * at the document boundaries inside it */
static int segs_contiguous(const rrt_ring_sched *s, int r, seg_buf *b) {
  const int64_t a = split_at(r, s->seq, s->P), e = split_at(r + 1, s->seq, s->P);
  int64_t d = 0;
  while (d < s->ndocs && s->cu[d + 1] <= a)
    d++;
  for (int64_t pos = a; pos < e; d++) {
    int64_t de = s->cu[d + 1] < e ? s->cu[d + 1] : e;
    if (de > pos && seg_add(b, pos - a, de - pos, pos, 1, d)) return 1;
    pos = de > pos ? de : pos;
  }
  return 0;
}

/* stripe: the positions = r (mod P) of each document */
static int segs_stripe(const rrt_ring_sched *s, int r, seg_buf *b) {
  const int64_t P = s->P;
  for (int64_t d = 0; d < s->ndocs; d++) {
    int64_t ds = s->cu[d], de = s->cu[d + 1];
    int64_t first = ds + (((r - ds) % P) + P) % P;
    if (first < de && seg_add(b, first / P, (de - 1 - first) / P + 1, first, P, d)) return 1;
  }
  return 0;
}

/* zigzag: chunks r and 2P-1-r of every document, in document order */
static int segs_zigzag(const rrt_ring_sched *s, int r, seg_buf *b) {
  const int64_t C = 2 * (int64_t)s->P;
  int64_t local = 0;
  for (int64_t d = 0; d < s->ndocs; d++) {
    int64_t ds = s->cu[d], n = s->cu[d + 1] - ds;
    const int64_t chunks[2] = {r, C - 1 - r};
    for (int h = 0; h < 2; h++) {
      int64_t cb = ds + split_at(chunks[h], n, C), ce = ds + split_at(chunks[h] + 1, n, C);
      if (ce > cb && seg_add(b, local, ce - cb, cb, 1, d)) return 1;
      local += ce - cb;
    }
  }
  return 0;
}

static rrt_status build_segs(rrt_ring_sched *s) {
  seg_buf b = {NULL, 0, 0};
  s->seg_off = malloc(((size_t)s->P + 1) * sizeof *s->seg_off);
  s->len = calloc((size_t)s->P, sizeof *s->len);
  if (!s->seg_off || !s->len) return RRT_ERR_OUT_OF_MEMORY;
  for (int r = 0; r < s->P; r++) {
    s->seg_off[r] = b.n;
    int fail = s->layout == RRT_ATTN_ZIGZAG   ? segs_zigzag(s, r, &b)
               : s->layout == RRT_ATTN_STRIPE ? segs_stripe(s, r, &b)
                                              : segs_contiguous(s, r, &b);
    if (fail) {
      free(b.v);
      return RRT_ERR_OUT_OF_MEMORY;
    }
    for (int64_t i = s->seg_off[r]; i < b.n; i++)
      s->len[r] += b.v[i].len;
    if (s->len[r] > s->kv_rows) s->kv_rows = s->len[r];
  }
  s->seg_off[s->P] = b.n;
  s->segs = b.v;
  return RRT_SUCCESS;
}

static int has_docs(const rrt_attn_desc *d) { return d->cu_seqlens && d->num_docs > 0; }

/* The mask parameters of a descriptor (cu left for the caller). */
static void sched_mask_of(rrt_ring_sched *s, const rrt_attn_desc *d) {
  s->seq = d->seq;
  s->causal = d->causal != 0;
  s->left = d->window_left < 0 ? -1 : d->window_left;
  s->right = d->causal ? 0 : d->window_right < 0 ? -1 : d->window_right;
  s->ndocs = has_docs(d) ? d->num_docs : 1;
  s->masked = s->causal || s->left >= 0 || s->right >= 0 || s->ndocs > 1;
}

rrt_status rrt_ring_sched_create(const rrt_attn_desc *d, int nranks, rrt_ring_sched **out) {
  *out = NULL;
  if (nranks < 1 || d->seq < 1 || (unsigned)d->layout >= RRT_ATTN_LAYOUT_COUNT)
    return RRT_ERR_INVALID_ARG;
  rrt_ring_sched *s = calloc(1, sizeof *s);
  if (!s) return RRT_ERR_OUT_OF_MEMORY;
  s->layout = d->layout;
  s->P = nranks;
  sched_mask_of(s, d);
  s->cu = malloc(((size_t)s->ndocs + 1) * sizeof *s->cu);
  rrt_status st = s->cu ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS) {
    if (has_docs(d))
      memcpy(s->cu, d->cu_seqlens, ((size_t)s->ndocs + 1) * sizeof *s->cu);
    else
      s->cu[0] = 0, s->cu[1] = d->seq;
    st = build_segs(s);
  }
  if (st != RRT_SUCCESS) {
    rrt_ring_sched_destroy(s);
    return st;
  }
  *out = s;
  return RRT_SUCCESS;
}

void rrt_ring_sched_destroy(rrt_ring_sched *s) {
  if (!s) return;
  free(s->cu);
  free(s->seg_off);
  free(s->segs);
  free(s->len);
  free(s);
}

/* ---- positions and the row mask ----------------------------------------- */

void rrt_ring_sched_bounds(const rrt_ring_sched *s, int64_t doc, int64_t pos, int64_t *lo,
                           int64_t *hi) {
  const int64_t ds = s->cu[doc], de = s->cu[doc + 1];
  *lo = s->left < 0 || pos - s->left < ds ? ds : pos - s->left;
  *hi = s->right < 0 || pos + s->right > de - 1 ? de - 1 : pos + s->right;
}

void rrt_ring_sched_positions(const rrt_ring_sched *s, int rank, int64_t *pos) {
  for (int64_t g = s->seg_off[rank]; g < s->seg_off[rank + 1]; g++) {
    const rrt_attn_seg *sg = &s->segs[g];
    for (int64_t i = 0; i < sg->len; i++)
      pos[sg->begin + i] = sg->pos0 + i * sg->stride;
  }
}

void rrt_ring_sched_row_mask(const rrt_ring_sched *s, int rank, int64_t *lo, int64_t *hi) {
  for (int64_t g = s->seg_off[rank]; g < s->seg_off[rank + 1]; g++) {
    const rrt_attn_seg *sg = &s->segs[g];
    for (int64_t i = 0; i < sg->len; i++)
      rrt_ring_sched_bounds(s, sg->doc, sg->pos0 + i * sg->stride, &lo[sg->begin + i],
                            &hi[sg->begin + i]);
  }
}

/* m (m + 1) / 2 for m > 0, else 0 */
static double tri(double m) { return m > 0 ? m * (m + 1) / 2 : 0.0; }

/* Pairs of one document of n tokens under window (left, right), each
 * already clamped to n - 1: sum over rows i of min(n-1, i+R) - max(0, i-L)
 * + 1, in closed form (so a huge seq costs nothing). */
static double doc_pairs(double n, double L, double R) {
  return n * (n - 1) / 2 + n * R - (tri(R) - tri(R - n)) - tri(n - 1 - L) + n;
}

double rrt_attn_mask_pairs(const rrt_attn_desc *d) {
  rrt_ring_sched s;
  memset(&s, 0, sizeof s);
  sched_mask_of(&s, d);
  double pairs = 0;
  for (int64_t doc = 0; doc < s.ndocs; doc++) {
    double n = has_docs(d) ? (double)(d->cu_seqlens[doc + 1] - d->cu_seqlens[doc]) : (double)d->seq;
    if (n <= 0) continue;
    double L = s.left < 0 || (double)s.left > n - 1 ? n - 1 : (double)s.left;
    double R = s.right < 0 || (double)s.right > n - 1 ? n - 1 : (double)s.right;
    pairs += doc_pairs(n, L, R);
  }
  return pairs;
}

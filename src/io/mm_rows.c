/* A Matrix Market matrix in row blocks without any rank holding the file:
 *
 * 1. rank 0 reads the header and size line and tells everyone the shape
 *    and where the entry lines start;
 * 2. every rank parses its share of the entry lines (io/mm_chunk.c);
 * 3. provisional row blocks balanced by stored entries, from a histogram of
 *    the entries over at most 64 P row buckets (an allreduce of 64 P
 *    counts, not of n), and every entry sent to its provisional owner
 *    (an all-to-all in rank order, so each row's entries keep file order
 *    and duplicates are summed in the serial reader's order);
 * 4. each rank builds its provisional rows (sorted, duplicates summed,
 *    pattern values) and knows their exact lengths; the final blocks are
 *    rrt_sparse_partition's, found from those lengths: an exclusive scan of
 *    the P block sizes, then each split row (the first row whose midpoint
 *    passes p nnz / P) is looked up where it lies and agreed by a min
 *    allreduce of P values;
 * 5. the rows move (whole, already built) to their final owners: only the
 *    rows near the provisional block ends change hands. */
#include "io/mm_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/errbuf.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "io/mm_chunk.h"
#include "sched/ilu0_levels.h"

#define OP "reading a Matrix Market file"

/* What rank 0 learnt from the header, for everyone. */
typedef struct head_record {
  rrt_mm_shape sh;
  rrt_mm_layout lay;
} head_record;

static rrt_status read_head(rrt_ctx_t ctx, const char *path, rrt_mm_pattern_values pattern,
                            head_record *h, char *err, size_t errlen) {
  rrt_status st = RRT_SUCCESS;
  memset(h, 0, sizeof *h);
  if (rrt_ctx_rank(ctx) == 0) {
    rrt_mm_lines r = {.path = path};
    st = rrt_lines_open(path, &r.lr, err, errlen);
    if (!st && !rrt_lines_gzip(r.lr) && rrt_lines_file_size(r.lr) < 0)
      st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s: not a regular file (a pipe or a device?): each rank reads its own "
                      "part of the file by offset; give a file (plain or .gz)",
                      path);
    if (!st) st = rrt_mm_read_head(&r, pattern, &h->sh, err, errlen);
    if (!st) {
      h->lay.gzip = rrt_lines_gzip(r.lr);
      h->lay.data_off = rrt_lines_offset(r.lr);
      h->lay.file_size = rrt_lines_file_size(r.lr);
    }
    rrt_lines_close(r.lr);
  }
  RRT_CHECK(rrt_mm_agree(ctx, st, err, errlen));
  st = rrt_host_bcast_named(ctx, OP, h, sizeof *h, 0);
  return st ? rrt_mm_coll_failed(ctx, st, err, errlen) : RRT_SUCCESS;
}

/* First row of bucket b of B buckets over n rows (bucket of row i:
 * floor(i B / n)). */
static int64_t bucket_start(int64_t b, int64_t B, int64_t n) {
  return (int64_t)(((__int128)b * n + B - 1) / B);
}

/* Provisional blocks q[0..P]: whole buckets, balanced by stored entries. */
static rrt_status provisional_blocks(rrt_ctx_t ctx, int64_t n, const rrt_mm_entries *t, int64_t *q,
                                     char *err, size_t errlen) {
  int P = rrt_ctx_size(ctx);
  int64_t B = n < 64 * (int64_t)P ? n : 64 * (int64_t)P;
  int64_t *cnt = calloc((size_t)B + 1, sizeof(int64_t)), *boff = malloc(((size_t)P + 1) * 8);
  rrt_status st =
      cnt && boff ? RRT_SUCCESS : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  for (int64_t k = 0; k < t->n; k++)
    cnt[1 + (int64_t)((__int128)t->e[k].row * B / n)]++;
  if ((st = rrt_host_allreduce_named(ctx, OP, cnt + 1, cnt + 1, (size_t)B, RRT_DTYPE_I64,
                                     RRT_OP_SUM))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  for (int64_t b = 0; b < B; b++)
    cnt[b + 1] += cnt[b];
  rrt_partition_nnz(B, cnt, P, boff);
  for (int p = 0; p <= P; p++)
    q[p] = bucket_start(boff[p], B, n);
done:
  free(cnt), free(boff);
  return st;
}

/* Every entry to the owner of its row in q; on return *recv holds this
 * rank's entries, from every rank in rank order (file order). Frees t.
 * A share whose entries already go to the ranks in rank order (a file
 * sorted by row, the usual case, not a mirrored triangle) is sent as it
 * is; any other is first grouped by destination into a copy. */
static rrt_status send_entries(rrt_ctx_t ctx, const int64_t *q, rrt_mm_entries *t,
                               rrt_mm_entry **recv, int64_t *nrecv, char *err, size_t errlen) {
  int P = rrt_ctx_size(ctx), sorted = 1, last = 0;
  size_t *sb = calloc(3 * (size_t)P, sizeof(size_t)), *sd = sb + P, *rb = sb + 2 * P;
  rrt_mm_entry *send = NULL;
  *recv = NULL, *nrecv = 0;
  for (int64_t k = 0; sb && k < t->n; k++) {
    int p = rrt_partition_owner(q, P, t->e[k].row);
    sb[p] += sizeof(rrt_mm_entry), sorted &= p >= last, last = p;
  }
  if (sb && !sorted) send = malloc(((size_t)t->n + 1) * sizeof(rrt_mm_entry));
  rrt_status st = sb && (sorted || send)
                      ? RRT_SUCCESS
                      : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  for (int p = 1; p < P; p++)
    sd[p] = sd[p - 1] + sb[p - 1];
  if (sorted) { /* capacity doubled while reading: give the slack back */
    rrt_mm_entry *fit = realloc(t->e, ((size_t)t->n + 1) * sizeof(rrt_mm_entry));
    send = fit ? fit : t->e;
  } else {
    for (int64_t k = 0; k < t->n; k++) { /* sd advances while filling, then is rewound */
      int p = rrt_partition_owner(q, P, t->e[k].row);
      memcpy((char *)send + sd[p], &t->e[k], sizeof(rrt_mm_entry));
      sd[p] += sizeof(rrt_mm_entry);
    }
    for (int p = 0; p < P; p++)
      sd[p] -= sb[p];
    free(t->e);
  }
  t->e = NULL, t->n = t->cap = 0;
  void *r = NULL;
  if (P == 1) { /* nothing to exchange: keep the one copy */
    *recv = send, *nrecv = (int64_t)(sb[0] / sizeof(rrt_mm_entry)), send = NULL;
    goto done;
  }
  if ((st = rrt_host_alltoallv_alloc(ctx, send, sb, sd, &r, rb))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  *recv = r;
  for (int p = 0; p < P; p++)
    *nrecv += (int64_t)(rb[p] / sizeof(rrt_mm_entry));
done:
  free(sb), free(send);
  return st;
}

/* The final blocks off[0..P] (rrt_sparse_partition of the whole matrix)
 * from this rank's provisional rows [q0, q0 + a->nrows). */
static rrt_status final_blocks(rrt_ctx_t ctx, int64_t n, int64_t q0, const rrt_csr *a, int64_t *off,
                               char *err, size_t errlen) {
  int P = rrt_ctx_size(ctx), me = rrt_ctx_rank(ctx);
  int64_t *nz = malloc(((size_t)P + 1) * sizeof(int64_t)), *cand = malloc((size_t)P * 8);
  size_t *lb = malloc(2 * (size_t)P * sizeof(size_t));
  rrt_status st = nz && cand && lb
                      ? RRT_SUCCESS
                      : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  for (int p = 0; p < P; p++)
    lb[p] = sizeof(int64_t), lb[P + p] = (size_t)p * sizeof(int64_t);
  if ((st = rrt_host_allgatherv_named(ctx, OP, &a->nnz, sizeof(int64_t), nz, lb, lb + P))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  int64_t base = 0, total = 0;
  for (int p = 0; p < P; p++)
    base += p < me ? nz[p] : 0, total += nz[p];
  /* Split p is the first row i with (rowptr[i] + rowptr[i+1]) P >= 2 p nnz
   * (rrt_partition_nnz's test): the midpoints grow with i, so the first
   * local row that passes is found by bisection; n when no row passes. */
  for (int p = 1; p < P; p++) {
    int64_t lo = 0, hi = a->nrows;
    while (lo < hi) {
      int64_t i = (lo + hi) / 2;
      if ((2 * base + a->rowptr[i] + a->rowptr[i + 1]) * (int64_t)P < 2 * (int64_t)p * total)
        lo = i + 1;
      else
        hi = i;
    }
    cand[p - 1] = lo < a->nrows ? q0 + lo : n;
  }
  if (P > 1 && (st = rrt_host_allreduce_named(ctx, OP, cand, off + 1, (size_t)P - 1, RRT_DTYPE_I64,
                                              RRT_OP_MIN))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  off[0] = 0, off[P] = n;
done:
  free(nz), free(cand), free(lb);
  return st;
}

/* Rows [b, e) of blocks x and y that overlap: their count (0 if none). */
static int64_t overlap(const int64_t *x, int i, const int64_t *y, int j, int64_t *b) {
  int64_t lo = x[i] > y[j] ? x[i] : y[j], hi = x[i + 1] < y[j + 1] ? x[i + 1] : y[j + 1];
  *b = lo;
  return hi > lo ? hi - lo : 0;
}

/* Pack rows [b, b + m) of a (first row q0) for one rank: the m row
 * lengths, then their columns, then their values. Returns the bytes. */
static size_t pack_rows(const rrt_csr *a, int64_t q0, int64_t b, int64_t m, char *out) {
  const int64_t *rp = a->rowptr + (b - q0);
  int64_t nz = rp[m] - rp[0];
  if (out) {
    int64_t *len = (int64_t *)out;
    for (int64_t i = 0; i < m; i++)
      len[i] = rp[i + 1] - rp[i];
    memcpy(out + 8 * m, a->col + rp[0], (size_t)nz * 8);
    memcpy(out + 8 * (m + nz), a->val + rp[0], (size_t)nz * 8);
  }
  return (size_t)(m + 2 * nz) * 8;
}

/* The final rows of this rank from the provisional rows of every rank;
 * frees a once it is packed. */
static rrt_status move_rows(rrt_ctx_t ctx, const int64_t *q, const int64_t *off, rrt_csr *a,
                            rrt_csr *out, char *err, size_t errlen) {
  int P = rrt_ctx_size(ctx), me = rrt_ctx_rank(ctx);
  size_t *sb = calloc(3 * (size_t)P, sizeof(size_t)), *sd = sb + P, *rb = sb + 2 * P, total = 0;
  char *send = NULL, *recv = NULL;
  int64_t b, m = off[me + 1] - off[me];
  memset(out, 0, sizeof *out);
  rrt_status st = sb ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  for (int p = 0; sb && p < P; p++) {
    int64_t k = overlap(q, me, off, p, &b);
    sd[p] = total, sb[p] = k ? pack_rows(a, q[me], b, k, NULL) : 0, total += sb[p];
  }
  if (!st && !(send = malloc(total + 1))) st = RRT_ERR_OUT_OF_MEMORY;
  if (!st) {
    out->rowptr = malloc(((size_t)m + 1) * sizeof(int64_t));
    if (!out->rowptr) st = RRT_ERR_OUT_OF_MEMORY;
  }
  if (st) rrt_errbuf(err, errlen, st, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  for (int p = 0; p < P; p++) {
    int64_t k = overlap(q, me, off, p, &b);
    if (k) pack_rows(a, q[me], b, k, send + sd[p]);
  }
  int64_t ncols = a->ncols;
  rrt_csr_free(a); /* the packed copy is all that is needed now */
  if ((st = rrt_host_alltoallv_alloc(ctx, send, sb, sd, (void **)&recv, rb))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  free(send), send = NULL;
  /* Rows arrive by source rank, which is row order: lengths first. */
  size_t at = 0;
  int64_t i = 0, nz = 0;
  out->rowptr[0] = 0;
  for (int s = 0; s < P; s++) {
    int64_t k = overlap(q, s, off, me, &b), snz = 0;
    for (int64_t r = 0; r < k; r++, i++)
      snz += ((int64_t *)(recv + at))[r],
          out->rowptr[i + 1] = out->rowptr[i] + ((int64_t *)(recv + at))[r];
    at += rb[s], nz += snz;
  }
  out->nrows = m, out->ncols = ncols, out->nnz = nz;
  out->col = malloc(((size_t)nz + 1) * sizeof(int64_t));
  out->val = malloc(((size_t)nz + 1) * sizeof(double));
  st = out->col && out->val ? RRT_SUCCESS
                            : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  at = 0, i = 0;
  for (int s = 0; s < P; s++) {
    int64_t k = overlap(q, s, off, me, &b);
    int64_t snz = out->rowptr[i + k] - out->rowptr[i];
    memcpy(out->col + out->rowptr[i], recv + at + 8 * k, (size_t)snz * 8);
    memcpy(out->val + out->rowptr[i], recv + at + 8 * (k + snz), (size_t)snz * 8);
    at += rb[s], i += k;
  }
done:
  free(sb), free(send), free(recv);
  if (st) rrt_csr_free(out);
  return st;
}

/* Steps 3 and 4: this rank's provisional rows [q[me], q[me+1]) built. */
static rrt_status provisional_rows(rrt_ctx_t ctx, const rrt_mm_shape *sh,
                                   rrt_mm_pattern_values pattern, rrt_mm_entries *t, int64_t *q,
                                   rrt_csr *a, char *err, size_t errlen) {
  int me = rrt_ctx_rank(ctx);
  rrt_mm_entry *e = NULL;
  int64_t ne = 0;
  RRT_CHECK(provisional_blocks(ctx, sh->nrows, t, q, err, errlen));
  RRT_CHECK(send_entries(ctx, q, t, &e, &ne, err, errlen));
  rrt_status st = rrt_csr_from_entries(q[me], q[me + 1] - q[me], sh->ncols, ne, e, a);
  free(e);
  if (!st && sh->field == RRT_MM_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN)
    st = rrt_mm_laplacian_rows(q[me], a);
  if (st) rrt_errbuf(err, errlen, st, "out of memory");
  return rrt_mm_agree(ctx, st, err, errlen);
}

rrt_status rrt_mm_read_rows(rrt_ctx_t ctx, const char *path, rrt_mm_pattern_values pattern,
                            int64_t *row_begin, rrt_csr *rows, int64_t *offsets, rrt_mm_info *info,
                            char *err, size_t errlen) {
  int P = rrt_ctx_size(ctx), me = rrt_ctx_rank(ctx);
  head_record h;
  rrt_mm_entries t = {0};
  rrt_csr a = {0};
  memset(rows, 0, sizeof *rows);
  int64_t *q = malloc(2 * ((size_t)P + 1) * sizeof(int64_t)), *off = q + P + 1;
  rrt_status st = q ? RRT_SUCCESS : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "out of memory");
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  if ((st = read_head(ctx, path, pattern, &h, err, errlen))) goto done;
  if ((st = rrt_mm_read_share(ctx, path, &h.sh, &h.lay, &t, err, errlen))) goto done;
  int64_t stored = 0;
  if ((st = rrt_host_allreduce_named(ctx, OP, &t.n, &stored, 1, RRT_DTYPE_I64, RRT_OP_SUM))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  if ((st = rrt_mm_check_empty_rows(path, h.sh.size_line, h.sh.nrows, stored, err, errlen)))
    goto done; /* the same verdict everywhere: it depends on agreed numbers only */
  if ((st = provisional_rows(ctx, &h.sh, pattern, &t, q, &a, err, errlen))) goto done;
  if ((st = final_blocks(ctx, h.sh.nrows, q[me], &a, off, err, errlen))) goto done;
  if ((st = move_rows(ctx, q, off, &a, rows, err, errlen))) goto done;
  *row_begin = off[me];
  if (offsets) memcpy(offsets, off, ((size_t)P + 1) * sizeof(int64_t));
  if (info) {
    snprintf(info->field, sizeof(info->field), "%s", rrt_mm_field_name(h.sh.field));
    snprintf(info->symmetry, sizeof(info->symmetry), "%s", rrt_mm_sym_name(h.sh.sym));
    info->nrows = h.sh.nrows;
    info->ncols = h.sh.ncols;
    info->entries = h.sh.nent;
  }
done:
  free(q), free(t.e);
  rrt_csr_free(&a);
  return st;
}

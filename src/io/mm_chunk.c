/* Each rank's share of the entry lines (see mm_chunk.h), and the one
 * verdict every rank reaches on the whole file from the shares' counts:
 * the first problem in file order, worded as the serial reader words it. */
#include "io/mm_chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/errbuf.h"
#include "comm/error.h"
#include "comm/host_coll.h"

#define OP "reading a Matrix Market file"

/* What a rank's share held, gathered on every rank. */
typedef struct share_stat {
  int64_t lines;     /* plain: lines of the share; gzip: number of the last line read */
  int64_t entries;   /* entry lines parsed before the end or the first bad line */
  int64_t bad;       /* BAD_* */
  int64_t bad_line;  /* the bad line (plain: its place in the share, 1-based) */
  int64_t nent_line; /* gzip: the line of entry line number nent + 1 (0-based nent), if seen */
} share_stat;

enum { BAD_NONE, BAD_ENTRY, BAD_NUL, BAD_IO };

rrt_status rrt_mm_coll_failed(rrt_ctx_t ctx, rrt_status st, char *err, size_t errlen) {
  snprintf(err, errlen, "%s", rrt_ctx_last_error(ctx));
  return st;
}

/* The status and message of `root` on every rank. */
typedef struct msg_record {
  int32_t st;
  char text[1024];
} msg_record;

static rrt_status bcast_msg(rrt_ctx_t ctx, int root, rrt_status st, char *err, size_t errlen) {
  msg_record m;
  memset(&m, 0, sizeof m);
  m.st = (int32_t)st;
  snprintf(m.text, sizeof m.text, "%s", err);
  rrt_status cs = rrt_host_bcast_named(ctx, OP, &m, sizeof m, root);
  if (cs) return rrt_mm_coll_failed(ctx, cs, err, errlen);
  snprintf(err, errlen, "%s", m.text);
  return (rrt_status)m.st;
}

rrt_status rrt_mm_agree(rrt_ctx_t ctx, rrt_status st, char *err, size_t errlen) {
  int64_t mine = st ? rrt_ctx_rank(ctx) : rrt_ctx_size(ctx), first = 0;
  rrt_status cs = rrt_host_allreduce_named(ctx, OP, &mine, &first, 1, RRT_DTYPE_I64, RRT_OP_MIN);
  if (cs) return rrt_mm_coll_failed(ctx, cs, err, errlen);
  if (first == rrt_ctx_size(ctx)) return RRT_SUCCESS;
  return bcast_msg(ctx, (int)first, st, err, errlen);
}

/* Parse one entry line and keep it: 0, or -1 with cs->bad set (and why). */
static int take_entry(const rrt_mm_lines *r, const rrt_mm_shape *sh, char *line, share_stat *cs,
                      rrt_mm_entries *out, char *why, size_t whylen) {
  int64_t i, j;
  double v;
  if (rrt_mm_parse_entry(sh, line, &i, &j, &v, why, whylen)) {
    cs->bad = BAD_ENTRY, cs->bad_line = r->line;
    return -1;
  }
  if (rrt_mm_entries_add(out, sh->sym, i, j, v)) {
    cs->bad = BAD_IO;
    snprintf(why, whylen, "%s: out of memory after %lld entries", r->path, (long long)out->n);
    return -1;
  }
  cs->entries++;
  return 0;
}
/* A plain file's share: the lines that start in [lo, hi). Line numbers
 * count from the share's start. */
static void parse_plain(rrt_mm_lines *r, const rrt_mm_shape *sh, int64_t hi, share_stat *cs,
                        rrt_mm_entries *out, char *why, size_t whylen) {
  while (rrt_lines_offset(r->lr) < hi) {
    int got = rrt_mm_next_line(r, why, whylen);
    if (got == 0) break;
    if (got < 0) {
      cs->bad = got == -2 ? BAD_NUL : BAD_IO, cs->bad_line = r->line;
      return;
    }
    if (!rrt_mm_is_data(r->cur)) continue;
    if (take_entry(r, sh, r->cur, cs, out, why, whylen)) return;
  }
  cs->lines = r->line;
}

/* A gzip stream's share: entry lines number [lo, hi) (hi = INT64_MAX on
 * the last rank, which reads to the end); the lines before are counted,
 * not parsed. A line that is not an entry belongs to the rank of the next
 * entry line. r->line is the number of the last line read. */
static void parse_gzip(rrt_mm_lines *r, const rrt_mm_shape *sh, int64_t lo, int64_t hi,
                       share_stat *cs, rrt_mm_entries *out, char *why, size_t whylen) {
  for (int64_t k = 0; k < hi;) {
    char *line;
    size_t len;
    int got = rrt_lines_next(r->lr, &line, &len, why, whylen);
    if (got == 0) break;
    if (got < 0) {
      cs->bad = BAD_IO;
      return;
    }
    r->line++;
    if (k >= lo && strlen(line) != len) {
      cs->bad = BAD_NUL, cs->bad_line = r->line;
      return;
    }
    if (!rrt_mm_is_data(line)) continue;
    if (k == sh->nent) cs->nent_line = r->line;
    if (k++ < lo) continue;
    if (take_entry(r, sh, line, cs, out, why, whylen)) return;
  }
  cs->lines = r->line;
}

/* Rank q's byte range of a plain file's entry lines. */
static void byte_share(const rrt_mm_layout *lay, int q, int P, int64_t *lo, int64_t *hi) {
  __int128 s = lay->file_size > lay->data_off ? lay->file_size - lay->data_off : 0;
  *lo = lay->data_off + (int64_t)(s * q / P);
  *hi = lay->data_off + (int64_t)(s * (q + 1) / P);
}

/* This rank's share parsed into out and cs; `why` holds the reason of a
 * bad line (without "FILE:LINE: ") or the whole message of an I/O error. */
static rrt_status parse_share(rrt_ctx_t ctx, const char *path, const rrt_mm_shape *sh,
                              const rrt_mm_layout *lay, share_stat *cs, rrt_mm_entries *out,
                              char *why, size_t whylen) {
  int P = rrt_ctx_size(ctx), me = rrt_ctx_rank(ctx);
  rrt_mm_lines r = {.path = path};
  rrt_status st = rrt_lines_open(path, &r.lr, why, whylen);
  if (!st && rrt_lines_gzip(r.lr) != lay->gzip)
    st = rrt_errbuf(why, whylen, RRT_ERR_IO, "%s: the file changed while it was read", path);
  if (!st && lay->gzip) {
    char *line;
    size_t len;
    for (; r.line < sh->size_line && rrt_lines_next(r.lr, &line, &len, why, whylen) > 0;)
      r.line++;
    if (r.line < sh->size_line)
      st = rrt_errbuf(why, whylen, RRT_ERR_IO, "%s: the file changed while it was read", path);
    int64_t lo = (int64_t)((__int128)sh->nent * me / P);
    int64_t hi = me == P - 1 ? INT64_MAX : (int64_t)((__int128)sh->nent * (me + 1) / P);
    if (!st) parse_gzip(&r, sh, lo, hi, cs, out, why, whylen);
  } else if (!st) {
    int64_t lo, hi;
    byte_share(lay, me, P, &lo, &hi);
    st = rrt_lines_seek(r.lr, lo, why, whylen);
    if (!st) parse_plain(&r, sh, hi, cs, out, why, whylen);
  }
  rrt_lines_close(r.lr);
  return st;
}

/* Place (1-based, in the share) of the idx-th (0-based) entry line of rank
 * q's share of a plain file: where "more entries" points. 0 on an error. */
static int64_t entry_line_in_share(const char *path, const rrt_mm_layout *lay, int q, int P,
                                   int64_t idx, char *err, size_t errlen) {
  int64_t lo, hi, line = 0, found = 0;
  byte_share(lay, q, P, &lo, &hi);
  rrt_lines *lr = NULL;
  if (rrt_lines_open(path, &lr, err, errlen) || rrt_lines_seek(lr, lo, err, errlen)) {
    rrt_lines_close(lr);
    return 0;
  }
  char *s;
  size_t len;
  while (!found && rrt_lines_offset(lr) < hi && rrt_lines_next(lr, &s, &len, err, errlen) > 0)
    if (line++, rrt_mm_is_data(s) && idx-- == 0) found = line;
  rrt_lines_close(lr);
  return found;
}

/* The verdict on the whole file from every share's counts. */
typedef struct verdict {
  int root;     /* the rank that words the message */
  int kind;     /* V_* */
  int64_t line; /* the line it names (V_ENTRY, V_NUL, V_TRUNC; V_MORE for gzip) */
  int64_t idx;  /* V_MORE on a plain file: the entry line's place among the root's */
} verdict;

enum { V_OK, V_ENTRY, V_NUL, V_IO, V_MORE, V_TRUNC };

/* Where entry line number nent + 1 is (the first one too many). */
static void find_extra(const share_stat *s, int P, const rrt_mm_shape *sh, int gzip, verdict *v) {
  v->kind = V_MORE;
  if (gzip) { /* only the last rank reads past the declared entries */
    v->root = P - 1, v->line = s[P - 1].nent_line;
    return;
  }
  int64_t e = 0, base = sh->size_line;
  for (int q = 0; q < P; q++) {
    if (sh->nent < e + s[q].entries) {
      v->root = q, v->idx = sh->nent - e;
      return;
    }
    if (s[q].bad) { /* the bad line itself is the entry too many */
      v->root = q, v->idx = -1, v->line = base + s[q].bad_line;
      return;
    }
    e += s[q].entries, base += s[q].lines;
  }
}

static verdict judge(const share_stat *s, int P, const rrt_mm_shape *sh, int gzip) {
  verdict v = {0};
  int64_t e = 0, base = gzip ? 0 : sh->size_line;
  for (int q = 0; q < P; q++) {
    if (s[q].bad) {
      int64_t g = e + s[q].entries; /* the bad line's entry number, if it is one */
      if (s[q].bad == BAD_IO) {
        v.root = q, v.kind = V_IO;
      } else if ((s[q].bad == BAD_ENTRY && g >= sh->nent) ||
                 (s[q].bad == BAD_NUL && g > sh->nent)) {
        find_extra(s, P, sh, gzip, &v);
      } else {
        v.root = q, v.kind = s[q].bad == BAD_ENTRY ? V_ENTRY : V_NUL, v.line = base + s[q].bad_line;
      }
      return v;
    }
    e += s[q].entries;
    if (!gzip) base += s[q].lines;
  }
  if (e > sh->nent) {
    find_extra(s, P, sh, gzip, &v);
  } else if (e < sh->nent) {
    v.root = P - 1, v.kind = V_TRUNC, v.line = (gzip ? s[P - 1].lines : base) + 1, v.idx = e;
  }
  return v;
}

/* The verdict's message, worded on its root (`why` from parse_share). */
static rrt_status word(const verdict *v, const char *path, const rrt_mm_shape *sh,
                       const rrt_mm_layout *lay, int P, const char *why, char *err, size_t errlen) {
  long long sl = (long long)sh->size_line, ne = (long long)sh->nent;
  switch (v->kind) {
  case V_IO: return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s", why);
  case V_ENTRY:
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: %s", path, (long long)v->line, why);
  case V_NUL:
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: " RRT_MM_NUL_WHY, path,
                      (long long)v->line);
  case V_TRUNC:
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: truncated file: the size line (line %lld) declares %lld entries, "
                      "found %lld",
                      path, (long long)v->line, sl, ne, (long long)v->idx);
  default: { /* V_MORE */
    int64_t line = v->line;
    if (!lay->gzip && v->idx >= 0) {
      int64_t at = entry_line_in_share(path, lay, v->root, P, v->idx, err, errlen);
      if (!at) return RRT_ERR_IO;
      line = v->line + at;
    }
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: more entries than the %lld declared on the size line (line %lld)",
                      path, (long long)line, ne, sl);
  }
  }
}

rrt_status rrt_mm_read_share(rrt_ctx_t ctx, const char *path, const rrt_mm_shape *sh,
                             const rrt_mm_layout *lay, rrt_mm_entries *out, char *err,
                             size_t errlen) {
  int P = rrt_ctx_size(ctx), me = rrt_ctx_rank(ctx);
  char why[1024] = "";
  share_stat mine = {0};
  rrt_status st = parse_share(ctx, path, sh, lay, &mine, out, why, sizeof why);
  snprintf(err, errlen, "%s", why);
  RRT_CHECK(rrt_mm_agree(ctx, st, err, errlen));
  share_stat *all = malloc((size_t)P * sizeof(share_stat));
  size_t *lay_b = malloc(2 * (size_t)P * sizeof(size_t));
  st = (all && lay_b) ? RRT_SUCCESS
                      : rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  if ((st = rrt_mm_agree(ctx, st, err, errlen))) goto done;
  for (int q = 0; q < P; q++)
    lay_b[q] = sizeof(share_stat), lay_b[P + q] = (size_t)q * sizeof(share_stat);
  if ((st = rrt_host_allgatherv_named(ctx, OP, &mine, sizeof mine, all, lay_b, lay_b + P))) {
    st = rrt_mm_coll_failed(ctx, st, err, errlen);
    goto done;
  }
  verdict v = judge(all, P, sh, lay->gzip);
  if (v.kind == V_OK) goto done;
  /* Only the root knows the reason (or can find the line); it words the
   * message for everyone. Adding the base of a plain file's share: v.line
   * of V_MORE is the line before the root's share there. */
  if (v.kind == V_MORE && !lay->gzip && v.idx >= 0) {
    v.line = sh->size_line;
    for (int q = 0; q < v.root; q++)
      v.line += all[q].lines;
  }
  st = me == v.root ? word(&v, path, sh, lay, P, why, err, errlen) : RRT_ERR_IO;
  st = bcast_msg(ctx, v.root, st, err, errlen);
done:
  free(all);
  free(lay_b);
  return st;
}

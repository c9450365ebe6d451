/* Matrix Market reader (serial: the whole file in one process) and
 * writer. The parsing itself is io/mm_parse.c, shared with the per-rank
 * reader (io/mm_rows.c). */
#include "io/mmio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/outfile.h"
#include "comm/errbuf.h"
#include "io/limits.h"
#include "io/mm_parse.h"

rrt_status rrt_csr_from_triplets(int64_t nrows, int64_t ncols, int64_t count, const int64_t *rows,
                                 const int64_t *cols, const double *vals, rrt_csr *out) {
  memset(out, 0, sizeof(*out));
  rrt_mm_entry *e = malloc((size_t)(count ? count : 1) * sizeof(*e));
  if (!e) return RRT_ERR_OUT_OF_MEMORY;
  for (int64_t t = 0; t < count; t++)
    e[t] = (rrt_mm_entry){rows[t], cols[t], vals[t]};
  rrt_status st = rrt_csr_from_entries(0, nrows, ncols, count, e, out);
  free(e);
  return st;
}

/* Check that `count` items of `each` bytes (what a size line asks for) can be
 * held in memory; 0 if so. */
static rrt_status check_claim(const char *path, int64_t line, const char *what, int64_t count,
                              size_t each, char *err, size_t errlen) {
  if (count >= 0 && rrt_io_claim_fits((uint64_t)count, each)) return RRT_SUCCESS;
  uint64_t need = count < 0 ? UINT64_MAX : rrt_io_bytes_of((uint64_t)count, each);
  return rrt_errbuf(err, errlen, RRT_ERR_IO,
                    "%s:%lld: the size line declares %lld %s: that needs %llu bytes, more than "
                    "this machine's memory (%llu bytes)",
                    path, (long long)line, (long long)count, what, (unsigned long long)need,
                    (unsigned long long)rrt_io_memory_bytes());
}

static rrt_status open_lines(const char *path, rrt_mm_lines *r, char *err, size_t errlen) {
  memset(r, 0, sizeof(*r));
  r->path = path;
  return rrt_lines_open(path, &r->lr, err, errlen);
}

/* One entry line: the next data line parsed, every error naming its line. */
static rrt_status next_entry(rrt_mm_lines *r, const rrt_mm_shape *sh, int64_t t, int64_t *i,
                             int64_t *j, double *v, char *err, size_t errlen) {
  int got = rrt_mm_next_data_line(r, err, errlen);
  if (got < 0) return RRT_ERR_IO;
  if (got == 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: truncated file: the size line (line %lld) declares %lld entries, "
                      "found %lld",
                      r->path, (long long)r->line + 1, (long long)sh->size_line,
                      (long long)sh->nent, (long long)t);
  char why[400];
  if (rrt_mm_parse_entry(sh, r->cur, i, j, v, why, sizeof why))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: %s", r->path, (long long)r->line, why);
  return RRT_SUCCESS;
}

/* Every entry line (mirrored for symmetric files), then the check that no
 * entry follows the declared ones. */
static rrt_status read_entries(rrt_mm_lines *r, const rrt_mm_shape *sh, rrt_mm_entries *t,
                               char *err, size_t errlen) {
  for (int64_t e = 0; e < sh->nent; e++) {
    int64_t i = 0, j = 0;
    double v = 0.0;
    RRT_CHECK(next_entry(r, sh, e, &i, &j, &v, err, errlen));
    if (rrt_mm_entries_add(t, sh->sym, i, j, v))
      return rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY,
                        "%s:%lld: out of memory after %lld entries", r->path, (long long)r->line,
                        (long long)t->n);
  }
  int got = rrt_mm_next_data_line(r, err, errlen);
  if (got < 0) return RRT_ERR_IO;
  if (got)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: more entries than the %lld declared on the size line (line %lld)",
                      r->path, (long long)r->line, (long long)sh->nent, (long long)sh->size_line);
  return RRT_SUCCESS;
}

rrt_status rrt_mm_read(const char *path, rrt_mm_pattern_values pattern, rrt_csr *out,
                       rrt_mm_info *info, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  rrt_mm_lines r;
  rrt_mm_entries t = {0};
  rrt_mm_shape sh = {0};
  rrt_status st = open_lines(path, &r, err, errlen);
  if (st) return st;
  if ((st = rrt_mm_read_head(&r, pattern, &sh, err, errlen))) goto done;
  if ((st = read_entries(&r, &sh, &t, err, errlen))) goto done;
  if ((st = rrt_mm_check_empty_rows(path, sh.size_line, sh.nrows, t.n, err, errlen)) ||
      (st =
           check_claim(path, sh.size_line, "rows", sh.nrows + 1, 2 * sizeof(int64_t), err, errlen)))
    goto done;
  if ((st = rrt_csr_from_entries(0, sh.nrows, sh.ncols, t.n, t.e, out))) {
    rrt_errbuf(err, errlen, st, "%s: out of memory", path);
    goto done;
  }
  if (sh.field == RRT_MM_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN &&
      (st = rrt_mm_laplacian_rows(0, out))) {
    rrt_errbuf(err, errlen, st, "%s: out of memory", path);
    goto done;
  }
  if (info) {
    snprintf(info->field, sizeof(info->field), "%s", rrt_mm_field_name(sh.field));
    snprintf(info->symmetry, sizeof(info->symmetry), "%s", rrt_mm_sym_name(sh.sym));
    info->nrows = sh.nrows;
    info->ncols = sh.ncols;
    info->entries = sh.nent;
  }
done:
  rrt_lines_close(r.lr);
  free(t.e);
  if (st) rrt_csr_free(out);
  return st;
}

/* One value line of a vector: "v" (array) or "i 1 v" (coordinate). */
static rrt_status parse_vector_entry(rrt_mm_lines *r, int coordinate, int64_t len, int64_t nent,
                                     int64_t *i, double *val, char *err, size_t errlen) {
  const char *path = r->path;
  int got = rrt_mm_next_data_line(r, err, errlen);
  if (got < 0) return RRT_ERR_IO;
  if (got == 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: truncated file: expected %lld values",
                      path, (long long)r->line + 1, (long long)nent);
  char *f[4];
  int nf = rrt_mm_split(r->cur, f, 4);
  int64_t j = 1;
  const char *vs = coordinate ? (nf == 3 ? f[2] : NULL) : (nf == 1 ? f[0] : NULL);
  long long ln = (long long)r->line;
  if (!vs)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: expected %d field(s), found %d", path, ln,
                      coordinate ? 3 : 1, nf < 0 ? 4 : nf);
  if (coordinate &&
      (rrt_mm_parse_i64(f[0], i) || rrt_mm_parse_i64(f[1], &j) || *i < 1 || *i > len || j != 1))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: bad or out-of-range index '%.64s %.64s'",
                      path, ln, f[0], f[1]);
  int bad = rrt_mm_parse_value(vs, val);
  if (bad)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: value '%.64s' %s", path, ln, vs,
                      rrt_mm_value_why(bad));
  return RRT_SUCCESS;
}

rrt_status rrt_mm_read_vector(const char *path, double **x, int64_t *n, char *err, size_t errlen) {
  *x = NULL;
  *n = 0;
  rrt_mm_lines r;
  rrt_mm_entries tv = {0};
  double *v = NULL;
  rrt_status st = open_lines(path, &r, err, errlen);
  if (st) return st;
  int coordinate;
  rrt_mm_field field;
  rrt_mm_sym sym;
  if ((st = rrt_mm_parse_header(&r, &coordinate, &field, &sym, err, errlen))) goto done;
  if (field == RRT_MM_PATTERN || sym != RRT_MM_GENERAL) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: a vector must be real/integer general", path,
                    (long long)r.line);
    goto done;
  }
  int64_t sz[3];
  if ((st = rrt_mm_parse_size(&r, coordinate ? 3 : 2, sz, err, errlen))) goto done;
  if (sz[1] != 1) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: a vector has one column, found %lld", path,
                    (long long)r.line, (long long)sz[1]);
    goto done;
  }
  int64_t len = sz[0], nent = coordinate ? sz[2] : sz[0];
  int64_t size_line = r.line;
  if (coordinate && nent > len) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: %lld entries cannot fit a vector of %lld",
                    path, (long long)r.line, (long long)nent, (long long)len);
    goto done;
  }
  /* Values are collected first and the dense vector is allocated once the
   * file has shown them, so the size line alone claims no memory. */
  for (int64_t t = 0; t < nent; t++) {
    int64_t i = t + 1;
    double val = 0.0;
    if ((st = parse_vector_entry(&r, coordinate, len, nent, &i, &val, err, errlen))) goto done;
    if (rrt_mm_entries_reserve(&tv, tv.n + 1)) {
      st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s:%lld: out of memory", path,
                      (long long)r.line);
      goto done;
    }
    tv.e[tv.n++] = (rrt_mm_entry){i - 1, 0, val};
  }
  int got = rrt_mm_next_data_line(&r, err, errlen);
  if (got) {
    st = got < 0 ? RRT_ERR_IO
                 : rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: more values than declared", path,
                              (long long)r.line);
    goto done;
  }
  if ((st = rrt_mm_check_empty_rows(path, size_line, len, tv.n, err, errlen)) ||
      (st = check_claim(path, size_line, "values", len + 1, sizeof(double), err, errlen)))
    goto done;
  v = calloc((size_t)len + 1, sizeof(double));
  if (!v) {
    st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (int64_t t = 0; t < tv.n; t++)
    v[tv.e[t].row] += tv.e[t].val;
  *x = v;
  *n = len;
  v = NULL;
done:
  rrt_lines_close(r.lr);
  free(tv.e);
  free(v);
  return st;
}

rrt_status rrt_mm_write(const char *path, const rrt_csr *a, const char *comment, char *err,
                        size_t errlen) {
  rrt_outfile out;
  if (rrt_outfile_open(&out, path, err, errlen) != RRT_SUCCESS) return RRT_ERR_IO;
  FILE *f = out.f;
  fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
  if (comment) fprintf(f, "%% %s\n", comment);
  fprintf(f, "%lld %lld %lld\n", (long long)a->nrows, (long long)a->ncols, (long long)a->nnz);
  /* a full disk fails every later write: stop at the first */
  for (int64_t i = 0; i < a->nrows && !ferror(f); i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      fprintf(f, "%lld %lld %.17g\n", (long long)i + 1, (long long)a->col[p] + 1, a->val[p]);
  return rrt_outfile_commit(&out, err, errlen);
}

/* Matrix Market parsing shared by the serial and the per-rank reader. The
 * reader is strict: every deviation from the format is an error naming the
 * file and line, because a silently misread matrix gives a wrong
 * preconditioner that nobody notices. */
#include "io/mm_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/errbuf.h"
#include "io/limits.h"

int rrt_mm_next_line(rrt_mm_lines *r, char *err, size_t errlen) {
  size_t len = 0;
  int got = rrt_lines_next(r->lr, &r->cur, &len, err, errlen);
  if (got <= 0) return got;
  r->line++;
  if (strlen(r->cur) != len) {
    rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: " RRT_MM_NUL_WHY, r->path, (long long)r->line);
    return -2;
  }
  return 1;
}

int rrt_mm_is_data(const char *s) {
  if (s[0] == '%') return 0;
  while (*s && isspace((unsigned char)*s))
    s++;
  return *s != 0;
}

int rrt_mm_next_data_line(rrt_mm_lines *r, char *err, size_t errlen) {
  for (;;) {
    int got = rrt_mm_next_line(r, err, errlen);
    if (got <= 0 || rrt_mm_is_data(r->cur)) return got;
  }
}

/* Whitespace-separated fields: at most `max`; returns count, -1 on overflow. */
int rrt_mm_split(char *s, char **fields, int max) {
  int n = 0;
  for (;;) {
    while (*s && isspace((unsigned char)*s))
      s++;
    if (!*s) return n;
    if (n == max) return -1;
    fields[n++] = s;
    while (*s && !isspace((unsigned char)*s))
      s++;
    if (*s) *s++ = 0;
  }
}

int rrt_mm_parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return -1;
  *out = (int64_t)v;
  return 0;
}

int rrt_mm_parse_value(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || (errno == ERANGE && v != 0.0)) return -1;
  if (!isfinite(v)) return -2;
  *out = v;
  return 0;
}

const char *rrt_mm_value_why(int bad) {
  return bad == -2 ? "is not finite (NaN and Inf are refused)" : "is not a number";
}

const char *rrt_mm_field_name(rrt_mm_field f) {
  return f == RRT_MM_REAL ? "real" : f == RRT_MM_INTEGER ? "integer" : "pattern";
}
const char *rrt_mm_sym_name(rrt_mm_sym s) {
  return s == RRT_MM_GENERAL ? "general" : s == RRT_MM_SYMMETRIC ? "symmetric" : "skew-symmetric";
}

static rrt_status line_error(rrt_mm_lines *r, int got, const char *what, char *err, size_t errlen) {
  if (got < 0) return RRT_ERR_IO; /* err already names the file and line */
  return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: %s", r->path, (long long)r->line + 1, what);
}

rrt_status rrt_mm_parse_header(rrt_mm_lines *r, int *coordinate, rrt_mm_field *field,
                               rrt_mm_sym *sym, char *err, size_t errlen) {
  int got = rrt_mm_next_line(r, err, errlen);
  if (got <= 0) return line_error(r, got, "empty file (no %%MatrixMarket header)", err, errlen);
  char *copy = strdup(r->cur), *f[6];
  if (!copy) return rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->path);
  int nf = rrt_mm_split(copy, f, 6);
  rrt_status st = RRT_SUCCESS;
  const char *p = r->path;
  long long ln = (long long)r->line;
  if (nf != 5 || strcasecmp(f[0], "%%MatrixMarket") != 0 || strcasecmp(f[1], "matrix") != 0) {
    char shown[201]; /* the line as printable text: a binary file gives '?'s */
    size_t k = 0;
    for (; r->cur[k] && k < sizeof shown - 1; k++)
      shown[k] = isprint((unsigned char)r->cur[k]) ? r->cur[k] : '?';
    shown[k] = 0;
    st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                    "%s:%lld: bad header '%s' (expected '%%%%MatrixMarket matrix coordinate "
                    "real|integer|pattern general|symmetric|skew-symmetric')",
                    p, ln, shown);
  } else if (!strcasecmp(f[2], "coordinate") || !strcasecmp(f[2], "array"))
    *coordinate = !strcasecmp(f[2], "coordinate");
  else
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: bad header: unknown format '%.64s'", p, ln,
                    f[2]);
  if (!st) {
    if (!strcasecmp(f[3], "real") || !strcasecmp(f[3], "double"))
      *field = RRT_MM_REAL;
    else if (!strcasecmp(f[3], "integer"))
      *field = RRT_MM_INTEGER;
    else if (!strcasecmp(f[3], "pattern"))
      *field = RRT_MM_PATTERN;
    else
      st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: bad header: unsupported field '%.64s' (real, integer, pattern)", p,
                      ln, f[3]);
  }
  if (!st) {
    if (!strcasecmp(f[4], "general"))
      *sym = RRT_MM_GENERAL;
    else if (!strcasecmp(f[4], "symmetric"))
      *sym = RRT_MM_SYMMETRIC;
    else if (!strcasecmp(f[4], "skew-symmetric"))
      *sym = RRT_MM_SKEW;
    else
      st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: bad header: unsupported symmetry '%.64s' (general, symmetric, "
                      "skew-symmetric)",
                      p, ln, f[4]);
  }
  free(copy);
  return st;
}

rrt_status rrt_mm_parse_size(rrt_mm_lines *r, int want, int64_t *v, char *err, size_t errlen) {
  int got = rrt_mm_next_data_line(r, err, errlen);
  if (got <= 0) return line_error(r, got, "truncated file: missing size line", err, errlen);
  char *f[4];
  int nf = rrt_mm_split(r->cur, f, 4);
  if (nf != want)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: size line needs %d integers, found %d",
                      r->path, (long long)r->line, want, nf < 0 ? 4 : nf);
  for (int k = 0; k < want; k++)
    if (rrt_mm_parse_i64(f[k], &v[k]) || v[k] < 0)
      return rrt_errbuf(err, errlen, RRT_ERR_IO,
                        "%s:%lld: size line: '%.64s' is not a non-negative integer", r->path,
                        (long long)r->line, f[k]);
  return RRT_SUCCESS;
}

/* The size line and the checks that need only it: squareness of symmetric
 * files, entries that fit the matrix. */
static rrt_status read_shape(rrt_mm_lines *r, rrt_mm_shape *sh, char *err, size_t errlen) {
  int64_t sz[3];
  rrt_status st = rrt_mm_parse_size(r, 3, sz, err, errlen);
  if (st) return st;
  sh->nrows = sz[0], sh->ncols = sz[1], sh->nent = sz[2];
  sh->size_line = r->line;
  long long ln = (long long)r->line;
  if (sh->sym != RRT_MM_GENERAL && sh->nrows != sh->ncols)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%lld: %s matrix must be square, got %lld x %lld",
                      r->path, ln, rrt_mm_sym_name(sh->sym), (long long)sh->nrows,
                      (long long)sh->ncols);
  if ((unsigned __int128)sh->nent > (unsigned __int128)sh->nrows * (unsigned __int128)sh->ncols)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: %lld entries cannot fit a %lld x %lld matrix", r->path, ln,
                      (long long)sh->nent, (long long)sh->nrows, (long long)sh->ncols);
  return RRT_SUCCESS;
}

rrt_status rrt_mm_read_head(rrt_mm_lines *r, rrt_mm_pattern_values pattern, rrt_mm_shape *sh,
                            char *err, size_t errlen) {
  int coordinate = 0;
  rrt_status st = rrt_mm_parse_header(r, &coordinate, &sh->field, &sh->sym, err, errlen);
  if (st) return st;
  if (!coordinate)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: 'array' format is a dense vector/matrix; a sparse matrix must be "
                      "'coordinate'",
                      r->path, (long long)r->line);
  if (sh->field == RRT_MM_PATTERN && pattern == RRT_MM_PATTERN_REFUSE)
    return rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                      "%s:%lld: pattern matrix has no values (ask for values, e.g. "
                      "--pattern-values laplacian)",
                      r->path, (long long)r->line);
  if ((st = read_shape(r, sh, err, errlen))) return st;
  if (sh->field == RRT_MM_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN && sh->nrows != sh->ncols)
    /* The Laplacian puts a value on every diagonal entry (i, i). */
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: pattern values 'laplacian' need a square matrix, got %lld x %lld",
                      r->path, (long long)sh->size_line, (long long)sh->nrows,
                      (long long)sh->ncols);
  return RRT_SUCCESS;
}

rrt_status rrt_mm_parse_entry(const rrt_mm_shape *sh, char *line, int64_t *i, int64_t *j, double *v,
                              char *why, size_t whylen) {
  char *f[4];
  int want = sh->field == RRT_MM_PATTERN ? 2 : 3, nf = rrt_mm_split(line, f, 4);
  if (nf != want)
    return rrt_errbuf(why, whylen, RRT_ERR_IO, "a %s entry needs %d fields, found %d",
                      rrt_mm_field_name(sh->field), want, nf < 0 ? 4 : nf);
  *v = 1.0;
  if (rrt_mm_parse_i64(f[0], i) || rrt_mm_parse_i64(f[1], j))
    return rrt_errbuf(why, whylen, RRT_ERR_IO, "index '%.64s %.64s' is not an integer", f[0], f[1]);
  if (*i < 1 || *i > sh->nrows || *j < 1 || *j > sh->ncols)
    return rrt_errbuf(why, whylen, RRT_ERR_IO,
                      "index (%lld, %lld) out of range for a %lld x %lld matrix (1-based)",
                      (long long)*i, (long long)*j, (long long)sh->nrows, (long long)sh->ncols);
  if (sh->field == RRT_MM_INTEGER) {
    int64_t iv;
    if (rrt_mm_parse_i64(f[2], &iv))
      return rrt_errbuf(why, whylen, RRT_ERR_IO, "value '%.64s' is not an integer", f[2]);
    *v = (double)iv;
  } else if (sh->field == RRT_MM_REAL) {
    int bad = rrt_mm_parse_value(f[2], v);
    if (bad)
      return rrt_errbuf(why, whylen, RRT_ERR_IO, "value '%.64s' %s", f[2], rrt_mm_value_why(bad));
  }
  if (sh->sym != RRT_MM_GENERAL && *j > *i)
    return rrt_errbuf(why, whylen, RRT_ERR_IO,
                      "entry (%lld, %lld) above the diagonal in a %s file (only the lower "
                      "triangle is stored)",
                      (long long)*i, (long long)*j, rrt_mm_sym_name(sh->sym));
  if (sh->sym == RRT_MM_SKEW && *i == *j)
    return rrt_errbuf(why, whylen, RRT_ERR_IO,
                      "diagonal entry (%lld, %lld) in a skew-symmetric file", (long long)*i,
                      (long long)*j);
  return RRT_SUCCESS;
}

/* Rows the file leaves empty still cost 16 bytes each in the CSR build. A
 * few are fine; a size line that declares far more rows than its entries
 * can touch (10^9 rows in a 60-byte file) is refused before that memory is
 * claimed. Checked after the entries are read, so a truncated file is
 * reported as such first. */
#define RRT_MM_FREE_EMPTY_ROWS ((int64_t)1 << 20)

rrt_status rrt_mm_check_empty_rows(const char *path, int64_t size_line, int64_t nrows,
                                   int64_t stored, char *err, size_t errlen) {
  if (nrows > RRT_MM_FREE_EMPTY_ROWS && nrows / 2 > stored)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%lld: the size line declares %lld rows but the file stores %lld entries: "
                      "more than half of the rows would be empty (refused above %lld rows)",
                      path, (long long)size_line, (long long)nrows, (long long)stored,
                      (long long)RRT_MM_FREE_EMPTY_ROWS);
  return RRT_SUCCESS;
}

/* Here, not in mmio.c, so that the CSR build (which frees what it
 * replaces) and the readers above it form no file loop. */
void rrt_csr_free(rrt_csr *a) {
  if (!a) return;
  free(a->rowptr);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof(*a));
}

int rrt_mm_entries_reserve(rrt_mm_entries *t, int64_t need) {
  if (need <= t->cap) return 0;
  int64_t cap = t->cap ? t->cap : 1024;
  while (cap < need)
    cap = cap > INT64_MAX / 2 ? need : 2 * cap;
  if (!rrt_io_claim_fits((uint64_t)cap, sizeof(rrt_mm_entry))) return -1;
  rrt_mm_entry *e = realloc(t->e, (size_t)cap * sizeof(rrt_mm_entry));
  if (!e) return -1;
  t->e = e, t->cap = cap;
  return 0;
}

int rrt_mm_entries_add(rrt_mm_entries *t, rrt_mm_sym sym, int64_t i, int64_t j, double v) {
  if (rrt_mm_entries_reserve(t, t->n + 2)) return -1;
  t->e[t->n++] = (rrt_mm_entry){i - 1, j - 1, v};
  if (sym != RRT_MM_GENERAL && i != j)
    t->e[t->n++] = (rrt_mm_entry){j - 1, i - 1, sym == RRT_MM_SKEW ? -v : v};
  return 0;
}

rrt_status rrt_csr_from_entries(int64_t row0, int64_t nrows, int64_t ncols, int64_t count,
                                const rrt_mm_entry *e, rrt_csr *out) {
  memset(out, 0, sizeof(*out));
  int64_t *ptr = calloc((size_t)nrows + 1, sizeof(int64_t));
  int64_t *fill = malloc(((size_t)nrows + 1) * sizeof(int64_t));
  int64_t *c = malloc((size_t)(count ? count : 1) * sizeof(int64_t));
  double *v = malloc((size_t)(count ? count : 1) * sizeof(double));
  if (!ptr || !fill || !c || !v) {
    free(ptr), free(fill), free(c), free(v);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t t = 0; t < count; t++)
    ptr[e[t].row - row0 + 1]++;
  for (int64_t i = 0; i < nrows; i++)
    ptr[i + 1] += ptr[i];
  memcpy(fill, ptr, ((size_t)nrows + 1) * sizeof(int64_t));
  /* Stable bucket by row keeps the file order of duplicates, so their sum is
   * taken in file order (deterministic). */
  for (int64_t t = 0; t < count; t++) {
    int64_t p = fill[e[t].row - row0]++;
    c[p] = e[t].col;
    v[p] = e[t].val;
  }
  free(fill);
  /* Sort each row by column (insertion sort: rows are short), stable. */
  int64_t w = 0;
  for (int64_t i = 0; i < nrows; i++) {
    int64_t b = ptr[i], end = ptr[i + 1];
    for (int64_t p = b + 1; p < end; p++) {
      int64_t cc = c[p];
      double vv = v[p];
      int64_t q = p;
      while (q > b && c[q - 1] > cc) {
        c[q] = c[q - 1];
        v[q] = v[q - 1];
        q--;
      }
      c[q] = cc;
      v[q] = vv;
    }
    ptr[i] = w;
    for (int64_t p = b; p < end; p++) {
      if (w > ptr[i] && c[w - 1] == c[p]) {
        v[w - 1] += v[p];
      } else {
        c[w] = c[p];
        v[w] = v[p];
        w++;
      }
    }
  }
  ptr[nrows] = w;
  out->nrows = nrows;
  out->ncols = ncols;
  out->nnz = w;
  out->rowptr = ptr;
  out->col = c;
  out->val = v;
  return RRT_SUCCESS;
}

rrt_status rrt_mm_laplacian_rows(int64_t row0, rrt_csr *out) {
  rrt_csr a = *out;
  int64_t n = a.nrows;
  rrt_mm_entry *t = malloc(((size_t)a.nnz + (size_t)n + 1) * sizeof(*t));
  if (!t) return RRT_ERR_OUT_OF_MEMORY;
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0, g = row0 + i;
    for (int64_t p = a.rowptr[i]; p < a.rowptr[i + 1]; p++)
      if (a.col[p] != g) t[k++] = (rrt_mm_entry){g, a.col[p], -1.0}, off++;
    t[k++] = (rrt_mm_entry){g, g, (double)(off + 1)};
  }
  rrt_csr_free(out);
  rrt_status st = rrt_csr_from_entries(row0, n, a.ncols, k, t, out);
  free(t);
  return st;
}

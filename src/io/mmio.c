/* Matrix Market reader and writer. The reader is strict: every deviation
 * from the format is an error naming the file and line, because a silently
 * misread matrix gives a wrong preconditioner that nobody notices. */
#include "io/mmio.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/error.h"
#include "comm/outfile.h"
#include "comm/errbuf.h"
#include "io/limits.h"

void rrt_csr_free(rrt_csr *a) {
  if (!a) return;
  free(a->rowptr);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof(*a));
}

rrt_status rrt_csr_from_triplets(int64_t nrows, int64_t ncols, int64_t count, const int64_t *rows,
                                 const int64_t *cols, const double *vals, rrt_csr *out) {
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
    ptr[rows[t] + 1]++;
  for (int64_t i = 0; i < nrows; i++)
    ptr[i + 1] += ptr[i];
  memcpy(fill, ptr, ((size_t)nrows + 1) * sizeof(int64_t));
  /* Stable bucket by row keeps the file order of duplicates, so their sum is
   * taken in file order (deterministic). */
  for (int64_t t = 0; t < count; t++) {
    int64_t p = fill[rows[t]]++;
    c[p] = cols[t];
    v[p] = vals[t];
  }
  free(fill);
  /* Sort each row by column (insertion sort: rows are short), stable. */
  int64_t w = 0;
  for (int64_t i = 0; i < nrows; i++) {
    int64_t b = ptr[i], e = ptr[i + 1];
    for (int64_t p = b + 1; p < e; p++) {
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
    for (int64_t p = b; p < e; p++) {
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

/* ---- line reader ---------------------------------------------------------- */

typedef struct mm_reader {
  FILE *f;
  const char *path;
  long line;
  char buf[4096];
} mm_reader;

/* Next line into r->buf without the newline: 1 = got one, 0 = EOF, -1 = too long. */
static int next_line(mm_reader *r) {
  if (!fgets(r->buf, sizeof(r->buf), r->f)) return 0;
  r->line++;
  size_t len = strlen(r->buf);
  if (len && r->buf[len - 1] == '\n') {
    r->buf[--len] = 0;
    if (len && r->buf[len - 1] == '\r') r->buf[--len] = 0;
  } else if (!feof(r->f)) {
    return -1;
  }
  return 1;
}

/* Check that `count` items of `each` bytes (what a size line asks for) can be
 * held in memory; 0 if so. */
static rrt_status check_claim(mm_reader *r, long line, const char *what, int64_t count, size_t each,
                              char *err, size_t errlen) {
  if (count >= 0 && rrt_io_claim_fits((uint64_t)count, each)) return RRT_SUCCESS;
  uint64_t need = count < 0 ? UINT64_MAX : rrt_io_bytes_of((uint64_t)count, each);
  uint64_t have = rrt_io_memory_bytes();
  return rrt_errbuf(err, errlen, RRT_ERR_IO,
                    "%s:%ld: the size line declares %lld %s: that needs %llu bytes, more than this "
                    "machine's memory (%llu bytes)",
                    r->path, line, (long long)count, what, (unsigned long long)need,
                    (unsigned long long)have);
}

/* Room for one more triplet: capacity doubles as entries arrive, so the
 * memory follows the file's real content, not its size line. */
typedef struct mm_triplets {
  int64_t *row, *col;
  double *val;
  int64_t n, cap;
} mm_triplets;

static int triplets_reserve(mm_triplets *t, int64_t need) {
  if (need <= t->cap) return 0;
  int64_t cap = t->cap ? t->cap : 1024;
  while (cap < need)
    cap = cap > INT64_MAX / 2 ? need : 2 * cap;
  if (!rrt_io_claim_fits((uint64_t)cap, sizeof(int64_t))) return -1;
  int64_t *row = realloc(t->row, (size_t)cap * sizeof(int64_t));
  if (row) t->row = row;
  int64_t *col = realloc(t->col, (size_t)cap * sizeof(int64_t));
  if (col) t->col = col;
  double *val = realloc(t->val, (size_t)cap * sizeof(double));
  if (val) t->val = val;
  if (!row || !col || !val) return -1;
  t->cap = cap;
  return 0;
}

static void triplets_free(mm_triplets *t) {
  free(t->row);
  free(t->col);
  free(t->val);
}

static int blank(const char *s) {
  while (*s && isspace((unsigned char)*s))
    s++;
  return *s == 0;
}

/* Next data line: skips comments and blank lines. 1 / 0 (EOF) / -1 (too long). */
static int next_data_line(mm_reader *r) {
  for (;;) {
    int got = next_line(r);
    if (got <= 0) return got;
    if (r->buf[0] == '%' || blank(r->buf)) continue;
    return 1;
  }
}

/* Parse whitespace-separated fields: at most `max`; returns count, -1 on overflow. */
static int split(char *s, char **fields, int max) {
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

static int parse_i64(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end) return -1;
  *out = (int64_t)v;
  return 0;
}

static int parse_f64(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || (errno == ERANGE && v != 0.0)) return -1;
  *out = v;
  return 0;
}

typedef enum { F_REAL, F_INTEGER, F_PATTERN } mm_field;
typedef enum { S_GENERAL, S_SYMMETRIC, S_SKEW } mm_sym;

/* Header line: "%%MatrixMarket matrix coordinate|array FIELD SYMMETRY". */
static rrt_status parse_header(mm_reader *r, int *coordinate, mm_field *field, mm_sym *sym,
                               char *err, size_t errlen) {
  int got = next_line(r);
  if (got == 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:1: empty file (no %%%%MatrixMarket header)",
                      r->path);
  if (got < 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", r->path, r->line);
  char copy[sizeof(r->buf)];
  memcpy(copy, r->buf, sizeof(copy));
  char *f[6];
  int nf = split(copy, f, 6);
  if (nf != 5 || strcasecmp(f[0], "%%MatrixMarket") != 0 || strcasecmp(f[1], "matrix") != 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: bad header '%s' (expected '%%%%MatrixMarket matrix coordinate "
                      "real|integer|pattern general|symmetric|skew-symmetric')",
                      r->path, r->line, r->buf);
  if (!strcasecmp(f[2], "coordinate"))
    *coordinate = 1;
  else if (!strcasecmp(f[2], "array"))
    *coordinate = 0;
  else
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: bad header: unknown format '%s'", r->path,
                      r->line, f[2]);
  if (!strcasecmp(f[3], "real") || !strcasecmp(f[3], "double"))
    *field = F_REAL;
  else if (!strcasecmp(f[3], "integer"))
    *field = F_INTEGER;
  else if (!strcasecmp(f[3], "pattern"))
    *field = F_PATTERN;
  else
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: bad header: unsupported field '%s' (real, integer, pattern)",
                      r->path, r->line, f[3]);
  if (!strcasecmp(f[4], "general"))
    *sym = S_GENERAL;
  else if (!strcasecmp(f[4], "symmetric"))
    *sym = S_SYMMETRIC;
  else if (!strcasecmp(f[4], "skew-symmetric"))
    *sym = S_SKEW;
  else
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: bad header: unsupported symmetry '%s' (general, symmetric, "
                      "skew-symmetric)",
                      r->path, r->line, f[4]);
  return RRT_SUCCESS;
}

static const char *field_name(mm_field f) {
  return f == F_REAL ? "real" : f == F_INTEGER ? "integer" : "pattern";
}
static const char *sym_name(mm_sym s) {
  return s == S_GENERAL ? "general" : s == S_SYMMETRIC ? "symmetric" : "skew-symmetric";
}

/* Size line: `want` non-negative integers. */
static rrt_status parse_size(mm_reader *r, int want, int64_t *v, char *err, size_t errlen) {
  int got = next_data_line(r);
  if (got == 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: truncated file: missing size line", r->path,
                      r->line + 1);
  if (got < 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", r->path, r->line);
  char *f[4];
  int nf = split(r->buf, f, 4);
  if (nf != want)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: size line needs %d integers, found %d",
                      r->path, r->line, want, nf < 0 ? 4 : nf);
  for (int k = 0; k < want; k++)
    if (parse_i64(f[k], &v[k]) || v[k] < 0)
      return rrt_errbuf(err, errlen, RRT_ERR_IO,
                        "%s:%ld: size line: '%s' is not a non-negative integer", r->path, r->line,
                        f[k]);
  return RRT_SUCCESS;
}

/* What the header and size line of a coordinate file say. */
typedef struct mm_shape {
  mm_field field;
  mm_sym sym;
  int64_t nrows, ncols, nent;
  long size_line;
} mm_shape;

/* The size line and the checks that need only it: squareness of symmetric
 * files, entries that fit the matrix and the file, rows that fit memory. */
static rrt_status read_shape(mm_reader *r, mm_shape *sh, char *err, size_t errlen) {
  int64_t sz[3];
  RRT_CHECK(parse_size(r, 3, sz, err, errlen));
  sh->nrows = sz[0], sh->ncols = sz[1], sh->nent = sz[2];
  sh->size_line = r->line;
  if (sh->sym != S_GENERAL && sh->nrows != sh->ncols)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: %s matrix must be square, got %lld x %lld",
                      r->path, r->line, sym_name(sh->sym), (long long)sh->nrows,
                      (long long)sh->ncols);
  if ((unsigned __int128)sh->nent > (unsigned __int128)sh->nrows * (unsigned __int128)sh->ncols)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: %lld entries cannot fit a %lld x %lld matrix", r->path, r->line,
                      (long long)sh->nent, (long long)sh->nrows, (long long)sh->ncols);
  return RRT_SUCCESS;
}

/* Rows the file leaves empty still cost 16 bytes each in the CSR build. A
 * few are fine; a size line that declares far more rows than its entries
 * can touch (10^9 rows in a 60-byte file) is refused before that memory is
 * claimed. Checked after the entries are read, so a truncated file is
 * reported as such first. */
#define RRT_MM_FREE_EMPTY_ROWS ((int64_t)1 << 20)

static rrt_status check_empty_rows(mm_reader *r, long size_line, int64_t nrows, int64_t stored,
                                   char *err, size_t errlen) {
  if (nrows > RRT_MM_FREE_EMPTY_ROWS && nrows / 2 > stored)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: the size line declares %lld rows but the file stores %lld entries: "
                      "more than half of the rows would be empty (refused above %lld rows)",
                      r->path, size_line, (long long)nrows, (long long)stored,
                      (long long)RRT_MM_FREE_EMPTY_ROWS);
  return RRT_SUCCESS;
}

static rrt_status check_rows(mm_reader *r, const mm_shape *sh, int64_t stored, char *err,
                             size_t errlen) {
  RRT_CHECK(check_empty_rows(r, sh->size_line, sh->nrows, stored, err, errlen));
  return check_claim(r, sh->size_line, "rows", sh->nrows + 1, 2 * sizeof(int64_t), err, errlen);
}

/* One entry line into (i, j, v) with every check that names the line. */
static rrt_status parse_entry(mm_reader *r, const mm_shape *sh, int64_t t, int64_t *i, int64_t *j,
                              double *v, char *err, size_t errlen) {
  const char *path = r->path;
  int got = next_data_line(r);
  if (got == 0)
    return rrt_errbuf(
        err, errlen, RRT_ERR_IO,
        "%s:%ld: truncated file: the size line (line %ld) declares %lld entries, found "
        "%lld",
        path, r->line + 1, sh->size_line, (long long)sh->nent, (long long)t);
  if (got < 0) return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", path, r->line);
  char *f[4];
  int want = sh->field == F_PATTERN ? 2 : 3, nf = split(r->buf, f, 4);
  if (nf != want)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: a %s entry needs %d fields, found %d", path,
                      r->line, field_name(sh->field), want, nf < 0 ? 4 : nf);
  *v = 1.0;
  if (parse_i64(f[0], i) || parse_i64(f[1], j))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: index '%s %s' is not an integer", path,
                      r->line, f[0], f[1]);
  if (*i < 1 || *i > sh->nrows || *j < 1 || *j > sh->ncols)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: index (%lld, %lld) out of range for a %lld x %lld matrix (1-based)",
                      path, r->line, (long long)*i, (long long)*j, (long long)sh->nrows,
                      (long long)sh->ncols);
  if (sh->field == F_INTEGER) {
    int64_t iv;
    if (parse_i64(f[2], &iv))
      return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not an integer", path,
                        r->line, f[2]);
    *v = (double)iv;
  } else if (sh->field == F_REAL && parse_f64(f[2], v)) {
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not a number", path, r->line,
                      f[2]);
  }
  if (sh->sym != S_GENERAL && *j > *i)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: entry (%lld, %lld) above the diagonal in a %s file (only the lower "
                      "triangle is stored)",
                      path, r->line, (long long)*i, (long long)*j, sym_name(sh->sym));
  if (sh->sym == S_SKEW && *i == *j)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: diagonal entry (%lld, %lld) in a skew-symmetric file", path, r->line,
                      (long long)*i, (long long)*j);
  return RRT_SUCCESS;
}

/* Every entry line (mirrored for symmetric files), then the check that no
 * entry follows the declared ones. */
static rrt_status read_entries(mm_reader *r, const mm_shape *sh, mm_triplets *t, char *err,
                               size_t errlen) {
  for (int64_t e = 0; e < sh->nent; e++) {
    int64_t i = 0, j = 0;
    double v = 0.0;
    RRT_CHECK(parse_entry(r, sh, e, &i, &j, &v, err, errlen));
    if (triplets_reserve(t, t->n + 2))
      return rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY,
                        "%s:%ld: out of memory after %lld entries", r->path, r->line,
                        (long long)t->n);
    t->row[t->n] = i - 1, t->col[t->n] = j - 1, t->val[t->n] = v, t->n++;
    if (sh->sym != S_GENERAL && i != j)
      t->row[t->n] = j - 1, t->col[t->n] = i - 1, t->val[t->n] = sh->sym == S_SKEW ? -v : v, t->n++;
  }
  if (next_data_line(r) != 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: more entries than the %lld declared on the size line (line %ld)",
                      r->path, r->line, (long long)sh->nent, sh->size_line);
  return RRT_SUCCESS;
}

/* Shifted graph Laplacian of a pattern: -1 off the diagonal, off-diagonal
 * count + 1 on it (present or not in the file, the diagonal must exist: it
 * is added when missing). Replaces *out. */
static rrt_status laplacian_values(rrt_csr *out) {
  rrt_csr a = *out;
  int64_t n = a.nrows;
  mm_triplets t = {0};
  if (triplets_reserve(&t, a.nnz + n + 1)) {
    triplets_free(&t);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int64_t p = a.rowptr[i]; p < a.rowptr[i + 1]; p++)
      if (a.col[p] != i) t.row[t.n] = i, t.col[t.n] = a.col[p], t.val[t.n] = -1.0, t.n++, off++;
    t.row[t.n] = i, t.col[t.n] = i, t.val[t.n] = (double)(off + 1), t.n++;
  }
  rrt_csr_free(out);
  rrt_status st = rrt_csr_from_triplets(n, a.ncols, t.n, t.row, t.col, t.val, out);
  triplets_free(&t);
  return st;
}

static rrt_status open_reader(const char *path, mm_reader **out, char *err, size_t errlen) {
  mm_reader *r = calloc(1, sizeof(*r));
  *out = NULL;
  if (!r) return rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  r->path = path;
  r->f = fopen(path, "r");
  if (!r->f) {
    int e = errno;
    free(r);
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot open: %s", path, strerror(e));
  }
  *out = r;
  return RRT_SUCCESS;
}

static void close_reader(mm_reader *r) {
  if (!r) return;
  fclose(r->f);
  free(r);
}

rrt_status rrt_mm_read(const char *path, rrt_mm_pattern_values pattern, rrt_csr *out,
                       rrt_mm_info *info, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  mm_reader *r = NULL;
  mm_triplets t = {0};
  mm_shape sh = {0};
  int coordinate;
  rrt_status st = open_reader(path, &r, err, errlen);
  if (st) return st;
  if ((st = parse_header(r, &coordinate, &sh.field, &sh.sym, err, errlen))) goto done;
  if (!coordinate) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                    "%s:%ld: 'array' format is a dense vector/matrix; a sparse matrix must be "
                    "'coordinate'",
                    path, r->line);
    goto done;
  }
  if (sh.field == F_PATTERN && pattern == RRT_MM_PATTERN_REFUSE) {
    st = rrt_errbuf(err, errlen, RRT_ERR_INVALID_ARG,
                    "%s:%ld: pattern matrix has no values (ask for values, e.g. --pattern-values "
                    "laplacian)",
                    path, r->line);
    goto done;
  }
  if ((st = read_shape(r, &sh, err, errlen))) goto done;
  if (sh.field == F_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN && sh.nrows != sh.ncols) {
    /* The Laplacian puts a value on every diagonal entry (i, i). */
    st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                    "%s:%ld: pattern values 'laplacian' need a square matrix, got %lld x %lld",
                    path, sh.size_line, (long long)sh.nrows, (long long)sh.ncols);
    goto done;
  }
  if ((st = read_entries(r, &sh, &t, err, errlen))) goto done;
  if ((st = check_rows(r, &sh, t.n, err, errlen))) goto done;
  if ((st = rrt_csr_from_triplets(sh.nrows, sh.ncols, t.n, t.row, t.col, t.val, out))) {
    rrt_errbuf(err, errlen, st, "%s: out of memory", path);
    goto done;
  }
  if (sh.field == F_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN &&
      (st = laplacian_values(out))) {
    rrt_errbuf(err, errlen, st, "%s: out of memory", path);
    goto done;
  }
  if (info) {
    snprintf(info->field, sizeof(info->field), "%s", field_name(sh.field));
    snprintf(info->symmetry, sizeof(info->symmetry), "%s", sym_name(sh.sym));
    info->nrows = sh.nrows;
    info->ncols = sh.ncols;
    info->entries = sh.nent;
  }
done:
  close_reader(r);
  triplets_free(&t);
  if (st) rrt_csr_free(out);
  return st;
}

/* One value line of a vector: "v" (array) or "i 1 v" (coordinate). */
static rrt_status parse_vector_entry(mm_reader *r, int coordinate, int64_t len, int64_t nent,
                                     int64_t *i, double *val, char *err, size_t errlen) {
  const char *path = r->path;
  int got = next_data_line(r);
  if (got <= 0)
    return rrt_errbuf(err, errlen, RRT_ERR_IO,
                      got ? "%s:%ld: line too long"
                          : "%s:%ld: truncated file: expected %lld values",
                      path, got ? r->line : r->line + 1, (long long)nent);
  char *f[4];
  int nf = split(r->buf, f, 4);
  int64_t j = 1;
  const char *vs = coordinate ? (nf == 3 ? f[2] : NULL) : (nf == 1 ? f[0] : NULL);
  if (!vs)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: expected %d field(s), found %d", path,
                      r->line, coordinate ? 3 : 1, nf < 0 ? 4 : nf);
  if (coordinate && (parse_i64(f[0], i) || parse_i64(f[1], &j) || *i < 1 || *i > len || j != 1))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: bad or out-of-range index '%s %s'", path,
                      r->line, f[0], f[1]);
  if (parse_f64(vs, val))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not a number", path, r->line,
                      vs);
  return RRT_SUCCESS;
}

rrt_status rrt_mm_read_vector(const char *path, double **x, int64_t *n, char *err, size_t errlen) {
  *x = NULL;
  *n = 0;
  mm_reader *r = NULL;
  mm_triplets tv = {0};
  double *v = NULL;
  rrt_status st = open_reader(path, &r, err, errlen);
  if (st) return st;
  int coordinate;
  mm_field field;
  mm_sym sym;
  if ((st = parse_header(r, &coordinate, &field, &sym, err, errlen))) goto done;
  if (field == F_PATTERN || sym != S_GENERAL) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: a vector must be real/integer general", path,
                    r->line);
    goto done;
  }
  int64_t sz[3];
  if ((st = parse_size(r, coordinate ? 3 : 2, sz, err, errlen))) goto done;
  if (sz[1] != 1) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: a vector has one column, found %lld", path,
                    r->line, (long long)sz[1]);
    goto done;
  }
  int64_t len = sz[0], nent = coordinate ? sz[2] : sz[0];
  long size_line = r->line;
  if (coordinate && nent > len) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: %lld entries cannot fit a vector of %lld",
                    path, r->line, (long long)nent, (long long)len);
    goto done;
  }
  /* Values are collected first and the dense vector is allocated once the
   * file has shown them, so the size line alone claims no memory. */
  for (int64_t t = 0; t < nent; t++) {
    int64_t i = t + 1;
    double val = 0.0;
    if ((st = parse_vector_entry(r, coordinate, len, nent, &i, &val, err, errlen))) goto done;
    if (triplets_reserve(&tv, tv.n + 1)) {
      st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s:%ld: out of memory", path, r->line);
      goto done;
    }
    tv.row[tv.n] = i - 1, tv.val[tv.n] = val, tv.n++;
  }
  if (next_data_line(r) != 0) {
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: more values than declared", path, r->line);
    goto done;
  }
  if ((st = check_empty_rows(r, size_line, len, tv.n, err, errlen)) ||
      (st = check_claim(r, size_line, "values", len + 1, sizeof(double), err, errlen)))
    goto done;
  v = calloc((size_t)len + 1, sizeof(double));
  if (!v) {
    st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (int64_t t = 0; t < tv.n; t++)
    v[tv.row[t]] += tv.val[t];
  *x = v;
  *n = len;
  v = NULL;
done:
  close_reader(r);
  triplets_free(&tv);
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

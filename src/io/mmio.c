/* Matrix Market reader and writer. The reader is strict: every deviation
 * from the format is an error naming the file and line, because a silently
 * misread matrix gives a wrong preconditioner that nobody notices. */
#include "io/mmio.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rrt_csr_free(rrt_csr *a) {
  if (!a) return;
  free(a->rowptr);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof(*a));
}

static rrt_status fail(char *err, size_t errlen, rrt_status st, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return st;
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
    return fail(err, errlen, RRT_ERR_IO, "%s:1: empty file (no %%%%MatrixMarket header)", r->path);
  if (got < 0) return fail(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", r->path, r->line);
  char copy[sizeof(r->buf)];
  memcpy(copy, r->buf, sizeof(copy));
  char *f[6];
  int nf = split(copy, f, 6);
  if (nf != 5 || strcasecmp(f[0], "%%MatrixMarket") != 0 || strcasecmp(f[1], "matrix") != 0)
    return fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: bad header '%s' (expected '%%%%MatrixMarket matrix coordinate "
                "real|integer|pattern general|symmetric|skew-symmetric')",
                r->path, r->line, r->buf);
  if (!strcasecmp(f[2], "coordinate"))
    *coordinate = 1;
  else if (!strcasecmp(f[2], "array"))
    *coordinate = 0;
  else
    return fail(err, errlen, RRT_ERR_IO, "%s:%ld: bad header: unknown format '%s'", r->path,
                r->line, f[2]);
  if (!strcasecmp(f[3], "real") || !strcasecmp(f[3], "double"))
    *field = F_REAL;
  else if (!strcasecmp(f[3], "integer"))
    *field = F_INTEGER;
  else if (!strcasecmp(f[3], "pattern"))
    *field = F_PATTERN;
  else
    return fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: bad header: unsupported field '%s' (real, integer, pattern)", r->path,
                r->line, f[3]);
  if (!strcasecmp(f[4], "general"))
    *sym = S_GENERAL;
  else if (!strcasecmp(f[4], "symmetric"))
    *sym = S_SYMMETRIC;
  else if (!strcasecmp(f[4], "skew-symmetric"))
    *sym = S_SKEW;
  else
    return fail(err, errlen, RRT_ERR_IO,
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
    return fail(err, errlen, RRT_ERR_IO, "%s:%ld: truncated file: missing size line", r->path,
                r->line + 1);
  if (got < 0) return fail(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", r->path, r->line);
  char *f[4];
  int nf = split(r->buf, f, 4);
  if (nf != want)
    return fail(err, errlen, RRT_ERR_IO, "%s:%ld: size line needs %d integers, found %d", r->path,
                r->line, want, nf < 0 ? 4 : nf);
  for (int k = 0; k < want; k++)
    if (parse_i64(f[k], &v[k]) || v[k] < 0)
      return fail(err, errlen, RRT_ERR_IO, "%s:%ld: size line: '%s' is not a non-negative integer",
                  r->path, r->line, f[k]);
  return RRT_SUCCESS;
}

rrt_status rrt_mm_read(const char *path, rrt_mm_pattern_values pattern, rrt_csr *out,
                       rrt_mm_info *info, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  mm_reader *r = calloc(1, sizeof(*r));
  if (!r) return RRT_ERR_OUT_OF_MEMORY;
  r->path = path;
  r->f = fopen(path, "r");
  rrt_status st = RRT_SUCCESS;
  int64_t *ri = NULL, *ci = NULL;
  double *vv = NULL;
  if (!r->f) {
    st = fail(err, errlen, RRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    goto done;
  }
  int coordinate;
  mm_field field;
  mm_sym sym;
  if ((st = parse_header(r, &coordinate, &field, &sym, err, errlen))) goto done;
  if (!coordinate) {
    st = fail(err, errlen, RRT_ERR_IO,
              "%s:%ld: 'array' format is a dense vector/matrix; a sparse matrix must be "
              "'coordinate'",
              path, r->line);
    goto done;
  }
  if (field == F_PATTERN && pattern == RRT_MM_PATTERN_REFUSE) {
    st = fail(err, errlen, RRT_ERR_INVALID_ARG,
              "%s:%ld: pattern matrix has no values (ask for values, e.g. --pattern-values "
              "laplacian)",
              path, r->line);
    goto done;
  }
  int64_t sz[3];
  if ((st = parse_size(r, 3, sz, err, errlen))) goto done;
  int64_t nrows = sz[0], ncols = sz[1], nent = sz[2];
  long size_line = r->line;
  if (sym != S_GENERAL && nrows != ncols) {
    st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: %s matrix must be square, got %lld x %lld", path,
              size_line, sym_name(sym), (long long)nrows, (long long)ncols);
    goto done;
  }
  if (nent > (nrows * ncols) || (nrows && nent / 2 > INT64_MAX / 4)) {
    st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: %lld entries cannot fit a %lld x %lld matrix", path,
              size_line, (long long)nent, (long long)nrows, (long long)ncols);
    goto done;
  }
  size_t cap = (size_t)(sym == S_GENERAL ? nent : 2 * nent) + 1;
  ri = malloc(cap * sizeof(int64_t));
  ci = malloc(cap * sizeof(int64_t));
  vv = malloc(cap * sizeof(double));
  if (!ri || !ci || !vv) {
    st = fail(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory for %lld entries", path,
              (long long)nent);
    goto done;
  }
  int want = field == F_PATTERN ? 2 : 3;
  int64_t m = 0;
  for (int64_t t = 0; t < nent; t++) {
    int got = next_data_line(r);
    if (got == 0) {
      st = fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: truncated file: the size line (line %ld) declares %lld entries, found "
                "%lld",
                path, r->line + 1, size_line, (long long)nent, (long long)t);
      goto done;
    }
    if (got < 0) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: line too long", path, r->line);
      goto done;
    }
    char *f[4];
    int nf = split(r->buf, f, 4);
    if (nf != want) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: a %s entry needs %d fields, found %d", path,
                r->line, field_name(field), want, nf < 0 ? 4 : nf);
      goto done;
    }
    int64_t i, j;
    double v = 1.0;
    if (parse_i64(f[0], &i) || parse_i64(f[1], &j)) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: index '%s %s' is not an integer", path, r->line,
                f[0], f[1]);
      goto done;
    }
    if (i < 1 || i > nrows || j < 1 || j > ncols) {
      st = fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: index (%lld, %lld) out of range for a %lld x %lld matrix (1-based)", path,
                r->line, (long long)i, (long long)j, (long long)nrows, (long long)ncols);
      goto done;
    }
    if (field == F_INTEGER) {
      int64_t iv;
      if (parse_i64(f[2], &iv)) {
        st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not an integer", path, r->line,
                  f[2]);
        goto done;
      }
      v = (double)iv;
    } else if (field == F_REAL && parse_f64(f[2], &v)) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not a number", path, r->line, f[2]);
      goto done;
    }
    if (sym != S_GENERAL && j > i) {
      st = fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: entry (%lld, %lld) above the diagonal in a %s file (only the lower "
                "triangle is stored)",
                path, r->line, (long long)i, (long long)j, sym_name(sym));
      goto done;
    }
    if (sym == S_SKEW && i == j) {
      st = fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: diagonal entry (%lld, %lld) in a skew-symmetric file", path, r->line,
                (long long)i, (long long)j);
      goto done;
    }
    ri[m] = i - 1, ci[m] = j - 1, vv[m] = v, m++;
    if (sym != S_GENERAL && i != j) {
      ri[m] = j - 1, ci[m] = i - 1, vv[m] = sym == S_SKEW ? -v : v, m++;
    }
  }
  {
    int got = next_data_line(r);
    if (got != 0) {
      st = fail(err, errlen, RRT_ERR_IO,
                "%s:%ld: more entries than the %lld declared on the size line (line %ld)", path,
                r->line, (long long)nent, size_line);
      goto done;
    }
  }
  if (field == F_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN)
    for (int64_t t = 0; t < m; t++)
      vv[t] = ri[t] == ci[t] ? 0.0 : -1.0;
  if ((st = rrt_csr_from_triplets(nrows, ncols, m, ri, ci, vv, out))) {
    fail(err, errlen, st, "%s: out of memory", path);
    goto done;
  }
  if (field == F_PATTERN && pattern == RRT_MM_PATTERN_LAPLACIAN) {
    /* Shifted graph Laplacian: diagonal = off-diagonal count + 1 (present or
     * not in the file, the diagonal must exist: it is added when missing). */
    rrt_csr a = *out;
    int64_t *tr = malloc(((size_t)a.nnz + (size_t)nrows + 1) * sizeof(int64_t));
    int64_t *tc = malloc(((size_t)a.nnz + (size_t)nrows + 1) * sizeof(int64_t));
    double *tv = malloc(((size_t)a.nnz + (size_t)nrows + 1) * sizeof(double));
    if (!tr || !tc || !tv) {
      free(tr), free(tc), free(tv);
      st = fail(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    int64_t q = 0;
    for (int64_t i = 0; i < nrows; i++) {
      int64_t off = 0;
      for (int64_t p = a.rowptr[i]; p < a.rowptr[i + 1]; p++)
        if (a.col[p] != i) tr[q] = i, tc[q] = a.col[p], tv[q] = -1.0, q++, off++;
      tr[q] = i, tc[q] = i, tv[q] = (double)(off + 1), q++;
    }
    rrt_csr_free(out);
    st = rrt_csr_from_triplets(nrows, ncols, q, tr, tc, tv, out);
    free(tr), free(tc), free(tv);
    if (st) goto done;
  }
  if (info) {
    snprintf(info->field, sizeof(info->field), "%s", field_name(field));
    snprintf(info->symmetry, sizeof(info->symmetry), "%s", sym_name(sym));
    info->nrows = nrows;
    info->ncols = ncols;
    info->entries = nent;
  }
done:
  if (r->f) fclose(r->f);
  free(r);
  free(ri), free(ci), free(vv);
  if (st) rrt_csr_free(out);
  return st;
}

rrt_status rrt_mm_read_vector(const char *path, double **x, int64_t *n, char *err, size_t errlen) {
  *x = NULL;
  *n = 0;
  mm_reader *r = calloc(1, sizeof(*r));
  if (!r) return RRT_ERR_OUT_OF_MEMORY;
  r->path = path;
  r->f = fopen(path, "r");
  rrt_status st = RRT_SUCCESS;
  double *v = NULL;
  if (!r->f) {
    st = fail(err, errlen, RRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    goto done;
  }
  int coordinate;
  mm_field field;
  mm_sym sym;
  if ((st = parse_header(r, &coordinate, &field, &sym, err, errlen))) goto done;
  if (field == F_PATTERN || sym != S_GENERAL) {
    st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: a vector must be real/integer general", path,
              r->line);
    goto done;
  }
  int64_t sz[3];
  if ((st = parse_size(r, coordinate ? 3 : 2, sz, err, errlen))) goto done;
  if (sz[1] != 1) {
    st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: a vector has one column, found %lld", path, r->line,
              (long long)sz[1]);
    goto done;
  }
  int64_t len = sz[0], nent = coordinate ? sz[2] : sz[0];
  v = calloc((size_t)len + 1, sizeof(double));
  if (!v) {
    st = RRT_ERR_OUT_OF_MEMORY;
    goto done;
  }
  for (int64_t t = 0; t < nent; t++) {
    int got = next_data_line(r);
    if (got <= 0) {
      st = fail(err, errlen, RRT_ERR_IO,
                got ? "%s:%ld: line too long" : "%s:%ld: truncated file: expected %lld values",
                path, got ? r->line : r->line + 1, (long long)nent);
      goto done;
    }
    char *f[4];
    int nf = split(r->buf, f, 4);
    int64_t i = t + 1, j = 1;
    double val;
    const char *vs = coordinate ? (nf == 3 ? f[2] : NULL) : (nf == 1 ? f[0] : NULL);
    if (!vs) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: expected %d field(s), found %d", path, r->line,
                coordinate ? 3 : 1, nf < 0 ? 4 : nf);
      goto done;
    }
    if (coordinate && (parse_i64(f[0], &i) || parse_i64(f[1], &j) || i < 1 || i > len || j != 1)) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: bad or out-of-range index '%s %s'", path, r->line,
                f[0], f[1]);
      goto done;
    }
    if (parse_f64(vs, &val)) {
      st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: value '%s' is not a number", path, r->line, vs);
      goto done;
    }
    v[i - 1] += val;
  }
  if (next_data_line(r) != 0) {
    st = fail(err, errlen, RRT_ERR_IO, "%s:%ld: more values than declared", path, r->line);
    goto done;
  }
  *x = v;
  *n = len;
  v = NULL;
done:
  if (r->f) fclose(r->f);
  free(r);
  free(v);
  return st;
}

rrt_status rrt_mm_write(const char *path, const rrt_csr *a, const char *comment, char *err,
                        size_t errlen) {
  FILE *f = fopen(path, "w");
  if (!f) return fail(err, errlen, RRT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
  if (comment) fprintf(f, "%% %s\n", comment);
  fprintf(f, "%lld %lld %lld\n", (long long)a->nrows, (long long)a->ncols, (long long)a->nnz);
  for (int64_t i = 0; i < a->nrows; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
      fprintf(f, "%lld %lld %.17g\n", (long long)i + 1, (long long)a->col[p] + 1, a->val[p]);
  int bad = ferror(f);
  if (fclose(f) || bad)
    return fail(err, errlen, RRT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
  return RRT_SUCCESS;
}

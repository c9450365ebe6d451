/* CSV numeric matrix reader (see csv_matrix.h). */
#include "io/csv_matrix.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_sep(char c) { return c == ',' || c == '\t' || c == ';'; }

/* Split `line` in place into fields (quotes around a field are stripped;
 * bit k of *quoted says field k < 2 had them). */
static int split_fields(char *line, char ***fields, int *cap, unsigned *quoted) {
  int n = 0;
  char *p = line;
  *quoted = 0;
  for (;;) {
    while (*p == ' ')
      p++;
    char *start = p, *end;
    if (*p == '"') {
      if (n < 2) *quoted |= 1u << n;
      /* RFC 4180: a doubled quote inside stands for one (compacted in place) */
      start = ++p;
      char *w = p;
      while (*p && (*p != '"' || p[1] == '"')) {
        if (*p == '"') p++;
        *w++ = *p++;
      }
      end = w;
      if (*p == '"') p++;
      while (*p && !is_sep(*p))
        p++;
    } else {
      while (*p && !is_sep(*p))
        p++;
      end = p;
    }
    while (end > start && (end[-1] == ' ' || end[-1] == '\r'))
      end--;
    char sep = *p;
    *end = 0;
    if (n == *cap) {
      *cap = *cap ? 2 * *cap : 16;
      char **nf = realloc(*fields, (size_t)*cap * sizeof(char *));
      if (!nf) return -1;
      *fields = nf;
    }
    (*fields)[n++] = start;
    if (!sep) break;
    p++;
  }
  return n;
}

static int parse_num(const char *s, double *v) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *end == 0;
}

static rrt_status add_strings(rrt_strings *s, char **items, int n) {
  s->items = calloc((size_t)n, sizeof(char *));
  if (!s->items) return RRT_ERR_OUT_OF_MEMORY;
  s->count = n;
  for (int i = 0; i < n; i++)
    if (!(s->items[i] = strdup(items[i]))) return RRT_ERR_OUT_OF_MEMORY;
  return RRT_SUCCESS;
}

static rrt_status push_name(rrt_strings *s, int64_t *cap, const char *name) {
  if (s->count == *cap) {
    *cap = *cap ? 2 * *cap : 1024;
    char **n = realloc(s->items, (size_t)*cap * sizeof(char *));
    if (!n) return RRT_ERR_OUT_OF_MEMORY;
    s->items = n;
  }
  if (!(s->items[s->count] = strdup(name))) return RRT_ERR_OUT_OF_MEMORY;
  s->count++;
  return RRT_SUCCESS;
}

/* Whether the first data row starts with a row name: a field that is not a
 * number; a quoted field before an unquoted one (R's write.csv quotes the
 * row names "1", "2", ... and never a number); or a header whose first
 * field is empty over every column (pandas' to_csv and R's write.csv both
 * write one). */
static int has_name_column(char **fields, int nf, unsigned quoted, const rrt_strings *header) {
  double v;
  if (!parse_num(fields[0], &v)) return 1;
  if (nf > 1 && (quoted & 3u) == 1u) return 1;
  return header->count == nf && nf > 1 && !header->items[0][0];
}

/* Whether s is an integer written plainly ("3", "-1", "+2", "007"), and
 * which (one a column number could be). */
static int parse_int(const char *s, long long *v) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return *end == 0 && errno == 0;
}

/* The auto rule for the first row: 1 a header, 0 data, -1 ambiguous.
 * A first field that is not a number is set aside (the label of a
 * row-name column, or a cell's name). A header: another field that is not
 * a number, or the column numbers 0..d-1 or 1..d that pandas
 * (`to_csv(index=False)` of a plain array) and R write. Data: a row with a
 * number that is not an integer (PCA coordinates; with a name first, a
 * cell). Other rows of integers only are ambiguous. */
static int header_rule(char **fields, int nf) {
  double v;
  int s0 = nf > 1 && !parse_num(fields[0], &v);
  for (int i = s0; i < nf; i++)
    if (!parse_num(fields[i], &v)) return 1;
  long long first = 0, k;
  for (int i = s0; i < nf; i++) {
    if (!parse_int(fields[i], &k)) return 0;
    if (i == s0) first = k;
    if (first != 0 && first != 1) first = -1;
    if (first >= 0 && k != first + (i - s0)) first = -1;
  }
  return first >= 0 ? 1 : -1;
}

rrt_status rrt_csv_read_matrix(const char *path, int header, rrt_csv_matrix *out, char *err,
                               size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return RRT_ERR_IO;
  }
  char *line = NULL;
  size_t linecap = 0;
  char **fields = NULL;
  int fcap = 0, names = -1, first = 1;
  int64_t lineno = 0, cap = 0, namecap = 0, header_line = 0;
  rrt_status st = RRT_SUCCESS;
  while (getline(&line, &linecap, f) >= 0) {
    lineno++;
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    const char *t = line;
    while (*t == ' ' || *t == '\t')
      t++;
    if (!*t || *t == '#') continue;
    unsigned quoted;
    int nf = split_fields(line, &fields, &fcap, &quoted);
    if (nf < 0) goto oom;
    if (first) {
      first = 0;
      int is_header = header >= 0 ? header : header_rule(fields, nf);
      if (is_header < 0) {
        snprintf(err, errlen,
                 "%s:%lld: the first row holds only integers (..., %s): column numbers of a "
                 "header or a cell's values? Say which with --header yes|no",
                 path, (long long)lineno, fields[nf - 1]);
        st = RRT_ERR_INVALID_ARG;
        goto done;
      }
      if (is_header) {
        if (add_strings(&out->header, fields, nf) != RRT_SUCCESS) goto oom;
        header_line = lineno;
        continue;
      }
    }
    if (names < 0) names = has_name_column(fields, nf, quoted, &out->header);
    int ncols = nf - names;
    if (out->rows == 0) {
      out->cols = ncols;
      if (ncols <= 0) {
        snprintf(err, errlen, "%s:%lld: no numeric columns", path, (long long)lineno);
        st = RRT_ERR_IO;
        goto done;
      }
      /* A header names every column, with or without the name column (R's
       * write.table leaves its label out); any other count would pair
       * names with the wrong columns. */
      if (out->header.count && out->header.count != ncols && out->header.count != nf) {
        snprintf(err, errlen, "%s:%lld: the header has %lld fields, the data rows (line %lld) %d",
                 path, (long long)header_line, (long long)out->header.count, (long long)lineno, nf);
        st = RRT_ERR_IO;
        goto done;
      }
    } else if (ncols != out->cols) {
      snprintf(err, errlen, "%s:%lld: %d numeric fields, expected %lld as on the first row", path,
               (long long)lineno, ncols, (long long)out->cols);
      st = RRT_ERR_IO;
      goto done;
    }
    if ((out->rows + 1) * out->cols > cap) {
      cap = cap ? 2 * cap : 4096 + out->cols;
      double *nd = realloc(out->data, (size_t)cap * sizeof(double));
      if (!nd) goto oom;
      out->data = nd;
    }
    for (int c = 0; c < ncols; c++) {
      if (!parse_num(fields[c + names], &out->data[out->rows * out->cols + c])) {
        snprintf(err, errlen, "%s:%lld: column %d: '%s' is not a number", path, (long long)lineno,
                 c + names + 1, fields[c + names]);
        st = RRT_ERR_IO;
        goto done;
      }
    }
    if (names && push_name(&out->row_names, &namecap, fields[0]) != RRT_SUCCESS) goto oom;
    out->rows++;
  }
  if (out->rows == 0) {
    snprintf(err, errlen, "%s: no data rows", path);
    st = RRT_ERR_IO;
  }
  goto done;
oom:
  snprintf(err, errlen, "%s:%lld: out of memory", path, (long long)lineno);
  st = RRT_ERR_OUT_OF_MEMORY;
done:
  free(line);
  free(fields);
  fclose(f);
  if (st != RRT_SUCCESS) rrt_csv_matrix_free(out);
  return st;
}

void rrt_csv_matrix_free(rrt_csv_matrix *m) {
  if (!m) return;
  free(m->data);
  rrt_strings_free(&m->row_names);
  rrt_strings_free(&m->header);
  memset(m, 0, sizeof *m);
}

/* Integer list reader (see int_list.h). Strict like the Matrix Market
 * reader: a value it cannot read is an error, never the silent end of the
 * list, since a short list of archetypes or offsets gives a wrong run that
 * looks right. */
#include "io/int_list.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "comm/errbuf.h"
#include "io/limits.h"

void rrt_int_list_free(rrt_int_list *l) {
  if (!l) return;
  free(l->values);
  l->values = NULL;
  l->count = 0;
}

/* Room for one more value; capacity doubles, checked against memory. */
static int reserve_one(rrt_int_list *l, int64_t *cap) {
  if (l->count < *cap) return 0;
  int64_t want = *cap ? 2 * *cap : 256;
  if (!rrt_io_claim_fits((uint64_t)want, sizeof(int64_t))) return -1;
  int64_t *v = realloc(l->values, (size_t)want * sizeof(int64_t));
  if (!v) return -1;
  l->values = v;
  *cap = want;
  return 0;
}

/* Quote of a line for a message: at most 40 characters, control bytes as '?'. */
static void quote(const char *s, char *out, size_t len) {
  size_t n = 0;
  for (; s[n] && n < 40 && n + 1 < len; n++)
    out[n] = isprint((unsigned char)s[n]) ? s[n] : '?';
  out[n] = 0;
  if (s[n] && len > 4 && n + 4 < len) strcpy(out + n, "...");
}

typedef enum { LINE_EMPTY, LINE_VALUE, LINE_BAD } line_kind;

/* One line: empty (blank or comment), a value, or bad (*why says why). */
static line_kind parse_line(char *s, int64_t *v, const char **why) {
  char *hash = strchr(s, '#');
  if (hash) *hash = 0;
  while (isspace((unsigned char)*s))
    s++;
  if (!*s) return LINE_EMPTY;
  *why = "is not an integer";
  if (*s == '-' && isdigit((unsigned char)s[1])) {
    *why = "is negative";
    return LINE_BAD;
  }
  if (*s == '+') s++;
  if (!isdigit((unsigned char)*s)) return LINE_BAD;
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno == ERANGE) {
    *why = "does not fit a 64-bit integer";
    return LINE_BAD;
  }
  while (isspace((unsigned char)*end))
    end++;
  if (*end) {
    *why = "is not one integer";
    return LINE_BAD;
  }
  *v = (int64_t)x;
  return LINE_VALUE;
}

static rrt_status read_lines(FILE *f, const char *path, unsigned flags, rrt_int_list *out,
                             char *err, size_t errlen) {
  char *line = NULL;
  size_t linecap = 0;
  int64_t cap = 0;
  long lineno = 0;
  rrt_status st = RRT_SUCCESS;
  ssize_t got;
  while (st == RRT_SUCCESS && (got = getline(&line, &linecap, f)) >= 0) {
    lineno++;
    if (memchr(line, 0, (size_t)got)) {
      st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: NUL byte in a text file", path, lineno);
      break;
    }
    if (got && line[got - 1] == '\n') line[--got] = 0;
    if (got && line[got - 1] == '\r') line[--got] = 0;
    char shown[48];
    quote(line, shown, sizeof shown);
    int64_t v = 0;
    const char *why = "";
    line_kind k = parse_line(line, &v, &why);
    if (k == LINE_EMPTY) continue;
    if (k == LINE_BAD)
      st =
          rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: '%s' %s (one non-negative integer per line)",
                     path, lineno, shown, why);
    else if ((flags & RRT_INT_LIST_NONDECREASING) && out->count && v < out->values[out->count - 1])
      st = rrt_errbuf(err, errlen, RRT_ERR_IO,
                      "%s:%ld: %lld is smaller than the value before (%lld)", path, lineno,
                      (long long)v, (long long)out->values[out->count - 1]);
    else if (reserve_one(out, &cap))
      st = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s:%ld: out of memory after %lld values",
                      path, lineno, (long long)out->count);
    else
      out->values[out->count++] = v;
  }
  free(line);
  if (st == RRT_SUCCESS && ferror(f))
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s:%ld: read error", path, lineno + 1);
  if (st == RRT_SUCCESS && out->count == 0)
    st = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: no values (one non-negative integer per line)",
                    path);
  return st;
}

rrt_status rrt_int_list_read(const char *path, unsigned flags, rrt_int_list *out, char *err,
                             size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "r");
  if (!f) return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  rrt_status st = read_lines(f, path, flags, out, err, errlen);
  fclose(f);
  if (st != RRT_SUCCESS) rrt_int_list_free(out);
  return st;
}

/* The mask options of `ringrt attn` (attn_mask.h). Offsets must not
 * decrease: said here with the index, before any plan is made; that the
 * first is 0 and the last is the sequence length is the descriptor's check
 * (src/attn/desc.c), which names the index too. */
#include "attn_mask.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An integer >= lo from [s, its end at `stop` or NUL); NULL when bad. */
static const char *parse_int(const char *s, long long lo, long long *out) {
  char *end = NULL;
  errno = 0;
  if (!*s || isspace((unsigned char)*s)) return NULL;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || v < lo) return NULL;
  *out = v;
  return end;
}

int rrt_app_attn_parse_window(rrt_app_common *c, const char *text, int *left, int *right) {
  long long v[2];
  const char *p = parse_int(text, -1, &v[0]);
  if (p && *p == ',')
    p = parse_int(p + 1, -1, &v[1]);
  else
    p = NULL;
  if (!p || *p || v[0] > 1 << 30 || v[1] > 1 << 30) {
    rrt_app_usage_error(c,
                        "bad value for --window: '%s' (L,R: two integers >= -1, -1 = unlimited "
                        "on that side)",
                        text);
    return 2;
  }
  *left = (int)v[0], *right = (int)v[1];
  return 0;
}

/* A list: has a comma and names no file (an existing file wins). */
static int looks_like_list(const char *t) { return strchr(t, ',') && access(t, F_OK) != 0; }

int rrt_app_attn_parse_docs(rrt_app_common *c, const char *text, rrt_int_list *out) {
  if (!looks_like_list(text)) return 1;
  int64_t n = 1;
  for (const char *t = text; *t; t++)
    n += *t == ',';
  out->values = malloc((size_t)n * sizeof *out->values);
  out->count = 0;
  if (!out->values) {
    rrt_app_usage_error(c, "--cu-seqlens: out of memory for %lld offsets", (long long)n);
    return 2;
  }
  const char *p = text;
  for (int64_t i = 0; i < n; i++) {
    while (*p == ' ')
      p++;
    long long v;
    const char *e = parse_int(p, 0, &v);
    while (e && *e == ' ')
      e++;
    if (!e || (*e != ',' && *e != '\0')) {
      rrt_app_usage_error(c,
                          "bad value for --cu-seqlens: '%s': entry %lld is not a non-negative "
                          "integer",
                          text, (long long)i);
      rrt_int_list_free(out);
      return 2;
    }
    if (i > 0 && v < out->values[i - 1]) {
      rrt_app_usage_error(c,
                          "--cu-seqlens: entry %lld (%lld) is less than entry %lld (%lld): "
                          "offsets must not decrease",
                          (long long)i, v, (long long)(i - 1), (long long)out->values[i - 1]);
      rrt_int_list_free(out);
      return 2;
    }
    out->values[out->count++] = v;
    p = *e ? e + 1 : e;
  }
  return 0;
}

int rrt_app_attn_read_docs(rrt_app_common *c, const char *path, int rank, rrt_int_list *out) {
  char err[600];
  if (rrt_int_list_read(path, RRT_INT_LIST_NONDECREASING, out, err, sizeof err) == RRT_SUCCESS)
    return 0;
  if (rank == 0) rrt_app_error(c, "--cu-seqlens %s", err);
  return 1;
}

/* rrt_int_list_read (--archetypes-in, --cu-seqlens style files): what it
 * accepts (comments, blank lines, CRLF, '+', the int64 range) and that
 * every line the toy reader used to skip silently (junk, a negative value,
 * an overflow, a second number) is an error naming FILE:LINE. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/int_list.h"
#include "test_util.h"

static char dir[256];

static const char *write_file(const char *name, const char *text, size_t len) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return path;
  CHECK(fwrite(text, 1, len, f) == len);
  fclose(f);
  return path;
}

static void good(const char *name, const char *text, unsigned flags, int64_t n,
                 const int64_t *want) {
  char err[512] = "";
  const char *path = write_file(name, text, strlen(text));
  rrt_int_list l;
  rrt_status st = rrt_int_list_read(path, flags, &l, err, sizeof err);
  CHECK_MSG(st == RRT_SUCCESS, "%s refused: %s", name, err);
  CHECK_MSG(l.count == n, "%s: %lld values, want %lld", name, (long long)l.count, (long long)n);
  for (int64_t i = 0; st == RRT_SUCCESS && i < n && i < l.count; i++)
    CHECK_MSG(l.values[i] == want[i], "%s: value %lld is %lld, want %lld", name, (long long)i,
              (long long)l.values[i], (long long)want[i]);
  rrt_int_list_free(&l);
  CHECK(l.values == NULL && l.count == 0);
}

/* Refused, with "PATH:LINE:" (line 0: "PATH:") and `reason` in the message. */
static void bad_len(const char *name, const char *text, size_t len, unsigned flags, int line,
                    const char *reason) {
  char err[512] = "", want[600];
  const char *path = write_file(name, text, len);
  rrt_int_list l;
  rrt_status st = rrt_int_list_read(path, flags, &l, err, sizeof err);
  CHECK_MSG(st == RRT_ERR_IO, "%s accepted (%lld values)", name, (long long)l.count);
  CHECK(l.values == NULL && l.count == 0);
  if (line > 0)
    snprintf(want, sizeof want, "%s:%d:", path, line);
  else
    snprintf(want, sizeof want, "%s: ", path);
  CHECK_MSG(strncmp(err, want, strlen(want)) == 0, "%s: '%s' does not start with '%s'", name, err,
            want);
  CHECK_MSG(strstr(err, reason) != NULL, "%s: '%s' lacks '%s'", name, err, reason);
}

static void bad(const char *name, const char *text, unsigned flags, int line, const char *reason) {
  bad_len(name, text, strlen(text), flags, line, reason);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/rrt_test_int_list_%d", rrt_test_tmpdir(), (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CHECK(system(cmd) == 0);

  good("plain.txt", "3\n0\n17\n", 0, 3, (const int64_t[]){3, 0, 17});
  good("no_newline.txt", "5", 0, 1, (const int64_t[]){5});
  good("comments.txt", "# archetypes\n\n  12  # first\n\t7\r\n+4\n   \n", 0, 3,
       (const int64_t[]){12, 7, 4});
  good("int64.txt", "9223372036854775807\n", 0, 1, (const int64_t[]){INT64_MAX});
  good("sorted.txt", "0\n128\n128\n4096\n", RRT_INT_LIST_NONDECREASING, 4,
       (const int64_t[]){0, 128, 128, 4096});
  /* More values than the old reader's silent 2^20 cap, and a growing buffer. */
  {
    size_t n = ((size_t)1 << 20) + 3, len = 0;
    char *text = malloc(n * 8);
    CHECK(text != NULL);
    for (size_t i = 0; text && i < n; i++)
      len += (size_t)sprintf(text + len, "%zu\n", i % 1000);
    const char *path = write_file("many.txt", text, len);
    rrt_int_list l;
    char err[512] = "";
    CHECK_OK(rrt_int_list_read(path, 0, &l, err, sizeof err));
    CHECK_MSG(l.count == (int64_t)n, "many.txt: %lld values", (long long)l.count);
    CHECK(l.count == (int64_t)n && l.values[n - 1] == (int64_t)((n - 1) % 1000));
    rrt_int_list_free(&l);
    free(text);
  }

  bad("junk.txt", "3\n5\nseven\n9\n", 0, 3, "'seven' is not an integer");
  bad("trailing.txt", "3\n5x\n", 0, 2, "'5x' is not one integer");
  bad("two.txt", "1 2\n", 0, 1, "is not one integer");
  bad("negative.txt", "4\n-1\n", 0, 2, "'-1' is negative");
  bad("overflow.txt", "1\n9223372036854775808\n", 0, 2, "does not fit a 64-bit integer");
  bad("float.txt", "1.5\n", 0, 1, "is not one integer");
  bad_len("nul.txt", "1\n2\0003\n", 6, 0, 2, "NUL byte");
  bad("decreasing.txt", "0\n10\n5\n", RRT_INT_LIST_NONDECREASING, 3,
      "5 is smaller than the value before (10)");
  bad("empty.txt", "", 0, 0, "no values");
  bad("comments_only.txt", "# none\n\n", 0, 0, "no values");
  {
    char err[512] = "";
    rrt_int_list l;
    CHECK(rrt_int_list_read("/nonexistent/list.txt", 0, &l, err, sizeof err) == RRT_ERR_IO);
    CHECK_MSG(strstr(err, "/nonexistent/list.txt: cannot open") == err, "message: %s", err);
  }

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return test_result();
}

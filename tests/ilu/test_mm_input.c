/* The serial Matrix Market readers on the inputs of issue 13 item 5: NaN
 * and Inf refused naming file and line (matrix and vector), lines of any
 * length (header comments and entries far past 4095 characters) read, a
 * directory named as one, a gzip file read through zlib with the same
 * result as the plain file (a truncated one refused by name), a NUL byte
 * refused by line, a binary header shown as printable text. Compiled a second time without zlib
 * (RRT_NO_ZLIB_BUILD, io.cmake): a gzip file is then refused with a message saying so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef RRT_NO_ZLIB_BUILD
#include <zlib.h>
#endif

#include "io/mmio.h"
#include "test_util.h"

static char dir[256];

static const char *put(const char *name, const char *text, size_t len) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  fwrite(text, 1, len, f);
  fclose(f);
  return path;
}

/* Reading `path` fails with `st` and a message starting "PATH:LINE:" (line
 * 0: "PATH:") that holds `reason`. */
static void expect(const char *path, int vector, rrt_status want, int line, const char *reason) {
  char err[1024] = "", head[700];
  rrt_status st;
  if (vector) {
    double *x = NULL;
    int64_t n = 0;
    st = rrt_mm_read_vector(path, &x, &n, err, sizeof err);
    free(x);
  } else {
    rrt_csr a;
    st = rrt_mm_read(path, RRT_MM_PATTERN_ONES, &a, NULL, err, sizeof err);
    if (!st) rrt_csr_free(&a);
  }
  if (line)
    snprintf(head, sizeof head, "%s:%d: ", path, line);
  else
    snprintf(head, sizeof head, "%s: ", path);
  CHECK_MSG(st == want, "%s: status %d, want %d (%s)", path, (int)st, (int)want, err);
  CHECK_MSG(!strncmp(err, head, strlen(head)), "%s: '%s' does not start with '%s'", path, err,
            head);
  CHECK_MSG(strstr(err, reason) != NULL, "%s: '%s' lacks '%s'", path, err, reason);
  for (const char *p = err; *p; p++)
    CHECK_MSG((unsigned char)*p >= 32 && (unsigned char)*p < 127, "%s: raw byte 0x%02x in '%s'",
              path, (unsigned char)*p, err);
}

static void nonfinite(void) {
  const char *H = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n";
  const char *bad[] = {"nan", "NaN", "inf", "-Infinity", "1e999"};
  const char *why[] = {"not finite", "not finite", "not finite", "not finite", "not a number"};
  char text[256];
  for (int k = 0; k < 5; k++) {
    snprintf(text, sizeof text, "%s2 2 %s\n", H, bad[k]);
    expect(put("nonfinite.mtx", text, strlen(text)), 0, RRT_ERR_IO, 4, why[k]);
    snprintf(text, sizeof text, "%%%%MatrixMarket matrix array real general\n3 1\n1\n%s\n3\n",
             bad[k]);
    expect(put("nonfinite_vec.mtx", text, strlen(text)), 1, RRT_ERR_IO, 4, why[k]);
  }
}

/* A header comment and entry lines of 10000 characters read like short ones. */
static void long_lines(void) {
  size_t cap = 100000, n = 0;
  char *t = malloc(cap);
  n += (size_t)snprintf(t + n, cap - n, "%%%%MatrixMarket matrix coordinate real general\n%%");
  for (int k = 0; k < 10000; k++)
    t[n++] = 'c';
  n += (size_t)snprintf(t + n, cap - n, "\n2 2 2\n%9000s1 1 2.5\n2   %9000s 2 -1\n", "", "");
  rrt_csr a;
  char err[512] = "";
  CHECK_OK(rrt_mm_read(put("long.mtx", t, n), RRT_MM_PATTERN_REFUSE, &a, NULL, err, sizeof err));
  CHECK_MSG(a.nnz == 2 && a.val[0] == 2.5 && a.val[1] == -1.0, "%s", err);
  rrt_csr_free(&a);
  free(t);
}

static void gzip_files(void) {
  const char *plain = "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 4\n1 1 4\n2 1 -1\n"
                      "2 2 4\n3 3 4\n";
  const char *p = put("g.mtx", plain, strlen(plain));
  char gz[700], err[512] = "";
  snprintf(gz, sizeof gz, "%s/g.mtx.gz", dir);
#ifdef RRT_NO_ZLIB_BUILD
  static const unsigned char gzhead[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x8b, 0x8b};
  put("g.mtx.gz", (const char *)gzhead, sizeof gzhead);
  expect(gz, 0, RRT_ERR_UNSUPPORTED, 0, "gzip-compressed file, built without zlib");
  expect(gz, 1, RRT_ERR_UNSUPPORTED, 0, "gzip-compressed file, built without zlib");
  (void)p, (void)err;
#else
  gzFile g = gzopen(gz, "wb");
  gzwrite(g, plain, (unsigned)strlen(plain));
  gzclose(g);
  rrt_csr a, b;
  CHECK_OK(rrt_mm_read(p, RRT_MM_PATTERN_REFUSE, &a, NULL, err, sizeof err));
  CHECK_OK(rrt_mm_read(gz, RRT_MM_PATTERN_REFUSE, &b, NULL, err, sizeof err));
  CHECK(a.nnz == 5 && b.nnz == a.nnz && !memcmp(a.col, b.col, 5 * 8) &&
        !memcmp(a.val, b.val, 5 * 8));
  rrt_csr_free(&a), rrt_csr_free(&b);
  /* cut the stream short: an error naming the file, not a short matrix */
  FILE *f = fopen(gz, "rb");
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  put("cut.mtx.gz", buf, n - 12);
  char cut[700];
  snprintf(cut, sizeof cut, "%s/cut.mtx.gz", dir);
  expect(cut, 0, RRT_ERR_IO, 0, "gzip stream broken");
#endif
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/rrt_mm_input_%d", rrt_test_tmpdir(), (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CHECK(system(cmd) == 0);
  nonfinite();
  long_lines();
  gzip_files();
  expect(dir, 0, RRT_ERR_IO, 0, "is a directory");
  expect(dir, 1, RRT_ERR_IO, 0, "is a directory");
  const char bin[] = "\x01\x02\xff\xfe binary\n";
  expect(put("bin.mtx", bin, sizeof bin - 1), 0, RRT_ERR_IO, 1, "bad header '??");
  const char nul[] = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1\0 1\n";
  expect(put("nul.mtx", nul, sizeof nul - 1), 0, RRT_ERR_IO, 3, "NUL byte");
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return test_result();
}

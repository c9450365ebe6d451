/* Matrix Market reader/writer: the shared matrices read with the expected
 * sizes; symmetric / skew-symmetric expansion and duplicate summing against
 * hand-computed values; write -> read round trip is exact; every malformed
 * file gives RRT_ERR_IO with "FILE:LINE:" and the expected reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/mmio.h"
#include "test_util.h"

static char dir[256];

static const char *write_file(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

static double entry(const rrt_csr *a, int64_t i, int64_t j) {
  for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++)
    if (a->col[p] == j) return a->val[p];
  return -999.0;
}

/* The file must fail with RRT_ERR_IO and a message "PATH:LINE: ...REASON...". */
static void expect_bad(const char *name, const char *text, int line, const char *reason) {
  const char *path = write_file(name, text);
  char err[512] = "", want[600];
  rrt_csr a;
  rrt_status st = rrt_mm_read(path, RRT_MM_PATTERN_ONES, &a, NULL, err, sizeof(err));
  snprintf(want, sizeof(want), "%s:%d:", path, line);
  CHECK_MSG(st == RRT_ERR_IO, "%s: expected an I/O error, got %d", name, (int)st);
  CHECK_MSG(strncmp(err, want, strlen(want)) == 0, "%s: message '%s' does not start with '%s'",
            name, err, want);
  CHECK_MSG(strstr(err, reason) != NULL, "%s: message '%s' lacks '%s'", name, err, reason);
}

int main(void) {
  snprintf(dir, sizeof(dir), "%s/rrt_mmio_test_%d", rrt_test_tmpdir(), (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "mkdir -p %s", dir);
  CHECK(system(cmd) == 0);

  /* shared matrices: size and nonzeros after symmetric expansion */
  struct {
    const char *f;
    int64_t n, nnz;
  } known[] = {
      {"gk_ani1.mtx", 36, 208},
      {"ss_can24.mtx", 24, 2 * 92 - 24},
      {"pe_m0505.mtx", 5, 8},
      {"gk_trefethen20b.mtx", 19, -1},
      {"gk_1138_bus.mtx", 1138, 2 * 2596 - 1138},
  };
  for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++) {
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/matrices/%s", RINGRT_SHARED_DATA, known[k].f);
    rrt_csr a;
    rrt_mm_info info;
    rrt_status st = rrt_mm_read(path, RRT_MM_PATTERN_LAPLACIAN, &a, &info, err, sizeof(err));
    CHECK_MSG(st == RRT_SUCCESS, "%s: %s", known[k].f, err);
    if (st) continue;
    CHECK(a.nrows == known[k].n && a.ncols == known[k].n);
    if (known[k].nnz >= 0)
      CHECK_MSG(a.nnz == known[k].nnz, "%s: nnz %lld", known[k].f, (long long)a.nnz);
    for (int64_t i = 0; i < a.nrows; i++)
      for (int64_t p = a.rowptr[i] + 1; p < a.rowptr[i + 1]; p++)
        CHECK(a.col[p] > a.col[p - 1]);
    rrt_csr_free(&a);
  }
  /* a pattern matrix is refused unless values are asked for */
  {
    char path[512], err[512];
    snprintf(path, sizeof(path), "%s/matrices/ss_can24.mtx", RINGRT_SHARED_DATA);
    rrt_csr a;
    CHECK(rrt_mm_read(path, RRT_MM_PATTERN_REFUSE, &a, NULL, err, sizeof(err)) ==
          RRT_ERR_INVALID_ARG);
    CHECK(strstr(err, "pattern") != NULL);
  }
  /* symmetric, skew, duplicates, comments, integer, blank lines */
  {
    const char *p =
        write_file("sym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n% c\n%\n"
                              "3 3 4\n1 1 2.5\n3 1 -1e0\n\n2 2 4\n3 1 0.5\n");
    rrt_csr a;
    char err[512];
    CHECK_OK(rrt_mm_read(p, RRT_MM_PATTERN_REFUSE, &a, NULL, err, sizeof(err)));
    CHECK(a.nnz == 4);
    CHECK(entry(&a, 2, 0) == -0.5 && entry(&a, 0, 2) == -0.5 && entry(&a, 0, 0) == 2.5);
    rrt_csr_free(&a);
    p = write_file("skew.mtx",
                   "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 7\n");
    CHECK_OK(rrt_mm_read(p, RRT_MM_PATTERN_REFUSE, &a, NULL, err, sizeof(err)));
    CHECK(entry(&a, 1, 0) == 7.0 && entry(&a, 0, 1) == -7.0 && a.nnz == 2);
    /* write and read back: exact */
    const char *q = write_file("rt.mtx", "");
    char qq[512];
    snprintf(qq, sizeof(qq), "%s", q);
    a.val[0] = 1.0 / 3.0;
    CHECK_OK(rrt_mm_write(qq, &a, "round trip", err, sizeof(err)));
    rrt_csr b;
    CHECK_OK(rrt_mm_read(qq, RRT_MM_PATTERN_REFUSE, &b, NULL, err, sizeof(err)));
    CHECK(b.nnz == a.nnz && memcmp(b.val, a.val, (size_t)a.nnz * sizeof(double)) == 0);
    CHECK(memcmp(b.col, a.col, (size_t)a.nnz * sizeof(int64_t)) == 0);
    rrt_csr_free(&a), rrt_csr_free(&b);
    /* pattern with laplacian values: diagonal = off-diagonals + 1, added if missing */
    p = write_file("pat.mtx",
                   "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n3 2\n");
    CHECK_OK(rrt_mm_read(p, RRT_MM_PATTERN_LAPLACIAN, &a, NULL, err, sizeof(err)));
    CHECK(entry(&a, 0, 0) == 2.0 && entry(&a, 0, 1) == -1.0 && entry(&a, 1, 1) == 1.0);
    rrt_csr_free(&a);
    /* vectors: array and coordinate */
    p = write_file("v.mtx", "%%MatrixMarket matrix array real general\n3 1\n1\n2.5\n-3\n");
    double *x;
    int64_t n;
    CHECK_OK(rrt_mm_read_vector(p, &x, &n, err, sizeof(err)));
    CHECK(n == 3 && x[1] == 2.5 && x[2] == -3.0);
    free(x);
  }
  /* malformed inputs: file and line in every message */
  const char *H = "%%MatrixMarket matrix coordinate real general\n";
  char buf[512];
  expect_bad("empty.mtx", "", 1, "empty file");
  expect_bad("header.mtx", "%%MatrixMarket matrix coordinate\n2 2 1\n1 1 1\n", 1, "bad header");
  expect_bad("banner.mtx", "%%NotMatrixMarket matrix coordinate real general\n", 1, "bad header");
  expect_bad("field.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1,
             "unsupported field");
  expect_bad("symm.mtx", "%%MatrixMarket matrix coordinate real hermitian\n", 1,
             "unsupported symmetry");
  snprintf(buf, sizeof(buf), "%s%% comment\n2 2\n", H);
  expect_bad("size.mtx", buf, 3, "size line");
  snprintf(buf, sizeof(buf), "%s2 x 1\n", H);
  expect_bad("size2.mtx", buf, 2, "not a non-negative integer");
  snprintf(buf, sizeof(buf), "%s", H);
  expect_bad("nosize.mtx", buf, 2, "truncated");
  snprintf(buf, sizeof(buf), "%s3 3 3\n1 1 1\n2 2 2\n", H);
  expect_bad("trunc.mtx", buf, 5, "truncated file");
  snprintf(buf, sizeof(buf), "%s2 2 1\n1 1 1\n2 2 2\n", H);
  expect_bad("extra.mtx", buf, 4, "more entries");
  snprintf(buf, sizeof(buf), "%s2 2 2\n1 1 1\n3 1 2\n", H);
  expect_bad("range.mtx", buf, 4, "out of range");
  snprintf(buf, sizeof(buf), "%s2 2 2\n1 1 1\n0 1 2\n", H);
  expect_bad("zero.mtx", buf, 4, "out of range");
  snprintf(buf, sizeof(buf), "%s2 2 2\n1 1 1\n2 1 abc\n", H);
  expect_bad("nan.mtx", buf, 4, "not a number");
  snprintf(buf, sizeof(buf), "%s2 2 2\n1 1 1\n2 1.5 2\n", H);
  expect_bad("idx.mtx", buf, 4, "not an integer");
  snprintf(buf, sizeof(buf), "%s2 2 2\n1 1 1\n2 1\n", H);
  expect_bad("fields.mtx", buf, 4, "needs 3 fields");
  expect_bad("upper.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", 3,
             "above the diagonal");
  expect_bad("skewdiag.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n",
             3, "diagonal entry");
  expect_bad("intval.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 3,
             "not an integer");
  expect_bad("toomany.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 5\n", 2,
             "cannot fit");
  {
    char err[512];
    rrt_csr a;
    CHECK(rrt_mm_read("/nonexistent/x.mtx", RRT_MM_PATTERN_ONES, &a, NULL, err, sizeof(err)) ==
          RRT_ERR_IO);
    CHECK(strstr(err, "/nonexistent/x.mtx: cannot open") != NULL);
  }
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return test_result();
}

/* The per-rank Matrix Market reader (io/mm_rows.h) against the serial one:
 * for every file, each rank's rows from rrt_mm_read_rows must equal, bit
 * for bit, the rows of rrt_mm_read's whole matrix in rrt_sparse_partition's
 * block, and on every bad file every rank must return the serial reader's
 * status and message exactly. The files are the shared matrices, the same
 * gzip-compressed, and files written here so their features (duplicates,
 * mirrored triangles, comments and blank lines between entries, CRLF,
 * lines over 4095 characters, bad lines) fall into every rank's share.
 * Also: ranks passing different n to rrt_sparse_create fail together at
 * once. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "io/mm_rows.h"
#include "io/mmio.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

static char dir[256];
static int rank, nranks;

/* Rank 0 writes `text` to dir/name (and dir/name.gz when gz); all wait. */
static const char *put(const char *name, const char *text, size_t len, int gz) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, gz ? ".gz" : "");
  if (rank == 0) {
    if (gz) {
      gzFile g = gzopen(path, "wb");
      gzwrite(g, text, (unsigned)len);
      gzclose(g);
    } else {
      FILE *f = fopen(path, "wb");
      fwrite(text, 1, len, f);
      fclose(f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

/* A growing text. */
typedef struct text {
  char *s;
  size_t n, cap;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (t->s && (size_t)k < t->cap - t->n) {
      t->n += (size_t)k;
      return;
    }
    t->cap = 2 * t->cap + (size_t)k + 4096;
    t->s = realloc(t->s, t->cap);
  }
}

/* rows from rrt_mm_read_rows == the serial reader's block, bitwise. */
static void check_same(rrt_ctx_t ctx, const char *path, rrt_mm_pattern_values pat) {
  char e1[1024] = "", e2[1024] = "";
  rrt_csr a, loc;
  rrt_mm_info i1, i2;
  memset(&i1, 0, sizeof i1), memset(&i2, 0, sizeof i2);
  rrt_status s1 = rrt_mm_read(path, pat, &a, &i1, e1, sizeof e1);
  int64_t r0 = -1, *off = calloc((size_t)nranks + 1, 8), *want = calloc((size_t)nranks + 1, 8);
  rrt_status s2 = rrt_mm_read_rows(ctx, path, pat, &r0, &loc, off, &i2, e2, sizeof e2);
  CHECK_MSG(s1 == s2, "%s: serial %d '%s', per rank %d '%s'", path, (int)s1, e1, (int)s2, e2);
  if (s1 || s2) {
    CHECK_MSG(!strcmp(e1, e2), "%s: serial '%s' / per rank '%s'", path, e1, e2);
  } else {
    rrt_sparse_partition(a.nrows, a.rowptr, nranks, want);
    CHECK_MSG(!memcmp(off, want, ((size_t)nranks + 1) * 8), "%s: other row blocks", path);
    int64_t b = want[rank], m = want[rank + 1] - b, p0 = a.rowptr[b];
    CHECK_MSG(r0 == b && loc.nrows == m && loc.ncols == a.ncols,
              "%s: block %lld+%lld, want %lld+%lld", path, (long long)r0, (long long)loc.nrows,
              (long long)b, (long long)m);
    int same = loc.nrows == m && loc.nnz == a.rowptr[b + m] - p0;
    for (int64_t i = 0; same && i <= m; i++)
      same = loc.rowptr[i] == a.rowptr[b + i] - p0;
    same = same && !memcmp(loc.col, a.col + p0, (size_t)loc.nnz * 8) &&
           !memcmp(loc.val, a.val + p0, (size_t)loc.nnz * 8);
    CHECK_MSG(same, "%s: rows differ from the serial reader's", path);
    CHECK(!strcmp(i1.field, i2.field) && !strcmp(i1.symmetry, i2.symmetry) &&
          i1.entries == i2.entries && i1.nrows == i2.nrows);
    rrt_csr_free(&a);
    rrt_csr_free(&loc);
  }
  free(off), free(want);
}

/* Both the plain file and its gzip copy. */
static void check_text(rrt_ctx_t ctx, const char *name, const text *t, rrt_mm_pattern_values pat) {
  for (int gz = 0; gz < 2; gz++)
    check_same(ctx, put(name, t->s, t->n, gz), pat);
}

static uint64_t lcg = 12345;
static int64_t rnd(int64_t m) {
  lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
  return (int64_t)((lcg >> 33) % (uint64_t)m);
}

/* A random coordinate file: n x n, `ne` entries (duplicates likely), the
 * features of `flags` sprinkled through it. bad_at >= 0 puts `bad` as the
 * entry line number bad_at. declared < 0: the size line tells the truth. */
enum { F_COMMENTS = 1, F_CRLF = 2, F_LONG = 4, F_LOWER = 8 };
static void random_file(text *t, const char *kind, int64_t n, int64_t ne, int flags,
                        int64_t declared, int64_t bad_at, const char *bad) {
  t->n = 0;
  const char *eol = flags & F_CRLF ? "\r\n" : "\n";
  add(t, "%%%%MatrixMarket matrix coordinate %s%s", kind, eol);
  if (flags & F_LONG) {
    add(t, "%%");
    for (int k = 0; k < 1000; k++)
      add(t, " long-comment");
    add(t, "%s", eol);
  }
  add(t, "%lld %lld %lld%s", (long long)n, (long long)n, (long long)(declared < 0 ? ne : declared),
      eol);
  int pattern = strstr(kind, "pattern") != NULL, integer = strstr(kind, "integer") != NULL;
  for (int64_t k = 0; k < ne; k++) {
    if ((flags & F_COMMENTS) && rnd(7) == 0) add(t, rnd(2) ? "%% between entries%s" : "   %s", eol);
    if (k == bad_at) {
      add(t, "%s%s", bad, eol);
      continue;
    }
    int64_t i = rnd(n) + 1, j = rnd(n) + 1;
    if ((flags & F_LOWER) && j > i) {
      int64_t s = i;
      i = j, j = s;
    }
    if (strstr(kind, "skew") && i == j) i = i % n + 1, j = 1 + (i == 1), i = i < j ? j + 1 : i;
    if ((flags & F_LONG) && k % 17 == 3) add(t, "%5000s", ""); /* a 5000-character indent */
    if (pattern)
      add(t, "%lld %lld%s", (long long)i, (long long)j, eol);
    else if (integer)
      add(t, "%lld %lld %lld%s", (long long)i, (long long)j, (long long)rnd(19) - 9, eol);
    else
      add(t, "%lld %lld %.17g%s", (long long)i, (long long)j, (double)rnd(1000003) / 997.0 - 500.0,
          eol);
  }
}

static void good_files(rrt_ctx_t ctx) {
  static const char *shared[] = {"gk_ani1.mtx",
                                 "gk_ani1_nonsymm.mtx",
                                 "gk_isai_a.mtx",
                                 "ss_cage5.mtx",
                                 "ss_can24.mtx",
                                 "ss_LFAT5.mtx",
                                 "ss_494_bus.mtx",
                                 "gk_1138_bus.mtx",
                                 "gk_mahindas.mtx",
                                 "pe_m0505.mtx",
                                 NULL};
  char path[512];
  for (int k = 0; shared[k]; k++) {
    snprintf(path, sizeof path, "%s/matrices/%s", RINGRT_SHARED_DATA, shared[k]);
    check_same(ctx, path, RRT_MM_PATTERN_LAPLACIAN);
  }
  text t = {0};
  random_file(&t, "real general", 57, 600, F_COMMENTS | F_LONG, -1, -1, NULL);
  check_text(ctx, "general.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "real symmetric", 40, 500, F_COMMENTS | F_CRLF | F_LOWER, -1, -1, NULL);
  check_text(ctx, "symmetric.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "real skew-symmetric", 33, 300, F_LOWER, -1, -1, NULL);
  check_text(ctx, "skew.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "integer general", 20, 400, F_COMMENTS, -1, -1, NULL);
  check_text(ctx, "integer.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "pattern symmetric", 45, 200, F_LOWER | F_LONG, -1, -1, NULL);
  check_text(ctx, "lap.mtx", &t, RRT_MM_PATTERN_LAPLACIAN);
  check_text(ctx, "ones.mtx", &t, RRT_MM_PATTERN_ONES);
  random_file(&t, "real general", 3, 2, 0, -1, -1, NULL); /* fewer rows than ranks */
  check_text(ctx, "tiny.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "real general", 200, 0, 0, -1, -1, NULL); /* no entries at all */
  check_text(ctx, "empty_rows.mtx", &t, RRT_MM_PATTERN_REFUSE);
  free(t.s);
}

/* Bad files: the serial message on every rank, wherever the problem is. */
static void bad_files(rrt_ctx_t ctx) {
  text t = {0};
  static const char *bad[] = {"7 7 nan", "3 1 -inf", "1 99 2", "x 1 1", "2 2", "4 4 1e999"};
  for (int b = 0; b < 6; b++) /* near the start, the middle and the end */
    for (int64_t at = 5 + 49 * b; at < 300; at += 145) {
      random_file(&t, "real general", 50, 300, F_COMMENTS, -1, at, bad[b]);
      check_text(ctx, "bad.mtx", &t, RRT_MM_PATTERN_REFUSE);
    }
  random_file(&t, "real general", 50, 300, F_COMMENTS, 400, -1, NULL); /* truncated */
  check_text(ctx, "truncated.mtx", &t, RRT_MM_PATTERN_REFUSE);
  for (int64_t decl = 0; decl < 300; decl += 99) { /* more entries than declared */
    random_file(&t, "real general", 50, 300, F_COMMENTS, decl, -1, NULL);
    check_text(ctx, "extra.mtx", &t, RRT_MM_PATTERN_REFUSE);
    for (int64_t after = 0; after < 50; after += 40) { /* a bad line at or after the last */
      random_file(&t, "real general", 50, 300, F_COMMENTS, decl, decl + after, "bad line");
      check_text(ctx, "extra_bad.mtx", &t, RRT_MM_PATTERN_REFUSE);
    }
  }
  random_file(&t, "real symmetric", 50, 300, 0, -1, -1, NULL); /* upper triangle entries */
  check_text(ctx, "upper.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "pattern general", 50, 30, 0, -1, -1, NULL); /* pattern refused */
  check_text(ctx, "pattern.mtx", &t, RRT_MM_PATTERN_REFUSE);
  random_file(&t, "real general", 50, 300, 0, -1, 150, "1 1 1"); /* a NUL byte in a line */
  char *p = strstr(t.s + t.n / 2, "1 1 1");
  p[1] = 0;
  check_text(ctx, "nul.mtx", &t, RRT_MM_PATTERN_REFUSE);
  t.n = 0;
  add(&t, "%%%%MatrixMarket matrix array real general\n1 1\n");
  check_text(ctx, "array.mtx", &t, RRT_MM_PATTERN_REFUSE);
  t.n = 0;
  add(&t, "%s", "");
  check_text(ctx, "void.mtx", &t, RRT_MM_PATTERN_REFUSE);
  check_same(ctx, dir, RRT_MM_PATTERN_REFUSE); /* a directory */
  check_same(ctx, "/nonexistent/x.mtx", RRT_MM_PATTERN_REFUSE);
  free(t.s);
}

/* Different n on one rank: every rank fails at once, naming the mismatch. */
static void n_mismatch(rrt_ctx_t ctx) {
  if (nranks < 2) return;
  int64_t rowptr[2] = {0, 1}, col[1];
  double val[1] = {1.0};
  int64_t n = nranks + (rank == 1);
  col[0] = rank;
  rrt_sparse_t A = NULL;
  double t0 = MPI_Wtime();
  rrt_status st = rrt_sparse_create(ctx, n, rank, 1, rowptr, col, val, &A);
  double dt = MPI_Wtime() - t0;
  CHECK_MSG(st == RRT_ERR_INVALID_ARG, "got %s", rrt_status_string(st));
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "different global n") != NULL, "message '%s'",
            rrt_ctx_last_error(ctx));
  CHECK_MSG(dt < 5.0, "took %.1f s (the timeout is %.0f s)", dt, rrt_ctx_timeout(ctx));
  rrt_sparse_destroy(A);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  rrt_ctx_t ctx = NULL;
  if (rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx) != RRT_SUCCESS) {
    MPI_Finalize();
    return 1;
  }
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(dir, sizeof dir, "%s/rrt_mm_rows_%d", rrt_test_tmpdir(), pid);
  if (rank == 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    CHECK(system(cmd) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  good_files(ctx);
  bad_files(ctx);
  n_mismatch(ctx);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
  }
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* SEACells inputs and partition, single process:
 * - cell_blocks: whole blocks per rank, contiguous cover, owner() agrees,
 *   boundaries independent of the rank count;
 * - CSV: header and row names detected, values exact, NaN parsed (the run
 *   refuses it later), malformed rows name FILE:LINE, missing file;
 * - h5ad (pbmc68k_reduced): shape of obsm/X_pca, a row block equals the
 *   same rows of the whole read, obs names, the bulk_labels categorical,
 *   missing key / wrong shape / missing file errors naming the key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/csv_matrix.h"
#include "io/h5ad.h"
#include "sched/cell_blocks.h"
#include "test_util.h"

static void test_cell_blocks(void) {
  int64_t sizes[] = {0, 1, 63, 64, 65, 1000, 4097};
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++)
    for (int P = 1; P <= 5; P++) {
      int64_t n = sizes[t];
      rrt_cell_blocks pl;
      CHECK_OK(rrt_cell_blocks_create(n, P, 64, &pl));
      CHECK(pl.nblocks == (n + 63) / 64);
      CHECK(pl.cell_start[0] == 0 && pl.cell_start[P] == n);
      CHECK(pl.blk_start[0] == 0 && pl.blk_start[P] == pl.nblocks);
      for (int r = 0; r < P; r++) {
        CHECK(pl.cell_start[r] <= pl.cell_start[r + 1]);
        /* a rank starts on a block boundary (or at n): sums per block never cross ranks */
        CHECK(pl.cell_start[r] == n || pl.cell_start[r] % 64 == 0);
        CHECK(pl.cell_start[r] == (pl.blk_start[r] * 64 < n ? pl.blk_start[r] * 64 : n));
        /* even: block counts differ by at most one */
        int64_t nb = pl.blk_start[r + 1] - pl.blk_start[r];
        CHECK(nb == pl.nblocks / P || nb == pl.nblocks / P + 1);
        for (int64_t c = pl.cell_start[r]; c < pl.cell_start[r + 1]; c += 17)
          CHECK_MSG(rrt_cell_blocks_owner(&pl, c) == r, "n %lld P %d cell %lld", (long long)n, P,
                    (long long)c);
      }
      if (n > 0) CHECK(rrt_cell_blocks_owner(&pl, n - 1) >= 0);
      rrt_cell_blocks_destroy(&pl);
    }
  rrt_cell_blocks pl;
  CHECK(rrt_cell_blocks_create(-1, 2, 0, &pl) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_cell_blocks_create(10, 0, 0, &pl) == RRT_ERR_INVALID_ARG);
}

static const char *write_file(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s", name);
  FILE *f = fopen(path, "w");
  if (f) fputs(text, f), fclose(f);
  return path;
}

static void test_csv(void) {
  char err[512];
  rrt_csv_matrix m;
  /* header + row names + a comment and a blank line */
  const char *p =
      write_file("sc_io_good.csv", "cell,pc1,pc2,pc3\n# comment\nA,1,2.5,-3\n\nB,4e-1,nan,6\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 2 && m.cols == 3);
  CHECK(m.header.count == 4 && !strcmp(m.header.items[1], "pc1"));
  CHECK(m.row_names.count == 2 && !strcmp(m.row_names.items[1], "B"));
  CHECK(m.data && m.data[0] == 1.0 && m.data[1] == 2.5 && m.data[2] == -3.0 && m.data[3] == 0.4);
  CHECK(m.data && isnan(m.data[4]) && m.data[5] == 6.0);
  rrt_csv_matrix_free(&m);
  /* plain numbers, no header */
  p = write_file("sc_io_plain.csv", "1.5,2\n3,4\n5,6\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 3 && m.cols == 2 && m.header.count == 0 && m.row_names.count == 0);
  CHECK(m.data && m.data[0] == 1.5 && m.data[5] == 6.0);
  rrt_csv_matrix_free(&m);
  /* the header rule: column numbers 0..d-1 or 1..d (pandas' to_csv of a
   * plain array writes "0,1,2") are a header; other integers are
   * ambiguous and need --header; a named row of reals is a cell */
  p = write_file("sc_io_colnums.csv", "0,1,2\n0.5,1,2\n3,4,5\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 2 && m.cols == 3 && m.header.count == 3 && m.data && m.data[0] == 0.5);
  rrt_csv_matrix_free(&m);
  p = write_file("sc_io_colnums1.csv", "1,2\n0.5,1\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 1 && m.header.count == 2);
  rrt_csv_matrix_free(&m);
  CHECK_OK(rrt_csv_read_matrix(p, 0, &m, err, sizeof err)); /* --header no */
  CHECK(m.rows == 2 && m.header.count == 0 && m.data && m.data[0] == 1.0);
  rrt_csv_matrix_free(&m);
  p = write_file("sc_io_ints.csv", "3,7\n0.5,1\n");
  CHECK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "sc_io_ints.csv:1") && strstr(err, "--header yes|no"), "message: %s", err);
  CHECK_OK(rrt_csv_read_matrix(p, 1, &m, err, sizeof err)); /* --header yes */
  CHECK(m.rows == 1 && m.header.count == 2);
  rrt_csv_matrix_free(&m);
  p = write_file("sc_io_named.csv", "a,0.5,1\nb,2,3\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 2 && m.cols == 2 && m.header.count == 0 && m.row_names.count == 2);
  rrt_csv_matrix_free(&m);
  remove("sc_io_colnums.csv"), remove("sc_io_colnums1.csv"), remove("sc_io_ints.csv");
  remove("sc_io_named.csv");
  /* pandas' to_csv over integer column names: the header ",0,1" is all
   * numbers but its empty first field labels the row-name column */
  p = write_file("sc_io_pandas.csv", ",0,1\n0,0.5,1.5\n1,2.5,3.5\n2,4.5,5.5\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK_MSG(m.rows == 3 && m.cols == 2 && m.header.count == 3, "pandas: %lld x %lld, header %lld",
            (long long)m.rows, (long long)m.cols, (long long)m.header.count);
  CHECK(m.row_names.count == 3 && !strcmp(m.row_names.items[2], "2"));
  CHECK(m.data && m.data[0] == 0.5 && m.data[5] == 5.5);
  rrt_csv_matrix_free(&m);
  /* R's write.csv: quoted row numbers are names, not a coordinate; a
   * quoted name with a separator inside stays one field */
  p = write_file("sc_io_r.csv", "\"\",\"a\",\"b\"\n\"1\",0.5,1.5\n\"x,2\",2.5,3.5\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK_MSG(m.rows == 2 && m.cols == 2, "R: %lld x %lld", (long long)m.rows, (long long)m.cols);
  CHECK(m.row_names.count == 2 && !strcmp(m.row_names.items[0], "1") &&
        !strcmp(m.row_names.items[1], "x,2"));
  CHECK(m.data && m.data[0] == 0.5 && m.data[3] == 3.5);
  rrt_csv_matrix_free(&m);
  /* R's write.table: no label over the name column */
  p = write_file("sc_io_rt.csv", "\"a\",\"b\"\n\"1\",0.5,1.5\n\"2\",2.5,3.5\n");
  CHECK_OK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err));
  CHECK(m.rows == 2 && m.cols == 2 && m.row_names.count == 2 && m.header.count == 2);
  rrt_csv_matrix_free(&m);
  remove("sc_io_pandas.csv"), remove("sc_io_r.csv"), remove("sc_io_rt.csv");
  /* malformed: the message names file:line */
  p = write_file("sc_io_bad.csv", "1,2\n3,4\n5,x\n");
  CHECK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err) != RRT_SUCCESS);
  CHECK_MSG(strstr(err, "sc_io_bad.csv:3") != NULL, "message: %s", err);
  p = write_file("sc_io_ragged.csv", "1.5,2\n3,4,5\n");
  CHECK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err) != RRT_SUCCESS);
  CHECK_MSG(strstr(err, "sc_io_ragged.csv:2") != NULL, "message: %s", err);
  p = write_file("sc_io_empty.csv", "# nothing\n");
  CHECK(rrt_csv_read_matrix(p, -1, &m, err, sizeof err) != RRT_SUCCESS);
  CHECK(rrt_csv_read_matrix("sc_io_missing.csv", -1, &m, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "sc_io_missing.csv") != NULL, "message: %s", err);
  remove("sc_io_good.csv"), remove("sc_io_plain.csv"), remove("sc_io_bad.csv");
  remove("sc_io_ragged.csv"), remove("sc_io_empty.csv");
}

#if !RINGRT_HAVE_HDF5
/* A build without HDF5: every .h5ad entry point refuses, naming the file and
 * the reason, and leaves no allocation behind. */
static void test_h5ad(void) {
  const char *f = "sc_io_any.h5ad";
  char err[512];
  int64_t rows = -1, cols = -1, nc = 0;
  double *x = (double *)&rows;
  int32_t *codes = (int32_t *)&rows;
  rrt_strings names = {0, NULL};
  CHECK(rrt_h5ad_matrix_shape(f, "X_pca", &rows, &cols, err, sizeof err) == RRT_ERR_UNSUPPORTED);
  CHECK_MSG(strstr(err, f) && strstr(err, "built without HDF5"), "message: %s", err);
  err[0] = 0;
  CHECK(rrt_h5ad_read_matrix_rows(f, "X_pca", 0, 1, &x, &cols, err, sizeof err) ==
        RRT_ERR_UNSUPPORTED);
  CHECK_MSG(x == NULL && strstr(err, f) && strstr(err, "without HDF5"), "message: %s", err);
  err[0] = 0;
  CHECK(rrt_h5ad_read_obs_names(f, &names, err, sizeof err) == RRT_ERR_UNSUPPORTED);
  CHECK_MSG(names.count == 0 && strstr(err, f), "message: %s", err);
  err[0] = 0;
  CHECK(rrt_h5ad_read_categorical(f, "c", &codes, &nc, &names, err, sizeof err) ==
        RRT_ERR_UNSUPPORTED);
  CHECK_MSG(codes == NULL && strstr(err, f), "message: %s", err);
}
#else
static void test_h5ad(void) {
  const char *f = RINGRT_SHARED_DATA "/singlecell/pbmc68k_reduced.h5ad";
  char err[512];
  int64_t rows = 0, cols = 0;
  CHECK_OK(rrt_h5ad_matrix_shape(f, "X_pca", &rows, &cols, err, sizeof err));
  CHECK_MSG(rows == 700 && cols == 50, "X_pca is %lld x %lld", (long long)rows, (long long)cols);
  double *all = NULL, *blk = NULL;
  int64_t c1 = 0, c2 = 0;
  CHECK_OK(rrt_h5ad_read_matrix_rows(f, "X_pca", 0, 700, &all, &c1, err, sizeof err));
  CHECK_OK(rrt_h5ad_read_matrix_rows(f, "X_pca", 123, 45, &blk, &c2, err, sizeof err));
  CHECK(c1 == 50 && c2 == 50);
  if (all && blk) {
    CHECK(memcmp(blk, all + 123 * 50, 45 * 50 * sizeof(double)) == 0);
    int finite = 1;
    double s = 0;
    for (int i = 0; i < 700 * 50; i++)
      finite &= isfinite(all[i]), s += fabs(all[i]);
    CHECK(finite && s > 0);
  }
  free(all), free(blk);
  CHECK(rrt_h5ad_read_matrix_rows(f, "X_pca", 690, 20, &blk, &c2, err, sizeof err) != RRT_SUCCESS);
  rrt_strings names = {0, NULL}, cats = {0, NULL};
  CHECK_OK(rrt_h5ad_read_obs_names(f, &names, err, sizeof err));
  CHECK(names.count == 700 && names.items && strlen(names.items[0]) > 0);
  int32_t *codes = NULL;
  int64_t nc = 0;
  CHECK_OK(rrt_h5ad_read_categorical(f, "bulk_labels", &codes, &nc, &cats, err, sizeof err));
  CHECK(nc == 700 && cats.count >= 2);
  int ok = 1;
  for (int64_t i = 0; codes && i < nc; i++)
    ok &= codes[i] >= -1 && codes[i] < cats.count;
  CHECK(ok);
  free(codes);
  rrt_strings_free(&names), rrt_strings_free(&cats);
  /* errors name the file and the key */
  CHECK(rrt_h5ad_matrix_shape(f, "nope", &rows, &cols, err, sizeof err) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "obsm/nope") && strstr(err, "pbmc68k_reduced.h5ad"), "message: %s", err);
  CHECK(rrt_h5ad_matrix_shape(f, "obs/bulk_labels/codes", &rows, &cols, err, sizeof err) ==
        RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "2-D"), "wrong shape message: %s", err);
  CHECK(rrt_h5ad_read_categorical(f, "nope", &codes, &nc, &cats, err, sizeof err) != RRT_SUCCESS);
  CHECK_MSG(strstr(err, "obs/nope"), "message: %s", err);
  CHECK(rrt_h5ad_matrix_shape("sc_io_missing.h5ad", "X_pca", &rows, &cols, err, sizeof err) ==
        RRT_ERR_IO);
  CHECK_MSG(strstr(err, "sc_io_missing.h5ad"), "message: %s", err);
}
#endif

int main(void) {
  test_cell_blocks();
  test_csv();
  test_h5ad();
  return test_result();
}

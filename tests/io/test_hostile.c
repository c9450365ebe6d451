/* Crafted inputs that used to wrap size arithmetic or claim memory the file
 * cannot justify (issue "Reliability as HPC users need it"): every one must
 * fail cleanly with a message naming the file, and quickly (a run that tries
 * to allocate or touch gigabytes shows as a timeout or an OOM kill). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if RINGRT_HAVE_HDF5
#include <hdf5.h>
#endif

#include "io/csv_matrix.h"
#include "io/h5ad.h"
#include "io/mmio.h"
#include "io/npy.h"
#include "test_util.h"

static char dir[256];

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* An .npy file of header only: magic, version 1.0, the dict padded to 64. */
static void write_npy_header(const char *path, const char *dict) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  size_t n = strlen(dict), total = 10 + n + 1, pad = (64 - total % 64) % 64, hlen = n + pad + 1;
  unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)hlen, (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(dict, 1, n, f);
  for (size_t i = 0; i < pad; i++)
    fputc(' ', f);
  fputc('\n', f);
  fclose(f);
}

/* The message starts with "PATH:LINE:" (line > 0) or "PATH:" and says why. */
static void check_message(const char *what, const char *err, const char *path, int line,
                          const char *reason) {
  char want[600];
  if (line > 0)
    snprintf(want, sizeof want, "%s:%d:", path, line);
  else
    snprintf(want, sizeof want, "%s:", path);
  CHECK_MSG(strncmp(err, want, strlen(want)) == 0, "%s: '%s' does not start with '%s'", what, err,
            want);
  CHECK_MSG(strstr(err, reason) != NULL, "%s: '%s' lacks '%s'", what, err, reason);
}

static void mm_bad(const char *name, const char *text, int line, const char *reason) {
  char path[512], err[512] = "";
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_text(path, text);
  rrt_csr a;
  rrt_status st = rrt_mm_read(path, RRT_MM_PATTERN_ONES, &a, NULL, err, sizeof err);
  CHECK_MSG(st != RRT_SUCCESS, "%s accepted", name);
  CHECK(a.rowptr == NULL && a.col == NULL && a.val == NULL);
  check_message(name, err, path, line, reason);
}

static void vec_bad(const char *name, const char *text, int line, const char *reason) {
  char path[512], err[512] = "";
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_text(path, text);
  double *x = NULL;
  int64_t n = -1;
  rrt_status st = rrt_mm_read_vector(path, &x, &n, err, sizeof err);
  CHECK_MSG(st != RRT_SUCCESS, "%s accepted", name);
  CHECK(x == NULL && n == 0);
  check_message(name, err, path, line, reason);
}

static void npy_bad(const char *name, const char *dict, const char *reason) {
  char path[512], err[512] = "";
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_npy_header(path, dict);
  rrt_npy a;
  rrt_status st = rrt_npy_read(path, &a, err, sizeof err);
  CHECK_MSG(st != RRT_SUCCESS, "%s accepted (data %p, %zu elements)", name, a.data, a.count);
  CHECK(a.data == NULL);
  check_message(name, err, path, 0, reason);
}

#if RINGRT_HAVE_HDF5
/* A valid small .h5ad whose obs/_index declares 2^40 variable-length strings
 * (chunked, never written, so the file stays tiny). */
static void write_h5ad_huge_index(const char *path) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t obs = H5Gcreate2(f, "obs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = (hsize_t)1 << 40, chunk = 1024;
  hid_t sp = H5Screate_simple(1, &n, NULL), ty = H5Tcopy(H5T_C_S1);
  H5Tset_size(ty, H5T_VARIABLE);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 1, &chunk);
  hid_t ds = H5Dcreate2(obs, "_index", ty, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  CHECK(f >= 0 && obs >= 0 && ds >= 0);
  H5Dclose(ds), H5Pclose(dcpl), H5Tclose(ty), H5Sclose(sp), H5Gclose(obs), H5Fclose(f);
}
#endif

int main(void) {
  snprintf(dir, sizeof dir, "%s/rrt_test_hostile_%d", rrt_test_tmpdir(), (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CHECK(system(cmd) == 0);
  const char *hdr = "%%MatrixMarket matrix coordinate real general\n";
  char buf[1024];

  /* 2^31 x 2^31 with 2^61 entries: 2 * 2^61 triplets of 24 bytes wrapped the
   * allocation to a few bytes before, and the entry loop wrote past it. */
  snprintf(buf, sizeof buf, "%s2147483648 2147483648 2305843009213693952\n1 1 1\n2 2 1\n", hdr);
  mm_bad("wrap.mtx", buf, 5, "truncated file");
  /* The same with a symmetric file (entries mirrored: twice the triplets). */
  snprintf(buf, sizeof buf,
           "%%%%MatrixMarket matrix coordinate real symmetric\n"
           "2147483648 2147483648 2305843009213693952\n1 1 1\n");
  mm_bad("wrap_sym.mtx", buf, 4, "truncated file");
  /* Products of the dimensions past 2^63 must not wrap the "fits" check. */
  snprintf(buf, sizeof buf, "%s9223372036854775807 9223372036854775807 3\n1 1 1\n", hdr);
  mm_bad("huge_dims.mtx", buf, 4, "truncated file");
  snprintf(buf, sizeof buf, "%s3 3 10\n", hdr);
  mm_bad("overfull.mtx", buf, 2, "cannot fit");
  /* 10^9 rows declared by a 60-byte file: refused before 16 GB of row
   * pointers are claimed, with the size line named. */
  snprintf(buf, sizeof buf, "%s1000000000 1000000000 1\n1 1 1\n", hdr);
  mm_bad("rows.mtx", buf, 2, "rows would be empty");
  /* Dense vector of 10^9 values in a tiny file: truncated, no 8 GB calloc. */
  vec_bad("vec_trunc.mtx", "%%MatrixMarket matrix array real general\n1000000000 1\n1\n2\n", 5,
          "truncated file");
  /* A sparse vector of length 2^62 with one entry: refused, not allocated. */
  vec_bad("vec_sparse.mtx",
          "%%MatrixMarket matrix coordinate real general\n4611686018427387904 1 1\n1 1 5\n", 2,
          "rows would be empty");

  /* Found by the fuzzer: the Laplacian of a non-square pattern put its
   * diagonal in columns that do not exist (an invalid CSR, returned). */
  {
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/pattern_6x4.mtx", dir);
    write_text(path, "%%MatrixMarket matrix coordinate pattern general\n6 4 2\n1 1\n6 4\n");
    rrt_csr a;
    CHECK(rrt_mm_read(path, RRT_MM_PATTERN_LAPLACIAN, &a, NULL, err, sizeof err) == RRT_ERR_IO);
    check_message("pattern_6x4.mtx", err, path, 2, "need a square matrix, got 6 x 4");
    CHECK_OK(rrt_mm_read(path, RRT_MM_PATTERN_ONES, &a, NULL, err, sizeof err));
    rrt_csr_free(&a);
  }
  /* Found by the fuzzer: a CSV header with a field count that matches
   * neither the data columns nor the data columns and the name column was
   * kept, pairing names with the wrong columns. */
  {
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/header.csv", dir);
    write_text(path, "a,b,c,d\nr1,1,2\nr2,3,4\n");
    rrt_csv_matrix m;
    CHECK(rrt_csv_read_matrix(path, -1, &m, err, sizeof err) == RRT_ERR_IO);
    check_message("header.csv", err, path, 1, "the header has 4 fields, the data rows (line 2) 3");
    write_text(path, "a,b\nr1,1,2\nr2,3,4\n"); /* R's write.table: no label for names */
    CHECK_OK(rrt_csv_read_matrix(path, -1, &m, err, sizeof err));
    CHECK(m.header.count == 2 && m.row_names.count == 2 && m.cols == 2);
    rrt_csv_matrix_free(&m);
  }

  /* (2^30, 2^31) <f8 = 2^64 bytes wrapped to 0 and passed the size check. */
  npy_bad("wrap.npy",
          "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, 2147483648), }",
          "shape too large");
  npy_bad("wrap1.npy",
          "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }",
          "shape too large");
  /* Large but representable: reported as truncated data, not allocated. */
  npy_bad("big.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000), }",
          "truncated data");

#if RINGRT_HAVE_HDF5
  /* .h5ad: 2^40 cell names declared; calloc failed and the error path
   * dereferenced NULL before. (Without HDF5: tests/seacells/test_seacells_io.c
   * checks the "built without HDF5" error.) */
  {
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/huge_index.h5ad", dir);
    write_h5ad_huge_index(path);
    rrt_strings names = {0};
    rrt_status st = rrt_h5ad_read_obs_names(path, &names, err, sizeof err);
    CHECK_MSG(st != RRT_SUCCESS, "huge_index.h5ad accepted (%lld names)", (long long)names.count);
    CHECK(names.items == NULL && names.count == 0);
    check_message("huge_index.h5ad", err, path, 0, "1099511627776 strings");
  }
#endif

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return test_result();
}

/* .npy round trips for every supported dtype and the errors on malformed
 * files: bad magic, truncated header, truncated data, trailing bytes,
 * unsupported dtype, Fortran order; every message names the file. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/npy.h"
#include "test_util.h"

static char dir[256];

static void path_of(char *p, size_t n, const char *name) { snprintf(p, n, "%s/%s", dir, name); }

static void write_raw(const char *path, const char *hdr_dict, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  size_t n = strlen(hdr_dict);
  size_t total = 10 + n + 1, pad = (64 - total % 64) % 64, hlen = n + pad + 1;
  unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)hlen, (unsigned char)(hlen >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(hdr_dict, 1, n, f);
  for (size_t i = 0; i < pad; i++)
    fputc(' ', f);
  fputc('\n', f);
  if (bytes) fwrite(data, 1, bytes, f);
  fclose(f);
}

static void expect_error(const char *name, rrt_status want, const char *needle) {
  char p[512], err[512] = "";
  path_of(p, sizeof p, name);
  rrt_npy a;
  rrt_status st = rrt_npy_read(p, &a, err, sizeof err);
  CHECK_MSG(st == want, "%s: status %d, want %d (%s)", name, st, want, err);
  CHECK_MSG(strstr(err, p) != NULL, "%s: message does not name the file: %s", name, err);
  CHECK_MSG(strstr(err, needle) != NULL, "%s: message lacks '%s': %s", name, needle, err);
  CHECK(a.data == NULL);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/rrt_test_npy_%d", rrt_test_tmpdir(), (int)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  CHECK(system(cmd) == 0);

  const char *descrs[] = {"<f4", "<f8", "<i4", "<i8", "<u2", "<f2", "|u1"};
  const size_t sizes[] = {4, 8, 4, 8, 2, 2, 1};
  unsigned char data[3 * 5 * 2 * 8];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (unsigned char)(i * 37 + 11);
  for (int t = 0; t < 7; t++)
    for (int nd = 0; nd <= 3; nd++) {
      int64_t shape[3] = {3, 5, 2};
      size_t count = 1;
      for (int i = 0; i < nd; i++)
        count *= (size_t)shape[i];
      char p[512], err[512] = "";
      path_of(p, sizeof p, "rt.npy");
      CHECK_OK(rrt_npy_write(p, descrs[t], nd, shape, data, err, sizeof err));
      rrt_npy a;
      CHECK_OK(rrt_npy_read(p, &a, err, sizeof err));
      CHECK(strcmp(a.descr, descrs[t]) == 0 && a.ndim == nd && a.count == count &&
            a.elsize == sizes[t]);
      for (int i = 0; i < nd; i++)
        CHECK(a.shape[i] == shape[i]);
      CHECK(a.data && memcmp(a.data, data, count * sizes[t]) == 0);
      rrt_npy_free(&a);
      /* header is 64-byte aligned as NumPy requires */
      FILE *f = fopen(p, "rb");
      unsigned char pre[10];
      CHECK(fread(pre, 1, 10, f) == 10);
      fclose(f);
      CHECK((10 + (pre[8] | pre[9] << 8)) % 64 == 0);
    }
  /* a file as NumPy writes it (version 1.0, spaces, trailing comma) */
  char p[512];
  path_of(p, sizeof p, "numpy.npy");
  float vals[6] = {1, 2, 3, 4, 5, 6};
  write_raw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", vals, sizeof vals);
  rrt_npy a;
  char err[512];
  CHECK_OK(rrt_npy_read(p, &a, err, sizeof err));
  CHECK(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && ((float *)a.data)[5] == 6.0f);
  rrt_npy_free(&a);

  path_of(p, sizeof p, "trunc.npy");
  write_raw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", vals, 20);
  expect_error("trunc.npy", RRT_ERR_IO, "truncated");
  path_of(p, sizeof p, "trail.npy");
  write_raw(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }", vals, 16);
  expect_error("trail.npy", RRT_ERR_IO, "trailing");
  path_of(p, sizeof p, "big.npy");
  write_raw(p, "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", vals, sizeof vals);
  expect_error("big.npy", RRT_ERR_INVALID_ARG, ">f4");
  path_of(p, sizeof p, "fortran.npy");
  write_raw(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", vals, sizeof vals);
  expect_error("fortran.npy", RRT_ERR_INVALID_ARG, "Fortran");
  path_of(p, sizeof p, "noshape.npy");
  write_raw(p, "{'descr': '<f4', 'fortran_order': False, }", vals, sizeof vals);
  expect_error("noshape.npy", RRT_ERR_IO, "shape");
  path_of(p, sizeof p, "magic.npy");
  FILE *f = fopen(p, "wb");
  fputs("PK\003\004 this is a zip, not an npy", f);
  fclose(f);
  expect_error("magic.npy", RRT_ERR_IO, "magic");
  path_of(p, sizeof p, "short.npy");
  f = fopen(p, "wb");
  fwrite("\x93NUMPY\x01\x00\x40\x00{'descr'", 1, 18, f);
  fclose(f);
  expect_error("short.npy", RRT_ERR_IO, "truncated header");
  expect_error("missing.npy", RRT_ERR_IO, "cannot open");

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return test_result();
}

/* Writes the seed corpora of the fuzz harnesses: small valid files of each
 * format, made by the library's own writers where it has them (npy, Matrix
 * Market) and by the HDF5 C library in the AnnData layout for .h5ad.
 *   gen_seeds OUTDIR   ->  OUTDIR/{npy,mm,csv,h5ad,int_list}/...
 * Generated at test time (the CTest fixture fuzz.seeds, and bench/fuzz.sh)
 * so no binary corpus is kept in the repository. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/h5ad.h"
#include "io/mmio.h"
#include "io/npy.h"

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "gen_seeds: %s failed\n", what);
    failures++;
  }
}

static void subdir(char *out, size_t len, const char *root, const char *name) {
  snprintf(out, len, "%s/%s", root, name);
  mkdir(root, 0777);
  mkdir(out, 0777);
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  expect(f && fputs(text, f) >= 0 && fclose(f) == 0, path);
}

static void seeds_npy(const char *root) {
  char dir[1024], path[1100], err[512];
  subdir(dir, sizeof dir, root, "npy");
  static const struct {
    const char *descr;
    int ndim;
    int64_t shape[3];
  } cases[] = {{"<f8", 2, {4, 3}},    {"<f4", 2, {5, 2}}, {"<i8", 1, {6}},
               {"<i4", 3, {2, 2, 2}}, {"<u2", 1, {3}},    {"<f2", 2, {2, 2}},
               {"|u1", 1, {16}},      {"<f8", 2, {0, 3}}, {"<f8", 0, {0}}};
  unsigned char data[256];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (unsigned char)(i * 37 + 11);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    snprintf(path, sizeof path, "%s/seed%zu.npy", dir, c);
    expect(rrt_npy_write(path, cases[c].descr, cases[c].ndim, cases[c].shape, data, err,
                         sizeof err) == RRT_SUCCESS,
           path);
  }
}

static void seeds_mm(const char *root) {
  char dir[1024], path[1100], err[512];
  subdir(dir, sizeof dir, root, "mm");
  int64_t rows[] = {0, 0, 1, 2, 2, 3}, cols[] = {0, 2, 1, 0, 2, 3};
  double vals[] = {4, -1, 3.5, -2, 5, 1e-3};
  rrt_csr a;
  expect(rrt_csr_from_triplets(4, 4, 6, rows, cols, vals, &a) == RRT_SUCCESS, "triplets");
  snprintf(path, sizeof path, "%s/general.mtx", dir);
  expect(rrt_mm_write(path, &a, "written by rrt_mm_write", err, sizeof err) == RRT_SUCCESS, path);
  rrt_csr_free(&a);
  write_text(dir, "symmetric.mtx",
             "%%MatrixMarket matrix coordinate real symmetric\n% comment\n3 3 4\n1 1 2\n2 1 "
             "-1\n2 2 2\n3 3 1.5e0\n");
  write_text(dir, "skew.mtx",
             "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n3 2 -7\n");
  write_text(dir, "pattern.mtx",
             "%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 1\n1 4\n2 2\n3 1\n");
  write_text(dir, "dups.mtx",
             "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n1 1 2\n\n2 2 3\n");
  write_text(dir, "vector_array.mtx",
             "%%MatrixMarket matrix array real general\n4 1\n1.0\n-2.5\n3e2\n0\n");
  write_text(dir, "vector_coord.mtx",
             "%%MatrixMarket matrix coordinate real general\r\n5 1 2\r\n2 1 7\r\n5 1 -1\r\n");
}

static void seeds_csv(const char *root) {
  char dir[1024];
  subdir(dir, sizeof dir, root, "csv");
  write_text(dir, "plain.csv", "1,2,3\n4,5,6\n-7.5,8e-3,nan\n");
  write_text(dir, "header_names.csv", "cell,pc1,pc2\nAAAC-1,0.5,1.5\nAAAG-1,-2,3\n");
  write_text(dir, "quoted.csv", "\"\",\"a\",\"b\"\n\"c1\",1,2\n\"c2\",3,4\n");
  write_text(dir, "tabs_comments.csv", "# comment\n1\t2\n\n3\t4\r\n");
  write_text(dir, "semicolon.csv", "x;y\n1;2\n3;inf\n");
}

static void seeds_int_list(const char *root) {
  char dir[1024];
  subdir(dir, sizeof dir, root, "int_list");
  write_text(dir, "archetypes.txt", "0\n5\n17\n3\n");
  write_text(dir, "comments.txt", "# archetypes\n\n12  # first\n  7\n+4\r\n");
  write_text(dir, "cu_seqlens.txt", "0\n128\n128\n4096\n9223372036854775807\n");
}

/* ---- .h5ad in the AnnData layout ------------------------------------------ */

static void string_attr(hid_t obj, const char *name, const char *value) {
  hid_t ty = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(ty, H5T_VARIABLE);
  H5Tset_cset(ty, H5T_CSET_UTF8);
  hid_t a = H5Acreate2(obj, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
  expect(a >= 0 && H5Awrite(a, ty, &value) >= 0, name);
  H5Aclose(a), H5Sclose(sp), H5Tclose(ty);
}

/* A 1-D string dataset: variable length (anndata's way) or fixed width. */
static void string_dataset(hid_t loc, const char *name, const char **items, hsize_t n, int fixed) {
  hid_t ty = H5Tcopy(H5T_C_S1), sp = H5Screate_simple(1, &n, NULL);
  size_t w = 8;
  char buf[64][8];
  H5Tset_size(ty, fixed ? w : H5T_VARIABLE);
  H5Tset_cset(ty, H5T_CSET_UTF8);
  hid_t ds = H5Dcreate2(loc, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const void *data = items;
  if (fixed) {
    for (hsize_t i = 0; i < n && i < 64; i++)
      strncpy(buf[i], items[i], w);
    data = buf;
  }
  expect(ds >= 0 && H5Dwrite(ds, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0, name);
  H5Dclose(ds), H5Sclose(sp), H5Tclose(ty);
}

/* A seed must be read back whole: a reader that refuses a valid file fails
 * here (the replay alone would not notice, any outcome but a crash passes). */
static void check_h5ad(const char *path, int64_t n, int64_t d) {
  char err[512] = "";
  double *x = NULL;
  int64_t cols = 0, nc = 0;
  rrt_strings names = {0}, cats = {0};
  int32_t *codes = NULL;
  if (rrt_h5ad_read_matrix_rows(path, "X_pca", 0, n, &x, &cols, err, sizeof err) || cols != d ||
      x[d + 1] != 0.25 * (d + 1) - 1.0 || rrt_h5ad_read_obs_names(path, &names, err, sizeof err) ||
      names.count != n || strcmp(names.items[1], "AAAG-1") ||
      rrt_h5ad_read_categorical(path, "bulk_labels", &codes, &nc, &cats, err, sizeof err) ||
      nc != n || cats.count != 3 || codes[1] != 2 || codes[3] != -1 ||
      strcmp(cats.items[1], "CD4+ T"))
    expect(0, err[0] ? err : path);
  free(x), free(codes);
  rrt_strings_free(&names), rrt_strings_free(&cats);
}

typedef struct h5ad_seed {
  const char *name;
  int latest;     /* newest file format (compact groups) instead of the oldest */
  int fixed;      /* fixed-width strings instead of variable length */
  int f64;        /* float64 matrix instead of float32 */
  int chunked;    /* chunked (and deflated) matrix */
  int index_attr; /* obs carries the "_index" attribute */
  int userblock;  /* a 512-byte user block before the HDF5 data */
} h5ad_seed;

static void write_h5ad(const char *dir, const h5ad_seed *s) {
  enum { N = 6, D = 3 };
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, s->name);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (s->latest) H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (s->userblock) H5Pset_userblock(fcpl, 512);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
  H5Pclose(fcpl);
  expect(f >= 0, path);
  string_attr(f, "encoding-type", "anndata");
  hid_t obsm = H5Gcreate2(f, "obsm", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {N, D}, chunk[2] = {2, D};
  double x[N * D];
  for (int i = 0; i < N * D; i++)
    x[i] = 0.25 * i - 1.0;
  hid_t sp = H5Screate_simple(2, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (s->chunked) H5Pset_chunk(dcpl, 2, chunk), H5Pset_deflate(dcpl, 1);
  hid_t ds = H5Dcreate2(obsm, "X_pca", s->f64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE, sp, H5P_DEFAULT,
                        dcpl, H5P_DEFAULT);
  expect(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0,
         "X_pca");
  H5Dclose(ds), H5Pclose(dcpl), H5Sclose(sp), H5Gclose(obsm);

  hid_t obs = H5Gcreate2(f, "obs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char *cells[N] = {"AAAC-1", "AAAG-1", "AACT-1", "AAGA-1", "ACGT-1", "TTTT-1"};
  if (s->index_attr) string_attr(obs, "_index", "cell_id");
  string_dataset(obs, s->index_attr ? "cell_id" : "_index", cells, N, s->fixed);
  hid_t lab = H5Gcreate2(obs, "bulk_labels", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  string_attr(lab, "encoding-type", "categorical");
  const char *cats[3] = {"B", "CD4+ T", "NK"};
  string_dataset(lab, "categories", cats, 3, s->fixed);
  signed char codes[N] = {0, 2, 1, -1, 1, 0};
  hsize_t n = N;
  sp = H5Screate_simple(1, &n, NULL);
  ds = H5Dcreate2(lab, "codes", H5T_STD_I8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  expect(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_SCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, codes) >= 0,
         "codes");
  H5Dclose(ds), H5Sclose(sp), H5Gclose(lab), H5Gclose(obs);
  expect(H5Fclose(f) >= 0, path);
  H5Pclose(fapl);
  check_h5ad(path, N, D);
}

static void seeds_h5ad(const char *root) {
  char dir[1024];
  subdir(dir, sizeof dir, root, "h5ad");
  static const h5ad_seed seeds[] = {
      {"anndata.h5ad", 0, 0, 0, 0, 1, 0},
      {"latest_fixed.h5ad", 1, 1, 1, 0, 0, 0},
      {"chunked.h5ad", 1, 0, 0, 1, 1, 0},
      {"userblock.h5ad", 0, 0, 0, 0, 1, 1},
  };
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
    write_h5ad(dir, &seeds[i]);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_seeds OUTDIR\n");
    return 2;
  }
  seeds_npy(argv[1]);
  seeds_mm(argv[1]);
  seeds_csv(argv[1]);
  seeds_int_list(argv[1]);
  seeds_h5ad(argv[1]);
  return failures ? 1 : 0;
}

/* libFuzzer harness: the .h5ad readers on arbitrary bytes, with the keys of
 * the seed files (obsm/X_pca, obs/bulk_labels). Row blocks of the matrix
 * are read as the seacells tool reads its rank's share; the block is capped
 * at RRT_FUZZ_H5AD_VALUES values, since a dataset the file declares large
 * but never wrote (fill values) is a valid file, just not one to allocate
 * per input. Successful reads return what they declare: rows x cols
 * values, non-NULL strings, codes within the categories. */
#include "fuzz_util.h"
#include "io/h5ad.h"

#define RRT_FUZZ_H5AD_VALUES ((int64_t)1 << 20)

static void check_strings(const rrt_strings *s) {
  FUZZ_ASSERT(s->count >= 0);
  FUZZ_ASSERT(s->count == 0 || s->items != NULL);
  for (int64_t i = 0; i < s->count; i++) {
    FUZZ_ASSERT(s->items[i] != NULL);
    fuzz_touch(s->items[i], strlen(s->items[i]) + 1);
  }
}

static void read_block(const char *path, int64_t row0, int64_t nrows, int64_t want_cols) {
  char err[512] = "";
  double *x = NULL;
  int64_t cols = -1;
  if (rrt_h5ad_read_matrix_rows(path, "X_pca", row0, nrows, &x, &cols, err, sizeof err) ==
      RRT_SUCCESS) {
    FUZZ_ASSERT(x != NULL && cols == want_cols);
    fuzz_touch(x, (size_t)(nrows * cols) * sizeof(double));
    free(x);
  } else {
    FUZZ_ASSERT(x == NULL);
    fuzz_check_error(err, path);
  }
}

static void read_matrix(const char *path) {
  char err[512] = "";
  int64_t rows = -1, cols = -1;
  if (rrt_h5ad_matrix_shape(path, "X_pca", &rows, &cols, err, sizeof err) != RRT_SUCCESS) {
    fuzz_check_error(err, path);
    return;
  }
  FUZZ_ASSERT(rows >= 0 && cols >= 0);
  int64_t cap = cols > 0 ? RRT_FUZZ_H5AD_VALUES / cols : rows;
  read_block(path, 0, rows < cap ? rows : cap, cols);
  if (rows > 1) read_block(path, rows / 2, 1, cols);
  /* A block past the end is refused. */
  double *x = NULL;
  int64_t c = -1;
  FUZZ_ASSERT(rrt_h5ad_read_matrix_rows(path, "X_pca", rows, 1, &x, &c, err, sizeof err) !=
              RRT_SUCCESS);
  FUZZ_ASSERT(x == NULL);
}

static void read_names(const char *path) {
  char err[512] = "";
  rrt_strings names;
  if (rrt_h5ad_read_obs_names(path, &names, err, sizeof err) == RRT_SUCCESS) {
    check_strings(&names);
    rrt_strings_free(&names);
  } else {
    FUZZ_ASSERT(names.items == NULL && names.count == 0);
    fuzz_check_error(err, path);
  }
}

static void read_labels(const char *path) {
  char err[512] = "";
  int32_t *codes = NULL;
  int64_t n = -1;
  rrt_strings cats;
  if (rrt_h5ad_read_categorical(path, "bulk_labels", &codes, &n, &cats, err, sizeof err) ==
      RRT_SUCCESS) {
    FUZZ_ASSERT(codes != NULL && n >= 0);
    check_strings(&cats);
    for (int64_t i = 0; i < n; i++)
      FUZZ_ASSERT(codes[i] >= -1 && codes[i] < cats.count);
    free(codes);
    rrt_strings_free(&cats);
  } else {
    FUZZ_ASSERT(codes == NULL && n == 0 && cats.items == NULL);
    fuzz_check_error(err, path);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_input("h5ad", ".h5ad", data, size, path, sizeof path);
  read_matrix(path);
  read_names(path);
  read_labels(path);
  return 0;
}

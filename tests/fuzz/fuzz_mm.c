/* libFuzzer harness: the Matrix Market readers on arbitrary bytes, the
 * matrix (pattern values as the Laplacian, which builds a second CSR) and
 * the vector. A returned CSR is valid: row pointers start at 0, never
 * decrease and end at nnz; columns are in range and strictly increasing
 * within a row; sizes agree with the header facts. */
#include "fuzz_util.h"
#include "io/mmio.h"

static void check_csr(const rrt_csr *a, const rrt_mm_info *info) {
  FUZZ_ASSERT(a->nrows >= 0 && a->ncols >= 0 && a->nnz >= 0);
  FUZZ_ASSERT(a->rowptr != NULL && a->col != NULL && a->val != NULL);
  FUZZ_ASSERT(a->nrows == info->nrows && a->ncols == info->ncols);
  FUZZ_ASSERT(a->rowptr[0] == 0 && a->rowptr[a->nrows] == a->nnz);
  for (int64_t i = 0; i < a->nrows; i++) {
    FUZZ_ASSERT(a->rowptr[i] <= a->rowptr[i + 1]);
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
      FUZZ_ASSERT(a->col[p] >= 0 && a->col[p] < a->ncols);
      FUZZ_ASSERT(p == a->rowptr[i] || a->col[p - 1] < a->col[p]);
    }
  }
  fuzz_touch(a->val, (size_t)a->nnz * sizeof(double));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512], err[512] = "";
  fuzz_write_input("mm", ".mtx", data, size, path, sizeof path);
  rrt_csr a;
  rrt_mm_info info;
  if (rrt_mm_read(path, RRT_MM_PATTERN_LAPLACIAN, &a, &info, err, sizeof err) == RRT_SUCCESS) {
    check_csr(&a, &info);
    rrt_csr_free(&a);
  } else {
    FUZZ_ASSERT(a.rowptr == NULL && a.col == NULL && a.val == NULL);
    fuzz_check_error(err, path);
  }
  err[0] = 0;
  double *x = NULL;
  int64_t n = -1;
  if (rrt_mm_read_vector(path, &x, &n, err, sizeof err) == RRT_SUCCESS) {
    FUZZ_ASSERT(x != NULL && n >= 0);
    fuzz_touch(x, (size_t)n * sizeof(double));
    free(x);
  } else {
    FUZZ_ASSERT(x == NULL && n == 0);
    fuzz_check_error(err, path);
  }
  return 0;
}

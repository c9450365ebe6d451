/* libFuzzer harness: rrt_npy_read on arbitrary bytes. On success the
 * buffer holds exactly the declared shape (count = product of the shape,
 * count * elsize readable bytes). */
#include "fuzz_util.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512], err[512] = "";
  fuzz_write_input("npy", ".npy", data, size, path, sizeof path);
  rrt_npy a;
  rrt_status st = rrt_npy_read(path, &a, err, sizeof err);
  if (st != RRT_SUCCESS) {
    FUZZ_ASSERT(a.data == NULL);
    fuzz_check_error(err, path);
    return 0;
  }
  FUZZ_ASSERT(a.data != NULL);
  FUZZ_ASSERT(a.ndim >= 0 && a.ndim <= RRT_NPY_MAX_DIMS);
  FUZZ_ASSERT(a.elsize == 1 || a.elsize == 2 || a.elsize == 4 || a.elsize == 8);
  size_t count = 1;
  for (int i = 0; i < a.ndim; i++) {
    FUZZ_ASSERT(a.shape[i] >= 0);
    count *= (size_t)a.shape[i];
  }
  FUZZ_ASSERT(count == a.count);
  FUZZ_ASSERT(a.count <= size / a.elsize); /* the data came from the file */
  fuzz_touch(a.data, a.count * a.elsize);
  rrt_npy_free(&a);
  FUZZ_ASSERT(a.data == NULL);
  return 0;
}

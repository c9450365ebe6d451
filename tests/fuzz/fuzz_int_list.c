/* libFuzzer harness: rrt_int_list_read (--archetypes-in, --cu-seqlens
 * style files) on arbitrary bytes, plain and with the non-decreasing
 * check. A returned list is non-empty, non-negative and, when asked,
 * ordered. */
#include "fuzz_util.h"
#include "io/int_list.h"

static void read_one(const char *path, unsigned flags) {
  char err[512] = "";
  rrt_int_list l;
  if (rrt_int_list_read(path, flags, &l, err, sizeof err) != RRT_SUCCESS) {
    FUZZ_ASSERT(l.values == NULL && l.count == 0);
    fuzz_check_error(err, path);
    return;
  }
  FUZZ_ASSERT(l.count > 0 && l.values != NULL);
  for (int64_t i = 0; i < l.count; i++) {
    FUZZ_ASSERT(l.values[i] >= 0);
    FUZZ_ASSERT(!(flags & RRT_INT_LIST_NONDECREASING) || i == 0 || l.values[i - 1] <= l.values[i]);
  }
  rrt_int_list_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_input("intlist", ".txt", data, size, path, sizeof path);
  read_one(path, 0);
  read_one(path, RRT_INT_LIST_NONDECREASING);
  return 0;
}

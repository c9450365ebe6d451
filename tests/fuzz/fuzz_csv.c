/* libFuzzer harness: rrt_csv_read_matrix on arbitrary bytes, with the
 * header detected (what the tool does), forced on and forced off. A
 * returned matrix holds rows x cols values, one name per row when it has a
 * name column, and a header of cols fields (+ one for the name column). */
#include "fuzz_util.h"
#include "io/csv_matrix.h"

static void check_strings(const rrt_strings *s) {
  FUZZ_ASSERT(s->count >= 0);
  FUZZ_ASSERT(s->count == 0 || s->items != NULL);
  for (int64_t i = 0; i < s->count; i++)
    FUZZ_ASSERT(s->items[i] != NULL && strlen(s->items[i]) < (size_t)-1);
}

static void read_one(const char *path, int header) {
  char err[512] = "";
  rrt_csv_matrix m;
  if (rrt_csv_read_matrix(path, header, &m, err, sizeof err) != RRT_SUCCESS) {
    FUZZ_ASSERT(m.data == NULL && m.rows == 0 && m.row_names.items == NULL);
    fuzz_check_error(err, path);
    return;
  }
  FUZZ_ASSERT(m.rows > 0 && m.cols > 0 && m.data != NULL);
  fuzz_touch(m.data, (size_t)(m.rows * m.cols) * sizeof(double));
  check_strings(&m.row_names);
  check_strings(&m.header);
  int names = m.row_names.count > 0;
  FUZZ_ASSERT(!names || m.row_names.count == m.rows);
  FUZZ_ASSERT(m.header.count == 0 || m.header.count == m.cols || m.header.count == m.cols + names);
  FUZZ_ASSERT(header != 0 || m.header.count == 0);
  FUZZ_ASSERT(header != 1 || m.header.count > 0);
  rrt_csv_matrix_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  fuzz_write_input("csv", ".csv", data, size, path, sizeof path);
  read_one(path, -1);
  read_one(path, 0);
  read_one(path, 1);
  return 0;
}

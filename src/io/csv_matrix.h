/* Numeric matrices in CSV text: one row per line, comma separated (tabs and
 * semicolons are accepted as well). An optional header row (forced, or
 * detected: fields that are not all numbers, or the column numbers 0..d-1 or
 * 1..d; a first row of other integers is ambiguous, an error that asks for
 * the caller's --header yes|no) and an optional first column
 * of row names (detected when the first field of the first data row is not
 * a number) are kept. Blank lines and lines starting with '#' are skipped.
 * Errors name FILE:LINE and the column. */
#ifndef RRT_IO_CSV_MATRIX_H
#define RRT_IO_CSV_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "io/strings.h"
#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_csv_matrix {
  int64_t rows, cols;
  double *data;          /* rows * cols, row-major, malloc'd */
  rrt_strings row_names; /* count 0 when the file has no name column */
  rrt_strings header;    /* count 0 without a header (else cols (+1) fields) */
} rrt_csv_matrix;

/** header: -1 detect (the rule above), 0 none, 1 the first line is a
 *  header. Non-finite
 *  values ("nan", "inf") are parsed; the caller decides whether to refuse
 *  them. Returns RRT_ERR_IO with "FILE:LINE: ..." in err on bad input,
 *  RRT_ERR_INVALID_ARG for an ambiguous first row. */
rrt_status rrt_csv_read_matrix(const char *path, int header, rrt_csv_matrix *out, char *err,
                               size_t errlen);

void rrt_csv_matrix_free(rrt_csv_matrix *m);

#ifdef __cplusplus
}
#endif
#endif

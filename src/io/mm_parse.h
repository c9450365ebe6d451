/* Internal: the pieces of the Matrix Market reader that the serial reader
 * (io/mmio.c) and the per-rank reader (io/mm_rows.c) share, so both accept
 * and refuse exactly the same files with the same messages: the header and
 * size line, one entry line, and the entries-to-CSR build. */
#ifndef RRT_IO_MM_PARSE_H
#define RRT_IO_MM_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "io/line_reader.h"
#include "io/mmio.h"

typedef enum { RRT_MM_REAL, RRT_MM_INTEGER, RRT_MM_PATTERN } rrt_mm_field;
typedef enum { RRT_MM_GENERAL, RRT_MM_SYMMETRIC, RRT_MM_SKEW } rrt_mm_sym;

/** Lines of a Matrix Market file with the number of the last one read. */
typedef struct rrt_mm_lines {
  rrt_lines *lr;
  const char *path;
  int64_t line;
  char *cur; /* the last line read */
} rrt_mm_lines;

/** What a line holding a NUL byte is (after "FILE:LINE: "). */
#define RRT_MM_NUL_WHY "binary data (a NUL byte) in a text line"

/** Next line: 1, 0 at the end, -1 on a read error (err filled), -2 for a
 *  line holding a NUL byte (err filled, naming the line). */
int rrt_mm_next_line(rrt_mm_lines *r, char *err, size_t errlen);
/** Next line that is neither a comment nor blank (same returns). */
int rrt_mm_next_data_line(rrt_mm_lines *r, char *err, size_t errlen);
/** 1 when `s` is a data line (neither a % comment nor blank). */
int rrt_mm_is_data(const char *s);

/** What the header and size line of a coordinate file say. */
typedef struct rrt_mm_shape {
  rrt_mm_field field;
  rrt_mm_sym sym;
  int64_t nrows, ncols, nent;
  int64_t size_line;
} rrt_mm_shape;

const char *rrt_mm_field_name(rrt_mm_field f);
const char *rrt_mm_sym_name(rrt_mm_sym s);

/** Header line: "%%MatrixMarket matrix coordinate|array FIELD SYMMETRY". */
rrt_status rrt_mm_parse_header(rrt_mm_lines *r, int *coordinate, rrt_mm_field *field,
                               rrt_mm_sym *sym, char *err, size_t errlen);
/** Size line of `want` non-negative integers into v. */
rrt_status rrt_mm_parse_size(rrt_mm_lines *r, int want, int64_t *v, char *err, size_t errlen);
/** Header and size line of a coordinate matrix with every check that needs
 *  only them (format, pattern values, squareness, entries that fit). */
rrt_status rrt_mm_read_head(rrt_mm_lines *r, rrt_mm_pattern_values pattern, rrt_mm_shape *sh,
                            char *err, size_t errlen);

/** One entry line (already known to be a data line) into 1-based (i, j)
 *  and v. On an error `why` gets the reason without the "FILE:LINE: "
 *  prefix (the caller knows the line) and RRT_ERR_IO is returned. */
rrt_status rrt_mm_parse_entry(const rrt_mm_shape *sh, char *line, int64_t *i, int64_t *j, double *v,
                              char *why, size_t whylen);

/** Whitespace-separated fields of s (cut in place): at most `max`; the
 *  count, -1 when there are more. */
int rrt_mm_split(char *s, char **fields, int max);
/** A decimal int64 (the whole string): 0 or -1. */
int rrt_mm_parse_i64(const char *s, int64_t *out);

/** A value field: a finite double (NaN and Inf are refused: a preconditioner
 *  built from them is garbage that fails far from the file). 0, -1 (not a
 *  number) or -2 (not finite); rrt_mm_value_why says which in words. */
int rrt_mm_parse_value(const char *s, double *out);
const char *rrt_mm_value_why(int bad);

/** The refusal of a size line that declares far more rows than the stored
 *  entries can touch (RRT_SUCCESS when it does not). */
rrt_status rrt_mm_check_empty_rows(const char *path, int64_t size_line, int64_t nrows,
                                   int64_t stored, char *err, size_t errlen);

/** One stored entry, 0-based (mirrored entries included). */
typedef struct rrt_mm_entry {
  int64_t row, col;
  double val;
} rrt_mm_entry;

/** A growing array of entries: capacity doubles as entries arrive, so the
 *  memory follows the file's real content, not its size line. */
typedef struct rrt_mm_entries {
  rrt_mm_entry *e;
  int64_t n, cap;
} rrt_mm_entries;

/** Room for `need` entries: 0, or -1 when out of memory. */
int rrt_mm_entries_reserve(rrt_mm_entries *t, int64_t need);

/** Append entry (i, j, v) of a file line, 1-based, and its mirror in a
 *  symmetric or skew-symmetric file. 0, or -1 when out of memory. */
int rrt_mm_entries_add(rrt_mm_entries *t, rrt_mm_sym sym, int64_t i, int64_t j, double v);

/** Rows [row0, row0 + nrows) of a CSR from entries in file order (rows in
 *  that range, any order): columns sorted, duplicates summed in file order,
 *  so the sums do not depend on who builds the rows. Column count ncols. */
rrt_status rrt_csr_from_entries(int64_t row0, int64_t nrows, int64_t ncols, int64_t count,
                                const rrt_mm_entry *e, rrt_csr *out);

/** Pattern values 'laplacian' for rows [row0, row0 + a->nrows) of a square
 *  matrix: -1 off the diagonal, off-diagonal count + 1 on it (added when
 *  missing). Replaces *a. */
rrt_status rrt_mm_laplacian_rows(int64_t row0, rrt_csr *a);

#endif

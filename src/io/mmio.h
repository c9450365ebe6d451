/* Matrix Market (coordinate and array) reading and writing, and the host CSR
 * matrix the readers produce. Every error names the file and, for malformed
 * content, the line ("A.mtx:12: ..."). */
#ifndef RRT_IO_MMIO_H
#define RRT_IO_MMIO_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A host CSR matrix: rows [0, nrows), global 64-bit columns sorted strictly
 *  increasing within each row (duplicates already summed). */
typedef struct rrt_csr {
  int64_t nrows, ncols, nnz;
  int64_t *rowptr; /* nrows + 1 */
  int64_t *col;    /* nnz */
  double *val;     /* nnz */
} rrt_csr;

void rrt_csr_free(rrt_csr *a);

/** What a `pattern` matrix gets as values. REFUSE makes reading one an error
 *  (a preconditioner needs values); LAPLACIAN gives -1 off the diagonal and
 *  (off-diagonal count + 1) on it, a nonsingular shifted graph Laplacian. */
typedef enum rrt_mm_pattern_values {
  RRT_MM_PATTERN_REFUSE = 0,
  RRT_MM_PATTERN_ONES,
  RRT_MM_PATTERN_LAPLACIAN
} rrt_mm_pattern_values;

/** Header facts of a file that was read. */
typedef struct rrt_mm_info {
  char field[16];    /* real, integer, pattern */
  char symmetry[24]; /* general, symmetric, skew-symmetric */
  int64_t nrows, ncols;
  int64_t entries; /* entry lines in the file */
} rrt_mm_info;

/** Read a coordinate Matrix Market file (real, integer or pattern; general,
 *  symmetric or skew-symmetric; 1-based; duplicates summed; symmetric parts
 *  mirrored). `info` may be NULL. Returns RRT_ERR_IO with err = "FILE:LINE:
 *  what is wrong" for malformed content, "FILE: ..." when it cannot be opened. */
rrt_status rrt_mm_read(const char *path, rrt_mm_pattern_values pattern, rrt_csr *out,
                       rrt_mm_info *info, char *err, size_t errlen);

/** Read a vector: `array real general` with one column, or a coordinate
 *  n x 1 matrix. *x is malloc'd (n doubles). */
rrt_status rrt_mm_read_vector(const char *path, double **x, int64_t *n, char *err, size_t errlen);

/** Write `a` as `coordinate real general` (1-based, %.17g: values round-trip
 *  exactly). `comment` (may be NULL) becomes one % line. An existing `path`
 *  is replaced whole, and only after a complete write (comm/outfile.h). */
rrt_status rrt_mm_write(const char *path, const rrt_csr *a, const char *comment, char *err,
                        size_t errlen);

/** Build a CSR from unsorted triplets (0-based), summing duplicates. Takes
 *  ownership of nothing; the triplet arrays are left unchanged. */
rrt_status rrt_csr_from_triplets(int64_t nrows, int64_t ncols, int64_t count, const int64_t *rows,
                                 const int64_t *cols, const double *vals, rrt_csr *out);

#ifdef __cplusplus
}
#endif
#endif

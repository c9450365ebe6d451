/* Internal: a Matrix Market matrix read in row blocks, each rank reading
 * only its share of the file (see docs/ilu.md, "Reading matrices at
 * scale"). The rows, their split over the ranks and every error are the
 * ones the serial reader (io/mmio.h) followed by rrt_sparse_partition of
 * the whole matrix gives: same entries bit for bit, same messages. */
#ifndef RRT_IO_MM_ROWS_H
#define RRT_IO_MM_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "io/mmio.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** This rank's rows of the coordinate matrix in `path` (plain or .gz), in
 *  the row blocks balanced by stored nonzeros that rrt_sparse_partition
 *  gives the whole matrix over the context's ranks: rows->nrows rows from
 *  global row *row_begin, global columns. offsets (P + 1 entries, may be
 *  NULL) receives every rank's first row. `info` may be NULL. Collective;
 *  on an error every rank returns the same status and the same err. */
rrt_status rrt_mm_read_rows(rrt_ctx_t ctx, const char *path, rrt_mm_pattern_values pattern,
                            int64_t *row_begin, rrt_csr *rows, int64_t *offsets, rrt_mm_info *info,
                            char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

/* Internal: the entry lines of a Matrix Market file split over the ranks,
 * each rank parsing only its share (io/mm_rows.c puts the rows together).
 *
 * A plain file is split by bytes: rank r's share is the lines that start
 * in [lo_r, hi_r), an equal slice of the bytes after the size line; no rank
 * knows its line numbers while it parses (the counts of the ranks before
 * it come afterwards), so a bad line is remembered by its place in the
 * share and named once the counts are known. A gzip stream cannot be
 * seeked: every rank inflates it from the start, skipping (without
 * parsing) the entry lines before its share, and the shares are equal
 * slices of the declared entries. */
#ifndef RRT_IO_MM_CHUNK_H
#define RRT_IO_MM_CHUNK_H

#include "io/mm_parse.h"
#include "ringrt/context.h"

/** Where the entry lines start: what rank 0 learnt from the header. */
typedef struct rrt_mm_layout {
  int32_t gzip;
  int64_t data_off;  /* byte offset after the size line (plain files) */
  int64_t file_size; /* bytes (plain files) */
} rrt_mm_layout;

/** This rank's stored entries (mirrored ones included, file order) of the
 *  file whose head `sh` and layout `lay` describe. Collective: every rank
 *  returns the same status and, on an error, the message the serial reader
 *  gives for the first problem in the file. */
rrt_status rrt_mm_read_share(rrt_ctx_t ctx, const char *path, const rrt_mm_shape *sh,
                             const rrt_mm_layout *lay, rrt_mm_entries *out, char *err,
                             size_t errlen);

/** The first failing rank's status and err on every rank (RRT_SUCCESS
 *  when none failed). A failed collective puts the context's error in err. */
rrt_status rrt_mm_agree(rrt_ctx_t ctx, rrt_status st, char *err, size_t errlen);

/** A failed collective: the context's error into err; returns st. */
rrt_status rrt_mm_coll_failed(rrt_ctx_t ctx, rrt_status st, char *err, size_t errlen);

#endif

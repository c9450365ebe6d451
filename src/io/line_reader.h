/* Internal: lines of a text file of any length, from a plain file or a gzip
 * stream (zlib), for the text readers (Matrix Market). A plain file can be
 * read from a byte offset, which is how each rank reads only its share of a
 * file (io/mm_rows.c); a gzip stream cannot be seeked and is always read
 * from its start. The errors name the file: a directory, a gzip file in a
 * build without zlib, a read error. */
#ifndef RRT_IO_LINE_READER_H
#define RRT_IO_LINE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

typedef struct rrt_lines rrt_lines;

/** Open `path` for lines (gzip detected by its magic bytes). */
rrt_status rrt_lines_open(const char *path, rrt_lines **out, char *err, size_t errlen);
void rrt_lines_close(rrt_lines *r);

/** 1 when the file is a gzip stream. */
int rrt_lines_gzip(const rrt_lines *r);
/** Size of a plain file in bytes (-1 for a gzip stream). */
int64_t rrt_lines_file_size(const rrt_lines *r);

/** Plain files only: continue at the first line that starts at or after
 *  byte `offset` (the line holding byte offset-1 belongs to whoever holds
 *  its first byte). */
rrt_status rrt_lines_seek(rrt_lines *r, int64_t offset, char *err, size_t errlen);

/** Byte offset (uncompressed) where the next line starts. */
int64_t rrt_lines_offset(const rrt_lines *r);

/** The next line without its "\n" or "\r\n", NUL-terminated and writable
 *  (valid until the next call): 1 = a line, 0 = end of file, -1 = error
 *  (err filled: read error, out of memory). A line may hold NUL bytes:
 *  strlen(*line) < *len then. */
int rrt_lines_next(rrt_lines *r, char **line, size_t *len, char *err, size_t errlen);

#endif

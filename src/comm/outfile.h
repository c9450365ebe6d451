/* Output files that are written whole or not at all.
 *
 * Every file the library or the `ringrt` tool writes (npy, Matrix Market,
 * Chrome trace, CSV, JSON reports) goes through here: the data goes to a
 * temporary file in the target's directory (".NAME.XXXXXX", created with
 * O_CREAT|O_EXCL and the permissions a plain fopen would give) and is
 * renamed over the target only after a complete, checked write (fflush,
 * ferror, fsync, fclose). On any failure the temporary is removed and an
 * existing target is untouched; the error names the file and the OS error.
 * An existing target that is not a regular file (/dev/null, /dev/full, a
 * FIFO) cannot be a rename target: it is written directly, as cp, sort -o
 * and h5repack do, and a write error is still reported.
 *
 * It lives in comm, the lowest layer, because trace_write.c (comm) needs it
 * and comm may not include io; io and the tool include comm headers. */
#ifndef RRT_COMM_OUTFILE_H
#define RRT_COMM_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An output being written: write to f, then commit or discard. */
typedef struct rrt_outfile {
  FILE *f;      /* where to write */
  char *name;   /* the path as given (for messages) */
  char *target; /* the file that gets the data (a symlink resolved) */
  char *tmp;    /* the temporary next to it; NULL when writing the target directly */
} rrt_outfile;

/** Start writing `path`. Returns RRT_SUCCESS, or RRT_ERR_IO with err filled
 *  ("PATH: cannot create a file in DIR: No such file or directory"). */
rrt_status rrt_outfile_open(rrt_outfile *o, const char *path, char *err, size_t errlen);

/** Finish: flush, check every write, fsync, close, rename over the target.
 *  On failure removes the temporary, leaves the target as it was and fills
 *  err ("PATH: write failed: No space left on device"). Always releases o. */
rrt_status rrt_outfile_commit(rrt_outfile *o, char *err, size_t errlen);

/** Give up: close and remove the temporary (the target is untouched). */
void rrt_outfile_discard(rrt_outfile *o);

/** Before the work: can `path` be written? Its directory must exist and
 *  take a new file (a probe temporary is created and removed); a directory
 *  is refused; an existing non-regular file must be writable. Returns
 *  RRT_SUCCESS or RRT_ERR_IO with err filled. */
rrt_status rrt_outfile_probe(const char *path, char *err, size_t errlen);

/** 1 when a and b name the same regular file (same device and inode), or
 *  the same not yet existing name in the same directory; else 0. Special
 *  files (devices, FIFOs) are never "the same": /dev/null may take two. */
int rrt_outfile_same(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif

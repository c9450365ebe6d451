/* What a file holds, by its first bytes rather than its name: readers pick
 * the format a user gave, and refuse one they do not read with a message
 * that says what to give instead. */
#ifndef RRT_IO_SNIFF_H
#define RRT_IO_SNIFF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rrt_file_kind {
  RRT_FILE_MISSING = 0, /* cannot be opened (err says why) */
  RRT_FILE_DIRECTORY,   /* a folder (a zarr store, say) */
  RRT_FILE_EMPTY,
  RRT_FILE_HDF5, /* .h5ad, 10x .h5, any HDF5 */
  RRT_FILE_NPY,  /* NumPy .npy */
  RRT_FILE_GZIP, /* .gz of anything (.mtx.gz, .csv.gz) */
  RRT_FILE_ZIP,  /* .npz, .zarr.zip */
  RRT_FILE_MATRIX_MARKET,
  RRT_FILE_TEXT /* anything else: CSV and other text */
} rrt_file_kind;

/** The kind of the file at `path`; for RRT_FILE_MISSING, "PATH: cannot
 *  open: REASON" in err. */
rrt_file_kind rrt_file_sniff(const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

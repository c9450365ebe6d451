/* .npy files (NumPy format 1.0/2.0/3.0): read and write whole arrays.
 * Supports little-endian f2, f4, f8, i1-i8, u1-u8 (attention files keep
 * bf16 bits in u2), C order (Fortran order is refused with an error).
 * Errors name the file. */
#ifndef RRT_IO_NPY_H
#define RRT_IO_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRT_NPY_MAX_DIMS 8

typedef struct rrt_npy {
  char descr[8]; /* e.g. "<f4", "<f8", "<i4", "<u2", "|u1", "|i1" */
  size_t elsize; /* bytes per element */
  int ndim;
  int64_t shape[RRT_NPY_MAX_DIMS];
  size_t count; /* product of shape */
  void *data;   /* malloc'd, count * elsize bytes; free with rrt_npy_free */
} rrt_npy;

/** Read a whole .npy file. On error fills err ("FILE: what is wrong") and
 *  returns RRT_ERR_IO (malformed) or RRT_ERR_INVALID_ARG (unsupported). */
rrt_status rrt_npy_read(const char *path, rrt_npy *out, char *err, size_t errlen);

/** Write a C-order array. descr as above. An existing `path` is replaced
 *  whole, and only after a complete write (comm/outfile.h). */
rrt_status rrt_npy_write(const char *path, const char *descr, int ndim, const int64_t *shape,
                         const void *data, char *err, size_t errlen);

/** The values as float64 numbers (count of them into out): every float and
 *  integer type; -1 for another type (nothing written). */
int rrt_npy_to_double(const rrt_npy *a, double *out);

void rrt_npy_free(rrt_npy *a);

#ifdef __cplusplus
}
#endif
#endif

/* Internal, builds without HDF5 only: the one error every .h5ad entry
 * point returns there (io/h5ad_none.c, io/h5ad_out_none.c). */
#ifndef RRT_IO_H5AD_NONE_H
#define RRT_IO_H5AD_NONE_H

#include <stddef.h>

#include "ringrt/status.h"

/** "PATH: this ringrt was built without HDF5 ..." into err; returns
 *  RRT_ERR_UNSUPPORTED. */
rrt_status rrt_h5ad_no_hdf5(const char *path, char *err, size_t errlen);

#endif

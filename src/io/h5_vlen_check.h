/* Internal: checks the variable-length strings of an HDF5 dataset as they
 * are stored, before HDF5 reads them. HDF5 1.10 copies a string out of its
 * global heap collection trusting the sizes and indices the file gives (no
 * bounds checks outside debug builds), so a corrupt .h5ad could make
 * H5Dread overrun its buffers; this walks the same structures with bounds
 * checks and refuses the file instead. */
#ifndef RRT_IO_H5_VLEN_CHECK_H
#define RRT_IO_H5_VLEN_CHECK_H

#include <hdf5.h>
#include <stddef.h>

/** 0 when every element of the 1-D variable-length string dataset `ds` of
 *  file `f` (opened from `path`) references a heap object that lies inside
 *  its collection and has the element's length; else -1 with `why` set. */
int rrt_h5_vlen_check(hid_t f, const char *path, hid_t ds, char *why, size_t len);

/** Read the variable-length string attribute `a` (memory type `mt`) into
 *  `out` (at most len - 1 bytes), in a child process: HDF5 gives no access
 *  to an attribute's raw value, so its heap reference cannot be checked
 *  before H5Aread follows it, and a corrupt heap can make HDF5 overrun its
 *  buffers or loop forever. The child's crash, hang (3 s) or failure is a
 *  -1 here, never harm to this process; 0 on success. */
int rrt_h5_vlen_attr_read(hid_t a, hid_t mt, char *out, size_t len);

#endif

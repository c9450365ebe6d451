/* Rewriting a legacy (anndata < 0.7) .h5ad in the current layout (see
 * h5ad_upgrade.c): what --h5ad-out starts from when its input is legacy. */
#ifndef RRT_IO_H5AD_UPGRADE_H
#define RRT_IO_H5AD_UPGRADE_H

#include <stddef.h>

#include "io/h5ad_write.h"

/** Into the new file w: the legacy input's X (dense), obs and var as
 *  dataframes, obsm as arrays, and empty varm/obsp/varp/layers/uns. */
rrt_status rrt_h5ad_upgrade_into(rrt_h5w *w, const char *path, char *err, size_t errlen);

#endif

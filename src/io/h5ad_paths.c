/* The HDF5 paths of an .h5ad matrix source: pure string work, in every
 * build (with HDF5 or without), so the messages of both name the same
 * dataset. */
#include <stdio.h>
#include <string.h>

#include "io/h5ad_rows.h"

void rrt_h5ad_source_paths(const char *source, char *matrix, char *var, size_t len) {
  if (!strcmp(source, "X")) {
    snprintf(matrix, len, "X"), snprintf(var, len, "var");
  } else if (!strcmp(source, "raw")) {
    snprintf(matrix, len, "raw/X"), snprintf(var, len, "raw/var");
  } else {
    snprintf(matrix, len, "layers/%s", source), snprintf(var, len, "var");
  }
}

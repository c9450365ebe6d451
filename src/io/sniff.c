/* File kinds by their magic bytes (see sniff.h). */
#include "io/sniff.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

rrt_file_kind rrt_file_sniff(const char *path, char *err, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return RRT_FILE_DIRECTORY;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return RRT_FILE_MISSING;
  }
  unsigned char b[16] = {0};
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  if (n == 0) return RRT_FILE_EMPTY;
  if (n >= 8 && !memcmp(b, "\x89HDF\r\n\x1a\n", 8)) return RRT_FILE_HDF5;
  if (n >= 6 && !memcmp(b, "\x93NUMPY", 6)) return RRT_FILE_NPY;
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return RRT_FILE_GZIP;
  if (n >= 4 && !memcmp(b, "PK\x03\x04", 4)) return RRT_FILE_ZIP;
  if (n >= 14 && !memcmp(b, "%%MatrixMarket", 14)) return RRT_FILE_MATRIX_MARKET;
  return RRT_FILE_TEXT;
}

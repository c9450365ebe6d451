/* A main() for the fuzz harnesses when they are built without libFuzzer
 * (any compiler): runs LLVMFuzzerTestOneInput once on every file given, or
 * on every file of every directory given (not recursive). A broken
 * invariant or a memory error aborts, naming the input just before. At
 * least one input must be found: an empty corpus is a failure, not a pass. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

/* Run the harness on one file; returns 0, or -1 when it cannot be read. */
static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  int bad = ferror(f) || !buf;
  fclose(f);
  if (bad) {
    free(buf);
    fprintf(stderr, "replay: cannot read %s\n", path);
    return -1;
  }
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

/* Every regular file of `dir`; returns how many, or -1 on an error. */
static long replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open directory %s: %s\n", dir, strerror(errno));
    return -1;
  }
  long count = 0;
  struct dirent *e;
  char path[4096];
  struct stat sb;
  while (count >= 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    count = replay_file(path) == 0 ? count + 1 : -1;
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  long total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    long got = stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode) ? replay_dir(argv[i])
                                                              : (replay_file(argv[i]) ? -1 : 1);
    if (got < 0) return 1;
    total += got;
  }
  if (total == 0) {
    fprintf(stderr, "replay: no inputs found (an empty corpus checks nothing)\n");
    return 1;
  }
  printf("replay: %ld inputs, no crash, every invariant held\n", total);
  return 0;
}

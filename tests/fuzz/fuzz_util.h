/* Shared by the fuzz harnesses: the readers take paths, so each input is
 * written to a temporary file of this process first; an invariant that
 * does not hold on a successful read aborts (libFuzzer and the replay
 * driver both report an abort as a crash, with the input). */
#ifndef RRT_FUZZ_UTIL_H
#define RRT_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

/* The input file of this process (one path, rewritten for every input),
 * removed at exit so a run leaves nothing behind. */
static char fuzz_input_path[512];
static void fuzz_remove_input(void) {
  if (fuzz_input_path[0]) remove(fuzz_input_path);
}

/* Write the input to "$TMPDIR/rrt_fuzz_<tag>_<pid><suffix>" (the suffix
 * matters to readers that dispatch on it) and return that path; aborts when
 * the file cannot be written, since every later result would be noise. */
static inline const char *fuzz_write_input(const char *tag, const char *suffix, const uint8_t *data,
                                           size_t size, char *path, size_t len) {
  const char *tmp = getenv("TMPDIR");
  snprintf(path, len, "%s/rrt_fuzz_%s_%d%s", tmp && *tmp ? tmp : "/tmp", tag, (int)getpid(),
           suffix);
  if (!fuzz_input_path[0]) atexit(fuzz_remove_input);
  snprintf(fuzz_input_path, sizeof fuzz_input_path, "%s", path);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "fuzz: cannot write %s\n", path);
    abort();
  }
  return path;
}

/* Read every byte of a returned buffer, so a buffer shorter than its
 * declared size shows as a heap overflow under AddressSanitizer. */
static inline unsigned fuzz_touch(const void *p, size_t bytes) {
  const volatile unsigned char *b = (const volatile unsigned char *)p;
  unsigned sum = 0;
  for (size_t i = 0; i < bytes; i++)
    sum += b[i];
  return sum;
}

/* An error message must be a non-empty string that names the file. */
static inline void fuzz_check_error(const char *err, const char *path) {
  FUZZ_ASSERT(err[0] != 0);
  FUZZ_ASSERT(strstr(err, path) != NULL);
}

#endif

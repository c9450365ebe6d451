/* Internal: how much memory a size read from a file may claim. Readers
 * compare a declared element count with this before allocating, so a tiny
 * crafted file cannot wrap the size arithmetic or ask for more memory than
 * the machine has: it gets an error naming the file instead. */
#ifndef RRT_IO_LIMITS_H
#define RRT_IO_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/** The machine's physical memory in bytes (UINT64_MAX when unknown). */
static inline uint64_t rrt_io_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return UINT64_MAX;
  return (uint64_t)pages * (uint64_t)page;
}

/** Bytes of n items of `each` bytes, or UINT64_MAX when that overflows. */
static inline uint64_t rrt_io_bytes_of(uint64_t n, size_t each) {
  if (each && n > UINT64_MAX / each) return UINT64_MAX;
  return n * (uint64_t)each;
}

/** 1 when n items of `each` bytes fit in memory (and in size_t). */
static inline int rrt_io_claim_fits(uint64_t n, size_t each) {
  uint64_t need = rrt_io_bytes_of(n, each);
  return need <= rrt_io_memory_bytes() && need <= (uint64_t)SIZE_MAX;
}

#endif

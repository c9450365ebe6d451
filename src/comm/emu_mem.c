/* The emulated GPU's memory map (comm/emu_mem.h): allocations sorted by
 * address, looked up by binary search. */
#include "comm/emu_mem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct range {
  uintptr_t base;
  size_t bytes;
} range;

/* The process's map (see the header: the driver's is per process too). */
static struct {
  pthread_mutex_t lock;
  range *v;
  size_t n, cap;
} map = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

/* Index of the first range with base > p. */
static size_t upper(uintptr_t p) {
  size_t lo = 0, hi = map.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (map.v[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

rrt_status rrt_emu_mem_add(void *ptr, size_t bytes) {
  uintptr_t p = (uintptr_t)ptr;
  rrt_status st = RRT_SUCCESS;
  pthread_mutex_lock(&map.lock);
  if (map.n == map.cap) {
    size_t cap = map.cap ? 2 * map.cap : 256;
    range *v = realloc(map.v, cap * sizeof *v);
    if (!v) {
      st = RRT_ERR_OUT_OF_MEMORY;
      goto out;
    }
    map.v = v, map.cap = cap;
  }
  size_t i = upper(p);
  memmove(map.v + i + 1, map.v + i, (map.n - i) * sizeof *map.v);
  map.v[i] = (range){p, bytes};
  map.n++;
out:
  pthread_mutex_unlock(&map.lock);
  return st;
}

int rrt_emu_mem_remove(void *ptr) {
  uintptr_t p = (uintptr_t)ptr;
  int found = 0;
  pthread_mutex_lock(&map.lock);
  size_t i = upper(p);
  if (i > 0 && map.v[i - 1].base == p) {
    memmove(map.v + i - 1, map.v + i, (map.n - i) * sizeof *map.v);
    map.n--;
    found = 1;
  }
  if (map.n == 0) { /* nothing left: give the table back (LeakSanitizer, forks) */
    free(map.v);
    map.v = NULL, map.cap = 0;
  }
  pthread_mutex_unlock(&map.lock);
  return found;
}

int rrt_emu_mem_contains(const void *ptr, size_t bytes) {
  uintptr_t p = (uintptr_t)ptr;
  int in = 0;
  pthread_mutex_lock(&map.lock);
  size_t i = upper(p);
  if (i > 0) {
    const range *r = &map.v[i - 1];
    in = p - r->base <= r->bytes && bytes <= r->bytes - (p - r->base);
  }
  pthread_mutex_unlock(&map.lock);
  return in;
}

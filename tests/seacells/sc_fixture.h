/* The reference SEACells' saved numbers (bench/seacells-ref-*.py write
 * PREFIX_WHAT.npy): one array, its dtype checked. */
#ifndef SC_FIXTURE_H
#define SC_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "io/npy.h"
#include "test_util.h"

static inline void *sc_fixture_load(const char *prefix, const char *what, const char *descr,
                                    rrt_npy *a) {
  char path[1024], err[512];
  snprintf(path, sizeof path, "%s_%s.npy", prefix, what);
  CHECK_MSG(rrt_npy_read(path, a, err, sizeof err) == RRT_SUCCESS, "%s", err);
  CHECK_MSG(!strcmp(a->descr, descr), "%s: dtype %s, want %s", path, a->descr, descr);
  return a->data;
}

#endif

/* The NCCL loader (src/comm/nccl_lib.c) against the fake libraries of
 * fake_nccl.c and, where it is installed, the real libnccl.so.2.
 *
 *   test_nccl_lib loaded PATH     PATH dlopen'ed first: the loader takes it,
 *                                 even with RINGRT_NCCL_LIBRARY set elsewhere
 *   test_nccl_lib symbol PATH     same, for a library not named libnccl*
 *   test_nccl_lib env PATH        nothing loaded: RINGRT_NCCL_LIBRARY's PATH
 *   test_nccl_lib env_bad PATH    RINGRT_NCCL_LIBRARY that does not load
 *   test_nccl_lib partial PATH    a library lacking ncclBroadcast
 *   test_nccl_lib default [VER]   the default name (version VER, else any
 *                                 real NCCL >= 2.14: every symbol resolves);
 *                                 77 when no libnccl.so.2 loads
 *   test_nccl_lib none            nothing loads: the error names all tried */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/nccl_lib.h"

#define FAKE_VERSION 29901

static int failures = 0;

static void expect(int ok, const char *what, const char *detail) {
  printf("%s: %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? " -- " : "", detail ? detail : "");
  if (!ok) failures++;
}

static void expect_has(const char *text, const char *part) {
  char what[256];
  snprintf(what, sizeof what, "message names '%s'", part);
  expect(strstr(text, part) != NULL, what, text);
}

/* The table came from `path`, as `how`, with the fake's version. */
static void expect_fake(const rrt_nccl_lib *lib, const char *path, const char *how) {
  expect(strcmp(lib->how, how) == 0, "found as expected", lib->how);
  expect(strstr(lib->path, path) != NULL, "path is the fake's", lib->path);
  expect(lib->version == FAKE_VERSION, "version is the fake's 2.99.1", NULL);
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  void *own = h ? dlsym(h, "ncclGetVersion") : NULL;
  void *got;
  memcpy(&got, &lib->ncclGetVersion, sizeof got);
  expect(own && own == got, "ncclGetVersion is the fake's own function", NULL);
  int v = 0;
  expect(lib->ncclGetVersion(&v) == ncclSuccess && v == FAKE_VERSION, "calls go to the fake", NULL);
}

static int open_fails(const char *env, char *err, size_t len) {
  rrt_nccl_lib lib;
  return rrt_nccl_lib_open(&lib, env, err, len) == RRT_ERR_NCCL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  const char *path = argc > 2 ? argv[2] : NULL;
  rrt_nccl_lib lib;
  char err[1024] = "";
  if (!strcmp(mode, "loaded") || !strcmp(mode, "symbol")) {
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      printf("FAIL: dlopen %s: %s\n", path, dlerror());
      return 1;
    }
    rrt_status st = rrt_nccl_lib_open(&lib, "/nonexistent/libnccl.so.2", err, sizeof err);
    expect(st == RRT_SUCCESS, "the loaded NCCL is taken (RINGRT_NCCL_LIBRARY comes after)", err);
    if (st == RRT_SUCCESS) expect_fake(&lib, path, "already loaded");
  } else if (!strcmp(mode, "env")) {
    rrt_status st = rrt_nccl_lib_open(&lib, path, err, sizeof err);
    expect(st == RRT_SUCCESS, "RINGRT_NCCL_LIBRARY loads", err);
    if (st == RRT_SUCCESS) expect_fake(&lib, path, "RINGRT_NCCL_LIBRARY");
  } else if (!strcmp(mode, "env_bad")) {
    expect(open_fails(path, err, sizeof err), "a RINGRT_NCCL_LIBRARY that does not load fails",
           NULL);
    expect_has(err, "RINGRT_NCCL_LIBRARY='");
    expect_has(err, path);
    expect_has(err, "RINGRT_NCCL=0");
  } else if (!strcmp(mode, "partial")) {
    expect(open_fails(path, err, sizeof err), "a library lacking a function is refused", NULL);
    expect_has(err, "has no ncclBroadcast");
  } else if (!strcmp(mode, "default")) {
    rrt_status st = rrt_nccl_lib_open(&lib, NULL, err, sizeof err);
    if (st != RRT_SUCCESS && !path) {
      printf("skip: no libnccl.so.2 loads here: %s\n", err);
      return 77;
    }
    expect(st == RRT_SUCCESS, "the default name loads", err);
    if (st != RRT_SUCCESS) return 1;
    char v[32];
    rrt_nccl_lib_version(&lib, v, sizeof v);
    printf("loaded %s (NCCL %s, %s)\n", lib.path, v, lib.how);
    expect(strcmp(lib.how, "default name") == 0, "found by the default name", lib.how);
    if (path) expect(lib.version == atoi(path), "version is the expected one", v);
    expect(lib.version >= RRT_NCCL_MIN_VERSION, "version >= the minimum", v);
  } else if (!strcmp(mode, "none")) {
    expect(open_fails(NULL, err, sizeof err), "nothing loads: an error", NULL);
    expect_has(err, "none loaded in the process");
    expect_has(err, "RINGRT_NCCL_LIBRARY unset");
    expect_has(err, "libnccl.so.2");
    expect_has(err, "RINGRT_NCCL=0");
  } else {
    fprintf(stderr, "usage: test_nccl_lib loaded|symbol|env|env_bad|partial|default|none [PATH]\n");
    return 2;
  }
  return failures ? 1 : 0;
}

/* NCCL opened at run time: find the library, resolve the table, check the
 * version (comm/nccl_lib.h says why ringrt never links it).
 *
 * An NCCL already in the process comes first: a second libnccl.so.2 would
 * clash with it (the dynamic linker matches later DT_NEEDED entries by
 * SONAME, so torch would then bind to ringrt's copy, or ringrt to torch's,
 * with symbols the other lacks). A library this file opens is never closed:
 * NCCL keeps process-wide state and threads past its communicators, so
 * unloading it while the process runs is unsafe; opening it again for a
 * later context only takes another reference. */
#define _GNU_SOURCE
#include "comm/nccl_lib.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RRT_NCCL_DEFAULT_NAME "libnccl.so.2"

/* The file names of every object loaded in the process. They are gathered
 * first and examined afterwards, since dlopen inside a dl_iterate_phdr
 * callback (which holds the loader's lock) is not safe everywhere. */
typedef struct loaded_list {
  char **names;
  int n, cap;
} loaded_list;

static int collect(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  loaded_list *l = arg;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0; /* the program itself */
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    char **grown = realloc(l->names, (size_t)cap * sizeof *grown);
    if (!grown) return 1;
    l->names = grown;
    l->cap = cap;
  }
  l->names[l->n] = strdup(info->dlpi_name);
  if (l->names[l->n]) l->n++;
  return 0;
}

static void free_list(loaded_list *l) {
  for (int i = 0; i < l->n; i++)
    free(l->names[i]);
  free(l->names);
}

static int named_nccl(const char *path) {
  const char *base = strrchr(path, '/');
  return strncmp(base ? base + 1 : path, "libnccl.so", 10) == 0;
}

/* Whether `path` itself defines ncclGetVersion: dlsym on its handle also
 * searches its dependencies, so dladdr must name this very object. */
static int defines_nccl(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  void *sym = dlsym(h, "ncclGetVersion");
  Dl_info di;
  int own = sym && dladdr(sym, &di) && di.dli_fname && strcmp(di.dli_fname, path) == 0;
  dlclose(h); /* NOLOAD: drops only the reference just taken */
  return own;
}

/* (a): an object named libnccl.so*, else one defining ncclGetVersion. */
static int find_loaded(char *path, size_t len) {
  loaded_list l = {NULL, 0, 0};
  dl_iterate_phdr(collect, &l);
  int found = -1;
  for (int i = 0; i < l.n && found < 0; i++)
    if (named_nccl(l.names[i])) found = i;
  for (int i = 0; i < l.n && found < 0; i++)
    if (defines_nccl(l.names[i])) found = i;
  if (found >= 0) snprintf(path, len, "%s", l.names[found]);
  free_list(&l);
  return found >= 0;
}

/* Every function of the table, or an error naming the first one missing. */
static int resolve(rrt_nccl_lib *lib, char *err, size_t errlen) {
  void *p;
#define RRT_NCCL_RESOLVE(name)                                                                     \
  p = dlsym(lib->handle, #name);                                                                   \
  if (!p) {                                                                                        \
    snprintf(err, errlen, "%.400s has no %s (ringrt needs NCCL >= %d.%d)", lib->path, #name,       \
             RRT_NCCL_MIN_VERSION / 10000, RRT_NCCL_MIN_VERSION / 100 % 100);                      \
    return -1;                                                                                     \
  }                                                                                                \
  memcpy(&lib->name, &p, sizeof p); /* object to function pointer, as POSIX allows */
  RRT_NCCL_FUNCTIONS(RRT_NCCL_RESOLVE)
#undef RRT_NCCL_RESOLVE
  return 0;
}

static int check_version(rrt_nccl_lib *lib, char *err, size_t errlen) {
  if (lib->ncclGetVersion(&lib->version) != ncclSuccess) {
    snprintf(err, errlen, "ncclGetVersion failed in %.400s", lib->path);
    return -1;
  }
  if (lib->version < RRT_NCCL_MIN_VERSION) {
    char v[32];
    rrt_nccl_lib_version(lib, v, sizeof v);
    snprintf(err, errlen, "%.400s is NCCL %s; ringrt needs >= %d.%d", lib->path, v,
             RRT_NCCL_MIN_VERSION / 10000, RRT_NCCL_MIN_VERSION / 100 % 100);
    return -1;
  }
  return 0;
}

/* dlopen `file` and fill the table from it; on failure nothing stays open
 * and `err` says why. */
static int load(rrt_nccl_lib *lib, const char *file, int flags, const char *how, char *err,
                size_t errlen) {
  memset(lib, 0, sizeof *lib);
  lib->handle = dlopen(file, flags);
  if (!lib->handle) {
    const char *why = dlerror();
    snprintf(err, errlen, "%s", why ? why : "dlopen failed");
    return -1;
  }
  struct link_map *map = NULL;
  if (dlinfo(lib->handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0])
    file = map->l_name; /* the path the search found */
  snprintf(lib->path, sizeof lib->path, "%s", file);
  snprintf(lib->how, sizeof lib->how, "%s", how);
  if (resolve(lib, err, errlen) != 0 || check_version(lib, err, errlen) != 0) {
    dlclose(lib->handle);
    lib->handle = NULL;
    return -1;
  }
  return 0;
}

rrt_status rrt_nccl_lib_open(rrt_nccl_lib *lib, const char *env_path, char *err, size_t errlen) {
  char path[512], why[600];
  if (find_loaded(path, sizeof path)) {
    if (load(lib, path, RTLD_NOW | RTLD_NOLOAD, "already loaded", why, sizeof why) == 0)
      return RRT_SUCCESS;
    snprintf(err, errlen, "the NCCL already loaded in this process is not usable: %s", why);
    return RRT_ERR_NCCL;
  }
  if (env_path && env_path[0]) {
    if (load(lib, env_path, RTLD_NOW | RTLD_LOCAL, "RINGRT_NCCL_LIBRARY", why, sizeof why) == 0)
      return RRT_SUCCESS;
    snprintf(err, errlen,
             "RINGRT_NCCL_LIBRARY='%.400s' does not load: %s (no NCCL was loaded in the process "
             "before; set RINGRT_NCCL=0 for MPI with host staging)",
             env_path, why);
    return RRT_ERR_NCCL;
  }
  if (load(lib, RRT_NCCL_DEFAULT_NAME, RTLD_NOW | RTLD_LOCAL, "default name", why, sizeof why) == 0)
    return RRT_SUCCESS;
  snprintf(err, errlen,
           "no usable NCCL: none loaded in the process (no libnccl.so* nor an object defining "
           "ncclGetVersion), RINGRT_NCCL_LIBRARY unset, and %s: %s. Install NCCL, set "
           "RINGRT_NCCL_LIBRARY to its libnccl.so.2, or set RINGRT_NCCL=0 for MPI with host "
           "staging",
           RRT_NCCL_DEFAULT_NAME, why);
  return RRT_ERR_NCCL;
}

void rrt_nccl_lib_version(const rrt_nccl_lib *lib, char *buf, size_t len) {
  int v = lib->version;
  /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch. */
  snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

/* Internal: NCCL opened at run time (comm/nccl_lib.c, built with NCCL only).
 *
 * ringrt never links NCCL: libringrt.so loads on a node without it, and next
 * to a process that already has its own NCCL (torch's), whose copy ringrt
 * then uses instead of loading a second library with the same SONAME. The
 * functions ringrt calls live in one table on the context, filled by dlsym;
 * nccl.h is needed at build time only, for the types and the prototypes
 * (each pointer is declared with the type of the function it replaces, so a
 * mismatch with the header is a compile error). */
#ifndef RRT_COMM_NCCL_LIB_H
#define RRT_COMM_NCCL_LIB_H

#include <nccl.h>
#include <stddef.h>

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every NCCL function ringrt calls. A new call goes here first. */
#define RRT_NCCL_FUNCTIONS(X)                                                                      \
  X(ncclGetVersion)                                                                                \
  X(ncclGetErrorString)                                                                            \
  X(ncclGetLastError)                                                                              \
  X(ncclGetUniqueId)                                                                               \
  X(ncclCommInitRankConfig)                                                                        \
  X(ncclCommGetAsyncError)                                                                         \
  X(ncclCommFinalize)                                                                              \
  X(ncclCommDestroy)                                                                               \
  X(ncclCommAbort)                                                                                 \
  X(ncclGroupStart)                                                                                \
  X(ncclGroupEnd)                                                                                  \
  X(ncclSend)                                                                                      \
  X(ncclRecv)                                                                                      \
  X(ncclAllReduce)                                                                                 \
  X(ncclAllGather)                                                                                 \
  X(ncclBroadcast)

/* ncclCommInitRankConfig and ncclCommFinalize: the oldest NCCL with every
 * function of the table. */
#define RRT_NCCL_MIN_VERSION 21400

typedef struct rrt_nccl_lib {
#define RRT_NCCL_FIELD(name) __typeof__(name) *name;
  RRT_NCCL_FUNCTIONS(RRT_NCCL_FIELD)
#undef RRT_NCCL_FIELD
  void *handle;   /* from dlopen; kept open for the life of the process (see nccl_lib.c) */
  int version;    /* ncclGetVersion: major*10000 + minor*100 + patch */
  char path[512]; /* the file the functions came from */
  char how[64];   /* "already loaded", "RINGRT_NCCL_LIBRARY", "default name" */
} rrt_nccl_lib;

/** Fill `lib`: (a) an NCCL already loaded in the process (an object named
 *  libnccl.so*, else one exporting ncclGetVersion), (b) `env_path`
 *  (RINGRT_NCCL_LIBRARY; when set and it does not load, that is the error),
 *  (c) "libnccl.so.2". Every function of the table must resolve and the
 *  version be at least RRT_NCCL_MIN_VERSION. On failure returns
 *  RRT_ERR_NCCL with `err` naming everything tried. Local, no communication. */
rrt_status rrt_nccl_lib_open(rrt_nccl_lib *lib, const char *env_path, char *err, size_t errlen);

/** "2.21.5": the version of a filled table. */
void rrt_nccl_lib_version(const rrt_nccl_lib *lib, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif

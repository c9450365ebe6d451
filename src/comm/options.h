/* Internal: reading a versioned option struct that may come from a program
 * built against an older (smaller) public header.
 *
 * Every option struct of the public API starts with `size_t size` (set by
 * its initializer macro to the sizeof the caller was compiled with), and
 * fields are only ever added at its end. The library therefore knows which
 * fields a caller's struct has: those that end within `size`. It copies
 * them and gives every later field its default, as NCCL does for
 * ncclConfig_t. A field added later must start at or past the old sizeof
 * (so an older struct's tail padding never holds a new field).
 */
#ifndef RRT_COMM_OPTIONS_H
#define RRT_COMM_OPTIONS_H

#include <stddef.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the library reads one option struct. */
typedef struct rrt_options_layout {
  const char *name;        /**< "rrt_ctx_config", for messages */
  const char *initializer; /**< "RRT_CTX_CONFIG_INITIALIZER", for messages */
  size_t size;             /**< sizeof the struct in this library */
  size_t min_size;         /**< the identification fields every version has */
  const void *defaults;    /**< a struct with the initializer's values */
  size_t magic_offset;     /**< offset of an `unsigned magic` field; 0: none */
  unsigned magic;
  size_t version_offset; /**< offset of an `unsigned version` field; 0: none */
  unsigned version;      /**< newest version this library reads (1 .. version) */
} rrt_options_layout;

/** Copy the caller's struct `user` into `full` (layout->size bytes): the
 *  fields within user's size as given, the rest from the defaults; then
 *  full's size field says layout->size. `user` NULL gives the defaults.
 *  A size below min_size, above what this library knows, or not a multiple
 *  of size_t's alignment (no version's sizeof), a wrong magic or an unknown
 *  version is RRT_ERR_INVALID_ARG with `msg` naming the struct and the
 *  sizes (msg may be NULL). Local and pure: the caller records the error
 *  and makes the ranks agree. */
rrt_status rrt_options_import(const rrt_options_layout *layout, const void *user, void *full,
                              char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif

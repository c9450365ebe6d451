/* Lists of integers in text files, one per line: cell indices for
 * `ringrt seacells --archetypes-in`, sequence offsets (cu_seqlens) and the
 * like. Blank lines and '#' comments (whole line or after the value) are
 * allowed; anything else on a line is an error naming FILE:LINE. */
#ifndef RRT_IO_INT_LIST_H
#define RRT_IO_INT_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Flags of rrt_int_list_read. */
enum {
  /** Each value must be >= the one before (offsets such as cu_seqlens). */
  RRT_INT_LIST_NONDECREASING = 1u << 0
};

typedef struct rrt_int_list {
  int64_t count;
  int64_t *values; /* count values, malloc'd; free with rrt_int_list_free */
} rrt_int_list;

/** Read every value of `path`: non-negative decimal integers that fit
 *  int64. A file without values is an error too (a list that sets a count
 *  cannot be empty). Returns RRT_ERR_IO with "FILE:LINE: what is wrong" (or
 *  "FILE: ..." when it cannot be opened or holds no value), or
 *  RRT_ERR_OUT_OF_MEMORY; *out is then empty. */
rrt_status rrt_int_list_read(const char *path, unsigned flags, rrt_int_list *out, char *err,
                             size_t errlen);

void rrt_int_list_free(rrt_int_list *l);

#ifdef __cplusplus
}
#endif
#endif

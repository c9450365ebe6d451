/* A list of malloc'd strings: cell names, categories, CSV headers (the
 * readers of .h5ad and CSV files fill it, the fronts print it). */
#ifndef RRT_IO_STRINGS_H
#define RRT_IO_STRINGS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A list of strings, each malloc'd; free with rrt_strings_free. */
typedef struct rrt_strings {
  int64_t count;
  char **items;
} rrt_strings;

/** Free every string and the list; the list is empty afterwards. Safe on NULL. */
void rrt_strings_free(rrt_strings *s);

#ifdef __cplusplus
}
#endif
#endif

/* `ringrt attn --window L,R --cu-seqlens FILE|LIST`: the mask options. */
#ifndef RRT_APP_ATTN_MASK_H
#define RRT_APP_ATTN_MASK_H

#include <stdint.h>

#include "app.h"
#include "io/int_list.h"

/** --window L,R: two integers >= -1 (-1: unlimited on that side). Returns
 *  0, or 2 after a usage error. */
int rrt_app_attn_parse_window(rrt_app_common *c, const char *text, int *left, int *right);

/** --cu-seqlens as a comma list ("0,17,20,64"): 0 parsed into *out, 1 when
 *  `text` is no list (no comma, or an existing file: read it with
 *  rrt_app_attn_read_docs),
 *  2 after a usage error naming the bad or decreasing entry. */
int rrt_app_attn_parse_docs(rrt_app_common *c, const char *text, rrt_int_list *out);

/** --cu-seqlens FILE (one offset a line, src/io/int_list.c): 0, or 1 after
 *  an error naming FILE:LINE (printed by rank 0). */
int rrt_app_attn_read_docs(rrt_app_common *c, const char *path, int rank, rrt_int_list *out);

#endif

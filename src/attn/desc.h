/* Internal: the ring attention descriptor as the library reads it. */
#ifndef RRT_ATTN_DESC_H
#define RRT_ATTN_DESC_H

#include <stddef.h>

#include "ringrt/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Copy the caller's descriptor into `full`, with defaults for the fields a
 *  descriptor from an older header lacks (comm/options.h). NULL, a bad size,
 *  magic or version is RRT_ERR_INVALID_ARG with `msg` (may be NULL) saying
 *  why. Every entry point reads the descriptor through this. */
rrt_status rrt_attn_desc_import(const rrt_attn_desc *user, rrt_attn_desc *full, char *msg,
                                size_t msglen);

/** Collective (desc_agree.c): every rank describes the same problem; on a
 *  mismatch, an error of `op` on every rank naming the first differing
 *  field (or cu_seqlens index). The descriptor passed
 *  rrt_attn_desc_check on every rank. */
rrt_status rrt_attn_check_same_desc(rrt_ctx_t ctx, const char *op, const rrt_attn_desc *d);

#ifdef __cplusplus
}
#endif
#endif

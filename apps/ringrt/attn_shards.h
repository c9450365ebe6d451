/* `ringrt attn`: this rank's shards of the global tensors and their gather
 * back into natural order on rank 0, for the forward (cmd_attn.c) and the
 * backward (attn_bwd.c) alike. */
#ifndef RRT_APP_ATTN_SHARDS_H
#define RRT_APP_ATTN_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "io/npy.h"
#include "ringrt/attn.h"

/** This rank's shard of global tensor t (from `file`, or generated from
 *  `seed` when file is NULL): rows of `heads` heads at the global positions
 *  pos[0..L). malloc'd; NULL when out of memory. */
void *rrt_app_attn_shard(uint64_t seed, const rrt_attn_desc *d, int64_t L, const int64_t *pos,
                         int t, int heads, const rrt_npy *file);
/** Shards gathered on rank 0 in natural order (rows of `heads` heads, or
 *  with is_lse the LSE); malloc'd on rank 0, NULL elsewhere; *fail when the
 *  gather failed (on every rank). Collective. */
void *rrt_app_attn_gather(rrt_ctx_t ctx, const rrt_attn_desc *d, const void *shard,
                          size_t shard_bytes, size_t es, int heads, int is_lse, int *fail);

#endif

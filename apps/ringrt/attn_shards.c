/* `ringrt attn`: shards of the global tensors and their gather (attn_shards.h). */
#include "attn_shards.h"

#include <stdlib.h>
#include <string.h>

#include "comm/host_coll.h"
#include "io/attn_gen.h"
#include "kernels/attn_math.h"

/* This rank's shard of a global tensor (from a file, or generated): rows
 * at the global positions pos[0..L). */
void *rrt_app_attn_shard(uint64_t seed, const rrt_attn_desc *d, int64_t L, const int64_t *pos,
                         int t, int heads, const rrt_npy *file) {
  const int64_t D = d->head_dim;
  const size_t es = rrt_dtype_size(d->dtype);
  char *x = malloc((size_t)(d->batch * L * heads * D) * es + 1);
  if (!x) return NULL;
  for (int64_t b = 0; b < d->batch; b++)
    for (int64_t l = 0; l < L; l++) {
      for (int64_t h = 0; h < heads; h++) {
        int64_t g = ((b * d->seq + pos[l]) * heads + h) * D, li = ((b * L + l) * heads + h) * D;
        if (file) {
          memcpy(x + (size_t)li * es, (const char *)file->data + (size_t)g * es, (size_t)D * es);
        } else {
          for (int64_t e = 0; e < D; e++)
            rrt_am_store(x, li + e, (int)d->dtype, rrt_attn_data_value(seed, t, (uint64_t)(g + e)));
        }
      }
    }
  return x;
}

/* Rank 0: the rows of rank src's shard (part, L rows) at their natural
 * places: O, dQ ([B, S, heads, D]), dK, dV (heads_kv) or, with is_lse, LSE
 * ([B, heads_q, S]). */
static void place_shard(const rrt_attn_desc *d, const char *part, int64_t L, const int64_t *pos,
                        size_t es, int heads, int is_lse, char *nat) {
  const int64_t H = is_lse ? d->heads_q : heads, D = d->head_dim;
  for (int64_t b = 0; b < d->batch; b++)
    for (int64_t l = 0; l < L; l++) {
      if (!is_lse) {
        memcpy(nat + (size_t)((b * d->seq + pos[l]) * H * D) * es,
               part + (size_t)((b * L + l) * H * D) * es, (size_t)(H * D) * es);
      } else {
        for (int64_t h = 0; h < H; h++)
          memcpy(nat + (size_t)((b * H + h) * d->seq + pos[l]) * es,
                 part + (size_t)((b * H + h) * L + l) * es, es);
      }
    }
}

/* Gather shards on rank 0 and reorder to natural order by every rank's
 * rrt_attn_shard_positions (shards may differ in length): rows of `heads`
 * heads or, with is_lse, LSE. Returns a malloc'd global array on rank 0,
 * NULL elsewhere; *fail when the gather failed (on every rank). The gather
 * has size_t counts and the library's timeout. */
void *rrt_app_attn_gather(rrt_ctx_t ctx, const rrt_attn_desc *d, const void *shard,
                          size_t shard_bytes, size_t es, int heads, int is_lse, int *fail) {
  int P = rrt_ctx_size(ctx), r = rrt_ctx_rank(ctx);
  void *gathered = NULL;
  size_t total = 0;
  *fail = rrt_host_gatherv_alloc(ctx, "ringrt attn: gathering the outputs", shard, shard_bytes, 0,
                                 &gathered, NULL, &total) != RRT_SUCCESS;
  const char *part = gathered;
  if (*fail || r != 0) return NULL;
  char *nat = malloc(total + 1);
  int64_t *pos = malloc(((size_t)d->seq + 1) * sizeof *pos);
  const int64_t row = is_lse ? d->heads_q : (int64_t)heads * d->head_dim;
  for (int src = 0; nat && pos && src < P; src++) {
    int64_t L = 0;
    rrt_attn_shard_len(d, P, src, &L);
    rrt_attn_shard_positions(d, P, src, pos);
    place_shard(d, part, L, pos, es, heads, is_lse, nat);
    part += (size_t)(d->batch * L * row) * es;
  }
  if (!pos) free(nat), nat = NULL;
  free(pos);
  free(gathered);
  return nat;
}

/* Tile variants of the tensor-core attention kernels (attn_fwd_tc.cu,
 * attn_bwd_tc.cu) and the choice among them by the device's opt-in limit of
 * dynamic shared memory a block (cudaDevAttrMaxSharedMemoryPerBlockOptin:
 * 163 KiB on sm_80, 99 KiB on sm_86/87/89, 227 KiB on sm_90). C, so that
 * the host's kernel choice (rrt_attn_tc_supported) and the launches size
 * the same tiles: a head_dim whose every variant is above the limit runs
 * the SIMT kernels instead of failing its launch. */
#ifndef RRT_KERNELS_CUDA_ATTN_TC_TILES_H
#define RRT_KERNELS_CUDA_ATTN_TC_TILES_H

#include <stddef.h>
#include <stdint.h>

#define RRT_TC_PAD 8   /* bf16/f16 elements after each shared-memory row (16 bytes) */
#define RRT_TC_WARPS 4 /* warps of a block */
#define RRT_TC_DQ_ROWS (16 * RRT_TC_WARPS) /* query rows of a dq block */
#define RRT_TC_FWD_KEYS 64                 /* keys of a forward K/V tile */

/* Bytes of a row of `head_dim` elements in a shared tile. */
static inline size_t rrt_tc_row_bytes(int head_dim) {
  return (size_t)(head_dim + RRT_TC_PAD) * sizeof(uint16_t);
}

/* The head-dim bound of the instantiation that takes head_dim. */
static inline int rrt_tc_dmax(int head_dim) {
  return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;
}

/* Query rows of a forward block: 32 a warp (two 16-row mma tiles, so each
 * K or V fragment feeds two mma) up to the 128 bound; 16 a warp at 256,
 * where 32 rows of O alone would take all 255 registers. */
static inline int rrt_attn_fwd_tc_rows(int head_dim) {
  return rrt_tc_dmax(head_dim) <= 128 ? 32 * RRT_TC_WARPS : 16 * RRT_TC_WARPS;
}

/* Forward: the Q tile, one K and one V tile of RRT_TC_FWD_KEYS keys (V of
 * a tile loads while its S = Q K^T is computed, K of the next while P V
 * is), rows of the head-dim bound (a compile-time stride): 36 KiB to
 * head_dim 64, 68 KiB to 128 (two blocks an SM on sm_80), 99 KiB to 256. */
static inline size_t rrt_attn_fwd_tc_smem(int head_dim) {
  return (size_t)(rrt_attn_fwd_tc_rows(head_dim) + 2 * RRT_TC_FWD_KEYS) *
         rrt_tc_row_bytes(rrt_tc_dmax(head_dim));
}

/* dK/dV: the block's K and V, two Q and dO tiles of bq queries, and per
 * tile row its key range, lse and delta. */
static inline size_t rrt_attn_dkv_tc_smem(int bq, int dsplit, int head_dim) {
  return (size_t)(2 * (16 * RRT_TC_WARPS / dsplit) + 4 * bq) * rrt_tc_row_bytes(head_dim) +
         (size_t)(2 * bq) * (2 * sizeof(int64_t) + 2 * sizeof(float));
}

/* dQ: the Q and dO tiles and two K and two V tiles of bk keys. */
static inline size_t rrt_attn_dq_tc_smem(int bk, int head_dim) {
  return (size_t)(2 * RRT_TC_DQ_ROWS + 4 * bk) * rrt_tc_row_bytes(head_dim);
}

/* Keys a forward tile, 0 when the tiles do not fit in `optin` bytes (at
 * the 256 bound they take exactly sm_86/89's 99 KiB). */
static inline int rrt_attn_fwd_tc_bk(int head_dim, size_t optin) {
  return rrt_attn_fwd_tc_smem(head_dim) <= optin ? RRT_TC_FWD_KEYS : 0;
}

/* Queries a dK/dV tile: 64 (head_dim <= 64), 32, or 16 at the 256 bound
 * (its two warps a key group split head_dim: dsplit 2); 0 when none fits. */
static inline int rrt_attn_dkv_tc_bq(int head_dim, size_t optin) {
  const int dmax = rrt_tc_dmax(head_dim);
  const int dsplit = dmax == 256 ? 2 : 1;
  const int big = dmax == 64 ? 64 : 32;
  if (rrt_attn_dkv_tc_smem(big, dsplit, head_dim) <= optin) return big;
  if (dmax == 256 && rrt_attn_dkv_tc_smem(16, dsplit, head_dim) <= optin) return 16;
  return 0;
}

/* Keys a dQ tile: 64 (bound 64, 128), 32 (bound 256), or half of that
 * where the device's limit is smaller (sm_86/89's 99 KiB); 0 when none fits. */
static inline int rrt_attn_dq_tc_bk(int head_dim, size_t optin) {
  const int dmax = rrt_tc_dmax(head_dim);
  const int big = dmax == 256 ? 32 : 64;
  if (rrt_attn_dq_tc_smem(big, head_dim) <= optin) return big;
  if (dmax != 64 && rrt_attn_dq_tc_smem(big / 2, head_dim) <= optin) return big / 2;
  return 0;
}

#endif

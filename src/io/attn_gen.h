/* Deterministic attention inputs for tests and `ringrt attn`: the value of
 * element (b, pos, h, d) of a global BSHD tensor depends only on the seed,
 * the tensor and that global index, so every rank generates its own shard
 * (for any layout and rank count) without materialising the global tensor. */
#ifndef RRT_IO_ATTN_GEN_H
#define RRT_IO_ATTN_GEN_H

#include <stdint.h>

static inline uint64_t rrt_attn_data_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/** Uniform in [-1, 1): tensor 0 = Q, 1 = K, 2 = V; idx = flat natural-order
 *  index ((b * seq + pos) * heads + h) * dim + d. */
static inline float rrt_attn_data_value(uint64_t seed, int tensor, uint64_t idx) {
  uint64_t r = rrt_attn_data_mix(rrt_attn_data_mix(seed * 3u + (uint64_t)tensor) ^ idx);
  return (float)((double)(r >> 40) * (2.0 / 16777216.0) - 1.0);
}

#endif

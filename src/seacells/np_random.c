/* NumPy's default generator, np.random.default_rng(seed).integers(n), bit
 * for bit: SeedSequence(seed) -> PCG64 (XSL-RR, 128-bit state) -> 32-bit
 * draws (the low, then the high half of each 64-bit output) -> Lemire's
 * bounded integers. palantir's max-min waypoint sampling draws its start
 * cells from it (seed 20); reproducing it is what makes ringrt's waypoints
 * the reference's. Follows the algorithms as NumPy documents them
 * (numpy/random/bit_generator.pyx, pcg64.h, distributions.c). */
#include <string.h>

#include "seacells/internal.h"

typedef unsigned __int128 u128;

static uint32_t hashmix(uint32_t v, uint32_t *hc) {
  v ^= *hc;
  *hc *= 0x931e8875u;
  v *= *hc;
  return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t r = 0xca01f9ddu * x - 0x4973f715u * y;
  return r ^ (r >> 16);
}

static void pcg_step(rrt_np_rng *r) {
  const u128 mult = ((u128)2549297995355413924ull << 64) + 4865540595714422341ull;
  u128 st = ((u128)r->state[0] << 64) | r->state[1], inc = ((u128)r->inc[0] << 64) | r->inc[1];
  st = st * mult + inc;
  r->state[0] = (uint64_t)(st >> 64), r->state[1] = (uint64_t)st;
}

void rrt_np_rng_seed(rrt_np_rng *r, uint64_t seed) {
  uint32_t ent[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, pool[4], hc = 0x43b0d7e5u;
  int nent = seed >> 32 ? 2 : 1;
  for (int i = 0; i < 4; i++)
    pool[i] = hashmix(i < nent ? ent[i] : 0u, &hc);
  for (int src = 0; src < 4; src++)
    for (int dst = 0; dst < 4; dst++)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &hc));
  uint32_t w32[8], hb = 0x8b51f9ddu;
  for (int i = 0; i < 8; i++) {
    uint32_t v = pool[i % 4] ^ hb;
    hb *= 0x58f38dedu;
    v *= hb;
    w32[i] = v ^ (v >> 16);
  }
  uint64_t w[4];
  for (int j = 0; j < 4; j++)
    w[j] = (uint64_t)w32[2 * j] | (uint64_t)w32[2 * j + 1] << 32;
  u128 initstate = ((u128)w[0] << 64) | w[1], initseq = ((u128)w[2] << 64) | w[3];
  u128 inc = (initseq << 1) | 1u;
  memset(r, 0, sizeof *r);
  r->inc[0] = (uint64_t)(inc >> 64), r->inc[1] = (uint64_t)inc;
  pcg_step(r);
  u128 st = (((u128)r->state[0] << 64) | r->state[1]) + initstate;
  r->state[0] = (uint64_t)(st >> 64), r->state[1] = (uint64_t)st;
  pcg_step(r);
}

static uint32_t next32(rrt_np_rng *r) {
  if (r->has32) {
    r->has32 = 0;
    return r->buf32;
  }
  pcg_step(r);
  uint64_t x = r->state[0] ^ r->state[1];
  unsigned rot = (unsigned)(r->state[0] >> 58);
  uint64_t out = (x >> rot) | (x << ((64 - rot) & 63));
  r->has32 = 1, r->buf32 = (uint32_t)(out >> 32);
  return (uint32_t)out;
}

int64_t rrt_np_rng_integers(rrt_np_rng *r, int64_t n) {
  if (n <= 1) return 0;
  uint32_t rng = (uint32_t)(n - 1), excl = rng + 1;
  uint64_t m = (uint64_t)next32(r) * excl;
  uint32_t left = (uint32_t)m;
  if (left < excl) {
    uint32_t threshold = (UINT32_MAX - rng) % excl;
    while (left < threshold) {
      m = (uint64_t)next32(r) * excl;
      left = (uint32_t)m;
    }
  }
  return (int64_t)(m >> 32);
}

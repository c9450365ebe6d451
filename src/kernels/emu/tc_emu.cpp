/* The emulator's tensor-core instructions (interface: src/kernels/cuda/tc_prims.h).
 *
 * Each lane hands its fragment registers to one warp collective, then every
 * lane places all 32 lanes' registers in the full matrices by the PTX ISA's
 * fragment layout and computes its own accumulator elements.
 *
 * Arithmetic of mma: the products of bf16/f16 inputs are exact in double; each
 * D element is c plus the K products summed in k order in double, rounded
 * once to f32 (round to nearest even). That is within half an f32 ulp of the
 * exact result unless the terms span more than about 29 binades. NVIDIA does
 * not specify the order or the internal precision of the tensor cores' sum,
 * so a kernel test against hardware must allow a few f32 ulps of the sum of
 * the terms' magnitudes (docs/runtime.md).
 */
#include <stdint.h>
#include <string.h>

#include "kernels/emu/cuda_builtins.h"
#include "kernels/emu/racecheck.h"
#include "kernels/cuda/tc_prims.h"

/* A planted fault for tests/emu/cute_truth.sh only: 1 swaps the two
 * halves of every A register of mma, which CuTe's layouts must catch. */
#ifndef RRT_EMU_PLANTED_SWAP
#define RRT_EMU_PLANTED_SWAP 0
#endif

namespace rrt_emu {
namespace {

float element(uint32_t reg, int half, int type) {
  const unsigned short bits = (unsigned short)(half ? reg >> 16 : reg & 0xffffu);
  return type == TC_BF16 ? __bfloat162float(__ushort_as_bfloat16(bits))
                         : __half2float(__ushort_as_half(bits));
}

struct Frags {
  uint32_t a[4], b[2];
};

} // namespace

void mma(int k, int type, float d[4], const uint32_t *a, const uint32_t *b, const float c[4]) {
  const int na = k / 4, nb = k / 8; /* .b32 registers of A and B per lane */
  Frags mine = {}, all[32];
  memcpy(mine.a, a, (size_t)na * sizeof *a);
  memcpy(mine.b, b, (size_t)nb * sizeof *b);
  warp_gather(k == 16 ? "mma.sync.m16n8k16" : "mma.sync.m16n8k8", &mine, all, sizeof mine,
              (uintptr_t)__builtin_return_address(0), 2 * k + type);
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; lane++) {
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 2 * na; i++)
      A[g + 8 * ((i >> 1) & 1)][2 * t + (RRT_EMU_PLANTED_SWAP ^ (i & 1)) + 8 * (i >= 4)] =
          element(all[lane].a[i >> 1], i & 1, type);
    for (int i = 0; i < 2 * nb; i++)
      B[2 * t + (i & 1) + 8 * (i >= 2)][g] = element(all[lane].b[i >> 1], i & 1, type);
  }
  const int lane = (int)lane_id(), g = lane >> 2, t = lane & 3;
  float out[4];
  for (int i = 0; i < 4; i++) {
    const int row = g + 8 * (i >= 2), col = 2 * t + (i & 1);
    double s = (double)c[i];
    for (int kk = 0; kk < k; kk++)
      s += (double)A[row][kk] * (double)B[kk][col];
    out[i] = (float)s;
  }
  memcpy(d, out, sizeof out); /* d may be c */
}

void ldmatrix(int num, bool trans, uint32_t *r, const void *row) {
  const void *rows[32];
  const uintptr_t pc = (uintptr_t)__builtin_return_address(0);
  warp_gather("ldmatrix", &row, rows, sizeof row, pc, 2 * num + (int)trans);
  const int lane = (int)lane_id(), g = lane >> 2, t = lane & 3;
  if (lane < 8 * num && (uintptr_t)row % 16 != 0)
    fault("ldmatrix: the row address %p of lane %d is not 16-byte aligned", row, lane);
  if (lane < 8 * num) {
    check_shared("ldmatrix row", row, 16);
    if (rc_armed()) rc_access(row, 16, false, pc); /* the row this lane names */
  }
  for (int j = 0; j < num; j++) {
    const unsigned short *p0, *p1; /* the two elements of register j */
    if (!trans) {
      p0 = (const unsigned short *)rows[8 * j + g] + 2 * t;
      p1 = p0 + 1;
    } else {
      p0 = (const unsigned short *)rows[8 * j + 2 * t] + g;
      p1 = (const unsigned short *)rows[8 * j + 2 * t + 1] + g;
    }
    unsigned short lo, hi;
    memcpy(&lo, p0, sizeof lo);
    memcpy(&hi, p1, sizeof hi);
    r[j] = (uint32_t)lo | (uint32_t)hi << 16;
  }
  /* Hardware reads the rows as one instruction: no lane may run on (and
   * store to them) before every lane has read. */
  __syncwarp();
}

} // namespace rrt_emu

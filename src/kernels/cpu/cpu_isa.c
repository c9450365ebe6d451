/* The CPU kernels' vector variant (cpu_isa.h). */
#include "kernels/cpu/cpu_isa.h"

#include "comm/env.h"

rrt_cpu_variant rrt_cpu_variant_pick(int isa) {
  if (isa == RRT_CPU_ISA_BASE) return RRT_CPU_VARIANT_BASE;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  const int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                     __builtin_cpu_supports("avx512dq");
  const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512 && isa != RRT_CPU_ISA_AVX2) return RRT_CPU_VARIANT_AVX512;
  if (avx2) return RRT_CPU_VARIANT_AVX2;
#endif
  return RRT_CPU_VARIANT_BASE;
}

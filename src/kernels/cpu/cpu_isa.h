/* Which vector variant of the CPU kernels runs: the RINGRT_CPU_ISA request
 * (rrt_cpu_isa, comm/env.h) against what this CPU has. One answer for every
 * kernel that comes in variants (attention forward and backward), so they
 * cannot disagree. */
#ifndef RRT_KERNELS_CPU_CPU_ISA_H
#define RRT_KERNELS_CPU_CPU_ISA_H

typedef enum rrt_cpu_variant {
  RRT_CPU_VARIANT_BASE = 0, /* portable C vectors */
  RRT_CPU_VARIANT_AVX2,     /* AVX2 + FMA */
  RRT_CPU_VARIANT_AVX512    /* AVX-512 F, VL, DQ */
} rrt_cpu_variant;

/** The best variant this CPU runs that the request allows: `base` forces
 *  BASE, `avx2` caps at AVX2, anything else takes the best available. */
rrt_cpu_variant rrt_cpu_variant_pick(int isa);

#endif

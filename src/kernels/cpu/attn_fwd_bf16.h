/* CPU local attention on bf16 storage: Q K^T and P V by vdpbf16ps
 * (AVX512-BF16, f32 accumulation), without converting Q, K, V to f32. */
#ifndef RRT_KERNELS_CPU_ATTN_FWD_BF16_H
#define RRT_KERNELS_CPU_ATTN_FWD_BF16_H

#include <stdint.h>

#include "kernels/cpu/attn_fwd.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when this CPU executes vdpbf16ps (avx512_bf16 with avx512f/vl/bw). */
int rrt_attn_cpu_bf16_native(void);

/** Whether bf16 storage runs the bf16 kernel under RINGRT_CPU_ISA = isa
 *  (rrt_cpu_isa): AUTO where the CPU has the instruction, AVX512BF16
 *  always (emulated where the CPU lacks it); otherwise storage is converted
 *  to f32 for the f32 kernel. */
int rrt_attn_cpu_bf16_selected(int isa);

/** As rrt_attn_fwd_cpu (a->q, a->k, a->v unused), reading bf16 bit patterns
 *  q [batch, q_rows, heads_q, head_dim] and k, v [batch, kv_rows, heads_kv,
 *  head_dim]. Scores and every sum are f32; the probabilities P are
 *  rounded to bf16 for the P V product (as flash-attn does on GPUs), the
 *  softmax denominator uses them unrounded. */
rrt_status rrt_attn_fwd_cpu_bf16(const rrt_attn_cpu_args *a, const uint16_t *q, const uint16_t *k,
                                 const uint16_t *v, const rrt_attn_item *items, int nitems);

#ifdef __cplusplus
}
#endif
#endif

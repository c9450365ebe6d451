/* `ringrt attn --check`: naive attention in double on the global tensors. */
#ifndef RRT_APP_ATTN_CHECK_H
#define RRT_APP_ATTN_CHECK_H

#include <stdint.h>

#include "io/npy.h"
#include "ringrt/attn.h"

/** Errors of a run against the double reference, and the verdict. */
typedef struct rrt_app_attn_check {
  double max_abs, max_rel, lse_abs, ref_max;
  int pass;
} rrt_app_attn_check;

/** Compare the global output `out` (natural order, d->dtype) and `lse`
 *  ([B, H, S], f32) with the reference computed from the inputs: the .npy
 *  files (files[0..2] = Q, K, V) or, with files NULL, the inputs generated
 *  from `seed`. Returns 0, or 1 when the global inputs do not fit in memory. */
int rrt_app_attn_check_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                           const void *out, const float *lse, rrt_app_attn_check *c);

#endif

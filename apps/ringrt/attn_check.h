/* `ringrt attn --check`: naive attention in double on the global tensors. */
#ifndef RRT_APP_ATTN_CHECK_H
#define RRT_APP_ATTN_CHECK_H

#include <stdint.h>

#include "io/npy.h"
#include "ringrt/attn.h"

/** Errors of a run against the double reference, and the verdict. */
typedef struct rrt_app_attn_check {
  double max_abs, max_rel, lse_abs, ref_max;
  double lse_rel; /* max |LSE - ref| / max(1, |ref|) */
  int pass;
} rrt_app_attn_check;

/** Errors of the gradients (--backward --check): max |got - ref| / max |ref|
 *  of dQ, dK, dV, and the verdict. */
typedef struct rrt_app_attn_check_bwd {
  double rel[3], ref_max[3];
  double dsinks_rel; /* with sinks: max over heads |dsinks - ref| / sum |terms| */
  int pass;
} rrt_app_attn_check_bwd;

/** Compare the global output `out` (natural order, d->dtype) and `lse`
 *  ([B, H, S], f32) with the reference computed from the inputs: the .npy
 *  files (files[0..2] = Q, K, V) or, with files NULL, the inputs generated
 *  from `seed`; d->softcap and `sinks` (f32 [heads_q], NULL: none) as
 *  attn.h defines them. Returns 0, or 1 when the global inputs do not fit
 *  in memory. */
int rrt_app_attn_check_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                           const float *sinks, const void *out, const float *lse,
                           rrt_app_attn_check *c);

/** The backward reference (float64, from the definition): the gradients
 *  grads[0..2] = dQ, dK, dV (global, natural order, d->dtype) of the loss
 *  with upstream gradient dO (files[3], or generated as tensor 3 from
 *  `seed`), given the forward's stored global output `o`. files: Q, K, V,
 *  dO; an entry without data is generated. With `sinks` (host, NULL:
 *  none) also the run's `dsinks` ([heads_q]) against the reference's.
 *  Returns 0, or 1 when out of memory. */
int rrt_app_attn_check_bwd_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                               const float *sinks, const float *dsinks, const void *o,
                               const void *const grads[3], rrt_app_attn_check_bwd *c);

#endif

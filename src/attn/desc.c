/* Ring attention descriptor: validation and work counts (local, pure). */
#include <float.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attn/desc.h"
#include "comm/options.h"
#include "ringrt/attn.h"
#include "sched/ring_schedule.h"

#define DESC_FAIL(...)                                                                             \
  do {                                                                                             \
    if (msg && msglen) snprintf(msg, msglen, __VA_ARGS__);                                         \
    return RRT_ERR_INVALID_ARG;                                                                    \
  } while (0)

static const rrt_attn_desc desc_defaults = RRT_ATTN_DESC_INITIALIZER;
static const rrt_options_layout desc_layout = {
    .name = "rrt_attn_desc",
    .initializer = "RRT_ATTN_DESC_INITIALIZER",
    .size = sizeof(rrt_attn_desc),
    .min_size = offsetof(rrt_attn_desc, batch),
    .defaults = &desc_defaults,
    .magic_offset = offsetof(rrt_attn_desc, magic),
    .magic = RRT_ATTN_DESC_MAGIC,
    .version_offset = offsetof(rrt_attn_desc, version),
    .version = RRT_ATTN_DESC_VERSION,
};

rrt_status rrt_attn_desc_import(const rrt_attn_desc *user, rrt_attn_desc *full, char *msg,
                                size_t msglen) {
  if (!user) DESC_FAIL("descriptor is NULL");
  return rrt_options_import(&desc_layout, user, full, msg, msglen);
}

/* cu_seqlens: num_docs + 1 nondecreasing offsets from 0 to seq, batch 1. */
static rrt_status check_docs(const rrt_attn_desc *d, char *msg, size_t msglen) {
  if (!d->cu_seqlens && d->num_docs == 0) return RRT_SUCCESS;
  if (!d->cu_seqlens) DESC_FAIL("num_docs %lld without cu_seqlens", (long long)d->num_docs);
  if (d->num_docs < 1) DESC_FAIL("cu_seqlens given with num_docs %lld < 1", (long long)d->num_docs);
  if (d->batch != 1)
    DESC_FAIL("packed documents (cu_seqlens) need batch 1, not %lld", (long long)d->batch);
  const int64_t *cu = d->cu_seqlens;
  if (cu[0] != 0) DESC_FAIL("cu_seqlens[0] is %lld, must be 0", (long long)cu[0]);
  for (int64_t i = 1; i <= d->num_docs; i++)
    if (cu[i] < cu[i - 1])
      DESC_FAIL("cu_seqlens[%lld] = %lld is less than cu_seqlens[%lld] = %lld (offsets must not "
                "decrease)",
                (long long)i, (long long)cu[i], (long long)(i - 1), (long long)cu[i - 1]);
  if (cu[d->num_docs] != d->seq)
    DESC_FAIL("cu_seqlens[%lld] (the last) is %lld, must be seq %lld", (long long)d->num_docs,
              (long long)cu[d->num_docs], (long long)d->seq);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_desc_check(const rrt_attn_desc *user, int nranks, char *msg, size_t msglen) {
  rrt_attn_desc full;
  rrt_status st = rrt_attn_desc_import(user, &full, msg, msglen);
  if (st != RRT_SUCCESS) return st;
  const rrt_attn_desc *d = &full;
  if (d->batch < 1) DESC_FAIL("batch %lld < 1", (long long)d->batch);
  if (d->seq < 1) DESC_FAIL("seq %lld < 1", (long long)d->seq);
  if (d->heads_q < 1 || d->heads_kv < 1)
    DESC_FAIL("heads_q %d / heads_kv %d must be >= 1", d->heads_q, d->heads_kv);
  if (d->heads_q % d->heads_kv != 0)
    DESC_FAIL("heads_q %d is not a multiple of heads_kv %d", d->heads_q, d->heads_kv);
  if (d->head_dim < 1 || d->head_dim > RRT_ATTN_MAX_HEAD_DIM)
    DESC_FAIL("head_dim %d outside 1..%d", d->head_dim, RRT_ATTN_MAX_HEAD_DIM);
  if (d->dtype != RRT_DTYPE_F32 && d->dtype != RRT_DTYPE_BF16 && d->dtype != RRT_DTYPE_F16)
    DESC_FAIL("dtype %s is not a storage type of attention (f32, bf16, f16)",
              rrt_dtype_name(d->dtype));
  if ((unsigned)d->layout >= RRT_ATTN_LAYOUT_COUNT) DESC_FAIL("unknown layout %d", (int)d->layout);
  /* 0 is the initializer's "default"; anything else must be a usable scale
   * (a negative one would silently flip the softmax, inf/NaN poison it) */
  if (!(d->scale >= 0 && d->scale <= DBL_MAX))
    DESC_FAIL("scale %g is not finite and > 0 (0 means 1/sqrt(head_dim))", d->scale);
  /* Every buffer is addressed with 64-bit element counts and held with f32
   * accumulators (O, dQ/dK/dV): the largest tensor, in f32 bytes, must fit. */
  unsigned __int128 elems = (unsigned __int128)d->batch * (unsigned __int128)d->seq *
                            (unsigned __int128)d->heads_q * (unsigned __int128)d->head_dim;
  if (elems * 4 > (unsigned __int128)(SIZE_MAX < INT64_MAX ? SIZE_MAX : INT64_MAX))
    DESC_FAIL("batch %lld x seq %lld x heads_q %d x head_dim %d elements (f32: 4 bytes each) "
              "overflow the 64-bit size arithmetic",
              (long long)d->batch, (long long)d->seq, d->heads_q, d->head_dim);
  if (nranks < 1) DESC_FAIL("%d ranks", nranks);
  if ((unsigned)d->cp_comm >= RRT_CP_COUNT) DESC_FAIL("unknown cp_comm %d", (int)d->cp_comm);
  if (d->cp_inner < 0) DESC_FAIL("cp_inner %d < 0 (0: the node's ranks)", d->cp_inner);
  /* Ulysses splits the query heads over the ranks */
  if (d->cp_comm == RRT_CP_A2A && d->heads_q % nranks != 0)
    DESC_FAIL("cp_comm a2a splits the heads over the ranks: heads_q %d is not a multiple of the "
              "%d ranks (use ring or allgather)",
              d->heads_q, nranks);
  if (d->window_left < -1 || d->window_right < -1)
    DESC_FAIL("window (%d, %d): each side must be >= 0, or -1 for unlimited", d->window_left,
              d->window_right);
  /* 0 is off; a negative cap would flip the scores, inf/NaN poison them */
  if (!(d->softcap >= 0 && d->softcap <= DBL_MAX))
    DESC_FAIL("softcap %g is not finite and >= 0 (0 means no soft-capping)", d->softcap);
  if (d->sinks != 0 && d->sinks != 1) DESC_FAIL("sinks %d is not 0 or 1", d->sinks);
  return check_docs(d, msg, msglen);
}

double rrt_attn_flops(const rrt_attn_desc *user) {
  rrt_attn_desc full, *d = &full;
  if (rrt_attn_desc_check(user, 1, NULL, 0) != RRT_SUCCESS ||
      rrt_attn_desc_import(user, &full, NULL, 0) != RRT_SUCCESS)
    return 0.0;
  return 4.0 * d->head_dim * rrt_attn_mask_pairs(d) * (double)d->heads_q * (double)d->batch;
}

double rrt_attn_flops_bwd(const rrt_attn_desc *desc) { return 2.5 * rrt_attn_flops(desc); }

/* The schedule of a valid descriptor (NULL when invalid or out of memory). */
static rrt_ring_sched *sched_of(const rrt_attn_desc *user, int nranks, int rank) {
  rrt_attn_desc full;
  rrt_ring_sched *s = NULL;
  if (rank < 0 || rank >= nranks || rrt_attn_desc_check(user, nranks, NULL, 0) != RRT_SUCCESS ||
      rrt_attn_desc_import(user, &full, NULL, 0) != RRT_SUCCESS)
    return NULL;
  rrt_ring_sched_create(&full, nranks, &s);
  return s;
}

rrt_status rrt_attn_shard_len(const rrt_attn_desc *user, int nranks, int rank, int64_t *len) {
  rrt_ring_sched *s = len ? sched_of(user, nranks, rank) : NULL;
  if (!s) return RRT_ERR_INVALID_ARG;
  *len = s->len[rank];
  rrt_ring_sched_destroy(s);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_shard_positions(const rrt_attn_desc *user, int nranks, int rank, int64_t *pos) {
  rrt_ring_sched *s = pos ? sched_of(user, nranks, rank) : NULL;
  if (!s) return RRT_ERR_INVALID_ARG;
  rrt_ring_sched_positions(s, rank, pos);
  rrt_ring_sched_destroy(s);
  return RRT_SUCCESS;
}

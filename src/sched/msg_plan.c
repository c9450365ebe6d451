/* Message plans (see msg_plan.h). */
#include "sched/msg_plan.h"

#include <stdlib.h>
#include <string.h>

/* Sort items by (level, peer, key). */
typedef struct plan_item {
  int32_t level, peer, idx;
  int64_t key;
} plan_item;

static int cmp_item(const void *a, const void *b) {
  const plan_item *x = a, *y = b;
  if (x->level != y->level) return x->level < y->level ? -1 : 1;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  return (x->key > y->key) - (x->key < y->key);
}

rrt_status rrt_msg_plan_build(int64_t count, const int32_t *peer, const int32_t *idx,
                              const int32_t *level, const int64_t *key, rrt_msg_plan *out) {
  memset(out, 0, sizeof(*out));
  plan_item *it = malloc(((size_t)count + 1) * sizeof(plan_item));
  out->idx = malloc(((size_t)count + 1) * sizeof(int32_t));
  out->level = malloc(((size_t)count + 1) * sizeof(int32_t));
  out->peer = malloc(((size_t)count + 1) * sizeof(int32_t));
  out->ptr = malloc(((size_t)count + 2) * sizeof(int64_t));
  if (!it || !out->idx || !out->level || !out->peer || !out->ptr) {
    free(it);
    rrt_msg_plan_free(out);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t t = 0; t < count; t++) {
    it[t].level = level ? level[t] : 0;
    it[t].peer = peer[t];
    it[t].idx = idx[t];
    it[t].key = key[t];
  }
  qsort(it, (size_t)count, sizeof(plan_item), cmp_item);
  int m = 0;
  for (int64_t t = 0; t < count; t++) {
    if (t == 0 || it[t].level != it[t - 1].level || it[t].peer != it[t - 1].peer) {
      out->level[m] = it[t].level;
      out->peer[m] = it[t].peer;
      out->ptr[m] = t;
      m++;
    }
    out->idx[t] = it[t].idx;
  }
  out->ptr[m] = count;
  out->nmsg = m;
  free(it);
  return RRT_SUCCESS;
}

void rrt_msg_plan_free(rrt_msg_plan *p) {
  if (!p) return;
  free(p->level), free(p->peer), free(p->ptr), free(p->idx);
  memset(p, 0, sizeof(*p));
}

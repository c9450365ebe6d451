/* CPU binding of a rank with hwloc (the policy: comm/bind.h).
 * cuda: the cores near the GPU (hwloc_cudart_get_device_cpuset). */
#include <hwloc.h>
#include <stdio.h>

#include "comm/bind.h"
#include "comm/error.h"

#if RINGRT_HAVE_CUDA
#include <hwloc/cudart.h>
#endif

static int count_cores(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
  return n > 0 ? n : hwloc_bitmap_weight(set);
}

/* The cpuset of an even, non-overlapping share of the allowed cores. */
static void even_share(rrt_ctx_t ctx, hwloc_topology_t topo, hwloc_bitmap_t set) {
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
  int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_CORE);
  hwloc_bitmap_zero(set);
  if (ncores <= 0) {
    hwloc_bitmap_copy(set, allowed);
    return;
  }
  int first, count;
  rrt_bind_even_share(ctx->local_rank, ctx->local_size, ncores, &first, &count);
  for (int i = first; i < first + count; i++) {
    hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, allowed, HWLOC_OBJ_CORE, i);
    if (core) hwloc_bitmap_or(set, set, core->cpuset);
  }
}

static void describe(rrt_ctx_t ctx, hwloc_topology_t topo, hwloc_const_cpuset_t set) {
  hwloc_bitmap_list_snprintf(ctx->cores, sizeof ctx->cores, set);
  ctx->numa_node = -1;
  hwloc_nodeset_t nodes = hwloc_bitmap_alloc();
  if (nodes) {
    hwloc_cpuset_to_nodeset(topo, set, nodes);
    if (hwloc_bitmap_weight(nodes) == 1) ctx->numa_node = hwloc_bitmap_first(nodes);
    hwloc_bitmap_free(nodes);
  }
}

rrt_status rrt_bind_rank(rrt_ctx_t ctx) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return rrt_error(ctx, RRT_ERR_INTERNAL, "rrt_ctx_create", "hwloc_topology_init failed");
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return rrt_error(ctx, RRT_ERR_INTERNAL, "rrt_ctx_create", "hwloc_topology_load failed");
  }
  rrt_status st = RRT_SUCCESS;
  hwloc_bitmap_t current = hwloc_bitmap_alloc(), target = hwloc_bitmap_alloc();
  if (!current || !target) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_ctx_create", "hwloc bitmap allocation");
    goto done;
  }
  if (hwloc_get_cpubind(topo, current, HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_bitmap_copy(current, hwloc_topology_get_allowed_cpuset(topo));

  int launcher_bound = !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), current);
  if (launcher_bound) {
    hwloc_bitmap_copy(target, current);
  } else if (ctx->backend == RRT_BACKEND_CUDA) {
#if RINGRT_HAVE_CUDA
    if (hwloc_cudart_get_device_cpuset(topo, ctx->device, target) != 0 ||
        hwloc_bitmap_iszero(target))
      hwloc_bitmap_copy(target, hwloc_topology_get_allowed_cpuset(topo));
#endif
  } else {
    even_share(ctx, topo, target);
  }
  if (!launcher_bound && hwloc_set_cpubind(topo, target, HWLOC_CPUBIND_PROCESS) != 0) {
    /* Some containers forbid binding; that costs speed, not correctness. */
    hwloc_bitmap_copy(target, current);
  }
  describe(ctx, topo, target);
  rrt_bind_set_threads(ctx, count_cores(topo, target), launcher_bound);
done:
  hwloc_bitmap_free(current);
  hwloc_bitmap_free(target);
  hwloc_topology_destroy(topo);
  return st;
}

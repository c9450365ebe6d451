/* CPU binding of a rank without hwloc (the policy: comm/bind.h): the
 * allowed CPUs from the cgroup (else the online ones), cores as groups of
 * hardware-thread siblings, NUMA nodes and a GPU's nearby CPUs from /sys,
 * the binding itself by sched_setaffinity. `ringrt info` says this build
 * binds without hwloc. */
#define _GNU_SOURCE
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bind.h"
#include "comm/error.h"

#if RINGRT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* A Linux CPU list ("0-3,8,10-11\n") into `set`; 0 when unreadable or empty. */
static int read_cpulist(const char *path, cpu_set_t *set) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  CPU_ZERO(set);
  for (char *p = buf; *p && *p != '\n';) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p || a < 0) return 0;
    if (*end == '-') {
      p = end + 1;
      b = strtol(p, &end, 10);
      if (end == p || b < a) return 0;
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET((int)c, set);
    p = *end == ',' ? end + 1 : end;
  }
  return CPU_COUNT(set) > 0;
}

static void cpulist_string(const cpu_set_t *set, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE && used < len; c++) {
    if (!CPU_ISSET(c, set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
      e++;
    int w = e > c ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, e)
                  : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
    used += w > 0 ? (size_t)w : 0;
    c = e;
  }
}

/* The allowed part of CPU c's hardware-thread siblings: its core. */
static void core_of(int c, const cpu_set_t *allowed, cpu_set_t *core) {
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
  if (!read_cpulist(path, core)) {
    CPU_ZERO(core);
    CPU_SET(c, core);
  }
  CPU_AND(core, core, allowed);
}

/* The cores of `set`, each named by its lowest CPU in `first` (ascending:
 * hwloc's core order on Linux). Returns the count. */
static int list_cores(const cpu_set_t *set, int *first) {
  cpu_set_t seen, core;
  CPU_ZERO(&seen);
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, set) || CPU_ISSET(c, &seen)) continue;
    core_of(c, set, &core);
    CPU_OR(&seen, &seen, &core);
    first[n++] = c;
  }
  return n;
}

/* The one NUMA node `set` lies in, -1 when several or unknown. */
static int numa_node_of(const cpu_set_t *set) {
  int found = -1;
  for (int node = 0; node < 1024; node++) {
    char path[128];
    cpu_set_t cpus;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", node);
    if (!read_cpulist(path, &cpus)) continue;
    CPU_AND(&cpus, &cpus, set);
    if (CPU_COUNT(&cpus) == 0) continue;
    if (found >= 0) return -1;
    found = node;
  }
  return found;
}

/* The CPUs near CUDA device `dev` (its PCI device's local_cpulist); 0 if
 * unknown. */
static int device_cpus(int dev, cpu_set_t *set) {
#if RINGRT_HAVE_CUDA
  char bus[32], path[128];
  if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, dev) != cudaSuccess) return 0;
  for (char *p = bus; *p; p++)
    *p = (char)tolower((unsigned char)*p);
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus);
  return read_cpulist(path, set);
#else
  (void)dev;
  (void)set;
  return 0;
#endif
}

rrt_status rrt_bind_rank(rrt_ctx_t ctx) {
  cpu_set_t current, allowed, target, u;
  int first_cpu[CPU_SETSIZE];
  if (sched_getaffinity(0, sizeof current, &current) != 0)
    return rrt_error(ctx, RRT_ERR_INTERNAL, "rrt_ctx_create", "sched_getaffinity failed");
  if (!read_cpulist("/sys/fs/cgroup/cpuset.cpus.effective", &allowed) &&
      !read_cpulist("/sys/devices/system/cpu/online", &allowed))
    allowed = current;
  CPU_OR(&u, &allowed, &current);
  if (!CPU_EQUAL(&u, &allowed)) allowed = current; /* /sys disagrees: trust the OS's mask */
  ctx->numa_node = -1;
  /* bound by the launcher: narrower than what is allowed */
  int launcher_bound = !CPU_EQUAL(&current, &allowed);
  if (launcher_bound) {
    target = current;
  } else if (ctx->backend == RRT_BACKEND_CUDA) {
    if (!device_cpus(ctx->device, &target)) target = allowed;
    CPU_AND(&target, &target, &allowed);
    if (CPU_COUNT(&target) == 0) target = allowed;
  } else {
    int ncores = list_cores(&allowed, first_cpu), first, count;
    rrt_bind_even_share(ctx->local_rank, ctx->local_size, ncores, &first, &count);
    CPU_ZERO(&target);
    for (int i = first; i < first + count; i++) {
      cpu_set_t core;
      core_of(first_cpu[i], &allowed, &core);
      CPU_OR(&target, &target, &core);
    }
  }
  /* Some containers forbid binding; that costs speed, not correctness. */
  if (!launcher_bound && sched_setaffinity(0, sizeof target, &target) != 0) target = current;
  cpulist_string(&target, ctx->cores, sizeof ctx->cores);
  ctx->numa_node = numa_node_of(&target);
  rrt_bind_set_threads(ctx, list_cores(&target, first_cpu), launcher_bound);
  return RRT_SUCCESS;
}

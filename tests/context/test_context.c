/* The runtime context: bootstrap, backend, binding, agreement on creation
 * failures, the Chrome trace. Runs at np = 1..4 on each backend. */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if RINGRT_HAVE_HWLOC
#include <hwloc.h>
#endif

#include "comm/device.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* A CPU list as `ringrt info` prints it ("0-3,8") into a set. */
static void parse_cpus(const char *list, cpu_set_t *set) {
  CPU_ZERO(set);
  for (const char *p = list; *p;) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p) break;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    for (long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET((int)c, set);
    p = *end == ',' ? end + 1 : end;
  }
}

/* Cores of the node: hwloc's count where the build has it, else the
 * distinct hardware-thread sibling groups the kernel lists. */
static int node_cores(void) {
#if RINGRT_HAVE_HWLOC
  hwloc_topology_t topo;
  hwloc_topology_init(&topo);
  hwloc_topology_load(topo);
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  hwloc_topology_destroy(topo);
  return n;
#else
  int n = 0;
  char seen[CPU_SETSIZE] = {0};
  for (int c = 0; c < CPU_SETSIZE; c++) {
    char path[128], list[256] = "";
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(list, sizeof list, f)) list[0] = 0;
    fclose(f);
    if (seen[c]) continue;
    cpu_set_t sib;
    parse_cpus(list, &sib);
    for (int d = 0; d < CPU_SETSIZE; d++)
      if (CPU_ISSET(d, &sib)) seen[d] = 1;
    n++;
  }
  return n > 0 ? n : (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

static void check_bindings(rrt_ctx_t ctx, const rrt_ctx_info *mine) {
  int size = rrt_ctx_size(ctx);
  rrt_ctx_info *all = calloc((size_t)size, sizeof *all);
  MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE,
                MPI_COMM_WORLD);
  int ncores = node_cores();
  for (int a = 0; a < size; a++) {
    CHECK(all[a].rank == a);
    CHECK(all[a].threads >= 1);
    /* The node peers are the ranks with the same host name, in rank order. */
    int same = 0, before = 0;
    for (int b = 0; b < size; b++)
      if (strcmp(all[a].host, all[b].host) == 0) same++, before += b < a;
    CHECK_MSG(all[a].local_size == same && all[a].local_rank == before,
              "rank %d: local rank %d of %d, expected %d of %d", a, all[a].local_rank,
              all[a].local_size, before, same);
    for (int b = 0; b < a; b++) {
      if (strcmp(all[a].host, all[b].host) != 0) continue;
      CHECK_MSG(all[a].local_rank != all[b].local_rank, "ranks %d and %d share local rank", a, b);
      CHECK(all[a].local_size == all[b].local_size);
      /* An even, non-overlapping share whenever there are enough cores. */
      if (all[a].local_size <= ncores && strcmp(all[a].cores, "unbound") != 0) {
        cpu_set_t x, y, both;
        parse_cpus(all[a].cores, &x);
        parse_cpus(all[b].cores, &y);
        CPU_AND(&both, &x, &y);
        CHECK_MSG(CPU_COUNT(&x) > 0 && CPU_COUNT(&both) == 0, "ranks %d (%s) and %d (%s) overlap",
                  a, all[a].cores, b, all[b].cores);
        CHECK(all[a].threads == all[b].threads);
      }
    }
  }
  free(all);
}

static void check_trace(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), size = rrt_ctx_size(ctx);
  CHECK_OK(rrt_trace_enable(ctx, 1));
  double t = rrt_time_now();
  CHECK_OK(rrt_trace_add(ctx, RRT_TRACK_COMPUTE, "kernel \"q\"", t, t + 0.002));
  CHECK_OK(rrt_trace_add(ctx, RRT_TRACK_COMM, "shift", t + 0.001, t + 0.004));
  CHECK_OK(rrt_trace_add(ctx, RRT_TRACK_COMM, "shift", t + 0.005, t + 0.006));
  int count = 0;
  double secs = rrt_phase_seconds(ctx, "shift", &count);
  CHECK(count == 2 && fabs(secs - 0.004) < 1e-9);
  char path[256];
  long id = (long)getpid();
  MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/rrt_trace_test_%ld.json", rrt_test_tmpdir(), id);
  CHECK_OK(rrt_trace_write(ctx, path));
  if (rank == 0) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
      static char text[1 << 16];
      size_t n = fread(text, 1, sizeof text - 1, f);
      text[n] = '\0';
      fclose(f);
      int events = 0;
      for (const char *p = text; (p = strstr(p, "\"ph\":\"X\"")); p++)
        events++;
      CHECK_MSG(events == 3 * size, "%d events for %d ranks", events, size);
      char want[32];
      snprintf(want, sizeof want, "\"rank %d (", size - 1);
      CHECK(strstr(text, want) != NULL);
      CHECK(strstr(text, "kernel \\\"q\\\"") != NULL); /* names are JSON-escaped */
      CHECK(strstr(text, "comm stream") != NULL);
    }
    remove(path);
  }
  rrt_phase_reset(ctx);
  CHECK(rrt_phase_seconds(ctx, "shift", &count) == 0.0 && count == 0);
}

/* One rank's bad input must fail creation on every rank, never hang. */
static void check_agreement(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  rrt_ctx_t ctx = NULL;
  if (rank == size - 1) setenv("RINGRT_TIMEOUT", "soon", 1);
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx);
  if (rank == size - 1) unsetenv("RINGRT_TIMEOUT");
  CHECK(ctx == NULL);
  CHECK(st == (rank == size - 1 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE));

  cfg.magic = rank == 0 ? 0 : RRT_CTX_CONFIG_MAGIC;
  st = rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx);
  CHECK(ctx == NULL);
  CHECK(st == (rank == 0 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *want = getenv("RINGRT_BACKEND");
  rrt_backend expected = RRT_BACKEND_CPU;
  if (want) CHECK_OK(rrt_backend_parse(want, &expected));

  /* A guest unless asked (RINGRT_BIND=1): the affinity and the OpenMP
   * thread count stay the program's. */
  const char *bind_env = getenv("RINGRT_BIND");
  int asked = bind_env && strcmp(bind_env, "1") == 0;
  if (argc > 1 && strcmp(argv[1], "guest") == 0) /* the default itself, not a leftover RINGRT_BIND */
    CHECK_MSG(!bind_env, "rank %d: the guest case runs without RINGRT_BIND, got '%s'", rank, bind_env);
  cpu_set_t aff_before, aff_after;
  CHECK(sched_getaffinity(0, sizeof aff_before, &aff_before) == 0);
  int threads_before = omp_get_max_threads();

  rrt_ctx_t ctx = NULL;
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  CHECK(sched_getaffinity(0, sizeof aff_after, &aff_after) == 0);
  if (!asked) {
    CHECK_MSG(CPU_EQUAL(&aff_before, &aff_after) && omp_get_max_threads() == threads_before,
              "rank %d: not asked to bind, yet the affinity or the threads changed (%d -> %d)",
              rank, threads_before, omp_get_max_threads());
  }
  if (expected == RRT_BACKEND_CUDA && rrt_cuda_device_count() == 0) {
    /* No GPU: asking for cuda is an error on every rank, not a crash. */
    CHECK(st == RRT_ERR_NO_DEVICE || st == RRT_ERR_UNSUPPORTED);
    CHECK(ctx == NULL);
    int failed = test_result();
    MPI_Finalize();
    return failed ? 1 : RRT_TEST_SKIP;
  }
  CHECK_OK(st);
  if (ctx) {
    CHECK(rrt_ctx_rank(ctx) == rank && rrt_ctx_size(ctx) == size);
    int cmp = MPI_UNEQUAL;
    MPI_Comm_compare(rrt_ctx_comm(ctx), MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_CONGRUENT); /* a duplicate, not the caller's communicator */
    if (expected != RRT_BACKEND_AUTO) CHECK(rrt_ctx_backend(ctx) == expected);
    if (rrt_ctx_backend(ctx) != RRT_BACKEND_CUDA)
      CHECK(rrt_ctx_transport(ctx) == RRT_TRANSPORT_MPI);
    else
      CHECK(rrt_ctx_transport(ctx) != RRT_TRANSPORT_MPI);
    rrt_ctx_info info;
    CHECK_OK(rrt_ctx_get_info(ctx, &info));
    CHECK(info.rank == rank && info.size == size);
    CHECK(info.threads == omp_get_max_threads());
    const char *omp = getenv("OMP_NUM_THREADS"); /* the user's cap is kept */
    if (omp && atoi(omp) > 0) CHECK(info.threads <= atoi(omp));
    CHECK(strstr(info.mpi_version, "MPI") != NULL);
    if (rrt_ctx_backend(ctx) != RRT_BACKEND_CUDA) {
      CHECK(info.device == -1 && strcmp(info.device_name, "none") == 0);
    }
    CHECK_MSG(asked == (strcmp(info.cores, "unbound") != 0), "rank %d: RINGRT_BIND=%s, cores %s",
              rank, bind_env ? bind_env : "(unset)", info.cores);
    check_bindings(ctx, &info);
    check_trace(ctx);
    CHECK(strcmp(rrt_ctx_last_error(ctx), "") == 0);
    CHECK_OK(rrt_ctx_destroy(ctx));
  }
  check_agreement();
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

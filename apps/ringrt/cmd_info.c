/* `ringrt info`: one row per rank (host, rank, backend, device, binding,
 * transport, versions), as a table or JSON. */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/host_coll.h"
#include "comm/json_out.h"

static void usage(void) {
  printf("usage: ringrt info [options]\n\n"
         "Prints, for every rank: host, rank/size, local rank, backend, device (name, PCI bus\n"
         "id, memory) or none, bound cores, NUMA node, threads, transport, MPI/NCCL/CUDA\n"
         "versions, and the NCCL library file loaded (rank 0's).\n\n%s%s",
         rrt_app_common_help, rrt_app_exit_help);
}

/* `nccl_library`: the NCCL file rank 0's context loaded ("" for none). */
static void print_json(FILE *f, const rrt_ctx_info *all, int size, const char *nccl_library) {
  fprintf(f,
          "{\"command\":\"info\",\"version\":\"%s\",\"size\":%d,\"nccl_library\":", rrt_version(),
          size);
  rrt_json_string(f, nccl_library);
  fprintf(f, ",\"ranks\":[\n");
  for (int r = 0; r < size; r++) {
    const rrt_ctx_info *i = &all[r];
    fprintf(f,
            "  {\"rank\":%d,\"host\":\"%s\",\"local_rank\":%d,\"local_size\":%d,"
            "\"backend\":\"%s\",\"transport\":\"%s\",\"device\":%d,\"device_name\":\"%s\","
            "\"device_pci\":\"%s\",\"device_memory\":%llu,\"cores\":\"%s\",\"numa_node\":%d,"
            "\"threads\":%d,\"mpi\":\"%s\",\"nccl\":\"%s\",\"cuda\":\"%s\"}%s\n",
            i->rank, i->host, i->local_rank, i->local_size, rrt_backend_name(i->backend),
            rrt_transport_name(i->transport), i->device, i->device_name, i->device_pci,
            (unsigned long long)i->device_memory, i->cores, i->numa_node, i->threads,
            i->mpi_version, i->nccl_version, i->cuda_version, r + 1 < size ? "," : "");
  }
  fprintf(f, "]");
}

static void print_table(const rrt_ctx_info *all, int size, const char *nccl_library) {
  printf("ringrt %s, %d rank(s); %s; NCCL %s%s%s%s; CUDA %s\n", rrt_version(), size,
         all[0].mpi_version, all[0].nccl_version, nccl_library[0] ? " (" : "", nccl_library,
         nccl_library[0] ? ")" : "", all[0].cuda_version);
  printf("%-5s %-16s %-6s %-7s %-11s %-32s %-14s %-10s %-5s %-7s\n", "rank", "host", "local",
         "backend", "transport", "device", "pci", "cores", "numa", "threads");
  for (int r = 0; r < size; r++) {
    const rrt_ctx_info *i = &all[r];
    char dev[64], local[32], numa[16];
    if (i->device >= 0)
      snprintf(dev, sizeof dev, "%d %.40s %.0fGiB", i->device, i->device_name,
               (double)i->device_memory / (1024.0 * 1024.0 * 1024.0));
    else
      snprintf(dev, sizeof dev, "none");
    snprintf(local, sizeof local, "%d/%d", i->local_rank, i->local_size);
    if (i->numa_node >= 0)
      snprintf(numa, sizeof numa, "%d", i->numa_node);
    else
      snprintf(numa, sizeof numa, "-");
    printf("%-5d %-16.16s %-6s %-7s %-11s %-32.32s %-14s %-10.10s %-5s %-7d\n", i->rank, i->host,
           local, rrt_backend_name(i->backend), rrt_transport_name(i->transport), dev,
           i->device_pci[0] ? i->device_pci : "-", i->cores, numa, i->threads);
  }
#if !RINGRT_HAVE_HWLOC
  printf("note: built without hwloc: cores from sched_getaffinity and /sys (cgroup, thread "
         "siblings, NUMA and GPU-local CPU lists)\n");
#endif
}

/* 0: run; 1: --help was printed; 2: usage error (printed on rank 0). */
static int parse(int argc, char **argv, rrt_app_common *c) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (c->rank == 0) usage();
      return 1;
    }
    int r = rrt_app_common_option(c, argc, argv, &i);
    if (r < 0) return 2;
    if (r == 0) {
      rrt_app_usage_error(c, "unknown option '%s'", argv[i]);
      return 2;
    }
  }
  return 0;
}

int rrt_cmd_info(MPI_Comm comm, int argc, char **argv) {
  rrt_app_common opt;
  rrt_app_common_init(&opt, "info", comm, argc, argv);
  int pr = rrt_app_agree_args(comm, &opt, parse(argc, argv, &opt));
  if (pr) return pr == 1 ? 0 : rrt_app_finish(NULL, &opt, RRT_EXIT_USAGE);
  int rc = rrt_app_check_paths(&opt, NULL, 0, NULL, 0);
  rrt_ctx_t ctx = NULL;
  if (rrt_app_ctx_create(comm, &opt, &ctx) != RRT_SUCCESS)
    return rrt_app_finish(NULL, &opt, RRT_EXIT_FAILURE);
  if ((rc = rrt_app_agree_code(ctx, &opt, rc)) != 0) return rrt_app_finish(ctx, &opt, rc);
  double t0 = rrt_phase_begin(ctx);
  rrt_ctx_info mine;
  rrt_ctx_get_info(ctx, &mine);
  int rank = rrt_ctx_rank(ctx), size = rrt_ctx_size(ctx);
  void *gathered = NULL;
  rrt_status st =
      rrt_host_gatherv_alloc(ctx, "ringrt info", &mine, sizeof mine, 0, &gathered, NULL, NULL);
  rrt_ctx_info *all = gathered;
  rrt_phase_end(ctx, "info", t0);
  if (st != RRT_SUCCESS) {
    rrt_app_error(&opt, "rank %d: %s", rank, rrt_ctx_last_error(ctx));
    return rrt_app_finish(ctx, &opt, RRT_EXIT_FAILURE);
  }
  if (rank == 0) {
    FILE *json = rrt_app_json_open(&opt);
    if (json) {
      print_json(json, all, size, rrt_ctx_nccl_library(ctx));
      rrt_app_json_close(&opt, RRT_EXIT_OK);
    }
    if (!opt.json_path || strcmp(opt.json_path, "-") != 0)
      print_table(all, size, rrt_ctx_nccl_library(ctx));
    free(all);
  }
  return rrt_app_finish(ctx, &opt, RRT_EXIT_OK);
}

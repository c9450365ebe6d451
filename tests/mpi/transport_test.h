/* Shared setup of the transport tests: MPI, the skip rule for the cuda
 * backend without a GPU, the context, and the --staged switch.
 *
 * --staged forces the MPI-with-host-staging transport. On cuda it is what a
 * build without NCCL gets (use_nccl = 0); on the host device layer (cpu,
 * emu) the context is switched to it after creation, which runs the staging
 * code (bounce buffers, copies through the device layer, copy back on
 * completion) with host "device" memory, so CI covers that path too. */
#ifndef RRT_TESTS_MPI_TRANSPORT_TEST_H
#define RRT_TESTS_MPI_TRANSPORT_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/device.h"
#include "comm/transport_ops.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

/* 0: ready; RRT_TEST_SKIP: no GPU for the cuda backend; 1: setup failed.
 * On a non-zero return MPI is already finalised. */
static inline int tt_setup(int argc, char **argv, rrt_ctx_t *ctx) {
  MPI_Init(&argc, &argv);
  int staged = 0;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--staged") == 0) staged = 1;
  const char *be = getenv("RINGRT_BACKEND");
  if (be && strcmp(be, "cuda") == 0) {
    int ndev = rrt_cuda_device_count(), local = 1;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    /* NCCL refuses two ranks on one GPU of one host; the staged transport
     * does not care, nor does NCCL when each rank names its own host
     * (NCCL_HOSTID, as tests/gpu/rank_env.sh sets it per rank). */
    int own_host = getenv("NCCL_HOSTID") != NULL;
    const char *why = ndev == 0 ? "no usable GPU"
                      : (!staged && RINGRT_HAVE_NCCL && local > ndev && !own_host)
                          ? "NCCL needs a GPU per rank (or NCCL_HOSTID per rank)"
                          : NULL;
    if (why) {
      if (rrt_test_rank_() == 0)
        printf("SKIP: backend cuda: %s (%d GPUs, %d local ranks)\n", why, ndev, local);
      MPI_Finalize();
      return RRT_TEST_SKIP;
    }
  }
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  if (staged) cfg.use_nccl = 0;
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, &cfg, ctx);
  if (st != RRT_SUCCESS) {
    fprintf(stderr, "rrt_ctx_create failed: %s\n", rrt_status_string(st));
    MPI_Finalize();
    return 1;
  }
  if (staged && (*ctx)->transport == RRT_TRANSPORT_MPI) {
    (*ctx)->tx = &rrt_transport_staged;
    (*ctx)->transport = rrt_transport_staged.kind;
  }
  if (rrt_ctx_rank(*ctx) == 0)
    printf("np %d backend %s transport %s\n", rrt_ctx_size(*ctx),
           rrt_backend_name(rrt_ctx_backend(*ctx)), rrt_transport_name(rrt_ctx_transport(*ctx)));
  return 0;
}

static inline int tt_finish(rrt_ctx_t ctx) {
  CHECK_OK(rrt_ctx_destroy(ctx));
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* Backend buffer filled from a host array (rrt_malloc + copy). */
static inline void *tt_upload(rrt_ctx_t ctx, const void *host, size_t bytes) {
  void *d = NULL;
  CHECK_OK(rrt_malloc(ctx, bytes, &d));
  if (d && bytes) CHECK_OK(rrt_memcpy_to_backend(ctx, d, host, bytes));
  return d;
}

#endif

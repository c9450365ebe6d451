/* Names of backends and transports, both directions. */
#include <string.h>

#include "ringrt/context.h"

static const char *const backend_names[] = {"default", "auto", "cpu", "cuda", "emu"};

const char *rrt_backend_name(rrt_backend backend) {
  if ((int)backend < 0 || (int)backend > (int)RRT_BACKEND_EMU) return "unknown";
  return backend_names[backend];
}

rrt_status rrt_backend_parse(const char *name, rrt_backend *backend) {
  if (!name || !backend) return RRT_ERR_INVALID_ARG;
  for (int b = RRT_BACKEND_AUTO; b <= RRT_BACKEND_EMU; b++)
    if (strcmp(name, backend_names[b]) == 0) {
      *backend = (rrt_backend)b;
      return RRT_SUCCESS;
    }
  return RRT_ERR_INVALID_ARG;
}

const char *rrt_transport_name(rrt_transport transport) {
  switch (transport) {
  case RRT_TRANSPORT_MPI: return "mpi";
  case RRT_TRANSPORT_NCCL: return "nccl";
  case RRT_TRANSPORT_MPI_STAGED: return "mpi-staged";
  }
  return "unknown";
}

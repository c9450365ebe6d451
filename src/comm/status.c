/* Status names. */
#include "ringrt/status.h"

const char *rrt_status_string(rrt_status status) {
  switch (status) {
  case RRT_SUCCESS: return "success";
  case RRT_ERR_INVALID_ARG: return "invalid argument";
  case RRT_ERR_OUT_OF_MEMORY: return "out of memory";
  case RRT_ERR_MPI: return "MPI error";
  case RRT_ERR_NCCL: return "NCCL error";
  case RRT_ERR_CUDA: return "CUDA error";
  case RRT_ERR_NO_DEVICE: return "no usable GPU";
  case RRT_ERR_UNSUPPORTED: return "not supported by this build";
  case RRT_ERR_TIMEOUT: return "timeout";
  case RRT_ERR_IO: return "I/O or format error";
  case RRT_ERR_SINGULAR: return "singular (zero pivot)";
  case RRT_ERR_NUMERIC: return "non-finite value";
  case RRT_ERR_REMOTE: return "error on another rank";
  case RRT_ERR_INTERNAL: return "internal error";
  case RRT_STATUS_COUNT: break;
  }
  return "unknown status";
}

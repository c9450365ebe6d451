/* ringrt: status codes shared by every call. */
#ifndef RINGRT_STATUS_H
#define RINGRT_STATUS_H

#include "ringrt/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every ringrt call. RRT_SUCCESS is zero; everything else is an
 *  error whose detail (rank, operation, input file and line) is kept on the
 *  context: see rrt_ctx_last_error(). */
typedef enum rrt_status {
  RRT_SUCCESS = 0,
  RRT_ERR_INVALID_ARG = 1, /**< a bad argument or shape */
  RRT_ERR_OUT_OF_MEMORY = 2,
  RRT_ERR_MPI = 3,         /**< an MPI call failed */
  RRT_ERR_NCCL = 4,        /**< an NCCL call failed or the communicator aborted */
  RRT_ERR_CUDA = 5,        /**< a CUDA runtime call failed */
  RRT_ERR_NO_DEVICE = 6,   /**< the cuda backend was asked for but no usable GPU exists */
  RRT_ERR_UNSUPPORTED = 7, /**< not built in (e.g. cuda without RINGRT_CUDA) */
  RRT_ERR_TIMEOUT = 8,     /**< a blocking wait exceeded RINGRT_TIMEOUT */
  RRT_ERR_IO = 9,          /**< a file could not be read or written, or is malformed */
  RRT_ERR_SINGULAR = 10,   /**< a zero pivot in a factorisation */
  RRT_ERR_NUMERIC = 11,    /**< NaN/Inf in input or result */
  RRT_ERR_REMOTE = 12,     /**< this rank was fine, another rank failed (see message) */
  RRT_ERR_INTERNAL = 13,
  RRT_STATUS_COUNT
} rrt_status;

/** Short, static, human-readable name of a status ("invalid argument"). */
RRT_API const char *rrt_status_string(rrt_status status);

#ifdef __cplusplus
}
#endif
#endif

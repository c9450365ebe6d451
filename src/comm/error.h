/* Internal error helpers: record a message on the context and return. */
#ifndef RRT_COMM_ERROR_H
#define RRT_COMM_ERROR_H

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Record "rank R: op: message" as the context's last error and return
 *  `status`. `op` names the API call or phase ("rrt_ring_shift"). ctx may be
 *  NULL (the message then goes to stderr). */
rrt_status rrt_error(rrt_ctx_t ctx, rrt_status status, const char *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/** The exit code of a job that rrt_fatal_abort ended (MPI_Abort's code,
 *  which mpirun and srun pass on). The `ringrt` tool's exit-code table
 *  names it "aborted"; 3 is "not converged" there, so it is not 3. */
#define RRT_FATAL_EXIT_CODE 5

/** Print a fatal message naming rank, operation, peer and step to stderr and
 *  abort the job (the context's abort hook first, e.g. the NCCL
 *  communicator, then MPI_Abort with RRT_FATAL_EXIT_CODE). Never returns. */
void rrt_fatal_abort(rrt_ctx_t ctx, rrt_status status, const char *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5), noreturn))
#endif
    ;

#ifdef __cplusplus
}
#endif

/** Evaluate a call returning rrt_status; return its status on failure. */
#define RRT_CHECK(call)                                                                            \
  do {                                                                                             \
    rrt_status rrt_check_st_ = (call);                                                             \
    if (rrt_check_st_ != RRT_SUCCESS) return rrt_check_st_;                                        \
  } while (0)

/** Evaluate a call returning rrt_status; on failure store it in `st` and
 *  jump to `label` (the function's cleanup). */
#define RRT_CHECK_GOTO(call, st, label)                                                            \
  do {                                                                                             \
    (st) = (call);                                                                                 \
    if ((st) != RRT_SUCCESS) goto label;                                                           \
  } while (0)

/** Check an MPI call; on failure record the MPI error string and return. */
#define RRT_MPI_CHECK(ctx, op, call)                                                               \
  do {                                                                                             \
    int rrt_mpi_rc_ = (call);                                                                      \
    if (rrt_mpi_rc_ != MPI_SUCCESS) {                                                              \
      char rrt_mpi_msg_[MPI_MAX_ERROR_STRING];                                                     \
      int rrt_mpi_len_ = 0;                                                                        \
      MPI_Error_string(rrt_mpi_rc_, rrt_mpi_msg_, &rrt_mpi_len_);                                  \
      return rrt_error((ctx), RRT_ERR_MPI, (op), "%s failed: %s", #call, rrt_mpi_msg_);            \
    }                                                                                              \
  } while (0)

#endif

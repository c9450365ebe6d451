/* ringrt: the runtime context, one per MPI rank.
 *
 * Lifecycle: rrt_ctx_create() -> work -> rrt_ctx_destroy(). The context owns a
 * duplicate of the caller's communicator (library traffic never mixes with the
 * application's), the backend and device, the CPU binding, the NCCL
 * communicator and the streams, the timers and the last error message.
 * Creation and destruction are collective over the communicator.
 */
#ifndef RINGRT_CONTEXT_H
#define RINGRT_CONTEXT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_ctx *rrt_ctx_t;

/** Where the work runs. AUTO resolves to CUDA when a usable GPU exists (and
 *  the library was built with CUDA), otherwise CPU. EMU runs the CUDA kernels
 *  and host orchestration on the CPU under a SIMT emulator (slow; for tests). */
typedef enum rrt_backend {
  RRT_BACKEND_DEFAULT = 0, /**< take RINGRT_BACKEND from the environment, else AUTO */
  RRT_BACKEND_AUTO,
  RRT_BACKEND_CPU,
  RRT_BACKEND_CUDA,
  RRT_BACKEND_EMU
} rrt_backend;

/** How data moves between ranks. */
typedef enum rrt_transport {
  RRT_TRANSPORT_MPI = 0,   /**< MPI on host memory (cpu, emu) */
  RRT_TRANSPORT_NCCL,      /**< NCCL on device memory (cuda) */
  RRT_TRANSPORT_MPI_STAGED /**< cuda without NCCL: device <-> host copies around MPI */
} rrt_transport;

#define RRT_CTX_CONFIG_MAGIC 0x52525431u /* "RRT1" */
#define RRT_CTX_CONFIG_VERSION 1

/** Versioned creation options. Always start from RRT_CTX_CONFIG_INITIALIZER:
 *  every field then means "take the environment, else the default". As for
 *  every option struct of the API, a program built against an older header
 *  passes a smaller size, and the fields its struct lacks get their defaults. */
typedef struct rrt_ctx_config {
  size_t size;         /**< sizeof(rrt_ctx_config), set by the initializer */
  unsigned magic;      /**< RRT_CTX_CONFIG_MAGIC */
  unsigned version;    /**< RRT_CTX_CONFIG_VERSION */
  rrt_backend backend; /**< RRT_BACKEND_DEFAULT: RINGRT_BACKEND, else auto */
  int device;          /**< -1: RINGRT_DEVICE, else local_rank % device count */
  double timeout_s;    /**< <= 0: RINGRT_TIMEOUT, else 600 s */
  int bind;            /**< -1: RINGRT_BIND, else 0; 0: change no affinity or thread count of
                            the process; 1: bind the rank's cores and size OpenMP and BLAS
                            to them (what the `ringrt` tool does) */
  int use_nccl;        /**< -1: RINGRT_NCCL (default 1 when built); 0: MPI staging */
} rrt_ctx_config;

#define RRT_CTX_CONFIG_INITIALIZER                                                                 \
  {                                                                                                \
    sizeof(rrt_ctx_config), RRT_CTX_CONFIG_MAGIC, RRT_CTX_CONFIG_VERSION, RRT_BACKEND_DEFAULT, -1, \
        0.0, -1, -1                                                                                \
  }

/** Create a context on `comm` (collective). `config` may be NULL (all
 *  defaults). On failure *ctx is NULL and every rank returns an error; the
 *  message is printed to stderr since there is no context to keep it. */
RRT_API rrt_status rrt_ctx_create(MPI_Comm comm, const rrt_ctx_config *config, rrt_ctx_t *ctx);

/** Destroy a context (collective). Safe on NULL. */
RRT_API rrt_status rrt_ctx_destroy(rrt_ctx_t ctx);

/** Rank and size in the context's communicator; local rank/size on this node. */
RRT_API int rrt_ctx_rank(rrt_ctx_t ctx);
RRT_API int rrt_ctx_size(rrt_ctx_t ctx);
RRT_API int rrt_ctx_local_rank(rrt_ctx_t ctx);
RRT_API int rrt_ctx_local_size(rrt_ctx_t ctx);
/** The library's private communicator (a duplicate; do not free). */
RRT_API MPI_Comm rrt_ctx_comm(rrt_ctx_t ctx);
/** Resolved backend (never DEFAULT/AUTO) and transport. */
RRT_API rrt_backend rrt_ctx_backend(rrt_ctx_t ctx);
RRT_API rrt_transport rrt_ctx_transport(rrt_ctx_t ctx);
/** Timeout for blocking waits, in seconds. */
RRT_API double rrt_ctx_timeout(rrt_ctx_t ctx);

/** The last error recorded on this context ("" if none): names the rank,
 *  the operation and, for input errors, the file and line. */
RRT_API const char *rrt_ctx_last_error(rrt_ctx_t ctx);
/** Forget the last error. */
RRT_API void rrt_ctx_clear_error(rrt_ctx_t ctx);
/** Use the caller's CUDA stream with this context, as cublasSetStream:
 *  every later call that queues device work (attention forward and
 *  backward, ILU(0) factor and apply, SpMV, the Krylov solve) first orders
 *  ringrt's own compute and comm streams after the work queued on `stream`
 *  so far, and ends by ordering `stream` after ringrt's work; both are an
 *  event record and a stream wait, never a host or device-wide
 *  synchronise. So a PyTorch program passes torch.cuda.current_stream()
 *  .cuda_stream and queues its own kernels before and after each call as on
 *  one stream. The stream must outlive its use (set NULL before destroying
 *  it). NULL (the default) orders nothing with other streams. Local (no
 *  communication). RRT_ERR_INVALID_ARG on cpu/emu contexts for any stream
 *  but NULL (they have no CUDA streams), and while a call on the context
 *  runs. */
RRT_API rrt_status rrt_ctx_set_stream(rrt_ctx_t ctx, void *stream);
/** The caller's stream set by rrt_ctx_set_stream (NULL for none). */
RRT_API void *rrt_ctx_stream(rrt_ctx_t ctx);

/** Record `message` as the context's last error, as ringrt's own calls do
 *  ("rank R: op: message (status)"), and return `status`. For fronts that
 *  validate their inputs themselves (the Python package) and then agree on
 *  the result with rrt_agree(), so every rank reports the same cause. */
RRT_API rrt_status rrt_ctx_set_error(rrt_ctx_t ctx, rrt_status status, const char *op,
                                     const char *message);

/** Short names: "cpu", "cuda", "emu", "auto", "default"; "mpi", "nccl", "mpi-staged". */
RRT_API const char *rrt_backend_name(rrt_backend backend);
RRT_API const char *rrt_transport_name(rrt_transport transport);
/** Parse a backend name; returns RRT_ERR_INVALID_ARG for unknown names. */
RRT_API rrt_status rrt_backend_parse(const char *name, rrt_backend *backend);

/** What `ringrt info` prints for one rank. */
typedef struct rrt_ctx_info {
  char host[64];
  int rank, size, local_rank, local_size;
  rrt_backend backend;
  rrt_transport transport;
  int device;             /**< CUDA ordinal, -1 for none */
  char device_name[96];   /**< "none" without a GPU */
  char device_pci[32];    /**< PCI bus id, "" without a GPU */
  uint64_t device_memory; /**< bytes, 0 without a GPU */
  char cores[128];        /**< bound cores as a list ("0-3"), or "unbound" */
  int numa_node;          /**< -1 if unknown */
  int threads;            /**< OpenMP/BLAS threads for this rank */
  char mpi_version[96];   /**< MPI library version, first line */
  char nccl_version[32];  /**< "2.28.3" or "none" */
  char cuda_version[32];  /**< runtime/driver version or "none" */
} rrt_ctx_info;

/** Fill `info` for the calling rank (local; no communication). */
RRT_API rrt_status rrt_ctx_get_info(rrt_ctx_t ctx, rrt_ctx_info *info);

/** The path of the NCCL library this context loaded ("" when it loaded
 *  none: cpu/emu backends, RINGRT_NCCL=0, or a build without NCCL). NCCL is
 *  opened at run time by the cuda backend only, in this order: an NCCL
 *  already loaded in the process (e.g. torch's), then RINGRT_NCCL_LIBRARY,
 *  then libnccl.so.2; rrt_ctx_info.nccl_version is that library's version.
 *  The string lives as long as the context. */
RRT_API const char *rrt_ctx_nccl_library(rrt_ctx_t ctx);

/** ringrt's traffic on the context's communicator since the context was
 *  created, on the calling rank. Messages are point-to-point messages to
 *  or from another rank: the halo exchanges (rrt_p2p_group), the ring
 *  shifts (rrt_ring_shift) and the data of ringrt's own all-to-all and
 *  gather exchanges (e.g. the ILU analysis); bytes are their payloads.
 *  Collectives are the collective operations posted (reductions, gathers,
 *  broadcasts, the agreement on errors), whose internal messages are not
 *  counted as messages. Fields are only ever appended. */
typedef struct rrt_comm_stats {
  uint64_t msgs_sent, bytes_sent;
  uint64_t msgs_recv, bytes_recv;
  uint64_t collectives;
} rrt_comm_stats;

/** Fill `stats` with the counts so far (local; no communication). A caller
 *  measuring one operation takes the difference of two calls.
 *  RRT_ERR_INVALID_ARG when ctx or stats is NULL. */
RRT_API rrt_status rrt_ctx_comm_stats(rrt_ctx_t ctx, rrt_comm_stats *stats);

/** Library version string ("0.1.0"). */
RRT_API const char *rrt_version(void);
/** The MPI this library was built with, from its mpi.h: "Open MPI 4.1.4",
 *  "MPICH 4.0.2", else "MPI 3.1" (the standard's version). A program (or
 *  mpi4py) that uses another MPI cannot share the process with ringrt: the
 *  Python package compares this with mpi4py's MPI and refuses a mismatch. */
RRT_API const char *rrt_mpi_build_version(void);
/** Version of the library that is running, as one integer: major*10000 +
 *  minor*100 + patch (as ncclGetVersion). Compare with RINGRT_VERSION_CODE
 *  in ringrt/config.h, the version a program was compiled against.
 *  RRT_ERR_INVALID_ARG when `version` is NULL. */
RRT_API rrt_status rrt_get_version(int *version);

#ifdef __cplusplus
}
#endif
#endif

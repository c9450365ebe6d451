/* rrt_ctx: creation (bootstrap, backend, device, binding, streams, NCCL),
 * destruction and the getters. Each step lives in its own file; this one
 * only sequences them and makes every rank agree on the outcome. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/boot.h"
#include "comm/ctx.h"
#include "comm/emu_arch.h"
#include "comm/emu_stream.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/options.h"
#include "comm/transport_ops.h"
#include "comm/user_stream.h"
#include "ringrt/config.h"
#include "ringrt/trace.h"
#if RINGRT_HAVE_NCCL
#include "comm/nccl_init.h"
#endif

#if RINGRT_HAVE_CUDA
rrt_status rrt_cuda_select_device(rrt_ctx_t ctx); /* comm/cuda_select.c */
#endif

/* Every rank agrees on each step of creation. The communicator and the
 * rank fields exist by then, which is all the request machinery needs (the
 * trace state may not: recording into it is skipped until it exists), so
 * the agreement is rrt_agree's, with its timeout, named after creation. */
static rrt_status agree_during_create(rrt_ctx_t ctx, rrt_status local) {
  return rrt_agree_named(ctx, "rrt_ctx_create", local);
}

static rrt_status resolve_backend(rrt_ctx_t ctx, rrt_backend requested) {
  int ndev = rrt_cuda_device_count();
  if (requested == RRT_BACKEND_DEFAULT) requested = ctx->env.backend;
  if (requested == RRT_BACKEND_AUTO) requested = ndev > 0 ? RRT_BACKEND_CUDA : RRT_BACKEND_CPU;
  if (requested == RRT_BACKEND_CUDA) {
#if !RINGRT_HAVE_CUDA
    return rrt_error(ctx, RRT_ERR_UNSUPPORTED, "rrt_ctx_create",
                     "backend cuda requested but this build has no CUDA (RINGRT_CUDA=OFF)");
#else
    if (ndev == 0)
      return rrt_error(ctx, RRT_ERR_NO_DEVICE, "rrt_ctx_create",
                       "backend cuda requested but the CUDA runtime reports no usable GPU on %s",
                       ctx->host);
#endif
  }
  ctx->backend = requested;
  ctx->dev = requested == RRT_BACKEND_EMU ? &rrt_device_emu : &rrt_device_host;
  ctx->tx = requested == RRT_BACKEND_EMU ? &rrt_transport_emu : &rrt_transport_mpi;
#if RINGRT_HAVE_CUDA
  if (requested == RRT_BACKEND_CUDA) {
    ctx->dev = &rrt_device_cuda;
    ctx->tx = &rrt_transport_staged;
#if RINGRT_HAVE_NCCL
    if (ctx->env.use_nccl) ctx->tx = &rrt_transport_nccl;
#endif
  }
#endif
  /* The one place the transport is chosen; every call goes through ctx->tx. */
  ctx->transport = ctx->tx->kind;
  return RRT_SUCCESS;
}

static const rrt_ctx_config config_defaults = RRT_CTX_CONFIG_INITIALIZER;
static const rrt_options_layout config_layout = {
    .name = "rrt_ctx_config",
    .initializer = "RRT_CTX_CONFIG_INITIALIZER",
    .size = sizeof(rrt_ctx_config),
    .min_size = offsetof(rrt_ctx_config, backend),
    .defaults = &config_defaults,
    .magic_offset = offsetof(rrt_ctx_config, magic),
    .magic = RRT_CTX_CONFIG_MAGIC,
    .version_offset = offsetof(rrt_ctx_config, version),
    .version = RRT_CTX_CONFIG_VERSION,
};

/* `user` may come from an older header (a smaller size): `cfg` gets its
 * fields and defaults for the rest; NULL gives all defaults. */
static rrt_status check_config(rrt_ctx_t ctx, const rrt_ctx_config *user, rrt_ctx_config *cfg) {
  char msg[256];
  if (rrt_options_import(&config_layout, user, cfg, msg, sizeof msg) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "%s", msg);
  if (cfg->backend < RRT_BACKEND_DEFAULT || cfg->backend > RRT_BACKEND_EMU)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "config backend %d unknown",
                     (int)cfg->backend);
  return RRT_SUCCESS;
}

/* Local steps of creation, before the streams and NCCL. */
static rrt_status create_local(rrt_ctx_t ctx, const rrt_ctx_config *cfg) {
  char err[256];
  if (rrt_env_read(&ctx->env, err, sizeof err) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "%s", err);
  ctx->timeout_s = (cfg && cfg->timeout_s > 0) ? cfg->timeout_s : ctx->env.timeout_s;
  if (cfg && cfg->device >= 0) ctx->env.device = cfg->device;
  if (cfg && cfg->bind >= 0) ctx->env.bind = cfg->bind;
  if (cfg && cfg->use_nccl >= 0) ctx->env.use_nccl = cfg->use_nccl;
  RRT_CHECK(resolve_backend(ctx, cfg ? cfg->backend : RRT_BACKEND_DEFAULT));
#if RINGRT_HAVE_CUDA
  if (ctx->backend == RRT_BACKEND_CUDA) RRT_CHECK(rrt_cuda_select_device(ctx));
#endif
  if (ctx->backend == RRT_BACKEND_EMU &&
      rrt_emu_arch_smem_optin(&ctx->smem_optin, err, sizeof err) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "%s", err);
  if (ctx->env.bind)
    RRT_CHECK(rrt_bind_rank(ctx));
  else
    rrt_bind_leave_alone(ctx);
  RRT_CHECK(rrt_trace_state_create(ctx));
  RRT_CHECK(ctx->dev->stream_create(&ctx->compute_stream, 0));
  RRT_CHECK(ctx->dev->stream_create(&ctx->comm_stream, 1));
  /* Host streams carry the emulator's OS thread count (the bound cores by
   * default, since stream_create reads the OpenMP count set above). */
  if (ctx->env.emu_threads > 0) {
    RRT_CHECK(ctx->dev->stream_set_threads(ctx->compute_stream, ctx->env.emu_threads));
    RRT_CHECK(ctx->dev->stream_set_threads(ctx->comm_stream, ctx->env.emu_threads));
  }
  if (ctx->backend == RRT_BACKEND_EMU && ctx->env.emu_defer)
    RRT_CHECK(rrt_emu_stream_set_eager(ctx->compute_stream, 0));
  return RRT_SUCCESS;
}

/* The ranks on this node (same host name): the local rank and size, which
 * pick the GPU and share the cores. An allgather with the timeout, rather
 * than MPI_Comm_split_type, which blocks with no deadline. */
static rrt_status find_node_peers(rrt_ctx_t ctx) {
  char *hosts = NULL;
  size_t each = sizeof ctx->host;
  RRT_CHECK(rrt_host_allgatherv_alloc(ctx, ctx->host, each, (void **)&hosts, NULL, NULL));
  ctx->local_rank = ctx->local_size = 0;
  for (int r = 0; r < ctx->size; r++) {
    if (strncmp(hosts + (size_t)r * each, ctx->host, each) != 0) continue;
    if (r < ctx->rank) ctx->local_rank++;
    ctx->local_size++;
  }
  free(hosts);
  return RRT_SUCCESS;
}

/* The deadline of the waits before the environment is checked: the
 * config's, else RINGRT_TIMEOUT when it parses (a malformed one is reported
 * by create_local), else the default. */
static double early_timeout(rrt_ctx_t ctx, const rrt_ctx_config *cfg) {
  char err[256];
  if (cfg->timeout_s > 0) return cfg->timeout_s;
  if (rrt_env_read(&ctx->env, err, sizeof err) == RRT_SUCCESS) return ctx->env.timeout_s;
  return RRT_DEFAULT_TIMEOUT_S;
}

static void release(rrt_ctx_t ctx) {
  if (ctx->dev) {
    rrt_stage_pool_release(ctx);
    rrt_user_stream_release(ctx);
    if (ctx->comm_stream) ctx->dev->stream_destroy(ctx->comm_stream);
    if (ctx->compute_stream) ctx->dev->stream_destroy(ctx->compute_stream);
  }
  rrt_trace_state_destroy(ctx);
  if (ctx->roll_comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->roll_comm);
  if (ctx->comm != MPI_COMM_NULL) MPI_Comm_free(&ctx->comm);
  free(ctx);
}

rrt_status rrt_ctx_create(MPI_Comm comm, const rrt_ctx_config *user_cfg, rrt_ctx_t *out) {
  if (!out) return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "ctx pointer is NULL");
  *out = NULL;
  int init = 0;
  MPI_Initialized(&init);
  if (!init)
    return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_ctx_create", "MPI is not initialised");
  rrt_ctx_config full_cfg, *cfg = &full_cfg;
  /* A rank that cannot even allocate the context leaves the others to end
   * at the deadline of the duplicate below, with a message naming it. */
  rrt_ctx_t ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return rrt_error(NULL, RRT_ERR_OUT_OF_MEMORY, "rrt_ctx_create",
                     "allocating the context failed");
  ctx->comm = ctx->roll_comm = MPI_COMM_NULL;
  ctx->device = -1;
  ctx->numa_node = -1;
  ctx->threads = 1;
  snprintf(ctx->cores, sizeof ctx->cores, "unbound");
  if (gethostname(ctx->host, sizeof ctx->host) != 0) snprintf(ctx->host, sizeof ctx->host, "?");
  ctx->host[sizeof ctx->host - 1] = '\0';
  MPI_Comm_rank(comm, &ctx->rank);
  rrt_status config = check_config(ctx, user_cfg, cfg);
  ctx->timeout_s = early_timeout(ctx, config == RRT_SUCCESS ? cfg : &config_defaults);
  /* Every step from here is collective and waits with the deadline: the
   * duplicates, the agreement on the config check (a bad config on one rank
   * ends every rank), the node peers, then each step of creation. */
  rrt_status st = rrt_boot_dup(ctx, comm, "rrt_ctx_create");
  if (st == RRT_SUCCESS) st = agree_during_create(ctx, config);
  if (st == RRT_SUCCESS) st = agree_during_create(ctx, find_node_peers(ctx));
  if (st == RRT_SUCCESS) st = agree_during_create(ctx, create_local(ctx, cfg));
#if RINGRT_HAVE_NCCL
  if (st == RRT_SUCCESS && ctx->transport == RRT_TRANSPORT_NCCL)
    st = agree_during_create(ctx, rrt_nccl_init(ctx));
#endif
  if (st != RRT_SUCCESS) {
    /* No context survives for the caller to read the message from. */
    fprintf(stderr, "ringrt: %s\n", ctx->last_error);
#if RINGRT_HAVE_NCCL
    if (ctx->nccl_comm) rrt_nccl_fini(ctx, 1);
    rrt_nccl_release(ctx);
#endif
    release(ctx);
    return st;
  }
  *out = ctx;
  return RRT_SUCCESS;
}

rrt_status rrt_ctx_destroy(rrt_ctx_t ctx) {
  if (!ctx) return RRT_SUCCESS;
  rrt_status st = RRT_SUCCESS;
  if (ctx->dev) {
    if (ctx->compute_stream) st = ctx->dev->stream_sync(ctx->compute_stream);
    if (ctx->comm_stream && st == RRT_SUCCESS) st = ctx->dev->stream_sync(ctx->comm_stream);
  }
#if RINGRT_HAVE_NCCL
  if (ctx->nccl_comm) rrt_nccl_fini(ctx, st != RRT_SUCCESS);
  rrt_nccl_release(ctx);
#endif
  release(ctx);
  return st;
}

int rrt_ctx_rank(rrt_ctx_t ctx) { return ctx ? ctx->rank : -1; }
int rrt_ctx_size(rrt_ctx_t ctx) { return ctx ? ctx->size : 0; }
int rrt_ctx_local_rank(rrt_ctx_t ctx) { return ctx ? ctx->local_rank : -1; }
int rrt_ctx_local_size(rrt_ctx_t ctx) { return ctx ? ctx->local_size : 0; }
MPI_Comm rrt_ctx_comm(rrt_ctx_t ctx) { return ctx ? ctx->comm : MPI_COMM_NULL; }
rrt_backend rrt_ctx_backend(rrt_ctx_t ctx) { return ctx ? ctx->backend : RRT_BACKEND_DEFAULT; }
rrt_transport rrt_ctx_transport(rrt_ctx_t ctx) { return ctx ? ctx->transport : RRT_TRANSPORT_MPI; }
double rrt_ctx_timeout(rrt_ctx_t ctx) { return ctx ? ctx->timeout_s : 0.0; }
const char *rrt_ctx_last_error(rrt_ctx_t ctx) { return ctx ? ctx->last_error : ""; }
void rrt_ctx_clear_error(rrt_ctx_t ctx) {
  if (ctx) ctx->last_error[0] = '\0';
}

rrt_status rrt_ctx_set_error(rrt_ctx_t ctx, rrt_status status, const char *op,
                             const char *message) {
  return rrt_error(ctx, status, op && op[0] ? op : "ringrt", "%s", message ? message : "");
}

const char *rrt_version(void) { return RINGRT_VERSION_STRING; }

/* The mpi.h this library was compiled with (mpi.h's own macros). */
#define RRT_STR_(x) #x
#define RRT_STR(x) RRT_STR_(x)
const char *rrt_mpi_build_version(void) {
#if defined(OMPI_MAJOR_VERSION)
  return "Open MPI " RRT_STR(OMPI_MAJOR_VERSION) "." RRT_STR(OMPI_MINOR_VERSION) "." RRT_STR(
      OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return "MPICH " MPICH_VERSION;
#else
  return "MPI " RRT_STR(MPI_VERSION) "." RRT_STR(MPI_SUBVERSION);
#endif
}

/* The code this library was compiled with, not the caller's header's. */
rrt_status rrt_get_version(int *version) {
  if (!version) return RRT_ERR_INVALID_ARG;
  *version = RINGRT_VERSION_CODE;
  return RRT_SUCCESS;
}

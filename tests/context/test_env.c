/* Environment knobs, status and name tables (no MPI job needed). */
#include <stdlib.h>
#include <string.h>

#include "comm/env.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

static rrt_status read_with(const char *var, const char *value, rrt_env *env, char *err) {
  setenv(var, value, 1);
  rrt_status st = rrt_env_read(env, err, 256);
  unsetenv(var);
  return st;
}

int main(void) {
  rrt_env env;
  char err[256] = "";
  const char *vars[] = {"RINGRT_BACKEND",      "RINGRT_DEVICE",      "RINGRT_TIMEOUT",
                        "RINGRT_BIND",         "RINGRT_NCCL",        "RINGRT_EMU_THREADS",
                        "RINGRT_VERBOSE",      "RINGRT_CPU_ISA",     "RINGRT_TEST_STALL",
                        "RINGRT_NCCL_LIBRARY", "RINGRT_ATTN_KERNEL", "RINGRT_CUDNN_LIBRARY"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);

  CHECK_OK(rrt_env_read(&env, err, sizeof err));
  CHECK(env.backend == RRT_BACKEND_AUTO && env.device == -1 && env.bind == 0);
  CHECK(env.timeout_s == RRT_DEFAULT_TIMEOUT_S);

  CHECK_OK(read_with("RINGRT_BACKEND", "emu", &env, err));
  CHECK(env.backend == RRT_BACKEND_EMU);
  CHECK_OK(read_with("RINGRT_TIMEOUT", "2.5", &env, err));
  CHECK(env.timeout_s == 2.5);
  CHECK_OK(read_with("RINGRT_DEVICE", "3", &env, err));
  CHECK(env.device == 3);

  /* Malformed values are errors that name the variable and the value. */
  CHECK(read_with("RINGRT_BACKEND", "gpu", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_BACKEND") && strstr(err, "gpu"));
  CHECK(read_with("RINGRT_TIMEOUT", "-1", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_TIMEOUT"));
  CHECK(read_with("RINGRT_TIMEOUT", "10s", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(read_with("RINGRT_DEVICE", "one", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_DEVICE") && strstr(err, "one"));
  CHECK(read_with("RINGRT_BIND", "2", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK_OK(read_with("RINGRT_CPU_ISA", "avx2", &env, err));
  CHECK(env.cpu_isa == RRT_CPU_ISA_AVX2);
  CHECK_OK(read_with("RINGRT_CPU_ISA", "avx512bf16", &env, err));
  CHECK(env.cpu_isa == RRT_CPU_ISA_AVX512BF16);
  CHECK(read_with("RINGRT_CPU_ISA", "sse", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_CPU_ISA") && strstr(err, "sse"));
  CHECK_OK(rrt_env_read(&env, err, sizeof err));
  CHECK(env.attn_kernel == RRT_ATTN_KERNEL_AUTO);
  CHECK_OK(read_with("RINGRT_ATTN_KERNEL", "simt", &env, err));
  CHECK(env.attn_kernel == RRT_ATTN_KERNEL_SIMT);
  CHECK_OK(read_with("RINGRT_ATTN_KERNEL", "tc", &env, err));
  CHECK(env.attn_kernel == RRT_ATTN_KERNEL_TC);
  CHECK_OK(read_with("RINGRT_ATTN_KERNEL", "cudnn", &env, err));
  CHECK(env.attn_kernel == RRT_ATTN_KERNEL_CUDNN);
  CHECK(read_with("RINGRT_ATTN_KERNEL", "wmma", &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_ATTN_KERNEL") && strstr(err, "wmma"));

  /* The fault tests' stall point: unset by default, PHASE:RANK with a known
   * phase, anything else an error listing the phases. */
  CHECK_OK(rrt_env_read(&env, err, sizeof err));
  CHECK(env.test_stall_phase[0] == 0 && env.test_stall_rank == -1);
  CHECK_OK(read_with("RINGRT_TEST_STALL", "trace_write:2", &env, err));
  CHECK(strcmp(env.test_stall_phase, "trace_write") == 0 && env.test_stall_rank == 2);
  const char *bad[] = {"trace_write",     "trace_write:", "trace_write:x",   "trace:1",
                       "ilu_analysis:-1", ":1",           "ilu_analysis_x:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(read_with("RINGRT_TEST_STALL", bad[i], &env, err) == RRT_ERR_INVALID_ARG);
    CHECK(strstr(err, "RINGRT_TEST_STALL") && strstr(err, bad[i]) && strstr(err, "ilu_analysis"));
  }

  /* Every status has a distinct, non-empty name. */
  for (int a = 0; a < RRT_STATUS_COUNT; a++) {
    CHECK(strlen(rrt_status_string((rrt_status)a)) > 0);
    CHECK(strcmp(rrt_status_string((rrt_status)a), "unknown status") != 0);
    for (int b = 0; b < a; b++)
      CHECK(strcmp(rrt_status_string((rrt_status)a), rrt_status_string((rrt_status)b)) != 0);
  }
  /* Backend names round-trip. */
  for (int b = RRT_BACKEND_AUTO; b <= RRT_BACKEND_EMU; b++) {
    rrt_backend back;
    CHECK_OK(rrt_backend_parse(rrt_backend_name((rrt_backend)b), &back));
    CHECK(back == (rrt_backend)b);
  }
  rrt_backend back;
  CHECK(rrt_backend_parse("CPU", &back) == RRT_ERR_INVALID_ARG);
  CHECK(strcmp(rrt_version(), "") != 0);
  /* RINGRT_NCCL_LIBRARY: kept as given (comm/nccl_lib.c opens it), "" when
   * unset; a path too long for the context is refused, not cut. */
  CHECK_OK(rrt_env_read(&env, err, sizeof err));
  CHECK(env.nccl_library[0] == 0);
  CHECK_OK(read_with("RINGRT_NCCL_LIBRARY", "/opt/nccl/lib/libnccl.so.2", &env, err));
  CHECK(strcmp(env.nccl_library, "/opt/nccl/lib/libnccl.so.2") == 0);
  char long_path[600];
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[sizeof long_path - 1] = 0;
  CHECK(read_with("RINGRT_NCCL_LIBRARY", long_path, &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_NCCL_LIBRARY") != NULL);
  /* RINGRT_CUDNN_LIBRARY the same way (kernels/cuda/attn_cudnn.cpp opens it) */
  CHECK(env.cudnn_library[0] == 0);
  CHECK_OK(read_with("RINGRT_CUDNN_LIBRARY", "/opt/cudnn/libcudnn.so.9", &env, err));
  CHECK(strcmp(env.cudnn_library, "/opt/cudnn/libcudnn.so.9") == 0);
  CHECK(read_with("RINGRT_CUDNN_LIBRARY", long_path, &env, err) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(err, "RINGRT_CUDNN_LIBRARY") != NULL);
  return test_result();
}

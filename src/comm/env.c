/* Every environment variable the runtime reads, read here and nowhere else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/env.h"
#include "comm/test_stall.h"

static int parse_int(const char *name, long lo, long hi, int *out, char *err, size_t errlen) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) {
    snprintf(err, errlen, "%s='%s' is not an integer in [%ld, %ld]", name, s, lo, hi);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* RINGRT_TEST_STALL=PHASE:RANK (fault tests, comm/test_stall.h): a known
 * phase and a rank, or an error naming the variable. */
static int parse_test_stall(rrt_env *env, char *err, size_t errlen) {
  const char *s = getenv("RINGRT_TEST_STALL");
  if (!s || !*s) return 0;
  const char *colon = strchr(s, ':');
  size_t len = colon ? (size_t)(colon - s) : 0;
  char *end = NULL;
  long rank = colon ? strtol(colon + 1, &end, 10) : -1;
  int known = 0;
  for (int i = 0; rrt_test_stall_phases[i]; i++)
    known |= len == strlen(rrt_test_stall_phases[i]) && !strncmp(s, rrt_test_stall_phases[i], len);
  if (!known || !end || end == colon + 1 || *end || rank < 0 || rank > 1 << 30) {
    int n = snprintf(err, errlen, "RINGRT_TEST_STALL='%s' is not PHASE:RANK with PHASE one of", s);
    for (int i = 0; rrt_test_stall_phases[i] && n > 0 && (size_t)n < errlen; i++)
      n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "", rrt_test_stall_phases[i]);
    return -1;
  }
  memcpy(env->test_stall_phase, s, len);
  env->test_stall_phase[len] = 0;
  env->test_stall_rank = (int)rank;
  return 0;
}

/* OMP_NUM_THREADS is OpenMP's, not ours: its first value when it is a
 * positive number ("4" or "4,2"), else 0 (OpenMP warns about the rest). */
static int omp_threads_of(const char *s) {
  if (!s || !*s) return 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || (*end && *end != ',') || v <= 0 || v > 1 << 20) return 0;
  return (int)v;
}

/* RINGRT_EMU_STREAMS: eager (the default) or defer. */
static int parse_emu_streams(rrt_env *env, char *err, size_t errlen) {
  const char *v = getenv("RINGRT_EMU_STREAMS");
  if (!v || !*v || strcmp(v, "eager") == 0) return 0;
  if (strcmp(v, "defer") == 0) {
    env->emu_defer = 1;
    return 0;
  }
  snprintf(err, errlen, "RINGRT_EMU_STREAMS='%s' is not one of eager, defer", v);
  return 1;
}

/* A library path or name from the environment into out ("" if unset). */
static int read_path(const char *name, char *out, size_t outlen, char *err, size_t errlen) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  if (strlen(v) >= outlen) {
    snprintf(err, errlen, "%s is longer than %zu characters", name, outlen - 1);
    return 1;
  }
  snprintf(out, outlen, "%s", v);
  return 0;
}

rrt_status rrt_env_read(rrt_env *env, char *err, size_t errlen) {
  env->backend = RRT_BACKEND_AUTO;
  env->device = -1;
  env->timeout_s = RRT_DEFAULT_TIMEOUT_S;
  env->bind = 0; /* a guest in the caller's process: bind only when asked */
  env->use_nccl = 1;
  env->emu_threads = 0;
  env->emu_defer = 0;
  env->omp_threads = omp_threads_of(getenv("OMP_NUM_THREADS"));
  env->verbose = 0;
  env->cpu_isa = RRT_CPU_ISA_AUTO;
  env->attn_kernel = RRT_ATTN_KERNEL_AUTO;
  env->ilu_sweep = RRT_ILU_SWEEP_AUTO;
  env->test_stall_phase[0] = 0;
  env->test_stall_rank = -1;
  env->nccl_library[0] = 0;
  env->cudnn_library[0] = 0;

  const char *b = getenv("RINGRT_BACKEND");
  if (b && *b && rrt_backend_parse(b, &env->backend) != RRT_SUCCESS) {
    snprintf(err, errlen, "RINGRT_BACKEND='%s' is not one of auto, cpu, cuda, emu", b);
    return RRT_ERR_INVALID_ARG;
  }
  const char *isa = getenv("RINGRT_CPU_ISA");
  if (isa && *isa) {
    static const char *const names[] = {"auto", "avx512", "avx2", "base", "avx512bf16"};
    int found = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
      if (strcmp(isa, names[i]) == 0) found = i;
    if (found < 0) {
      snprintf(err, errlen,
               "RINGRT_CPU_ISA='%s' is not one of auto, avx512, avx2, base, avx512bf16", isa);
      return RRT_ERR_INVALID_ARG;
    }
    env->cpu_isa = found;
  }
  const char *ak = getenv("RINGRT_ATTN_KERNEL");
  if (ak && *ak) {
    static const char *const names[] = {"auto", "simt", "tc", "cudnn"};
    int found = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
      if (strcmp(ak, names[i]) == 0) found = i;
    if (found < 0) {
      snprintf(err, errlen, "RINGRT_ATTN_KERNEL='%s' is not one of auto, simt, tc, cudnn", ak);
      return RRT_ERR_INVALID_ARG;
    }
    env->attn_kernel = found;
  }
  const char *sw = getenv("RINGRT_ILU_SWEEP");
  if (sw && *sw) {
    if (strcmp(sw, "auto") != 0 && strcmp(sw, "levels") != 0) {
      snprintf(err, errlen, "RINGRT_ILU_SWEEP='%s' is not one of auto, levels", sw);
      return RRT_ERR_INVALID_ARG;
    }
    env->ilu_sweep = strcmp(sw, "levels") == 0 ? RRT_ILU_SWEEP_LEVELS : RRT_ILU_SWEEP_AUTO;
  }
  if (read_path("RINGRT_NCCL_LIBRARY", env->nccl_library, sizeof env->nccl_library, err, errlen) ||
      read_path("RINGRT_CUDNN_LIBRARY", env->cudnn_library, sizeof env->cudnn_library, err, errlen))
    return RRT_ERR_INVALID_ARG;
  const char *t = getenv("RINGRT_TIMEOUT");
  if (t && *t) {
    char *end = NULL;
    double v = strtod(t, &end);
    if (*end || !(v > 0)) {
      snprintf(err, errlen, "RINGRT_TIMEOUT='%s' is not a positive number of seconds", t);
      return RRT_ERR_INVALID_ARG;
    }
    env->timeout_s = v;
  }
  if (parse_int("RINGRT_DEVICE", 0, 1024, &env->device, err, errlen) ||
      parse_int("RINGRT_BIND", 0, 1, &env->bind, err, errlen) ||
      parse_int("RINGRT_NCCL", 0, 1, &env->use_nccl, err, errlen) ||
      parse_int("RINGRT_EMU_THREADS", 0, 4096, &env->emu_threads, err, errlen) ||
      parse_int("RINGRT_VERBOSE", 0, 1, &env->verbose, err, errlen) ||
      parse_emu_streams(env, err, errlen) || parse_test_stall(env, err, errlen))
    return RRT_ERR_INVALID_ARG;
  return RRT_SUCCESS;
}

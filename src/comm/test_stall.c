/* The stall points of RINGRT_TEST_STALL (see comm/test_stall.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/ctx.h"
#include "comm/test_stall.h"

const char *const rrt_test_stall_phases[] = {"ilu_analysis", "ilu_levels", "trace_write", NULL};

void rrt_test_stall(rrt_ctx_t ctx, const char *phase) {
  const rrt_env *env = &ctx->env;
  if (!env->test_stall_phase[0] || env->test_stall_rank != ctx->rank ||
      strcmp(env->test_stall_phase, phase) != 0)
    return;
  fprintf(stderr, "ringrt: rank %d: RINGRT_TEST_STALL: stalling in %s (test hook, never returns)\n",
          ctx->rank, phase);
  fflush(stderr);
  for (;;)
    pause(); /* a handled signal returns here; one that terminates ends the stall */
}

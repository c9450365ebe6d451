/* RINGRT_EMU_ARCH (comm/emu_arch.h). */
#include "comm/emu_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cudaDevAttrMaxSharedMemoryPerBlockOptin of each architecture (the CUDA
 * programming guide's table of compute capabilities). */
static const struct {
  const char *name;
  size_t optin;
} arch_table[] = {
    {"sm_80", 163 * 1024}, {"sm_86", 99 * 1024}, {"sm_89", 99 * 1024}, {"sm_90", 227 * 1024}};

rrt_status rrt_emu_arch_smem_optin(size_t *bytes, char *err, size_t errlen) {
  const char *v = getenv("RINGRT_EMU_ARCH");
  *bytes = arch_table[0].optin;
  if (!v || !*v) return RRT_SUCCESS;
  for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
    if (strcmp(v, arch_table[i].name) == 0) {
      *bytes = arch_table[i].optin;
      return RRT_SUCCESS;
    }
  if (err && errlen)
    snprintf(err, errlen, "RINGRT_EMU_ARCH='%s' is not one of sm_80, sm_86, sm_89, sm_90", v);
  return RRT_ERR_INVALID_ARG;
}

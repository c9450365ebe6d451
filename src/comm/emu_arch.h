/* The GPU architecture the emulator stands for (RINGRT_EMU_ARCH): its
 * opt-in limit of dynamic shared memory a block, which the emulator's
 * launch check enforces and the tensor-core kernels size their tiles to,
 * so a launch that would not fit on an A10/L4 (sm_86/89, 99 KiB) fails
 * here as it would there. C and C++ (the emulator reads it at launch). */
#ifndef RRT_COMM_EMU_ARCH_H
#define RRT_COMM_EMU_ARCH_H

#include <stddef.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RINGRT_EMU_ARCH = sm_80 (the default: 163 KiB), sm_86, sm_89 (99 KiB) or
 * sm_90 (227 KiB): *bytes = its opt-in limit. Another value is
 * RRT_ERR_INVALID_ARG with a message in err naming the variable and the
 * values it takes (*bytes is then sm_80's). */
rrt_status rrt_emu_arch_smem_optin(size_t *bytes, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif

/* Internal: the emulated GPU's memory map. The emu device layer registers
 * every buffer it allocates here, so that code can ask what the CUDA driver
 * answers on a real GPU (cudaPointerGetAttributes): is this range device
 * memory? The transport asks it for every buffer it is handed on the emu
 * backend, because on the cuda backend those buffers go to NCCL, which takes
 * device memory only: a host buffer there is a crash or garbage on the GPU
 * and nothing at all under the emulator, unless this check says so.
 *
 * One map per process, like the driver's: device memory belongs to the
 * process, not to a context (a buffer from one context may be handed to
 * another's transport). Thread-safe. */
#ifndef RRT_COMM_EMU_MEM_H
#define RRT_COMM_EMU_MEM_H

#include <stddef.h>

#include "ringrt/status.h"

/** Record [ptr, ptr + bytes) as device memory. */
rrt_status rrt_emu_mem_add(void *ptr, size_t bytes);

/** Forget the allocation that starts at ptr; 0 when there is none. */
int rrt_emu_mem_remove(void *ptr);

/** 1 when [ptr, ptr + bytes) lies inside one recorded allocation. */
int rrt_emu_mem_contains(const void *ptr, size_t bytes);

#endif

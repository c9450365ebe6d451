/* Internal: every environment knob the runtime reads, read in one place. */
#ifndef RRT_COMM_ENV_H
#define RRT_COMM_ENV_H

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_env {
  rrt_backend backend; /* RINGRT_BACKEND (auto|cpu|cuda|emu); AUTO if unset */
  int device;          /* RINGRT_DEVICE; -1 if unset */
  double timeout_s;    /* RINGRT_TIMEOUT seconds; 600 if unset */
  int bind;            /* RINGRT_BIND (0/1); 0 if unset */
  int use_nccl;        /* RINGRT_NCCL (0/1); 1 if unset */
  /* RINGRT_NCCL_LIBRARY: the NCCL to open when none is loaded yet ("" if unset) */
  char nccl_library[512];
  /* RINGRT_CUDNN_LIBRARY: the cuDNN the cuda attention opens ("" if unset:
   * libcudnn.so.9) */
  char cudnn_library[512];
  int emu_threads; /* RINGRT_EMU_THREADS: OS threads of the SIMT emulator; 0 = bound cores */
  /* RINGRT_EMU_STREAMS=defer (1): the emu compute stream defers its work as
   * the comm stream does (comm/emu_stream.h), so a host read of a result
   * without a synchronisation sees old bytes; eager (0) by default */
  int emu_defer;
  int omp_threads; /* OMP_NUM_THREADS' first value (caps the bound cores' threads); 0 unset */
  int verbose;     /* RINGRT_VERBOSE (0/1) */
  int cpu_isa;     /* RINGRT_CPU_ISA: rrt_cpu_isa, for tests and benchmarks */
  int attn_kernel; /* RINGRT_ATTN_KERNEL: rrt_attn_kernel_choice (cuda/emu forward) */
  int ilu_sweep;   /* RINGRT_ILU_SWEEP: rrt_ilu_sweep_choice (cuda/emu ILU(0)) */
  /* RINGRT_TEST_STALL=PHASE:RANK, fault tests only (comm/test_stall.h): the
   * phase where that rank stalls forever; "" and -1 when unset. */
  char test_stall_phase[32];
  int test_stall_rank;
} rrt_env;

#define RRT_DEFAULT_TIMEOUT_S 600.0

/** Vector instruction set of the CPU kernels: the best the CPU has (AUTO),
 *  or a forced one (for tests of every variant, and benchmarks); a forced set
 *  the CPU lacks falls back to the next lower one, except AVX512BF16: it
 *  forces the bf16-storage attention kernel (vdpbf16ps), whose instruction
 *  is emulated exactly where the CPU lacks it (slow; so tests run that
 *  kernel anywhere). Values are the indices of the RINGRT_CPU_ISA names. */
typedef enum rrt_cpu_isa {
  RRT_CPU_ISA_AUTO = 0,
  RRT_CPU_ISA_AVX512,
  RRT_CPU_ISA_AVX2,
  RRT_CPU_ISA_BASE,
  RRT_CPU_ISA_AVX512BF16 /* AVX512 for f32 work, plus the bf16 kernel for bf16 storage */
} rrt_cpu_isa;

/** Kernels of the cuda and emu attention tables, forward and backward: AUTO
 *  takes cuDNN's fused attention on cuda where the build has it and it
 *  takes the item (kernels/cuda/attn_cudnn.h, docs/attn.md), else the
 *  tensor-core ones (kernels/cuda/attn_fwd_tc.cu, attn_bwd_tc.cu) where they
 *  support the operands (bf16/f16, head_dim a multiple of 16 up to 256) and
 *  the SIMT ones otherwise; SIMT always the SIMT ones; TC the tensor-core
 *  ones; CUDNN cuDNN for every item (on emu: the stand-in with cuDNN's
 *  contract, which tests the path around it). TC and CUDNN give
 *  RRT_ERR_INVALID_ARG where they do not take the operands (for tests and
 *  benchmarks that must know which ran). Values index the
 *  RINGRT_ATTN_KERNEL names auto, simt, tc, cudnn. */
typedef enum rrt_attn_kernel_choice {
  RRT_ATTN_KERNEL_AUTO = 0,
  RRT_ATTN_KERNEL_SIMT,
  RRT_ATTN_KERNEL_TC,
  RRT_ATTN_KERNEL_CUDNN
} rrt_attn_kernel_choice;

/** How the cuda and emu ILU(0) kernels sweep the levels of a factorisation
 *  or triangular solve: AUTO, one sync-free launch per run of levels with no
 *  message between them (kernels/cuda/ilu0.cu, the *_chain kernels); LEVELS,
 *  one launch per level (the earlier path, kept to compare against). Values
 *  index the RINGRT_ILU_SWEEP names auto, levels. */
typedef enum rrt_ilu_sweep_choice {
  RRT_ILU_SWEEP_AUTO = 0,
  RRT_ILU_SWEEP_LEVELS
} rrt_ilu_sweep_choice;

/** Read the environment. Returns RRT_ERR_INVALID_ARG with `err` filled
 *  (naming the variable and its value) when a variable is malformed. */
rrt_status rrt_env_read(rrt_env *env, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

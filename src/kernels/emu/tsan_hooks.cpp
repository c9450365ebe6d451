/* The hooks of the emulator's instrumented kernel objects (racecheck.cpp
 * says why they exist): every plain load and store of an instrumented
 * kernel calls one of these __tsan_* names, which hand the access to the
 * race checker (simt_executor.cpp's rc_access) when a launch runs with
 * it. A file of their own: the checker's shadow (racecheck.cpp) is used by
 * the executor, which these call, so together they would be a loop. */
#include <stdint.h>

#include "kernels/emu/racecheck.h"

/* ---- the hooks of -fsanitize=thread instrumentation ---------------------------------- */
/* Only where the kernel objects are instrumented: under the sanitizers
 * GCC declares these names as built-ins of its own. */
#if defined(RRT_EMU_INSTRUMENTED)
#define RC_PC ((uintptr_t)__builtin_return_address(0))
#define RC_HOOK(name, bytes, write)                                                                \
  extern "C" __attribute__((visibility("hidden"))) void name(void *p) {                            \
    if (rrt_emu::rc_armed()) rrt_emu::rc_access(p, bytes, write, RC_PC);                           \
  }
#define RC_HOOKS(n)                                                                                \
  RC_HOOK(__tsan_read##n, n, false)                                                                \
  RC_HOOK(__tsan_write##n, n, true)                                                                \
  RC_HOOK(__tsan_unaligned_read##n, n, false)                                                      \
  RC_HOOK(__tsan_unaligned_write##n, n, true)                                                      \
  RC_HOOK(__tsan_volatile_read##n, n, false)                                                       \
  RC_HOOK(__tsan_volatile_write##n, n, true)
RC_HOOKS(1)
RC_HOOKS(2)
RC_HOOKS(4)
RC_HOOKS(8)
RC_HOOKS(16)
#undef RC_HOOKS
#undef RC_HOOK

extern "C" __attribute__((visibility("hidden"))) void __tsan_read_range(void *p, unsigned long n) {
  if (rrt_emu::rc_armed()) rrt_emu::rc_access(p, n, false, RC_PC);
}
extern "C" __attribute__((visibility("hidden"))) void __tsan_write_range(void *p, unsigned long n) {
  if (rrt_emu::rc_armed()) rrt_emu::rc_access(p, n, true, RC_PC);
}
/* The module constructor of each instrumented object calls it; nothing to
 * set up (func entry/exit and vptr hooks are turned off, or harmless). */
extern "C" __attribute__((visibility("hidden"))) void __tsan_init(void) {}
extern "C" __attribute__((visibility("hidden"))) void __tsan_func_entry(void *) {}
extern "C" __attribute__((visibility("hidden"))) void __tsan_func_exit(void) {}
extern "C" __attribute__((visibility("hidden"))) void __tsan_vptr_update(void **, void *) {}
extern "C" __attribute__((visibility("hidden"))) void __tsan_vptr_read(void **) {}
extern "C" __attribute__((visibility("hidden"))) void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
extern "C" __attribute__((visibility("hidden"))) void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* The atomics: the operation itself, sequentially consistent (whatever
 * order the code asked for: the emulator's atomics are all seq_cst). */
#define RC_SC __ATOMIC_SEQ_CST
#define RC_ATOMIC_RMW(n, T, op)                                                                    \
  extern "C" __attribute__((visibility("hidden")))                                                 \
  T __tsan_atomic##n##_##op(volatile T *a, T v, int) {                                             \
    return __atomic_##op((T *)a, v, RC_SC);                                                        \
  }
#define RC_ATOMICS(n, T)                                                                           \
  extern "C" __attribute__((visibility("hidden")))                                                 \
  T __tsan_atomic##n##_load(const volatile T *a, int) {                                            \
    return __atomic_load_n((const T *)a, RC_SC);                                                   \
  }                                                                                                \
  extern "C" __attribute__((visibility("hidden"))) void __tsan_atomic##n##_store(volatile T *a,    \
                                                                                 T v, int) {       \
    __atomic_store_n((T *)a, v, RC_SC);                                                            \
  }                                                                                                \
  extern "C" __attribute__((visibility("hidden")))                                                 \
  T __tsan_atomic##n##_exchange(volatile T *a, T v, int) {                                         \
    return __atomic_exchange_n((T *)a, v, RC_SC);                                                  \
  }                                                                                                \
  RC_ATOMIC_RMW(n, T, fetch_add)                                                                   \
  RC_ATOMIC_RMW(n, T, fetch_sub)                                                                   \
  RC_ATOMIC_RMW(n, T, fetch_and)                                                                   \
  RC_ATOMIC_RMW(n, T, fetch_or)                                                                    \
  RC_ATOMIC_RMW(n, T, fetch_xor)                                                                   \
  RC_ATOMIC_RMW(n, T, fetch_nand)                                                                  \
  extern "C" __attribute__((visibility("hidden"))) int __tsan_atomic##n##_compare_exchange_strong( \
      volatile T *a, T *c, T v, int, int) {                                                        \
    return __atomic_compare_exchange_n((T *)a, c, v, false, RC_SC, RC_SC);                         \
  }                                                                                                \
  extern "C" __attribute__((visibility("hidden"))) int __tsan_atomic##n##_compare_exchange_weak(   \
      volatile T *a, T *c, T v, int, int) {                                                        \
    return __atomic_compare_exchange_n((T *)a, c, v, false, RC_SC, RC_SC);                         \
  }                                                                                                \
  extern "C" __attribute__((visibility("hidden")))                                                 \
  T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int, int) {                   \
    __atomic_compare_exchange_n((T *)a, &c, v, false, RC_SC, RC_SC);                               \
    return c;                                                                                      \
  }
RC_ATOMICS(8, uint8_t)
RC_ATOMICS(16, uint16_t)
RC_ATOMICS(32, uint32_t)
RC_ATOMICS(64, uint64_t)
#undef RC_ATOMICS
#undef RC_ATOMIC_RMW
#undef RC_SC
#endif /* RRT_EMU_INSTRUMENTED */

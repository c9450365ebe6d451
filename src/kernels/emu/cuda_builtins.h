/* CUDA built-ins for the SIMT emulator (emu backend).
 *
 * src/kernels/simt.h includes this header when a .cu file is compiled as
 * C++17 by the host compiler (not nvcc). The kernels then run on the CPU under
 * the executor of simt_executor.cpp: one fiber per CUDA thread (own stack,
 * cooperative switches only at barriers and warp collectives),
 * the fibers of a block run cooperatively on one OS thread, the blocks of a
 * launch are spread over the OS threads of the stream (rrt_host_stream_threads;
 * NULL stream: 1) and run one after another on each. Speed is not a goal: the
 * emulator exists so that CI, which has no GPU, executes the GPU code path.
 *
 * Supported:
 *   - __global__ kernels launched with RRT_LAUNCH from an RRT_KERNEL_API
 *     wrapper; the configuration is checked at the launch, and on an emu
 *     stream the grid runs when the stream reaches it (comm/emu_stream.h:
 *     a fault is then returned by the next synchronisation), on the NULL
 *     stream at once; the arguments are copied at the launch, as on a GPU
 *     (a pointer to a local of the wrapper would dangle); template kernels
 *     must be parenthesised: RRT_LAUNCH((k<float, 64>), ...);
 *   - threadIdx, blockIdx, blockDim, gridDim, warpSize (32), 1D/2D/3D grids and
 *     blocks; block <= 1024 threads (x, y <= 1024, z <= 64), grid x < 2^31,
 *     y, z <= 65535, all dims > 0: violations return RRT_ERR_INVALID_ARG;
 *   - __shared__ arrays (static thread_local storage: each OS thread runs one
 *     block at a time) and dynamic shared memory through RRT_DYN_SHARED
 *     (<= 48 KiB per launch, up to 227 KiB after
 *     cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
 *     bytes), as on a GPU; 128-byte aligned). Shared memory is not
 *     zeroed, as on a GPU. Static __shared__ storage is TLS of every OS thread of
 *     the process: put big tiles in dynamic shared memory;
 *   - __syncthreads, __syncthreads_count/_and/_or: release when every thread
 *     of the block that has not exited has arrived (exited threads count as
 *     arrived, as on Volta and later);
 *   - __syncwarp, __shfl_sync/_up/_down/_xor_sync (any trivially copyable T of
 *     at most 8 bytes, width a power of two <= 32, PTX segment rules),
 *     __ballot_sync, __any_sync, __all_sync, __activemask: a warp collective
 *     completes when every live (not exited) lane named in its mask waits at
 *     it; all those lanes must use the same mask, operation and width, as
 *     CUDA requires (a lane reading from a lane outside the group gets its
 *     own value); __activemask returns the lanes that have not exited (the
 *     emulator does not track branch divergence);
 *   - global and shared atomics (atomicAdd int/unsigned/ull/float/double,
 *     atomicSub, atomicMin/Max int/unsigned/long long/ull, atomicAnd/Or/Xor,
 *     atomicCAS, atomicExch), all sequentially consistent; __threadfence*;
 *   - math: everything of <math.h>, the fast intrinsics (__expf, __logf,
 *     __fdividef...) as the accurate functions, the _rn arithmetic intrinsics
 *     as plain IEEE operations (the build disables FMA contraction), bit
 *     casts, __ldg, min/max, __popc/__clz/__ffs, bf16/f16 storage types with
 *     round-to-nearest-even conversions;
 *   - printf (output of threads interleaves at barriers only);
 *   - the tensor-core subset of kernels/cuda/tc_prims.h (mma.sync m16n8k16 and
 *     m16n8k8 bf16/f16 with f32 accumulation, ldmatrix, cp.async with commit
 *     and wait groups); misuse there (a partial warp, a misaligned address) is
 *     a kernel fault: printed, and the launch returns RRT_ERR_INTERNAL;
 *   - __nanosleep: a fiber switch (see spin loops below);
 *   - RINGRT_EMU_ORDER=reverse|shuffle[:SEED] resumes the fibers of a block in
 *     reversed or shuffled order (default forward), to expose missing barriers;
 *   - RINGRT_EMU_RACECHECK=1: the shared-memory race checker (racecheck.h):
 *     plain loads and stores are seen through GCC's -fsanitize=thread
 *     instrumentation of the emulator's kernel objects, ldmatrix/cp.async
 *     directly; the lanes of an .aligned instruction must share its call
 *     site and shape (always checked);
 *   - the register limit of sm_80/sm_90 (registers a thread x threads a block,
 *     in units of 256 a warp, at most 65,536), from the ptxas report of the
 *     CUDA build (emu_regs.cpp: RINGRT_EMU_REGS, RINGRT_EMU_REGS_STRICT); a
 *     build without CUDA has no table and no check.
 * Not supported: dynamic parallelism, cooperative groups, textures/surfaces,
 * __constant__ symbols copied with cudaMemcpyToSymbol, inline PTX (other than
 * through tc_prims.h), register limits without a CUDA build, streams running at the same time (they
 * interleave only at stream operations, see comm/emu_stream.h), and warp-synchronous code that
 * relies on lock-step execution without __syncwarp or shuffles: a fiber runs until it reaches a
 * barrier or exits. Barriers and warp collectives must be reached by all live threads of the block
 * / warp; a block where that cannot happen (a barrier in divergent code) is reported as
 * RRT_ERR_INTERNAL with a message on stderr instead of hanging. A spin loop waiting on another
 * thread of the same block hangs unless it calls __nanosleep (here a fiber switch; on a GPU the
 * back-off recommended for spin loops); a spin waiting for another block progresses because the
 * blocks of a launch start in index order, over several OS threads: it must only wait for work
 * taken before its own (a ticket from an atomic counter, as on a GPU). Each thread has a stack of
 * RRT_EMU_STACK_BYTES (default 256 KiB; define it before including simt.h to change it per file)
 * with a guard page: overflow is a segfault. Linkage: __global__ kernels get
 * internal linkage (the nvcc build of the same file defines host stubs with the
 * same names); free __device__ functions and namespace-scope __device__
 * variables must be static, inline or in an anonymous namespace, since all emu
 * objects share one host link.
 */
#ifndef RRT_KERNELS_EMU_CUDA_BUILTINS_H
#define RRT_KERNELS_EMU_CUDA_BUILTINS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>
#include <string>
#include <type_traits>

#include "comm/device.h"
#include "ringrt/status.h"

/* ---- qualifiers ---------------------------------------------------------- */
#define __global__ static
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
/* __restrict__ is a GNU C++ keyword already. */

#ifndef RRT_EMU_STACK_BYTES
#define RRT_EMU_STACK_BYTES (256u * 1024u)
#endif

/* ---- vector types ---------------------------------------------------------- */
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct uint3 {
  unsigned x, y, z;
};
struct __align__(8) float2 {
  float x, y;
};
struct __align__(16) float4 {
  float x, y, z, w;
};
struct __align__(8) int2 {
  int x, y;
};
struct __align__(16) int4 {
  int x, y, z, w;
};
struct __align__(16) double2 {
  double x, y;
};
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return double2{x, y}; }
static inline dim3 make_dim3(unsigned x, unsigned y, unsigned z) { return dim3(x, y, z); }

constexpr int warpSize = 32;

/* ---- executor interface (simt_executor.cpp) -------------------------------- */
namespace rrt_emu {

enum warp_op {
  W_SYNC = 0,
  W_SHFL_IDX,
  W_SHFL_UP,
  W_SHFL_DOWN,
  W_SHFL_XOR,
  W_BALLOT,
  W_ANY,
  W_ALL,
  W_GATHER
};
enum block_op { B_SYNC = 0, B_COUNT, B_AND, B_OR };

/** Run fn(arg) as every thread of a grid, then drop(arg). The configuration
 *  is checked now; on a stream that queues work (emu: comm/emu_stream.h)
 *  the grid then runs when the stream reaches it, and a fault in it is the
 *  stream's error (the next synchronisation returns it); elsewhere (the
 *  NULL stream, the cpu layer's streams) it runs before this returns.
 *  Errors (bad configuration, deadlock) are printed to stderr naming
 *  `name`. */
rrt_status launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t shmem_bytes,
                  rrt_stream stream, size_t stack_bytes, void (*fn)(void *), void *arg,
                  void (*drop)(void *));
/* The identity of a kernel for its attributes: its address. */
template <class F> static inline const void *kernel_id(F *f) { return (const void *)f; }
/* The kernel as the compiler spells it, template arguments resolved (a
 * launch inside a template names them as the template's parameters): the
 * key of the register table (emu_regs.cpp). */
template <auto F> static inline const char *kernel_signature() { return __PRETTY_FUNCTION__; }
/** The register limit of a launch (emu_regs.cpp): RRT_SUCCESS, or
 *  RRT_ERR_INVALID_ARG, printed and noted, when `threads` threads of the
 *  kernel (signature: kernel_signature) would need more registers than a
 *  block of sm_80/sm_90 may have, by the register table of the CUDA build,
 *  or the table cannot be read, or (RINGRT_EMU_REGS_STRICT=1) the kernel
 *  is not in it. */
rrt_status check_registers(const char *name, const char *signature, unsigned threads);
/** The kernel name inside a kernel_signature ("k<128,true>", no spaces). */
std::string signature_name(const char *signature);
/** cudaFuncAttributeMaxDynamicSharedMemorySize of `kernel`: 0, or 1 (a value
 *  above the emulated arch's opt-in limit, comm/emu_arch.h, as
 *  cudaErrorInvalidValue). */
int set_max_dyn_smem(const void *kernel, long bytes);

/* Non-inline accessors of the current fiber: nothing may be cached across a
 * fiber switch, and a call to an unknown function guarantees that. */
uint3 thread_idx();
uint3 block_idx();
dim3 block_dim();
dim3 grid_dim();
void *dyn_smem();
int block_sync(int op, int pred);
/** __syncthreads at a source line: a barrier, unless RINGRT_EMU_DROP_BARRIER
 *  names this site (FILE:LINE, FILE the source's base name), which deletes
 *  it for a planted-fault test (the thread goes on without waiting). */
void block_sync_at(const char *file, int line);
/** __nanosleep: the fiber yields; it runs again on the block's next pass. */
void sleep_yield();
uint64_t warp_sync(int op, unsigned mask, uint64_t value, int param, int width);
unsigned active_mask();
unsigned lane_id();
/** Report misuse in a kernel (printed once per launch with the kernel, block
 *  and thread); the launch then returns RRT_ERR_INTERNAL. */
void fault(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** A warp collective of all 32 lanes: `all` (32 * bytes) receives every
 *  lane's `bytes` bytes at `mine`, lane j at offset j * bytes. `site` (the
 *  instruction's code address) and `shape` must be the same in every lane
 *  (.aligned: one instruction of the warp), else a kernel fault. */
void warp_gather(const char *what, const void *mine, void *all, size_t bytes, uintptr_t site,
                 int shape);
/** Fault unless [p, p + bytes) may be shared memory of the running block:
 *  not device (global) memory, not past the launch's dynamic shared bytes
 *  (static __shared__ arrays cannot be told from other host memory). */
void check_shared(const char *what, const void *p, size_t bytes);
/** cp.async of the running thread: queued until a wait covers its group. */
void cp_async(void *dst, const void *src, unsigned bytes);
void cp_async_commit();
/** Land the copies of all but the `pending` most recent committed groups;
 *  pending < 0: every copy (cp.async.wait_all). */
void cp_async_wait(int pending);

template <class F> void trampoline(void *f) { (*static_cast<F *>(f))(); }
template <class F> void destroy(void *f) { delete static_cast<F *>(f); }

template <class T> static inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp shuffles move trivially copyable values of at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T> static inline T from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}
template <class To, class From> static inline To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between types of one size");
  To t;
  memcpy(&t, &v, sizeof t);
  return t;
}

} // namespace rrt_emu

#define threadIdx (::rrt_emu::thread_idx())
#define blockIdx (::rrt_emu::block_idx())
#define blockDim (::rrt_emu::block_dim())
#define gridDim (::rrt_emu::grid_dim())

/* ---- the kernel contract of simt.h ------------------------------------------- */
#define RRT_KERNEL_API(name) extern "C" rrt_status name##_emu
#define RRT_DYN_SHARED(type, name) type *name = reinterpret_cast<type *>(::rrt_emu::dyn_smem())
/* The lambda copies the wrapper's arguments (the launch may run after the
 * wrapper returns, when its stream reaches it: kernel arguments are values,
 * as on a GPU) and every fiber calls the kernel with its own by-value
 * copies of those. */
#define RRT_LAUNCH(kernel, grid, block, shmem, stream, ...)                                        \
  do {                                                                                             \
    const dim3 rrt_emu_block_ = dim3(block);                                                       \
    rrt_status rrt_emu_st_ =                                                                       \
        ::rrt_emu::check_registers(#kernel, ::rrt_emu::kernel_signature<kernel>(),                 \
                                   rrt_emu_block_.x * rrt_emu_block_.y * rrt_emu_block_.z);        \
    if (rrt_emu_st_ != RRT_SUCCESS) return rrt_emu_st_;                                            \
    auto rrt_emu_body_ = [=]() { kernel(__VA_ARGS__); };                                           \
    using rrt_emu_body_t_ = decltype(rrt_emu_body_);                                               \
    rrt_emu_body_t_ *rrt_emu_copy_ = new (std::nothrow) rrt_emu_body_t_(rrt_emu_body_);            \
    if (!rrt_emu_copy_) return RRT_ERR_OUT_OF_MEMORY;                                              \
    return ::rrt_emu::launch(#kernel, ::rrt_emu::kernel_id(kernel), dim3(grid), rrt_emu_block_,    \
                             (size_t)(shmem), (rrt_stream)(stream), (size_t)(RRT_EMU_STACK_BYTES), \
                             &::rrt_emu::trampoline<rrt_emu_body_t_>, rrt_emu_copy_,               \
                             &::rrt_emu::destroy<rrt_emu_body_t_>);                                \
  } while (0)

/* ---- the CUDA runtime's kernel attributes (the opt-in to > 48 KiB) -------------- */
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
/* One emulated device, and no sticky error state: a failed call returns
 * its error and leaves nothing behind for the next launch. */
static inline cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
static inline cudaError_t cudaGetLastError() { return cudaSuccess; }
static inline const char *cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : "cudaErrorInvalidValue";
}
static inline const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "invalid argument";
}
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
/* Host code of a .cu file calls it as on a GPU, before the launch that needs
 * it; the carveout is a hint without effect here. */
template <class F>
static inline cudaError_t cudaFuncSetAttribute(F *kernel, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout)
    return value >= -1 && value <= 100 ? cudaSuccess : cudaErrorInvalidValue;
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
  return ::rrt_emu::set_max_dyn_smem(::rrt_emu::kernel_id(kernel), value) == 0
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

/* ---- barriers and warp collectives -------------------------------------------- */
/* A macro, so each barrier knows its source line (RINGRT_EMU_DROP_BARRIER). */
#define __syncthreads() ::rrt_emu::block_sync_at(__FILE__, __LINE__)
static inline int __syncthreads_count(int p) {
  return ::rrt_emu::block_sync(::rrt_emu::B_COUNT, p);
}
static inline int __syncthreads_and(int p) { return ::rrt_emu::block_sync(::rrt_emu::B_AND, p); }
static inline int __syncthreads_or(int p) { return ::rrt_emu::block_sync(::rrt_emu::B_OR, p); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)::rrt_emu::warp_sync(::rrt_emu::W_SYNC, mask, 0, 0, warpSize);
}
static inline unsigned __activemask() { return ::rrt_emu::active_mask(); }
/* A spin loop's back-off; here a fiber switch (the other threads of the
 * block run, then this one again), so a spin that calls it progresses. */
static inline void __nanosleep(unsigned ns) {
  (void)ns;
  ::rrt_emu::sleep_yield();
}

template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = warpSize) {
  using namespace rrt_emu;
  return from_bits<T>(warp_sync(W_SHFL_IDX, mask, to_bits(v), src, width));
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = warpSize) {
  using namespace rrt_emu;
  return from_bits<T>(warp_sync(W_SHFL_UP, mask, to_bits(v), (int)d, width));
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = warpSize) {
  using namespace rrt_emu;
  return from_bits<T>(warp_sync(W_SHFL_DOWN, mask, to_bits(v), (int)d, width));
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = warpSize) {
  using namespace rrt_emu;
  return from_bits<T>(warp_sync(W_SHFL_XOR, mask, to_bits(v), m, width));
}
static inline unsigned __ballot_sync(unsigned mask, int p) {
  return (unsigned)::rrt_emu::warp_sync(::rrt_emu::W_BALLOT, mask, p != 0, 0, warpSize);
}
static inline int __any_sync(unsigned mask, int p) {
  return (int)::rrt_emu::warp_sync(::rrt_emu::W_ANY, mask, p != 0, 0, warpSize);
}
static inline int __all_sync(unsigned mask, int p) {
  return (int)::rrt_emu::warp_sync(::rrt_emu::W_ALL, mask, p != 0, 0, warpSize);
}

/* ---- memory ordering and atomics ------------------------------------------------ */
/* Blocks of one launch run in parallel on several OS threads, so global
 * atomics are real atomics. Threads of one block never run concurrently. */
/* Out of line (simt_executor.cpp): the kernel objects are compiled with the
 * race checker's instrumentation, under which GCC has no inline fence. */
namespace rrt_emu {
void thread_fence();
}
static inline void __threadfence() { ::rrt_emu::thread_fence(); }
static inline void __threadfence_block() { ::rrt_emu::thread_fence(); }
static inline void __threadfence_system() { ::rrt_emu::thread_fence(); }
static inline void __trap() { abort(); }

/* libcu++'s cuda::atomic_ref, the subset the kernels use (load, store,
 * fetch_add); every order is sequentially consistent here. */
namespace cuda {
enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST
};
enum thread_scope { thread_scope_system, thread_scope_device, thread_scope_block };
template <class T, thread_scope S = thread_scope_system> class atomic_ref {
public:
  explicit atomic_ref(T &r) : p_(&r) {}
  T load(memory_order = memory_order_seq_cst) const {
    return __atomic_load_n(p_, __ATOMIC_SEQ_CST);
  }
  void store(T v, memory_order = memory_order_seq_cst) const {
    __atomic_store_n(p_, v, __ATOMIC_SEQ_CST);
  }
  T fetch_add(T v, memory_order = memory_order_seq_cst) const {
    return __atomic_fetch_add(p_, v, __ATOMIC_SEQ_CST);
  }

private:
  T *p_;
};
} // namespace cuda

#define RRT_EMU_ATOMIC_INT(T)                                                                      \
  static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }      \
  static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }      \
  static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }      \
  static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }        \
  static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }      \
  static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }    \
  static inline T atomicCAS(T *p, T cmp, T v) {                                                    \
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);            \
    return cmp;                                                                                    \
  }                                                                                                \
  static inline T atomicMin(T *p, T v) {                                                           \
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                  \
    while (v < old &&                                                                              \
           !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {  \
    }                                                                                              \
    return old;                                                                                    \
  }                                                                                                \
  static inline T atomicMax(T *p, T v) {                                                           \
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                  \
    while (v > old &&                                                                              \
           !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {  \
    }                                                                                              \
    return old;                                                                                    \
  }
RRT_EMU_ATOMIC_INT(int)
RRT_EMU_ATOMIC_INT(unsigned)
RRT_EMU_ATOMIC_INT(long long)
RRT_EMU_ATOMIC_INT(unsigned long long)
#undef RRT_EMU_ATOMIC_INT

/* Floating point: a compare-and-swap loop on the bit pattern (bitwise compare,
 * so NaN cannot make it spin). */
#define RRT_EMU_ATOMIC_FP(T)                                                                       \
  static inline T atomicAdd(T *p, T v) {                                                           \
    T old, upd;                                                                                    \
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);                                                      \
    do {                                                                                           \
      upd = old + v;                                                                               \
    } while (                                                                                      \
        !__atomic_compare_exchange(p, &old, &upd, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));     \
    return old;                                                                                    \
  }                                                                                                \
  static inline T atomicExch(T *p, T v) {                                                          \
    T old;                                                                                         \
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);                                              \
    return old;                                                                                    \
  }
RRT_EMU_ATOMIC_FP(float)
RRT_EMU_ATOMIC_FP(double)
#undef RRT_EMU_ATOMIC_FP

/* ---- math intrinsics ------------------------------------------------------------- */
/* glibc's math.h declares __expf & co. itself: map the names after it. */
#define __expf expf
#define __logf logf
#define __log2f log2f
#define __powf powf
#define __sinf sinf
#define __cosf cosf
#define __tanf tanf
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __frcp_rn(float a) { return 1.0f / a; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double a) { return 1.0 / a; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float __int_as_float(int v) { return rrt_emu::bit_cast<float>(v); }
static inline int __float_as_int(float v) { return rrt_emu::bit_cast<int>(v); }
static inline float __uint_as_float(unsigned v) { return rrt_emu::bit_cast<float>(v); }
static inline unsigned __float_as_uint(float v) { return rrt_emu::bit_cast<unsigned>(v); }
static inline double __longlong_as_double(long long v) { return rrt_emu::bit_cast<double>(v); }
static inline long long __double_as_longlong(double v) { return rrt_emu::bit_cast<long long>(v); }
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
static inline int __clzll(long long v) { return v ? __builtin_clzll((unsigned long long)v) : 64; }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++)
    r |= ((v >> i) & 1u) << (31 - i);
  return r;
}

/* CUDA's overloaded min/max for device code. */
#define RRT_EMU_MINMAX(T)                                                                          \
  static inline T min(T a, T b) { return a < b ? a : b; }                                          \
  static inline T max(T a, T b) { return a > b ? a : b; }
RRT_EMU_MINMAX(int)
RRT_EMU_MINMAX(unsigned)
RRT_EMU_MINMAX(long long)
RRT_EMU_MINMAX(unsigned long long)
RRT_EMU_MINMAX(long)
RRT_EMU_MINMAX(unsigned long)
#undef RRT_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* ---- 16-bit floating point storage (cuda_fp16.h / cuda_bf16.h subset) -------------- */
struct __align__(2) __half {
  unsigned short x;
};
struct __align__(2) __nv_bfloat16 {
  unsigned short x;
};

static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned u = __float_as_uint(f);
  __nv_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) { /* NaN: the canonical one, as CUDA */
    h.x = 0x7fffu;
    return h;
  }
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  h.x = (unsigned short)(u >> 16);
  return h;
}
static inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
static inline float __bfloat162float(__nv_bfloat16 h) {
  return __uint_as_float((unsigned)h.x << 16);
}

static inline __half __float2half_rn(float f) {
  unsigned u = __float_as_uint(f);
  unsigned sign = (u >> 16) & 0x8000u;
  unsigned a = u & 0x7fffffffu;
  __half h;
  if (a > 0x7f800000u) { /* NaN: the canonical one, as CUDA */
    h.x = 0x7fffu;
    return h;
  }
  if (a >= 0x477ff000u) { /* rounds to >= 65520: infinity */
    h.x = (unsigned short)(sign | 0x7c00u);
    return h;
  }
  if (a < 0x38800000u) {   /* below the smallest normal half (2^-14): subnormal or zero */
    if (a < 0x33000000u) { /* below 2^-25: rounds to zero */
      h.x = (unsigned short)sign;
      return h;
    }
    unsigned e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
    unsigned shift = 126u - e; /* value = m * 2^(e-150); half ulp here is 2^-24 */
    unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) q++;
    h.x = (unsigned short)(sign | q);
    return h;
  }
  unsigned r = a - 0x38000000u; /* rebias exponent 127 -> 15 (in float position) */
  r += 0xfffu + ((r >> 13) & 1u);
  h.x = (unsigned short)(sign | (r >> 13));
  return h;
}
static inline __half __float2half(float f) { return __float2half_rn(f); }
static inline unsigned short __half_as_ushort(__half h) { return h.x; }
static inline __half __ushort_as_half(unsigned short v) { return __half{v}; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { return __nv_bfloat16{v}; }
static inline float __half2float(__half h) {
  unsigned sign = ((unsigned)h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1fu, m = h.x & 0x3ffu;
  if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) { /* zero or subnormal: m * 2^-24 exactly */
    float v = (float)m * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

#endif

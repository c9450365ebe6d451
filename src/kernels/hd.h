/* RRT_HD: one qualifier for a function that runs on the host and on the
 * device. Under nvcc it is __host__ __device__; in C and in the emulator's
 * C++ build (where every function is a host function) it is empty. Shared
 * per-element code is written `static inline RRT_HD double f(...)`, so the
 * C, nvcc and emulator builds see the same function. */
#ifndef RRT_KERNELS_HD_H
#define RRT_KERNELS_HD_H

#if defined(__CUDACC__)
#define RRT_HD __host__ __device__
#else
#define RRT_HD
#endif

#endif

/* Element types of the transport API: sizes and names. Their own file so
 * that every engine and transport.c can use them without depending on
 * each other. */
#include "ringrt/transport.h"

size_t rrt_dtype_size(rrt_dtype dtype) {
  switch (dtype) {
  case RRT_DTYPE_F32: return 4;
  case RRT_DTYPE_F64: return 8;
  case RRT_DTYPE_I32: return 4;
  case RRT_DTYPE_I64: return 8;
  case RRT_DTYPE_U8: return 1;
  case RRT_DTYPE_BF16: return 2;
  case RRT_DTYPE_F16: return 2;
  }
  return 0;
}

const char *rrt_dtype_name(rrt_dtype dtype) {
  switch (dtype) {
  case RRT_DTYPE_F32: return "f32";
  case RRT_DTYPE_F64: return "f64";
  case RRT_DTYPE_I32: return "i32";
  case RRT_DTYPE_I64: return "i64";
  case RRT_DTYPE_U8: return "u8";
  case RRT_DTYPE_BF16: return "bf16";
  case RRT_DTYPE_F16: return "f16";
  }
  return "unknown";
}

/* Helpers every phase of the ILU(0) analysis uses: the out-of-memory
 * error, backend uploads and shared arrays, and freeing the phases' hand-over struct. */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/device.h"
#include "comm/error.h"
#include "ilu/handle.h"
#include "ringrt/memory.h"

rrt_status rrt_ilu0_nomem(rrt_ctx_t ctx, const char *op) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "out of memory");
}

rrt_status rrt_ilu0_upload(rrt_ctx_t ctx, void **dst, const void *src, size_t bytes) {
  RRT_CHECK(rrt_malloc(ctx, bytes ? bytes : 8, dst));
  if (bytes) RRT_CHECK(rrt_memcpy_to_backend(ctx, *dst, src, bytes));
  return RRT_SUCCESS;
}

/* Large analysis arrays 2 MiB aligned, so that where the system backs
 * memory with transparent huge pages by default they map whole. No
 * MADV_HUGEPAGE: with the usual defrag=madvise setting it makes the first
 * touch compact memory synchronously, which measured 0.2-4.2 s for the same
 * laplace3d:100 analysis depending on what ran before. */
void *rrt_ilu0_alloc(size_t bytes) {
  if (bytes >= RRT_ILU0_HUGE_BYTES) {
    void *p = NULL;
    return posix_memalign(&p, RRT_ILU0_HUGE_ALIGN, bytes) == 0 ? p : NULL;
  }
  return malloc(bytes ? bytes : 1);
}

rrt_status rrt_ilu0_share(rrt_ctx_t ctx, void **dst, void *src, size_t bytes) {
  if (!ctx->dev->is_cuda) {
    *dst = src;
    return RRT_SUCCESS;
  }
  return rrt_ilu0_upload(ctx, dst, src, bytes);
}

void rrt_ilu0_unshare(rrt_ctx_t ctx, void *dst, const void *src) {
  if (dst != src) rrt_free(ctx, dst);
}

void rrt_ilu0_setup_free(rrt_ilu0_setup *s) {
  free(s->req), free(s->req_src), free(s->gflag), free(s->glen), free(s->gcol_ext);
  for (int side = 0; side < 2; side++)
    free(s->lev[side]), free(s->gneed[side]);
  memset(s, 0, sizeof(*s));
}

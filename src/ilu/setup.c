/* Helpers every phase of the ILU(0) analysis uses: the out-of-memory
 * error, backend uploads, and freeing the phases' hand-over struct. */
#include <stdlib.h>
#include <string.h>

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

void rrt_ilu0_setup_free(rrt_ilu0_setup *s) {
  free(s->req), free(s->req_src), free(s->gflag), free(s->glen), free(s->gcol_ext);
  for (int side = 0; side < 2; side++)
    free(s->lev[side]), free(s->gneed[side]);
  memset(s, 0, sizeof(*s));
}

/* An application's own function that happens to share an internal name of
 * the library must not replace the library's. rrt_ctx_create reads the
 * environment through the internal rrt_env_read; with default visibility
 * the dynamic linker would bind that call to the definition below (the
 * executable comes first in the lookup), and creation would fail. With
 * hidden visibility the library keeps its own. Public API only, linked to
 * libringrt.so (the interposition only exists there). */
#include <stddef.h>
#include <stdio.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

static int app_env_read_calls = 0;

/* The application's own rrt_env_read: a different job, a different result. */
int rrt_env_read(void *what, char *err, size_t errlen);
int rrt_env_read(void *what, char *err, size_t errlen) {
  (void)what;
  if (err && errlen) snprintf(err, errlen, "the application's rrt_env_read");
  app_env_read_calls++;
  return RRT_ERR_INTERNAL;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  CHECK_MSG(app_env_read_calls == 0, "the library called the application's rrt_env_read %d times",
            app_env_read_calls);
  rrt_ctx_destroy(ctx);
  /* and the application still gets its own */
  char err[64];
  CHECK(rrt_env_read(NULL, err, sizeof err) == RRT_ERR_INTERNAL && app_env_read_calls == 1);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

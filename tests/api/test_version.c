/* The runtime version query: the library that is running reports the
 * version this program was compiled against (same build), as one integer
 * that agrees with the string and the compile-time parts. Public API only,
 * linked to libringrt.so. */
#include <stdio.h>
#include <string.h>

#include "ringrt/ringrt.h"

static int failures = 0;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                              \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

int main(void) {
  int version = -1;
  EXPECT(rrt_get_version(&version) == RRT_SUCCESS);
  EXPECT(version == RINGRT_VERSION_CODE);
  EXPECT(RINGRT_VERSION_CODE ==
         RINGRT_VERSION_MAJOR * 10000 + RINGRT_VERSION_MINOR * 100 + RINGRT_VERSION_PATCH);
  EXPECT(RINGRT_VERSION == RINGRT_VERSION_CODE);
  EXPECT(rrt_get_version(NULL) == RRT_ERR_INVALID_ARG);
  /* the string and the number name the same release */
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
  EXPECT(strcmp(rrt_version(), expect) == 0);
  printf("ringrt %s, version code %d (compiled against %d)\n", rrt_version(), version,
         RINGRT_VERSION_CODE);
  return failures ? 1 : 0;
}

/* rrt_options_import, the one copy-with-defaults behind every option
 * struct, on a struct of its own: fields within the caller's size are
 * copied, later ones take the defaults, and every kind of bad header is
 * an error whose message names the struct and the numbers. White-box (the
 * helper is internal), so linked to the static library. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "comm/options.h"
#include "test_util.h"

typedef struct demo_options {
  size_t size;
  unsigned magic, version;
  int64_t first; /* version 1 ends here */
  double later;  /* added in version 2 */
  int last;
} demo_options;

#define DEMO_MAGIC 0x44454d4fu
static const demo_options demo_defaults = {sizeof(demo_options), DEMO_MAGIC, 2, 10, 2.5, 7};
static const rrt_options_layout demo_layout = {
    .name = "demo_options",
    .initializer = "DEMO_OPTIONS_INITIALIZER",
    .size = sizeof(demo_options),
    .min_size = offsetof(demo_options, first),
    .defaults = &demo_defaults,
    .magic_offset = offsetof(demo_options, magic),
    .magic = DEMO_MAGIC,
    .version_offset = offsetof(demo_options, version),
    .version = 2,
};

static demo_options caller(size_t size, unsigned version) {
  demo_options d;
  memset(&d, 0xA5, sizeof d); /* what lies past an older caller's struct */
  d.size = size;
  d.magic = DEMO_MAGIC;
  d.version = version;
  d.first = 42;
  if (size >= offsetof(demo_options, later) + sizeof d.later) d.later = -1.0;
  if (size >= sizeof d) d.last = -3;
  return d;
}

static int msg_has(const char *msg, const char *a, const char *b) {
  return strstr(msg, a) != NULL && strstr(msg, b) != NULL;
}

int main(void) {
  demo_options full;
  char msg[256];

  /* NULL: the defaults, with this library's size */
  CHECK_OK(rrt_options_import(&demo_layout, NULL, &full, msg, sizeof msg));
  CHECK(memcmp(&full, &demo_defaults, sizeof full) == 0);

  /* the current struct: every field the caller's */
  demo_options now = caller(sizeof(demo_options), 2);
  CHECK_OK(rrt_options_import(&demo_layout, &now, &full, msg, sizeof msg));
  CHECK(full.first == 42 && full.later == -1.0 && full.last == -3);

  /* a version-1 struct: `first` is the caller's, the rest defaults, and the
   * copy says this library's size */
  demo_options v1 = caller(offsetof(demo_options, later), 1);
  CHECK_OK(rrt_options_import(&demo_layout, &v1, &full, msg, sizeof msg));
  CHECK(full.first == 42 && full.later == 2.5 && full.last == 7);
  CHECK(full.size == sizeof(demo_options) && full.version == 1);

  /* the identification fields only: everything else defaults */
  demo_options bare = caller(offsetof(demo_options, first), 1);
  CHECK_OK(rrt_options_import(&demo_layout, &bare, &full, msg, sizeof msg));
  CHECK(full.first == 10 && full.later == 2.5);

  demo_options bad = caller(sizeof(size_t), 1);
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(msg_has(msg, "demo_options.size is 8 bytes", "DEMO_OPTIONS_INITIALIZER"), "%s", msg);
  bad = caller(sizeof(demo_options) + 8, 2);
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(msg_has(msg, "demo_options.size", "larger than"), "%s", msg);
  bad = caller(offsetof(demo_options, first) + 4, 1); /* between two versions' sizes */
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(msg_has(msg, "demo_options.size", "not the size of any version"), "%s", msg);
  bad = caller(sizeof(demo_options), 2);
  bad.magic = 0;
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(msg_has(msg, "demo_options.magic is 0x0", "DEMO_OPTIONS_INITIALIZER"), "%s", msg);
  bad = caller(sizeof(demo_options), 3);
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(msg_has(msg, "demo_options.version is 3", "1 to 2"), "%s", msg);
  bad = caller(sizeof(demo_options), 0);
  CHECK(rrt_options_import(&demo_layout, &bad, &full, msg, sizeof msg) == RRT_ERR_INVALID_ARG);
  /* a NULL message buffer is fine */
  CHECK(rrt_options_import(&demo_layout, &bad, &full, NULL, 0) == RRT_ERR_INVALID_ARG);
  return test_result();
}

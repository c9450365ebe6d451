/* Option structs from programs built against older headers: copy what the
 * caller's struct has, default the rest (see comm/options.h). */
#include "comm/options.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#define OPTIONS_FAIL(...)                                                                          \
  do {                                                                                             \
    if (msg && msglen) snprintf(msg, msglen, __VA_ARGS__);                                         \
    return RRT_ERR_INVALID_ARG;                                                                    \
  } while (0)

static unsigned read_unsigned(const void *base, size_t offset) {
  unsigned v;
  memcpy(&v, (const char *)base + offset, sizeof v);
  return v;
}

/* Size, magic and version say the struct was set up by an initializer of
 * this or an older header. */
static rrt_status check_identity(const rrt_options_layout *l, const void *user, size_t size,
                                 char *msg, size_t msglen) {
  if (size < l->min_size)
    OPTIONS_FAIL("%s.size is %zu bytes, smaller than the %zu every version has: initialise it "
                 "with %s",
                 l->name, size, l->min_size, l->initializer);
  if (size > l->size)
    OPTIONS_FAIL("%s.size is %zu bytes, larger than the %zu this library knows (built against a "
                 "newer ringrt header?)",
                 l->name, size, l->size);
  /* size is the first field, so every version's sizeof is a multiple of it */
  if (size % alignof(size_t) != 0)
    OPTIONS_FAIL("%s.size is %zu bytes, not the size of any version (a multiple of %zu): "
                 "initialise it with %s",
                 l->name, size, alignof(size_t), l->initializer);
  if (l->magic_offset && read_unsigned(user, l->magic_offset) != l->magic)
    OPTIONS_FAIL("%s.magic is 0x%x, not 0x%x: initialise it with %s", l->name,
                 read_unsigned(user, l->magic_offset), l->magic, l->initializer);
  if (l->version_offset) {
    unsigned v = read_unsigned(user, l->version_offset);
    if (v < 1 || v > l->version)
      OPTIONS_FAIL("%s.version is %u, this library reads versions 1 to %u", l->name, v, l->version);
  }
  return RRT_SUCCESS;
}

rrt_status rrt_options_import(const rrt_options_layout *l, const void *user, void *full, char *msg,
                              size_t msglen) {
  if (msg && msglen) msg[0] = '\0';
  memcpy(full, l->defaults, l->size);
  if (!user) return RRT_SUCCESS;
  size_t size;
  memcpy(&size, user, sizeof size);
  rrt_status st = check_identity(l, user, size, msg, msglen);
  if (st != RRT_SUCCESS) return st;
  memcpy(full, user, size); /* the caller's fields; the rest keep their defaults */
  memcpy(full, &l->size, sizeof l->size);
  return RRT_SUCCESS;
}

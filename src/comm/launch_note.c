/* The pending launch failure of a thread (comm/device.h: rrt_launch_note). */
#include <stdio.h>

#include "comm/device.h"

/* Thread-local like cudaGetLastError's state: a launch that fails on one
 * thread is reported by that thread. */
static _Thread_local char note[320];

void rrt_launch_note(const char *kernel, const char *why) {
  snprintf(note, sizeof note, "kernel %s: %s", kernel ? kernel : "?", why ? why : "?");
}

int rrt_launch_note_take(char *buf, size_t len) {
  if (!note[0]) return 0;
  if (buf && len) snprintf(buf, len, "%s", note);
  note[0] = '\0';
  return 1;
}

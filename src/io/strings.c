/* String lists (see strings.h). */
#include "io/strings.h"

#include <stdlib.h>

void rrt_strings_free(rrt_strings *s) {
  if (!s) return;
  for (int64_t i = 0; s->items && i < s->count; i++)
    free(s->items[i]);
  free(s->items);
  s->items = NULL;
  s->count = 0;
}

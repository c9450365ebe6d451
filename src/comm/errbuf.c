/* Error text into a caller's buffer (see errbuf.h). */
#include "comm/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

rrt_status rrt_errbuf(char *err, size_t errlen, rrt_status st, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return st;
}

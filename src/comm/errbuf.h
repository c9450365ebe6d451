/* Error text into a caller's buffer: the readers and writers that report
 * through (char *err, size_t errlen) instead of a context (the io readers,
 * comm/outfile.c). No MPI, so the fuzz harnesses link it alone. */
#ifndef RRT_COMM_ERRBUF_H
#define RRT_COMM_ERRBUF_H

#include <stddef.h>

#include "ringrt/status.h"

/** Format into err (when err and errlen are non-zero) and return st. */
rrt_status rrt_errbuf(char *err, size_t errlen, rrt_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif

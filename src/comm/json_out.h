/* JSON text the library and the tool write (the trace, the tool's reports):
 * one string escaper for both. */
#ifndef RRT_COMM_JSON_OUT_H
#define RRT_COMM_JSON_OUT_H

#include <stdio.h>

/** Write s as a JSON string literal: quotes, backslashes and control
 *  characters escaped. */
void rrt_json_string(FILE *f, const char *s);

#endif

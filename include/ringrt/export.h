/* ringrt: which symbols the library exports.
 *
 * The library is built with hidden visibility (-fvisibility=hidden): only
 * declarations marked RRT_API are exported from libringrt.so, so internal
 * functions cannot clash with an application's own symbols or be replaced
 * by them. Definitions inherit the visibility of their public declaration.
 * tests/api checks that the exported list and the public headers agree.
 */
#ifndef RINGRT_EXPORT_H
#define RINGRT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define RRT_API __attribute__((visibility("default")))
#else
#define RRT_API
#endif

#endif

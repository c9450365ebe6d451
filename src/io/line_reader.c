/* Lines of any length from a plain or gzip-compressed file. One growing
 * buffer: a line longer than the buffer doubles it, so the memory is the
 * read block plus the longest line, whatever the file holds. A NUL byte
 * stays in the line (the caller sees strlen(line) < len). */
#include "io/line_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef RRT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "comm/errbuf.h"
#include "io/limits.h"

#define RRT_LINES_BLOCK ((size_t)1 << 18) /* bytes read at a time */

struct rrt_lines {
  const char *path;
  FILE *f;
#ifdef RRT_HAVE_ZLIB
  gzFile gz;
#endif
  int gzip, eof;
  int64_t size; /* plain file size, -1 for gzip */
  int64_t pos;  /* file offset of buf[beg] */
  char *buf;    /* data in [beg, end), one spare byte kept for a NUL */
  size_t cap, beg, end;
  size_t scanned; /* bytes after beg known to hold no newline */
};

int rrt_lines_gzip(const rrt_lines *r) { return r->gzip; }
int64_t rrt_lines_file_size(const rrt_lines *r) { return r->size; }
int64_t rrt_lines_offset(const rrt_lines *r) { return r->pos; }

/* The first two bytes of a gzip member (RFC 1952), looked at in a regular
 * file (rewound after). A pipe cannot be rewound: its first byte is put
 * back, and 0x1f there (a text file starts with '%') is taken as gzip,
 * which needs a file: -1. */
static int gzip_magic(FILE *f, int regular) {
  unsigned char m[2];
  if (!regular) {
    int c = fgetc(f);
    if (c == 0x1f) return -1;
    if (c != EOF) ungetc(c, f);
    return 0;
  }
  size_t got = fread(m, 1, 2, f);
  rewind(f);
  return got == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

static rrt_status open_gzip(rrt_lines *r, char *err, size_t errlen) {
#ifdef RRT_HAVE_ZLIB
  r->gz = gzopen(r->path, "rb");
  if (!r->gz)
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot open the gzip stream: %s", r->path,
                      errno ? strerror(errno) : "out of memory");
  gzbuffer(r->gz, 1 << 17);
  fclose(r->f);
  r->f = NULL;
  return RRT_SUCCESS;
#else
  (void)r;
  return rrt_errbuf(err, errlen, RRT_ERR_UNSUPPORTED,
                    "%s: gzip-compressed file, built without zlib (decompress it with gunzip, or "
                    "rebuild ringrt with zlib)",
                    r->path);
#endif
}

rrt_status rrt_lines_open(const char *path, rrt_lines **out, char *err, size_t errlen) {
  *out = NULL;
  rrt_lines *r = calloc(1, sizeof(*r));
  if (!r) return rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  r->path = path;
  r->f = fopen(path, "rb");
  struct stat st;
  memset(&st, 0, sizeof st);
  rrt_status s = RRT_SUCCESS;
  if (!r->f)
    s = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  else if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode))
    s = rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: is a directory, not a file", path);
  else if ((r->gzip = gzip_magic(r->f, S_ISREG(st.st_mode))) < 0)
    s = rrt_errbuf(err, errlen, RRT_ERR_IO,
                   "%s: gzip-compressed data from a pipe: give the .gz file itself", path);
  else if (r->gzip)
    s = open_gzip(r, err, errlen);
  r->size = S_ISREG(st.st_mode) && !r->gzip ? (int64_t)st.st_size : -1;
  r->cap = RRT_LINES_BLOCK + 1;
  if (!s && !(r->buf = malloc(r->cap)))
    s = rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (s) {
    rrt_lines_close(r);
    return s;
  }
  *out = r;
  return RRT_SUCCESS;
}

void rrt_lines_close(rrt_lines *r) {
  if (!r) return;
  if (r->f) fclose(r->f);
#ifdef RRT_HAVE_ZLIB
  if (r->gz) gzclose(r->gz);
#endif
  free(r->buf);
  free(r);
}

/* Read more bytes behind end (moving the pending line to the front and
 * growing the buffer when it is full): bytes read, 0 at end, -1 on error. */
static long fill(rrt_lines *r, char *err, size_t errlen) {
  if (r->beg) {
    memmove(r->buf, r->buf + r->beg, r->end - r->beg);
    r->end -= r->beg, r->beg = 0;
  }
  if (r->cap - r->end < RRT_LINES_BLOCK + 1) {
    size_t cap =
        r->end + RRT_LINES_BLOCK + 1 > 2 * r->cap ? r->end + RRT_LINES_BLOCK + 1 : 2 * r->cap;
    /* a line longer than the machine's memory (a crafted gzip stream of one
     * endless line) is refused before the system starts killing processes */
    char *b = rrt_io_claim_fits(cap, 1) ? realloc(r->buf, cap) : NULL;
    if (!b) {
      rrt_errbuf(err, errlen, RRT_ERR_OUT_OF_MEMORY, "%s: out of memory for a line of %zu bytes",
                 r->path, r->end);
      return -1;
    }
    r->buf = b, r->cap = cap;
  }
  size_t want = RRT_LINES_BLOCK;
#ifdef RRT_HAVE_ZLIB
  if (r->gzip) {
    int got = gzread(r->gz, r->buf + r->end, (unsigned)want);
    int code = 0;
    const char *why = gzerror(r->gz, &code);
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      rrt_errbuf(err, errlen, RRT_ERR_IO,
                 "%s: gzip stream broken after %lld uncompressed bytes: %s", r->path,
                 (long long)(r->pos + (int64_t)r->end), why);
      return -1;
    }
    r->end += (size_t)got;
    return got;
  }
#endif
  size_t got = fread(r->buf + r->end, 1, want, r->f);
  if (got < want && ferror(r->f)) {
    rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: read error: %s", r->path, strerror(errno));
    return -1;
  }
  r->end += got;
  return (long)got;
}

rrt_status rrt_lines_seek(rrt_lines *r, int64_t offset, char *err, size_t errlen) {
  if (r->gzip || !r->f)
    return rrt_errbuf(err, errlen, RRT_ERR_INTERNAL, "%s: a gzip stream cannot be seeked", r->path);
  r->beg = r->end = r->scanned = 0;
  r->eof = 0;
  int64_t at = offset > 0 ? offset - 1 : 0;
  if (fseeko(r->f, (off_t)at, SEEK_SET))
    return rrt_errbuf(err, errlen, RRT_ERR_IO, "%s: cannot seek to byte %lld: %s", r->path,
                      (long long)at, strerror(errno));
  r->pos = at;
  if (offset <= 0) return RRT_SUCCESS;
  /* Skip through the first newline at or after offset-1: the line holding
   * byte offset-1 started before offset. */
  char *line;
  size_t len;
  return rrt_lines_next(r, &line, &len, err, errlen) < 0 ? RRT_ERR_IO : RRT_SUCCESS;
}

int rrt_lines_next(rrt_lines *r, char **line, size_t *len, char *err, size_t errlen) {
  for (;;) {
    char *s = r->buf + r->beg, *nl = NULL;
    size_t have = r->end - r->beg;
    if (have > r->scanned) nl = memchr(s + r->scanned, '\n', have - r->scanned);
    if (nl || (r->eof && have)) {
      size_t n = nl ? (size_t)(nl - s) : have;
      s[n] = 0; /* the newline's byte, or the spare byte behind the data */
      r->beg += n + (nl != NULL), r->pos += (int64_t)(n + (nl != NULL)), r->scanned = 0;
      if (n && s[n - 1] == '\r') s[--n] = 0;
      *line = s, *len = n;
      return 1;
    }
    if (r->eof) return 0;
    r->scanned = have;
    long got = fill(r, err, errlen);
    if (got < 0) return -1;
    if (got == 0) r->eof = 1;
  }
}

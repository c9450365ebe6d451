/* Bounds checks of variable-length strings as stored (see h5_vlen_check.h).
 * File format (HDF5 spec, "Global Heap" and "Variable-length"): an element
 * is a 4-byte length, the address of a global heap collection and a 4-byte
 * object index. A collection is "GCOL", version 1, 3 reserved bytes, its
 * size, then objects of (2-byte index, 2-byte reference count, 4 reserved,
 * size, data padded to 8 bytes); index 0 is free space. */
#include "io/h5_vlen_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* One collection at a time: elements of a dataset mostly share a few. */
typedef struct vl_ctx {
  FILE *fp;
  uint64_t eof, base; /* file size; where address 0 is (after a user block) */
  unsigned sa, ss;    /* sizes of addresses and lengths in this file */
  uint64_t coll_addr; /* collection held in `sizes` (UINT64_MAX: none) */
  uint64_t *sizes;    /* object sizes by index; UINT64_MAX = no such object */
  unsigned top;       /* highest index set in `sizes` */
  char *why;
  size_t whylen;
} vl_ctx;

static uint64_t le(const unsigned char *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int bad(vl_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int bad(vl_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, c->whylen, fmt, ap);
  va_end(ap);
  return -1;
}

static int read_at(vl_ctx *c, uint64_t off, void *buf, size_t n) {
  if (off > c->eof || n > c->eof - off) return -1;
  if (fseeko(c->fp, (off_t)off, SEEK_SET) != 0) return -1;
  return fread(buf, 1, n, c->fp) == n ? 0 : -1;
}

/* Load and check the collection at `addr`: every object inside it. */
static int load_collection(vl_ctx *c, uint64_t addr) {
  unsigned char hdr[16];
  uint64_t off = c->base + addr;
  if (addr > c->eof || read_at(c, off, hdr, 8 + c->ss) || memcmp(hdr, "GCOL", 4) || hdr[4] != 1)
    return bad(c, "string heap collection at address %llu is missing or corrupt",
               (unsigned long long)addr);
  uint64_t size = le(hdr + 8, c->ss);
  if (size < 8 + c->ss || size > c->eof - off || size > ((uint64_t)1 << 31))
    return bad(c, "string heap collection at address %llu declares %llu bytes past the file",
               (unsigned long long)addr, (unsigned long long)size);
  unsigned char *buf = malloc(size);
  if (!buf || read_at(c, off, buf, size)) {
    free(buf);
    return bad(c, "cannot read the string heap collection at address %llu",
               (unsigned long long)addr);
  }
  for (unsigned i = 0; i <= c->top; i++)
    c->sizes[i] = UINT64_MAX;
  c->top = 0;
  const uint64_t objhdr = 8 + c->ss;
  int rc = 0;
  for (uint64_t p = 8 + c->ss; p + objhdr <= size;) {
    unsigned idx = (unsigned)le(buf + p, 2);
    uint64_t osize = le(buf + p + 8, c->ss);
    /* HDF5 steps over an object by its padded size and over free space by
     * its size (which includes the header): both must stay inside. */
    uint64_t step = idx ? objhdr + ((osize + 7) & ~(uint64_t)7) : osize;
    if (osize > size || step < objhdr || step > size - p) {
      rc = bad(c, "string heap collection at address %llu: object %u overruns it",
               (unsigned long long)addr, idx);
      break;
    }
    if (idx) c->sizes[idx] = osize;
    if (idx > c->top) c->top = idx;
    p += step;
  }
  free(buf);
  c->coll_addr = rc ? UINT64_MAX : addr;
  return rc;
}

/* One stored element: its length must be the size of the object it names. */
static int check_element(vl_ctx *c, const unsigned char *e, uint64_t i) {
  uint64_t len = le(e, 4), addr = le(e + 4, c->sa), idx = le(e + 4 + c->sa, 4);
  if (len == 0 && (addr == 0 || idx == 0)) return 0; /* empty or never written */
  if (addr != c->coll_addr && load_collection(c, addr)) return -1;
  if (idx == 0 || idx > 65535 || c->sizes[idx] == UINT64_MAX)
    return bad(c, "string %llu names heap object %llu, which does not exist", (unsigned long long)i,
               (unsigned long long)idx);
  if (c->sizes[idx] != len)
    return bad(c, "string %llu declares %llu bytes, its heap object holds a different size",
               (unsigned long long)i, (unsigned long long)len);
  return 0;
}

static int check_elements(vl_ctx *c, const unsigned char *raw, size_t bytes, uint64_t first) {
  size_t es = 8 + c->sa;
  for (size_t k = 0; k + es <= bytes; k += es)
    if (check_element(c, raw + k, first + k / es)) return -1;
  return 0;
}

/* Contiguous layout: the elements are n * es bytes at the dataset's offset. */
static int check_contiguous(vl_ctx *c, hid_t ds, uint64_t n) {
  haddr_t off = H5Dget_offset(ds);
  if (off == HADDR_UNDEF) return 0; /* never written: all fill values (empty) */
  size_t es = 8 + c->sa;
  if (n > c->eof / es || off > c->eof - n * es)
    return bad(c, "%llu strings do not fit the file at offset %llu", (unsigned long long)n,
               (unsigned long long)off);
  unsigned char *raw = malloc(n ? n * es : 1);
  int rc = !raw || read_at(c, off, raw, n * es)
               ? bad(c, "cannot read the %llu string references at offset %llu",
                     (unsigned long long)n, (unsigned long long)off)
               : check_elements(c, raw, n * es, 0);
  free(raw);
  return rc;
}

/* Undo the filters of a stored chunk (last applied first): deflate,
 * shuffle and fletcher32 (what h5py and anndata write). `mask` bit k set
 * means filter k was skipped for this chunk. *raw is replaced. */
static int unfilter(vl_ctx *c, hid_t dcpl, unsigned mask, unsigned char **raw, size_t *size,
                    size_t want) {
  int nf = H5Pget_nfilters(dcpl);
  for (int k = nf - 1; k >= 0; k--) {
    if (mask & (1u << k)) continue;
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, 0, NULL, NULL);
    if (id == H5Z_FILTER_FLETCHER32) {
      if (*size < 4) return bad(c, "a string chunk is shorter than its checksum");
      *size -= 4;
    } else if (id == H5Z_FILTER_DEFLATE) {
      unsigned char *out = malloc(want ? want : 1);
      uLongf got = (uLongf)want;
      if (!out || uncompress(out, &got, *raw, (uLong)*size) != Z_OK || got != want) {
        free(out);
        return bad(c, "a deflated string chunk does not inflate to %zu bytes", want);
      }
      free(*raw);
      *raw = out, *size = got;
    } else if (id == H5Z_FILTER_SHUFFLE) {
      size_t es = ncd ? cd[0] : 0, n = es ? *size / es : 0;
      unsigned char *out = malloc(*size ? *size : 1);
      if (!out) return bad(c, "out of memory");
      memcpy(out, *raw, *size); /* a tail shorter than an element stays */
      for (size_t b = 0; b < es; b++)
        for (size_t i = 0; i < n; i++)
          out[i * es + b] = (*raw)[b * n + i];
      free(*raw);
      *raw = out;
    } else {
      return bad(c, "variable-length strings stored with filter %d are not supported", (int)id);
    }
  }
  return *size == want ? 0 : bad(c, "a string chunk holds %zu bytes, not %zu", *size, want);
}

/* Chunked layout: each stored chunk, its filters undone, is its elements. */
static int check_chunked(vl_ctx *c, hid_t ds, hid_t dcpl, hid_t sp) {
  hsize_t chunk = 0, nchunks = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || H5Dget_num_chunks(ds, sp, &nchunks) < 0)
    return bad(c, "cannot read the chunk layout");
  size_t es = 8 + c->sa;
  if (chunk > c->eof)
    return bad(c, "chunks of %llu strings are implausible", (unsigned long long)chunk);
  for (hsize_t k = 0; k < nchunks; k++) {
    hsize_t at = 0, size = 0;
    unsigned mask = 0;
    haddr_t addr;
    if (H5Dget_chunk_info(ds, sp, k, &at, &mask, &addr, &size) < 0 || size > c->eof)
      return bad(c, "chunk %llu of the strings is corrupt (%llu bytes stored)",
                 (unsigned long long)k, (unsigned long long)size);
    unsigned char *raw = malloc(size ? size : 1);
    uint32_t fm = 0;
    size_t got = (size_t)size;
    int rc = !raw || H5Dread_chunk(ds, H5P_DEFAULT, &at, &fm, raw) < 0
                 ? bad(c, "cannot read chunk %llu of the strings", (unsigned long long)k)
                 : unfilter(c, dcpl, fm, &raw, &got, (size_t)chunk * es);
    if (rc == 0) rc = check_elements(c, raw, got, at);
    free(raw);
    if (rc) return rc;
  }
  return 0;
}

/* The child's half of rrt_h5_vlen_attr_read: read, send, exit. */
static void attr_child(hid_t a, hid_t mt, int fd) {
  char *s = NULL;
  int ok = H5Aread(a, mt, &s) >= 0 && s;
  size_t n = ok ? strlen(s) : 0;
  ok = ok && write(fd, s, n) == (ssize_t)n;
  _exit(ok ? 0 : 1);
}

int rrt_h5_vlen_attr_read(hid_t a, hid_t mt, char *out, size_t len) {
  int fds[2];
  if (len == 0 || pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    attr_child(a, mt, fds[1]);
  }
  close(fds[1]);
  size_t n = 0;
  int timed_out = 0;
  for (;;) {
    struct pollfd p = {fds[0], POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) { /* a corrupt heap can make HDF5 loop forever */
      timed_out = 1;
      break;
    }
    ssize_t got = read(fds[0], out + n, len - 1 - n);
    if (got <= 0) break;
    n += (size_t)got;
    if (n == len - 1) break;
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out[n] = 0;
  return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && strlen(out) == n ? 0 : -1;
}

int rrt_h5_vlen_check(hid_t f, const char *path, hid_t ds, char *why, size_t len) {
  vl_ctx c = {.coll_addr = UINT64_MAX, .why = why, .whylen = len};
  hid_t fcpl = H5Fget_create_plist(f), dcpl = H5Dget_create_plist(ds), sp = H5Dget_space(ds);
  size_t sa = 0, ss = 0;
  hsize_t ub = 0, fsize = 0;
  hssize_t n = H5Sget_simple_extent_npoints(sp);
  int rc = -1;
  if (fcpl < 0 || dcpl < 0 || n < 0 || H5Pget_sizes(fcpl, &sa, &ss) < 0 ||
      H5Pget_userblock(fcpl, &ub) < 0 || H5Fget_filesize(f, &fsize) < 0 || sa < 2 || sa > 8 ||
      ss < 2 || ss > 8) {
    bad(&c, "cannot read the file's layout");
    goto done;
  }
  c.sa = (unsigned)sa, c.ss = (unsigned)ss, c.eof = fsize, c.base = ub;
  c.sizes = malloc(65536 * sizeof(uint64_t));
  c.fp = fopen(path, "rb");
  if (c.sizes)
    for (size_t i = 0; i < 65536; i++)
      c.sizes[i] = UINT64_MAX;
  if (!c.sizes || !c.fp) {
    bad(&c, "cannot open the file again to check its strings: %s", strerror(errno));
    goto done;
  }
  switch (H5Pget_layout(dcpl)) {
  case H5D_CONTIGUOUS: rc = check_contiguous(&c, ds, (uint64_t)n); break;
  case H5D_CHUNKED: rc = check_chunked(&c, ds, dcpl, sp); break;
  default: bad(&c, "variable-length strings in a compact or virtual layout are not supported");
  }
done:
  if (c.fp) fclose(c.fp);
  free(c.sizes);
  if (sp >= 0) H5Sclose(sp);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (fcpl >= 0) H5Pclose(fcpl);
  return rc;
}

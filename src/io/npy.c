/* .npy reader and writer (NumPy format versions 1.0, 2.0, 3.0). */
#include "io/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/outfile.h"
#include "kernels/attn_math.h"

static rrt_status fail(rrt_status st, char *err, size_t errlen, const char *path, const char *fmt,
                       ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static rrt_status fail(rrt_status st, char *err, size_t errlen, const char *path, const char *fmt,
                       ...) {
  if (err && errlen) {
    int n = snprintf(err, errlen, "%s: ", path);
    if (n < 0) n = 0;
    if ((size_t)n < errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return st;
}

static size_t descr_size(const char *d) {
  static const struct {
    const char *descr;
    size_t size;
  } known[] = {{"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"<u2", 2}, {"<f2", 2},
               {"|u1", 1}, {"|i1", 1}, {"<i2", 2}, {"<u4", 4}, {"<u8", 8}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(d, known[i].descr) == 0) return known[i].size;
  return 0;
}

/* Value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *hdr, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(hdr, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p && isspace((unsigned char)*p))
    p++;
  if (*p != ':') return NULL;
  p++;
  while (*p && isspace((unsigned char)*p))
    p++;
  return p;
}

static rrt_status parse_header(const char *path, const char *hdr, rrt_npy *out, char *err,
                               size_t errlen) {
  const char *p = dict_value(hdr, "descr");
  if (!p || (*p != '\'' && *p != '"'))
    return fail(RRT_ERR_IO, err, errlen, path, "malformed header: no 'descr'");
  char q = *p++;
  const char *e = strchr(p, q);
  if (!e || e - p >= (ptrdiff_t)sizeof out->descr)
    return fail(RRT_ERR_IO, err, errlen, path, "malformed header: bad 'descr'");
  memcpy(out->descr, p, (size_t)(e - p));
  out->descr[e - p] = '\0';
  /* one spelling per byte type: numpy writes '|', older writers '<' */
  if (strcmp(out->descr, "<u1") == 0) strcpy(out->descr, "|u1");
  if (strcmp(out->descr, "<i1") == 0) strcpy(out->descr, "|i1");
  out->elsize = descr_size(out->descr);
  if (!out->elsize)
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path,
                "unsupported dtype '%s' (supported: little-endian float16/32/64, int8-64, "
                "uint8-64)",
                out->descr);

  p = dict_value(hdr, "fortran_order");
  if (!p) return fail(RRT_ERR_IO, err, errlen, path, "malformed header: no 'fortran_order'");
  if (strncmp(p, "True", 4) == 0)
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path,
                "Fortran-order arrays are not supported (save with C order)");
  if (strncmp(p, "False", 5) != 0)
    return fail(RRT_ERR_IO, err, errlen, path, "malformed header: bad 'fortran_order'");

  p = dict_value(hdr, "shape");
  if (!p || *p != '(') return fail(RRT_ERR_IO, err, errlen, path, "malformed header: no 'shape'");
  p++;
  out->ndim = 0;
  out->count = 1;
  for (;;) {
    while (*p && isspace((unsigned char)*p))
      p++;
    if (*p == ')') break;
    if (!isdigit((unsigned char)*p))
      return fail(RRT_ERR_IO, err, errlen, path, "malformed header: bad 'shape'");
    if (out->ndim == RRT_NPY_MAX_DIMS)
      return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "more than %d dimensions",
                  RRT_NPY_MAX_DIMS);
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || v < 0)
      return fail(RRT_ERR_IO, err, errlen, path, "malformed header: bad dimension");
    out->shape[out->ndim++] = v;
    if (v && out->count > (size_t)-1 / (size_t)v)
      return fail(RRT_ERR_IO, err, errlen, path, "shape too large");
    out->count *= (size_t)v;
    p = end;
    while (*p && isspace((unsigned char)*p))
      p++;
    if (*p == ',')
      p++;
    else if (*p != ')')
      return fail(RRT_ERR_IO, err, errlen, path, "malformed header: bad 'shape'");
  }
  return RRT_SUCCESS;
}

rrt_status rrt_npy_read(const char *path, rrt_npy *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return fail(RRT_ERR_IO, err, errlen, path, "cannot open: %s", strerror(errno));
  rrt_status st = RRT_SUCCESS;
  char *hdr = NULL;
  unsigned char pre[12];
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    st = fail(RRT_ERR_IO, err, errlen, path, "not a .npy file (bad magic)");
    goto done;
  }
  size_t hlen, hstart;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2) {
      st = fail(RRT_ERR_IO, err, errlen, path, "truncated header");
      goto done;
    }
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    hstart = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 8, 1, 4, f) != 4) {
      st = fail(RRT_ERR_IO, err, errlen, path, "truncated header");
      goto done;
    }
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    hstart = 12;
  } else {
    st = fail(RRT_ERR_IO, err, errlen, path, "unsupported .npy version %d.%d", pre[6], pre[7]);
    goto done;
  }
  if (hlen > (1u << 24)) {
    st = fail(RRT_ERR_IO, err, errlen, path, "header length %zu is implausible", hlen);
    goto done;
  }
  hdr = malloc(hlen + 1);
  if (!hdr) {
    st = fail(RRT_ERR_OUT_OF_MEMORY, err, errlen, path, "out of memory");
    goto done;
  }
  if (fread(hdr, 1, hlen, f) != hlen) {
    st = fail(RRT_ERR_IO, err, errlen, path, "truncated header");
    goto done;
  }
  hdr[hlen] = '\0';
  st = parse_header(path, hdr, out, err, errlen);
  if (st != RRT_SUCCESS) goto done;

  /* The element count fits size_t (checked per dimension); its byte size
   * must too, or a header-only file declaring 2^61 8-byte elements would
   * wrap to 0 bytes and pass the file-size check below. */
  if (out->count > SIZE_MAX / out->elsize) {
    st = fail(RRT_ERR_IO, err, errlen, path,
              "shape too large: %zu elements of %zu bytes overflow the address space", out->count,
              out->elsize);
    goto done;
  }
  size_t bytes = out->count * out->elsize;
  if (fseek(f, 0, SEEK_END) != 0) {
    st = fail(RRT_ERR_IO, err, errlen, path, "cannot seek: %s", strerror(errno));
    goto done;
  }
  long fsize = ftell(f);
  size_t have = fsize > (long)(hstart + hlen) ? (size_t)fsize - hstart - hlen : 0;
  if (have != bytes) {
    st = fail(RRT_ERR_IO, err, errlen, path,
              "%s data: header says %zu elements of %zu bytes (%zu bytes), file holds %zu",
              have < bytes ? "truncated" : "trailing bytes after", out->count, out->elsize, bytes,
              have);
    goto done;
  }
  fseek(f, (long)(hstart + hlen), SEEK_SET);
  out->data = malloc(bytes ? bytes : 1);
  if (!out->data) {
    st = fail(RRT_ERR_OUT_OF_MEMORY, err, errlen, path, "out of memory (%zu bytes)", bytes);
    goto done;
  }
  if (fread(out->data, 1, bytes, f) != bytes) {
    st = fail(RRT_ERR_IO, err, errlen, path, "read error: %s", strerror(errno));
    goto done;
  }
done:
  free(hdr);
  fclose(f);
  if (st != RRT_SUCCESS) rrt_npy_free(out);
  return st;
}

rrt_status rrt_npy_write(const char *path, const char *descr, int ndim, const int64_t *shape,
                         const void *data, char *err, size_t errlen) {
  size_t el = descr_size(descr);
  if (!el) return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "unsupported dtype '%s'", descr);
  if (ndim < 0 || ndim > RRT_NPY_MAX_DIMS)
    return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "bad number of dimensions %d", ndim);
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  size_t count = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "negative dimension");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i],
                  i + 1 < ndim ? " " : "");
    if (shape[i] && count > SIZE_MAX / (size_t)shape[i] / el)
      return fail(RRT_ERR_INVALID_ARG, err, errlen, path, "shape too large");
    count *= (size_t)shape[i];
  }
  if (ndim > 1) n--; /* "(2, 3)" rather than "(2, 3,)"; keep "(5,)" */
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  /* pad with spaces so the data starts on a 64-byte boundary, end with \n */
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)n + pad + 1;
  rrt_outfile out;
  if (rrt_outfile_open(&out, path, err, errlen) != RRT_SUCCESS) return RRT_ERR_IO;
  FILE *f = out.f;
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           (unsigned char)(hlen & 0xff),
                           (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++)
    ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  ok = ok && (count == 0 || fwrite(data, el, count, f) == count);
  if (!ok) {
    int e = errno;
    rrt_outfile_discard(&out);
    return fail(RRT_ERR_IO, err, errlen, path, "write failed: %s", strerror(e));
  }
  return rrt_outfile_commit(&out, err, errlen);
}

void rrt_npy_free(rrt_npy *a) {
  if (!a) return;
  free(a->data);
  a->data = NULL;
}

/* Element i of a little-endian integer array of elsize bytes, sign-extended
 * when signed. */
static double npy_int(const unsigned char *e, size_t elsize, int is_signed) {
  uint64_t u = 0;
  for (size_t b = 0; b < elsize; b++)
    u |= (uint64_t)e[b] << (8 * b);
  int bits = (int)(8 * elsize);
  if (is_signed && bits < 64 && (u >> (bits - 1)) & 1u) u |= ~0ull << bits;
  return is_signed ? (double)(int64_t)u : (double)u;
}

int rrt_npy_to_double(const rrt_npy *a, double *out) {
  /* the type is decided once, not per element */
  const char *t = a->descr;
  int f8 = !strcmp(t, "<f8"), f4 = !strcmp(t, "<f4"), f2 = !strcmp(t, "<f2");
  int ints = t[1] == 'i' || t[1] == 'u';
  if (!f8 && !f4 && !f2 && !ints) return -1;
  const unsigned char *e = a->data;
  for (size_t i = 0; i < a->count; i++, e += a->elsize) {
    if (f8) {
      memcpy(&out[i], e, 8);
    } else if (f4) {
      float f;
      memcpy(&f, e, 4);
      out[i] = f;
    } else if (f2) {
      uint16_t h;
      memcpy(&h, e, 2);
      out[i] = rrt_f16_to_f32(h);
    } else {
      out[i] = npy_int(e, a->elsize, t[1] == 'i');
    }
  }
  return 0;
}

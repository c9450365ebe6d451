/* Stencil generators (see sparse_gen.h). Columns come out sorted because the
 * stencil neighbours are visited in increasing global index. */
#include "io/sparse_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/limits.h"

/* Decimal digits of a 128-bit count into buf. */
static const char *u128_str(unsigned __int128 v, char *buf, size_t len) {
  char tmp[48];
  int k = 0;
  do
    tmp[k++] = (char)('0' + (int)(v % 10)), v /= 10;
  while (v && k < 47);
  size_t i = 0;
  while (k > 0 && i + 1 < len)
    buf[i++] = tmp[--k];
  buf[i] = 0;
  return buf;
}

/* The order, the nonzeros (up to 5 or 7 a row) and the row pointer every
 * rank builds must fit int64 and memory: counted in 128 bits, so a large N
 * gets a message with the true sizes instead of a wrapped one. */
static int check_size(const char *text, const rrt_gen_spec *s, char *err, size_t errlen) {
  if (s->N > ((int64_t)1 << 40)) { /* (2^40)^3 * 7 still fits 128 bits */
    snprintf(err, errlen, "bad problem '%s': more than 2^80 rows, more than 64-bit indices count",
             text);
    return -1;
  }
  unsigned __int128 N = (unsigned __int128)s->N, n = N * N, per = 5;
  if (s->kind == RRT_GEN_LAPLACE3D) n *= N, per = 7;
  unsigned __int128 nnz = n * per, bytes = (n + 1) * sizeof(int64_t);
  char a[48], b[48], c[48];
  if (nnz > (unsigned __int128)INT64_MAX) {
    snprintf(err, errlen,
             "bad problem '%s': %s rows and up to %s nonzeros, more than 64-bit indices "
             "count (%lld)",
             text, u128_str(n, a, sizeof a), u128_str(nnz, b, sizeof b), (long long)INT64_MAX);
    return -1;
  }
  if (!rrt_io_claim_fits((uint64_t)n + 1, sizeof(int64_t))) {
    snprintf(err, errlen,
             "bad problem '%s': %s rows: the row pointer alone needs %s bytes, more than this "
             "machine's memory (%s bytes)",
             text, u128_str(n, a, sizeof a), u128_str(bytes, b, sizeof b),
             u128_str(rrt_io_memory_bytes(), c, sizeof c));
    return -1;
  }
  return 0;
}

int rrt_gen_parse(const char *text, rrt_gen_spec *spec, char *err, size_t errlen) {
  memset(spec, 0, sizeof(*spec));
  long long N = 0;
  double pe = 0.0;
  char tail = 0;
  if (sscanf(text, "laplace2d:%lld%c", &N, &tail) == 1) {
    spec->kind = RRT_GEN_LAPLACE2D;
  } else if (sscanf(text, "laplace3d:%lld%c", &N, &tail) == 1) {
    spec->kind = RRT_GEN_LAPLACE3D;
  } else if (sscanf(text, "convdiff2d:%lld,%lf%c", &N, &pe, &tail) == 2) {
    spec->kind = RRT_GEN_CONVDIFF2D;
  } else {
    snprintf(err, errlen, "bad problem '%s' (laplace2d:N, laplace3d:N or convdiff2d:N,PECLET)",
             text);
    return -1;
  }
  if (N < 1) {
    snprintf(err, errlen, "bad problem '%s': N must be positive", text);
    return -1;
  }
  spec->N = N;
  spec->peclet = pe;
  return check_size(text, spec, err, errlen);
}

int64_t rrt_gen_order(const rrt_gen_spec *s) {
  return s->kind == RRT_GEN_LAPLACE3D ? s->N * s->N * s->N : s->N * s->N;
}

/* Stencil of one row: columns (sorted) and values. Returns the count. */
static int row_stencil(const rrt_gen_spec *s, int64_t g, int64_t *c, double *v) {
  int64_t N = s->N;
  int k = 0;
  if (s->kind == RRT_GEN_LAPLACE3D) {
    int64_t N2 = N * N, z = g / N2, y = (g / N) % N, x = g % N;
    if (z > 0) c[k] = g - N2, v[k++] = -1.0;
    if (y > 0) c[k] = g - N, v[k++] = -1.0;
    if (x > 0) c[k] = g - 1, v[k++] = -1.0;
    c[k] = g, v[k++] = 6.0;
    if (x < N - 1) c[k] = g + 1, v[k++] = -1.0;
    if (y < N - 1) c[k] = g + N, v[k++] = -1.0;
    if (z < N - 1) c[k] = g + N2, v[k++] = -1.0;
    return k;
  }
  /* 2D: central differences; convection shifts weight from downwind to upwind
   * neighbours by c = Pe h / 2 (h = 1 / (N + 1)), scaled by h^2. */
  double cc = s->kind == RRT_GEN_CONVDIFF2D ? s->peclet / (2.0 * (double)(N + 1)) : 0.0;
  int64_t y = g / N, x = g % N;
  if (y > 0) c[k] = g - N, v[k++] = -1.0 - cc;
  if (x > 0) c[k] = g - 1, v[k++] = -1.0 - cc;
  c[k] = g, v[k++] = 4.0;
  if (x < N - 1) c[k] = g + 1, v[k++] = -1.0 + cc;
  if (y < N - 1) c[k] = g + N, v[k++] = -1.0 + cc;
  return k;
}

int64_t *rrt_gen_rowptr(const rrt_gen_spec *s) {
  int64_t n = rrt_gen_order(s);
  int64_t *p = malloc(((size_t)n + 1) * sizeof(int64_t));
  if (!p) return NULL;
  int64_t c[7];
  double v[7];
  p[0] = 0;
  for (int64_t g = 0; g < n; g++)
    p[g + 1] = p[g] + row_stencil(s, g, c, v);
  return p;
}

rrt_status rrt_gen_block(const rrt_gen_spec *s, int64_t r0, int64_t r1, rrt_csr *out) {
  memset(out, 0, sizeof(*out));
  int64_t n = rrt_gen_order(s);
  if (r0 < 0 || r1 < r0 || r1 > n) return RRT_ERR_INVALID_ARG;
  int64_t m = r1 - r0;
  size_t cap = (size_t)m * 7 + 1;
  out->rowptr = malloc(((size_t)m + 1) * sizeof(int64_t));
  out->col = malloc(cap * sizeof(int64_t));
  out->val = malloc(cap * sizeof(double));
  if (!out->rowptr || !out->col || !out->val) {
    rrt_csr_free(out);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  out->rowptr[0] = 0;
  for (int64_t i = 0; i < m; i++)
    out->rowptr[i + 1] = out->rowptr[i] + row_stencil(s, r0 + i, out->col + out->rowptr[i],
                                                      out->val + out->rowptr[i]);
  out->nrows = m;
  out->ncols = n;
  out->nnz = out->rowptr[m];
  return RRT_SUCCESS;
}

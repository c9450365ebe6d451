/* The checks shared by the emu tests: run every test kernel of
 * emu_kernels.cu through a device layer and stream, and compare with plain C
 * that mirrors the CUDA semantics (shuffle segment rules, tree order), so
 * floating-point results are compared bit for bit. Include once, after
 * test_util.h. */
#ifndef RRT_TESTS_EMU_CHECKS_H
#define RRT_TESTS_EMU_CHECKS_H

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/device.h"
#include "emu_kernels.h"
#include "ringrt/status.h"
#include "test_util.h"

typedef struct emu_target {
  const rrt_device_ops *dev;
  rrt_stream stream;
  const char *label;
} emu_target;

static void *emu_put(const emu_target *t, const void *host, size_t bytes) {
  void *d = NULL;
  CHECK_OK(t->dev->alloc(&d, bytes));
  if (d && host) CHECK_OK(t->dev->memcpy_async(d, host, bytes, RRT_COPY_H2D, t->stream));
  if (d && !host) CHECK_OK(t->dev->memset_async(d, 0, bytes, t->stream));
  return d;
}

/* cudaFree waits for the device; the device layers' free does not (the
 * context's rrt_free does it for the library), so the stream first: a
 * deferred emu stream may still hold a launch that writes the buffer. */
static void emu_release(const emu_target *t, void *dev) {
  (void)t->dev->stream_sync(t->stream);
  t->dev->free(dev);
}

static void emu_get(const emu_target *t, void *host, const void *dev, size_t bytes) {
  CHECK_OK(t->dev->memcpy_async(host, dev, bytes, RRT_COPY_D2H, t->stream));
  CHECK_OK(t->dev->stream_sync(t->stream));
}

static unsigned emu_rand(unsigned *state) { /* LCG: reproducible inputs */
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

static void emu_check_block_sums(const emu_target *t) {
  enum { N = 9 * EMU_RED_BLOCK + 77 };
  const int blocks = (N + EMU_RED_BLOCK - 1) / EMU_RED_BLOCK;
  float *x = malloc(N * sizeof *x), out[16], s[EMU_RED_BLOCK];
  unsigned seed = 1;
  for (int i = 0; i < N; i++)
    x[i] = (float)(emu_rand(&seed) % 100000) / 997.0f - 40.0f;
  float *dx = emu_put(t, x, N * sizeof *x), *dout = emu_put(t, NULL, sizeof out);
  CHECK_OK(RRT_KCALL(t->dev, emu_block_sum_static, t->stream, dx, N, dout, blocks));
  emu_get(t, out, dout, blocks * sizeof *out);
  for (int b = 0; b < blocks; b++) { /* the same tree, in C */
    for (int i = 0; i < EMU_RED_BLOCK; i++)
      s[i] = b * EMU_RED_BLOCK + i < N ? x[b * EMU_RED_BLOCK + i] : 0.0f;
    for (int h = EMU_RED_BLOCK / 2; h > 0; h >>= 1)
      for (int i = 0; i < h; i++)
        s[i] += s[i + h];
    CHECK_MSG(memcmp(&out[b], &s[0], sizeof s[0]) == 0, "%s: static block %d: %.9g vs %.9g",
              t->label, b, out[b], s[0]);
  }
  emu_release(t, dx), emu_release(t, dout), free(x);

  /* Dynamic shared memory, doubles, two block sizes. */
  const int threads_list[2] = {128, 1024};
  for (int k = 0; k < 2; k++) {
    int threads = threads_list[k], n = 3 * threads + 5, nb = (n + threads - 1) / threads;
    double *xd = malloc(n * sizeof *xd), outd[8], *sd = malloc(threads * sizeof *sd);
    for (int i = 0; i < n; i++)
      xd[i] = (double)(emu_rand(&seed) % 1000003) / 7.0 - 5e4;
    double *dxd = emu_put(t, xd, n * sizeof *xd), *doutd = emu_put(t, NULL, sizeof outd);
    CHECK_OK(RRT_KCALL(t->dev, emu_block_sum_dyn, t->stream, dxd, n, doutd, nb, threads));
    emu_get(t, outd, doutd, nb * sizeof *outd);
    for (int b = 0; b < nb; b++) {
      for (int i = 0; i < threads; i++)
        sd[i] = b * threads + i < n ? xd[b * threads + i] : 0.0;
      for (int h = threads / 2; h > 0; h >>= 1)
        for (int i = 0; i < h; i++)
          sd[i] += sd[i + h];
      CHECK_MSG(memcmp(&outd[b], &sd[0], sizeof sd[0]) == 0, "%s: dyn %d block %d: %.17g vs %.17g",
                t->label, threads, b, outd[b], sd[0]);
    }
    emu_release(t, dxd), emu_release(t, doutd), free(xd), free(sd);
  }
}

static void emu_check_warps(const emu_target *t) {
  enum { BLOCKS = 3, THREADS = 96, N = BLOCKS * THREADS, W = N / 32 };
  int x[N], xs[N], dn[N], sc[N], sg[N], bc[N];
  double ds[N];
  unsigned bal[3 * W];
  unsigned seed = 7;
  for (int i = 0; i < N; i++)
    x[i] = (int)(emu_rand(&seed) % 100);
  x[40] = 95; /* warp 1 has a value > 90, warp 0 and 2 may not */
  for (int i = 64; i < 96; i++)
    x[i] = x[i] > 90 ? 90 : x[i];
  int *dx = emu_put(t, x, sizeof x), *dxs = emu_put(t, NULL, sizeof xs);
  int *ddn = emu_put(t, NULL, sizeof dn), *dsc = emu_put(t, NULL, sizeof sc);
  int *dsg = emu_put(t, NULL, sizeof sg), *dbc = emu_put(t, NULL, sizeof bc);
  double *dds = emu_put(t, NULL, sizeof ds);
  unsigned *dbal = emu_put(t, NULL, sizeof bal);
  CHECK_OK(RRT_KCALL(t->dev, emu_warp_ops, t->stream, dx, dxs, ddn, dsc, dsg, dbc, dds, dbal,
                     BLOCKS, THREADS));
  emu_get(t, xs, dxs, sizeof xs), emu_get(t, dn, ddn, sizeof dn), emu_get(t, sc, dsc, sizeof sc);
  emu_get(t, sg, dsg, sizeof sg), emu_get(t, bc, dbc, sizeof bc), emu_get(t, ds, dds, sizeof ds);
  emu_get(t, bal, dbal, sizeof bal);
  for (int w = 0; w < W; w++) {
    const int *v = x + 32 * w;
    int a[32], d[32], s[32], g[32], nx[32];
    double dv[32], ndv[32];
    unsigned ballot = 0;
    int any = 0, all = 1;
    for (int l = 0; l < 32; l++) {
      a[l] = d[l] = s[l] = g[l] = v[l], dv[l] = 0.5 * v[l];
      ballot |= (unsigned)(v[l] & 1) << l, any |= v[l] > 90, all &= v[l] >= 0;
    }
    for (int m = 16; m > 0; m >>= 1) {
      for (int l = 0; l < 32; l++)
        nx[l] = a[l] + a[l ^ m];
      memcpy(a, nx, sizeof a);
    }
    for (int o = 16; o > 0; o >>= 1) { /* past the last lane: own value */
      for (int l = 0; l < 32; l++)
        nx[l] = d[l] + (l + o < 32 ? d[l + o] : d[l]);
      memcpy(d, nx, sizeof d);
    }
    for (int o = 1; o < 32; o <<= 1) {
      for (int l = 0; l < 32; l++)
        nx[l] = s[l] + (l >= o ? s[l - o] : 0);
      memcpy(s, nx, sizeof s);
    }
    for (int m = 8; m > 0; m >>= 1) {
      for (int l = 0; l < 32; l++)
        nx[l] = g[l] + g[l ^ m];
      memcpy(g, nx, sizeof g);
    }
    for (int m = 1; m < 32; m <<= 1) {
      for (int l = 0; l < 32; l++)
        ndv[l] = dv[l] + dv[l ^ m];
      memcpy(dv, ndv, sizeof dv);
    }
    for (int l = 0; l < 32; l++) {
      int i = 32 * w + l;
      CHECK_MSG(xs[i] == a[l], "%s: xor sum lane %d: %d vs %d", t->label, i, xs[i], a[l]);
      CHECK_MSG(dn[i] == d[l], "%s: down lane %d: %d vs %d", t->label, i, dn[i], d[l]);
      CHECK_MSG(sc[i] == s[l], "%s: scan lane %d: %d vs %d", t->label, i, sc[i], s[l]);
      CHECK_MSG(sg[i] == g[l], "%s: width-16 sum lane %d: %d vs %d", t->label, i, sg[i], g[l]);
      CHECK_MSG(ds[i] == dv[l], "%s: double sum lane %d: %g vs %g", t->label, i, ds[i], dv[l]);
      int want = v[5] + 1000 * v[(l & ~7) | 3];
      CHECK_MSG(bc[i] == want, "%s: broadcast lane %d: %d vs %d", t->label, i, bc[i], want);
    }
    CHECK_MSG(bal[3 * w] == ballot, "%s: ballot warp %d: %x vs %x", t->label, w, bal[3 * w],
              ballot);
    CHECK_MSG((int)bal[3 * w + 1] == any, "%s: any warp %d", t->label, w);
    CHECK_MSG((int)bal[3 * w + 2] == all, "%s: all warp %d", t->label, w);
  }
  /* Partial masks: each half-warp on its own. */
  int *dout = emu_put(t, NULL, sizeof xs);
  CHECK_OK(RRT_KCALL(t->dev, emu_warp_masks, t->stream, dx, dout, BLOCKS, THREADS));
  emu_get(t, xs, dout, sizeof xs);
  for (int i = 0; i < N; i++) {
    int base = i / 32 * 32, want = 0;
    if (i % 32 < 16) {
      for (int l = 0; l < 16; l++)
        want += x[base + l];
    } else {
      for (int l = 16; l < 32; l++)
        want |= (int)((unsigned)(x[base + l] & 1) << l);
    }
    CHECK_MSG(xs[i] == want, "%s: masked warp op lane %d: %d vs %d", t->label, i, xs[i], want);
  }
  emu_release(t, dout);
  emu_release(t, dx), emu_release(t, dxs), emu_release(t, ddn), emu_release(t, dsc);
  emu_release(t, dsg), emu_release(t, dbc), emu_release(t, dds), emu_release(t, dbal);
}

static void emu_check_atomics(const emu_target *t) {
  enum { N = 3001, NB = 13 };
  int *x = malloc(N * sizeof *x), *tickets = malloc(N * sizeof *tickets),
      *seen = calloc(N, sizeof(int));
  int hist[NB], href[NB] = {0}, last[NB], imax = INT_MIN, iref = INT_MIN;
  float fhist[NB], fref[NB] = {0}, fmax = -1e30f, fmref = -1e30f;
  double dhist[NB], dref[NB] = {0};
  unsigned umin = UINT_MAX, uref = UINT_MAX, ctr = 0;
  unsigned long long cas = 0;
  unsigned seed = 3;
  for (int i = 0; i < NB; i++)
    last[i] = -1;
  for (int i = 0; i < N; i++) {
    int v = (int)(emu_rand(&seed) % 2001) - 1000, b = (v + 1000) % NB;
    x[i] = v, href[b]++, fref[b] += 0.5f * (float)(v % 7), dref[b] += 0.25 * v;
    iref = v > iref ? v : iref, uref = (unsigned)(v + 5000) < uref ? (unsigned)(v + 5000) : uref;
    fmref = 0.5f * (float)v > fmref ? 0.5f * (float)v : fmref;
  }
  int *dx = emu_put(t, x, N * sizeof *x), *dh = emu_put(t, NULL, sizeof hist);
  float *dfh = emu_put(t, NULL, sizeof fhist), *dfm = emu_put(t, &fmax, sizeof fmax);
  double *ddh = emu_put(t, NULL, sizeof dhist);
  int *dimax = emu_put(t, &imax, sizeof imax), *dtk = emu_put(t, NULL, N * sizeof *tickets);
  int *dlast = emu_put(t, last, sizeof last);
  unsigned *dumin = emu_put(t, &umin, sizeof umin), *dctr = emu_put(t, &ctr, sizeof ctr);
  unsigned long long *dcas = emu_put(t, &cas, sizeof cas);
  CHECK_OK(RRT_KCALL(t->dev, emu_atomics, t->stream, dx, N, NB, dh, dfh, ddh, dimax, dumin, dcas,
                     dfm, dctr, dtk, dlast, 5, 96));
  emu_get(t, hist, dh, sizeof hist), emu_get(t, fhist, dfh, sizeof fhist);
  emu_get(t, dhist, ddh, sizeof dhist), emu_get(t, &imax, dimax, sizeof imax);
  emu_get(t, &umin, dumin, sizeof umin), emu_get(t, &cas, dcas, sizeof cas);
  emu_get(t, &fmax, dfm, sizeof fmax), emu_get(t, &ctr, dctr, sizeof ctr);
  emu_get(t, tickets, dtk, N * sizeof *tickets), emu_get(t, last, dlast, sizeof last);
  /* Every partial sum is a multiple of 1/4 far below 2^20: exact in any order. */
  for (int b = 0; b < NB; b++) {
    CHECK_MSG(hist[b] == href[b], "%s: hist[%d] %d vs %d", t->label, b, hist[b], href[b]);
    CHECK_MSG(fhist[b] == fref[b], "%s: fhist[%d] %g vs %g", t->label, b, fhist[b], fref[b]);
    CHECK_MSG(dhist[b] == dref[b], "%s: dhist[%d] %g vs %g", t->label, b, dhist[b], dref[b]);
    int ok = last[b] == -1 ? href[b] == 0
                           : (last[b] >= 0 && last[b] < N && (x[last[b]] + 1000) % NB == b);
    CHECK_MSG(ok, "%s: atomicExch left %d in bin %d", t->label, last[b], b);
  }
  CHECK_MSG(imax == iref, "%s: atomicMax %d vs %d", t->label, imax, iref);
  CHECK_MSG(umin == uref, "%s: atomicMin %u vs %u", t->label, umin, uref);
  CHECK_MSG(cas == (unsigned long long)N, "%s: CAS counter %llu vs %d", t->label, cas, N);
  CHECK_MSG(fmax == fmref, "%s: CAS float max %g vs %g", t->label, fmax, fmref);
  CHECK_MSG(ctr == (unsigned)N, "%s: ticket counter %u", t->label, ctr);
  int perm = 1; /* the tickets are the old values of atomicAdd: a permutation */
  for (int i = 0; i < N; i++) {
    if (tickets[i] < 0 || tickets[i] >= N || seen[tickets[i]]++) perm = 0;
  }
  CHECK_MSG(perm, "%s: atomicAdd old values are not a permutation", t->label);
  emu_release(t, dx), emu_release(t, dh), emu_release(t, dfh), emu_release(t, dfm),
      emu_release(t, ddh);
  emu_release(t, dimax), emu_release(t, dtk), emu_release(t, dlast), emu_release(t, dumin);
  emu_release(t, dctr), emu_release(t, dcas);
  free(x), free(tickets), free(seen);
}

static void emu_check_axpy(const emu_target *t) {
  enum { N = 10007 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  unsigned seed = 11;
  const float a = 1.3f;
  for (int i = 0; i < N; i++) {
    x[i] = (float)(emu_rand(&seed) % 20000) / 313.0f - 30.0f;
    y[i] = (float)(emu_rand(&seed) % 20000) / 97.0f;
  }
  float *dx = emu_put(t, x, N * sizeof *x), *dy = emu_put(t, y, N * sizeof *y);
  CHECK_OK(RRT_KCALL(t->dev, emu_axpy, t->stream, N, a, dx, dy, 7, 64)); /* 448 threads, n odd */
  emu_get(t, out, dy, N * sizeof *out);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    float want = a * x[i] + y[i]; /* no FMA contraction: -ffp-contract=off, nvcc -fmad=false */
    if (memcmp(&out[i], &want, sizeof want) != 0 && bad++ < 5)
      fprintf(stderr, "%s: axpy[%d] %.9g vs %.9g\n", t->label, i, out[i], want);
  }
  CHECK_MSG(bad == 0, "%s: %d axpy mismatches", t->label, bad);
  emu_release(t, dx), emu_release(t, dy), free(x), free(y), free(out);
}

/* Spin waits progress: every thread of 9 blocks waits for the one before
 * it in ticket order (on a GPU, independent thread scheduling lets the
 * awaited lane of the same warp run; under the emulator __nanosleep is a
 * fiber switch). A spin without either hangs, so a pass is progress. */
static void emu_check_spin_chain(const emu_target *t) {
  enum { N = 1100, THREADS = 128, BLOCKS = (N + THREADS - 1) / THREADS };
  int *out = malloc(N * sizeof *out);
  unsigned long long *ticket = emu_put(t, NULL, sizeof *ticket);
  int *done = emu_put(t, NULL, N * sizeof *done), *dout = emu_put(t, NULL, N * sizeof *dout);
  CHECK_OK(t->dev->memset_async(ticket, 0, sizeof *ticket, t->stream));
  CHECK_OK(t->dev->memset_async(done, 0, N * sizeof *done, t->stream));
  CHECK_OK(RRT_KCALL(t->dev, emu_spin_chain, t->stream, N, ticket, done, dout, BLOCKS, THREADS));
  emu_get(t, out, dout, N * sizeof *out);
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (out[i] != i + 1 && bad++ < 5)
      fprintf(stderr, "%s: spin chain [%d] = %d, want %d\n", t->label, i, out[i], i + 1);
  CHECK_MSG(bad == 0, "%s: %d spin chain mismatches", t->label, bad);
  emu_release(t, ticket), emu_release(t, done), emu_release(t, dout), free(out);
}

static void emu_check_index3d(const emu_target *t) {
  const unsigned g[3] = {3, 2, 2}, b[3] = {6, 3, 4};
  const unsigned nt = b[0] * b[1] * b[2], total = g[0] * g[1] * g[2] * nt;
  unsigned *out = malloc(5 * total * sizeof *out);
  unsigned *dout = emu_put(t, NULL, 5 * total * sizeof *out);
  CHECK_OK(RRT_KCALL(t->dev, emu_index3d, t->stream, dout, g[0], g[1], g[2], b[0], b[1], b[2]));
  emu_get(t, out, dout, 5 * total * sizeof *out);
  int bad = 0;
  unsigned even = ((b[0] + 1) / 2) * b[1] * b[2];
  for (unsigned bz = 0; bz < g[2]; bz++)
    for (unsigned by = 0; by < g[1]; by++)
      for (unsigned bx = 0; bx < g[0]; bx++)
        for (unsigned tz = 0; tz < b[2]; tz++)
          for (unsigned ty = 0; ty < b[1]; ty++)
            for (unsigned tx = 0; tx < b[0]; tx++) {
              unsigned gi = ((bz * g[1] + by) * g[0] + bx) * nt + (tz * b[1] + ty) * b[0] + tx;
              const unsigned *o = out + 5 * gi;
              bad += o[0] != (tx | ty << 8 | tz << 16) || o[1] != (bx | by << 8 | bz << 16) ||
                     o[2] != (b[0] | b[1] << 8 | b[2] << 16) ||
                     o[3] != (g[0] | g[1] << 8 | g[2] << 16) || o[4] != even;
            }
  CHECK_MSG(bad == 0, "%s: %d threads with wrong 3D indices", t->label, bad);
  emu_release(t, dout), free(out);
}

/* Reference 16-bit formats, independent of the header under test: decode a
 * pattern exactly (as double) and round by comparing the two neighbours. */
static double emu_decode16(unsigned v, int mant_bits, int bias) {
  int e = (int)(v >> mant_bits) & ((1 << (15 - mant_bits)) - 1), emax = (1 << (15 - mant_bits)) - 1;
  double m = (double)(v & ((1u << mant_bits) - 1u)), sign = (v & 0x8000u) ? -1.0 : 1.0;
  if (e == emax) return sign * ldexp(1.0, emax - bias); /* inf as the next power: rounding */
  if (e == 0) return sign * ldexp(m, 1 - bias - mant_bits);
  return sign * ldexp(m + ldexp(1.0, mant_bits), e - bias - mant_bits);
}

static unsigned emu_round16(float f, int mant_bits, int bias) {
  unsigned sign = signbit(f) ? 0x8000u : 0u, lo = 0, top = (0x7fffu >> mant_bits) << mant_bits;
  double a = fabs((double)f);
  unsigned hi = top; /* largest pattern lo in [0, top] with decode(lo) <= |f|: bisection */
  while (lo < hi) {
    unsigned mid = (lo + hi + 1) / 2;
    if (emu_decode16(mid, mant_bits, bias) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == top) return sign | top;
  double dl = a - emu_decode16(lo, mant_bits, bias), dh = emu_decode16(lo + 1, mant_bits, bias) - a;
  return sign | (dl < dh || (dl == dh && !(lo & 1u)) ? lo : lo + 1);
}

static void emu_check_convert16(const emu_target *t) {
  enum { N = 1200 };
  float *x = malloc(N * sizeof *x), *hb = malloc(65536 * sizeof(float)),
        *bb = malloc(65536 * sizeof(float));
  unsigned short h[N], bf[N];
  unsigned seed = 5;
  int k = 0;
  const float special[] = {0.0f,          -0.0f,         1.0f,           65504.0f,
                           65519.99f,     65520.0f,      1e30f,          -1e30f,
                           5.9604645e-8f, 2.9802322e-8f, 2.98023259e-8f, 1e-10f,
                           3.3895314e38f, 3.3961776e38f, -6.1035156e-5f, 6.0975552e-5f};
  for (unsigned i = 0; i < sizeof special / sizeof special[0]; i++)
    x[k++] = special[i];
  while (k < N) {
    unsigned r = emu_rand(&seed), kind = k % 4;
    if (kind == 0) { /* a midpoint of two neighbouring halves: a tie */
      unsigned v = r % 0x7bffu;
      x[k++] = (float)((emu_decode16(v, 10, 15) + emu_decode16(v + 1, 10, 15)) / 2);
    } else if (kind == 1) { /* a bf16 tie */
      unsigned v = r % 0x7f7fu;
      x[k++] = (float)((emu_decode16(v, 7, 127) + emu_decode16(v + 1, 7, 127)) / 2);
    } else if (kind == 2) { /* anything in the half range, subnormals included */
      x[k++] = (float)ldexp((double)(r % 100000) / 100000.0 - 0.5, (int)(r % 44) - 27);
    } else {
      unsigned bits = emu_rand(&seed) ^ (r << 9);
      float f;
      memcpy(&f, &bits, sizeof f);
      if (isfinite(f)) x[k++] = f;
    }
  }
  float *dx = emu_put(t, x, N * sizeof *x), *dhb = emu_put(t, NULL, 65536 * sizeof(float));
  float *dbb = emu_put(t, NULL, 65536 * sizeof(float));
  unsigned short *dh = emu_put(t, NULL, sizeof h), *dbf = emu_put(t, NULL, sizeof bf);
  CHECK_OK(RRT_KCALL(t->dev, emu_convert16, t->stream, dx, N, dh, dbf, dhb, dbb));
  emu_get(t, h, dh, sizeof h), emu_get(t, bf, dbf, sizeof bf);
  emu_get(t, hb, dhb, 65536 * sizeof(float)), emu_get(t, bb, dbb, 65536 * sizeof(float));
  int bad = 0;
  for (int i = 0; i < N; i++) {
    unsigned wh = emu_round16(x[i], 10, 15), wb = emu_round16(x[i], 7, 127);
    if ((h[i] != wh || bf[i] != wb) && bad++ < 5)
      fprintf(stderr, "%s: %.9g -> f16 %04x (want %04x), bf16 %04x (want %04x)\n", t->label, x[i],
              h[i], wh, bf[i], wb);
  }
  for (unsigned v = 0; v < 65536; v++) {
    unsigned eh = (v >> 10) & 31u, eb = (v >> 7) & 255u;
    double want_h = eh == 31 ? ((v & 0x3ffu) ? NAN : copysign(INFINITY, emu_decode16(v, 10, 15)))
                             : emu_decode16(v, 10, 15);
    double want_b = eb == 255 ? ((v & 0x7fu) ? NAN : copysign(INFINITY, emu_decode16(v, 7, 127)))
                              : emu_decode16(v, 7, 127);
    int ok =
        isnan(want_h) ? isnan(hb[v]) : (double)hb[v] == want_h && !signbit(hb[v]) == !(v & 0x8000u);
    ok = ok && (isnan(want_b) ? isnan(bb[v])
                              : (double)bb[v] == want_b && !signbit(bb[v]) == !(v & 0x8000u));
    if (!ok && bad++ < 10)
      fprintf(stderr, "%s: bits %04x -> f16 %.9g bf16 %.9g\n", t->label, v, hb[v], bb[v]);
  }
  CHECK_MSG(bad == 0, "%s: %d 16-bit conversion mismatches", t->label, bad);
  emu_release(t, dx), emu_release(t, dhb), emu_release(t, dbb), emu_release(t, dh),
      emu_release(t, dbf);
  free(x), free(hb), free(bb);
}

/* A kernel fault (emulator only): the launch returns it where the grid runs
 * at once (the NULL stream, the cpu layer's streams); on a stream that
 * queues work (emu) the next synchronisation does, as CUDA reports a
 * kernel's error at the next synchronising call. */
static rrt_status emu_fault_status(const emu_target *t, rrt_status launched) {
  if (launched != RRT_SUCCESS) return launched;
  return t->dev->stream_sync(t->stream);
}

/* Bad launches return an error, like CUDA; the emulator also reports a
 * barrier in divergent code instead of hanging (emulator only: on a GPU that
 * kernel is undefined behaviour). */
static void emu_check_errors(const emu_target *t) {
  float *d = emu_put(t, NULL, 64 * sizeof(float));
  CHECK(RRT_KCALL(t->dev, emu_axpy, t->stream, 16, 1.0f, d, d, 1, 1025) != RRT_SUCCESS);
  CHECK(RRT_KCALL(t->dev, emu_axpy, t->stream, 16, 1.0f, d, d, 0, 32) != RRT_SUCCESS);
  CHECK(RRT_KCALL(t->dev, emu_index3d, t->stream, (unsigned *)d, 1, 1, 1, 1, 1, 65) != RRT_SUCCESS);
  if (!t->dev->is_cuda)
    CHECK(emu_fault_status(t, RRT_KCALL(t->dev, emu_divergent, t->stream, (int *)d, 64)) ==
          RRT_ERR_INTERNAL);
  /* The executor is usable again after the errors. */
  CHECK_OK(RRT_KCALL(t->dev, emu_axpy, t->stream, 16, 1.0f, d, d, 1, 32));
  emu_release(t, d);
}

#include "tc_checks.h"

static void emu_run_checks(const emu_target *t) {
  emu_check_block_sums(t);
  emu_check_warps(t);
  emu_check_atomics(t);
  emu_check_axpy(t);
  emu_check_index3d(t);
  emu_check_spin_chain(t);
  emu_check_convert16(t);
  emu_check_errors(t);
  tc_run_checks(t);
}

#endif

/* Checks of the tensor-core primitives and of the emulator's strictness
 * rules (kernels: tc_kernels.cu), against plain C that places every element
 * by the PTX ISA's fragment formulas. Included by emu_checks.h (uses its
 * emu_put/emu_get/emu_rand/emu_round16/emu_decode16); on a GPU the same
 * checks compare the hardware with these formulas. */
#ifndef RRT_TESTS_EMU_TC_CHECKS_H
#define RRT_TESTS_EMU_TC_CHECKS_H

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tc_kernels.h"

/* A random bf16 (type 0) or f16 (type 1) in [-4, 4]: its bits and value. */
static uint16_t tc_rand16(unsigned *seed, int type, double *value) {
  float f = (float)((int)(emu_rand(seed) % 20001) - 10000) / 2500.0f;
  int mant = type == 0 ? 7 : 10, bias = type == 0 ? 127 : 15;
  unsigned bits = emu_round16(f, mant, bias);
  *value = emu_decode16(bits, mant, bias);
  return (uint16_t)bits;
}

/* Fragment positions (PTX ISA, mma.m16n8k16 / m16n8k8, f16 and bf16):
 * g = lane >> 2, t = lane % 4. */
static int tc_a_row(int lane, int i) { return (lane >> 2) + 8 * ((i >> 1) & 1); }
static int tc_a_col(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >= 4); }
static int tc_b_row(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >= 2); }
static int tc_b_col(int lane, int i) {
  (void)i;
  return lane >> 2;
}
static int tc_c_row(int lane, int i) { return (lane >> 2) + 8 * (i >= 2); }
static int tc_c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }

/* The emulator rounds the double sum once (half an ulp of the result, plus
 * the double sum's own error); hardware sums in an unspecified order and
 * precision: a few f32 ulps of the magnitudes summed (docs/runtime.md). */
static double tc_tolerance(const emu_target *t, double ref, double sum_abs) {
  if (t->dev->is_cuda) return ldexp(sum_abs, -20);
  return ldexp(fabs(ref), -24) + ldexp(sum_abs, -47);
}

static int tc_check_d(const emu_target *t, const char *what, double got, double ref, double sum_abs,
                      int *bad) {
  double tol = tc_tolerance(t, ref, sum_abs);
  if (fabs(got - ref) <= tol) return 1;
  if ((*bad)++ < 5)
    fprintf(stderr, "%s: %s: %.9g vs %.17g (tolerance %.3g)\n", t->label, what, got, ref, tol);
  return 0;
}

/* Registers built on the host from the layout formulas, one mma per tile;
 * every lane's D registers against a double reference at their positions. */
static void tc_check_mma(const emu_target *t, int k, int type) {
  enum { TILES = 6 };
  const int na = k / 4, nb = k / 8;
  uint32_t *a = calloc(TILES * 32 * 4, 4), *b = calloc(TILES * 32 * 2, 4);
  float *c = malloc(TILES * 32 * 4 * sizeof *c), *d = malloc(TILES * 32 * 4 * sizeof *d);
  double(*A)[16][16] = malloc(TILES * sizeof *A), (*B)[16][8] = malloc(TILES * sizeof *B);
  uint16_t(*Ab)[16][16] = malloc(TILES * sizeof *Ab), (*Bb)[16][8] = malloc(TILES * sizeof *Bb);
  float(*C)[16][8] = malloc(TILES * sizeof *C);
  unsigned seed = 100u + 10u * (unsigned)k + (unsigned)type;
  for (int p = 0; p < TILES; p++) {
    for (int r = 0; r < 16; r++)
      for (int q = 0; q < k; q++)
        Ab[p][r][q] = tc_rand16(&seed, type, &A[p][r][q]);
    for (int q = 0; q < k; q++)
      for (int n = 0; n < 8; n++)
        Bb[p][q][n] = tc_rand16(&seed, type, &B[p][q][n]);
    for (int r = 0; r < 16; r++)
      for (int n = 0; n < 8; n++)
        C[p][r][n] = (float)((int)(emu_rand(&seed) % 2000001) - 1000000) / 262147.0f;
    for (int lane = 0; lane < 32; lane++) {
      uint32_t *ra = a + (p * 32 + lane) * na, *rb = b + (p * 32 + lane) * nb;
      for (int i = 0; i < 2 * na; i++)
        ra[i / 2] |= (uint32_t)Ab[p][tc_a_row(lane, i)][tc_a_col(lane, i)] << (16 * (i & 1));
      for (int i = 0; i < 2 * nb; i++)
        rb[i / 2] |= (uint32_t)Bb[p][tc_b_row(lane, i)][tc_b_col(lane, i)] << (16 * (i & 1));
      for (int i = 0; i < 4; i++)
        c[(p * 32 + lane) * 4 + i] = C[p][tc_c_row(lane, i)][tc_c_col(lane, i)];
    }
  }
  uint32_t *da = emu_put(t, a, TILES * 32 * na * 4), *db = emu_put(t, b, TILES * 32 * nb * 4);
  float *dc = emu_put(t, c, TILES * 32 * 4 * sizeof *c), *dd = emu_put(t, NULL, TILES * 128 * 4);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_mma, t->stream, k, type, da, db, dc, dd, TILES));
  emu_get(t, d, dd, TILES * 32 * 4 * sizeof *d);
  int bad = 0;
  char what[64];
  snprintf(what, sizeof what, "mma m16n8k%d %s", k, type == 0 ? "bf16" : "f16");
  for (int p = 0; p < TILES; p++)
    for (int lane = 0; lane < 32; lane++)
      for (int i = 0; i < 4; i++) {
        int row = tc_c_row(lane, i), col = tc_c_col(lane, i);
        double ref = C[p][row][col], sum_abs = fabs(ref);
        for (int q = 0; q < k; q++)
          ref += A[p][row][q] * B[p][q][col], sum_abs += fabs(A[p][row][q] * B[p][q][col]);
        tc_check_d(t, what, d[(p * 32 + lane) * 4 + i], ref, sum_abs, &bad);
      }
  CHECK_MSG(bad == 0, "%s: %s: %d of %d elements off", t->label, what, bad, TILES * 128);
  emu_release(t, da), emu_release(t, db), emu_release(t, dc), emu_release(t, dd);
  free(a), free(b), free(c), free(d), free(A), free(B), free(Ab), free(Bb), free(C);
}

static void tc_check_ldmatrix(const emu_target *t) {
  uint16_t m[4][8][8];
  uint32_t out[32 * 4];
  for (int j = 0; j < 4; j++)
    for (int r = 0; r < 8; r++)
      for (int q = 0; q < 8; q++)
        m[j][r][q] = (uint16_t)(0x1000 * (j + 1) + 0x10 * r + q);
  uint16_t *dm = emu_put(t, m, sizeof m);
  uint32_t *dout = emu_put(t, NULL, sizeof out);
  for (int num = 1; num <= 4; num *= 2)
    for (int trans = 0; trans < 2; trans++) {
      CHECK_OK(RRT_KCALL(t->dev, emu_tc_ldmatrix, t->stream, dm, num, trans, dout));
      emu_get(t, out, dout, sizeof out);
      int bad = 0;
      for (int lane = 0; lane < 32; lane++)
        for (int j = 0; j < 4; j++) {
          int g = lane >> 2, q = 2 * (lane & 3);
          uint32_t want = 0; /* registers past .num stay as the kernel set them */
          if (j < num && !trans) want = m[j][g][q] | (uint32_t)m[j][g][q + 1] << 16;
          if (j < num && trans) want = m[j][q][g] | (uint32_t)m[j][q + 1][g] << 16;
          if (out[lane * 4 + j] != want && bad++ < 5)
            fprintf(stderr, "%s: ldmatrix x%d%s lane %d reg %d: %08x vs %08x\n", t->label, num,
                    trans ? ".trans" : "", lane, j, out[lane * 4 + j], want);
        }
      CHECK_MSG(bad == 0, "%s: ldmatrix x%d%s: %d registers wrong", t->label, num,
                trans ? ".trans" : "", bad);
    }
  emu_release(t, dm), emu_release(t, dout);
}

/* cp.async + ldmatrix + mma on one tile, against a double matrix product. */
static void tc_check_tile(const emu_target *t, int k, int type) {
  uint16_t a[16][16], b[16][8];
  double A[16][16], B[16][8];
  float c[16][8], d[16][8];
  unsigned seed = 900u + (unsigned)(k + type);
  for (int r = 0; r < 16; r++)
    for (int q = 0; q < 16; q++)
      a[r][q] = tc_rand16(&seed, type, &A[r][q]);
  for (int q = 0; q < 16; q++)
    for (int n = 0; n < 8; n++)
      b[q][n] = tc_rand16(&seed, type, &B[q][n]);
  for (int r = 0; r < 16; r++)
    for (int n = 0; n < 8; n++)
      c[r][n] = (float)((int)(emu_rand(&seed) % 20001) - 10000) / 999.0f;
  uint16_t *da = emu_put(t, a, sizeof a), *db = emu_put(t, b, sizeof b);
  float *dc = emu_put(t, c, sizeof c), *dd = emu_put(t, NULL, sizeof d);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_tile, t->stream, k, type, da, db, dc, dd));
  emu_get(t, d, dd, sizeof d);
  int bad = 0;
  char what[64];
  snprintf(what, sizeof what, "cp.async+ldmatrix+mma k%d %s", k, type == 0 ? "bf16" : "f16");
  for (int r = 0; r < 16; r++)
    for (int n = 0; n < 8; n++) {
      double ref = c[r][n], sum_abs = fabs(ref);
      for (int q = 0; q < k; q++)
        ref += A[r][q] * B[q][n], sum_abs += fabs(A[r][q] * B[q][n]);
      tc_check_d(t, what, d[r][n], ref, sum_abs, &bad);
    }
  CHECK_MSG(bad == 0, "%s: %s: %d elements off", t->label, what, bad);
  emu_release(t, da), emu_release(t, db), emu_release(t, dc), emu_release(t, dd);
}

int rrt_emu_racecheck_observes_plain(void); /* src/kernels/emu/racecheck.h */

/* Set an environment variable for a while: the old value is returned
 * (malloc'd, NULL when unset) for tc_env_restore. */
static char *tc_env_set(const char *var, const char *value) {
  const char *was = getenv(var);
  char *saved = was ? strdup(was) : NULL;
  setenv(var, value, 1);
  return saved;
}

static void tc_env_restore(const char *var, char *saved) {
  if (saved)
    setenv(var, saved, 1);
  else
    unsetenv(var);
  free(saved);
}

/* The copies land at the wait that covers their group; without one the
 * emulator shows the stale -1 (a GPU may show either: racy), or, under
 * RINGRT_EMU_CPASYNC=eager, the copy (it landed when issued). */
static void tc_check_cp_async(const emu_target *t) {
  const char *mode_env = getenv("RINGRT_EMU_CPASYNC");
  const int eager = !t->dev->is_cuda && mode_env && strcmp(mode_env, "eager") == 0;
  int src[64 * 7], out[64 * 7];
  for (int i = 0; i < 64 * 7; i++)
    src[i] = 1000 + i;
  int *dsrc = emu_put(t, src, sizeof src), *dout = emu_put(t, NULL, sizeof out);
  for (int mode = 0; mode < 4; mode++) {
    /* modes 1 and 2 read copies not waited for (plain loads): races, which
     * the race checker reports where it sees plain accesses (checked
     * here), so they run without it to show the stale values */
    char *checker = NULL;
    if (!t->dev->is_cuda && (mode == 1 || mode == 2)) {
      checker = tc_env_set("RINGRT_EMU_RACECHECK", "1");
      if (rrt_emu_racecheck_observes_plain())
        CHECK_MSG(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_cp_async, t->stream, dsrc, mode,
                                                dout)) == RRT_ERR_INTERNAL,
                  "%s: racecheck: cp.async mode %d read before its wait not reported", t->label,
                  mode);
      setenv("RINGRT_EMU_RACECHECK", "0", 1);
    }
    CHECK_OK(RRT_KCALL(t->dev, emu_tc_cp_async, t->stream, dsrc, mode, dout));
    if (!t->dev->is_cuda && (mode == 1 || mode == 2))
      tc_env_restore("RINGRT_EMU_RACECHECK", checker);
    emu_get(t, out, dout, sizeof out);
    int bad = 0;
    for (int th = 0; th < 64; th++) {
      int nb = (th + 1) % 64;
      int want[7] = {src[nb], src[64 + 2 * nb], src[65 + 2 * nb]};
      for (int i = 0; i < 4; i++)
        want[3 + i] = src[192 + 4 * nb + i];
      for (int e = 0; e < 7; e++) {
        int landed = eager || mode == 0 || mode == 3 || (mode == 1 && e == 0);
        int ok = landed ? out[7 * th + e] == want[e]
                        : (t->dev->is_cuda ? out[7 * th + e] == want[e] || out[7 * th + e] == -1
                                           : out[7 * th + e] == -1);
        if (!ok && bad++ < 5)
          fprintf(stderr, "%s: cp.async mode %d thread %d int %d: %d (want %d%s)\n", t->label, mode,
                  th, e, out[7 * th + e], landed ? want[e] : -1, landed ? "" : ", stale");
      }
    }
    CHECK_MSG(bad == 0, "%s: cp.async mode %d: %d wrong", t->label, mode, bad);
  }
  emu_release(t, dsrc), emu_release(t, dout);
}

/* bf16 nearest to x, ties to even, from the two bf16 neighbours compared
 * in double (not the bit trick of attn_math.h that the emulator uses). */
static uint16_t tc_ref_bf16(float x) {
  if (isnan(x)) return 0x7fc0u;
  uint32_t u;
  memcpy(&u, &x, 4);
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float flo, fhi;
  memcpy(&flo, &lo, 4);
  memcpy(&fhi, &hi, 4);
  const double dl = fabs((double)x - flo), dh = fabs((double)x - fhi);
  if (dl < dh || (dl == dh && !((lo >> 16) & 1u)) || isinf(x)) return (uint16_t)(lo >> 16);
  return (uint16_t)(hi >> 16);
}

/* cvt.rn.bf16x2/f16x2 (the first value in the low half, nearest even; f16
 * against the compiler's _Float16 conversion) and ex2.approx.ftz (within
 * the instruction's 2 ulp of 2^x in double; subnormal input 1, result below
 * FLT_MIN 0, -inf 0, NaN NaN). */
static void tc_check_cvt_ex2(const emu_target *t) {
  float x[128];
  uint64_t rs = 12345;
  for (int i = 0; i < 128; i++) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = ((float)(rs >> 40) / (float)(1 << 24) - 0.5f) * 300.0f; /* 2^-150 .. 2^150 */
  }
  const float special[] = {0.0f,    -0.0f,   1e-40f, -1e-40f, -INFINITY, INFINITY,    NAN,
                           -126.5f, -149.0f, 128.0f, 1.0f,    0.5f,      1.00390625f, 1.005859375f};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    x[2 * i + 1] = special[i];
  float *dx = emu_put(t, x, sizeof x), *de = emu_put(t, NULL, 128 * sizeof(float));
  uint32_t *dpb = emu_put(t, NULL, 64 * 4), *dph = emu_put(t, NULL, 64 * 4);
  uint32_t pb[64], ph[64];
  float e[128];
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_cvt_ex2, t->stream, dx, dpb, dph, de));
  emu_get(t, pb, dpb, sizeof pb);
  emu_get(t, ph, dph, sizeof ph);
  emu_get(t, e, de, sizeof e);
  int bad = 0;
  for (int i = 0; i < 64; i++)
    for (int h = 0; h < 2; h++) {
      const float v = x[2 * i + h];
      const uint16_t gb = (uint16_t)(pb[i] >> (16 * h)), gh = (uint16_t)(ph[i] >> (16 * h));
      const _Float16 f16 = (_Float16)v;
      uint16_t wh;
      memcpy(&wh, &f16, 2);
      const uint16_t wb = tc_ref_bf16(v);
      const int nan_ok = isnan(v) && (gb & 0x7fffu) > 0x7f80u && (gh & 0x7fffu) > 0x7c00u;
      if (!nan_ok && (gb != wb || gh != wh) && bad++ < 5)
        fprintf(stderr, "%s: cvt of %a (half %d): bf16 %04x (want %04x), f16 %04x (want %04x)\n",
                t->label, (double)v, h, gb, wb, gh, wh);
    }
  for (int i = 0; i < 128; i++) {
    const double want = exp2((double)x[i]);
    int ok;
    if (isnan(x[i]))
      ok = isnan(e[i]);
    else if (fabs(x[i]) < FLT_MIN)
      ok = e[i] == 1.0f;
    else if (want < FLT_MIN)
      ok = e[i] == 0.0f;
    else if (want >= 0x1p128) /* above FLT_MAX */
      ok = isinf(e[i]) && e[i] > 0;
    else
      ok = fabs(e[i] - want) <= 2.0 * ldexp(1.0, ilogb(want) - 23);
    if (!ok && bad++ < 10)
      fprintf(stderr, "%s: ex2.approx(%a) = %a, want %a\n", t->label, (double)x[i], (double)e[i],
              want);
  }
  CHECK_MSG(bad == 0, "%s: cvt.rn.bf16x2/f16x2, ex2.approx: %d wrong", t->label, bad);
  emu_release(t, dx), emu_release(t, de), emu_release(t, dpb), emu_release(t, dph);
}

/* Above 48 KiB of dynamic shared memory a kernel must opt in, on a GPU and
 * in the emulator. */
static void tc_check_big_smem(const emu_target *t) {
  int out = 0, *dout = emu_put(t, NULL, sizeof out);
  CHECK(RRT_KCALL(t->dev, emu_tc_big_smem, t->stream, 64 * 1024, 48 * 1024, dout) != RRT_SUCCESS);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_big_smem, t->stream, 64 * 1024, 64 * 1024, dout));
  emu_get(t, &out, dout, sizeof out);
  CHECK_MSG(out == 16 * 1024, "%s: 64 KiB dynamic shared sum %d", t->label, out);
  CHECK(RRT_KCALL(t->dev, emu_tc_big_smem, t->stream, 100 * 1024, 64 * 1024, dout) != RRT_SUCCESS);
  CHECK(RRT_KCALL(t->dev, emu_tc_big_smem, t->stream, 1024, 300 * 1024, dout) != RRT_SUCCESS);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_big_smem, t->stream, 40 * 1024, 0, dout));
  emu_get(t, &out, dout, sizeof out);
  CHECK_MSG(out == 10 * 1024, "%s: 40 KiB dynamic shared sum %d", t->label, out);
  emu_release(t, dout);
}

/* RINGRT_EMU_ORDER (emulator only): a missing __syncthreads hides in the
 * default order and shows in reversed and shuffled ones; the correct kernel
 * passes in every order. */
static int tc_neighbour_wrong(const emu_target *t, const int *dx, int *dout, int *out, int synced,
                              const int *x) {
  enum { T = 256 };
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_neighbour, t->stream, dx, dout, T, synced));
  emu_get(t, out, dout, T * sizeof *out);
  int wrong = 0;
  for (int i = 0; i < T; i++)
    wrong += out[i] != (i > 0 ? x[i - 1] : 0);
  return wrong;
}

static void tc_check_orders(const emu_target *t) {
  enum { T = 256 };
  int x[T], out[T];
  for (int i = 0; i < T; i++)
    x[i] = 7 * i + 3;
  int *dx = emu_put(t, x, sizeof x), *dout = emu_put(t, NULL, sizeof out);
  CHECK(tc_neighbour_wrong(t, dx, dout, out, 1, x) == 0);
  if (!t->dev->is_cuda) {
    /* the racy kernel runs to show the wrong values: without the checker */
    char *checker = tc_env_set("RINGRT_EMU_RACECHECK", "0");
    const char *was = getenv("RINGRT_EMU_ORDER");
    char *saved = was ? strdup(was) : NULL;
    const char *orders[] = {"forward", "reverse", "shuffle", "shuffle:12345"};
    for (int o = 0; o < 4; o++) {
      setenv("RINGRT_EMU_ORDER", orders[o], 1);
      int good = tc_neighbour_wrong(t, dx, dout, out, 1, x);
      int racy = tc_neighbour_wrong(t, dx, dout, out, 0, x);
      CHECK_MSG(good == 0, "%s: order %s: the synced kernel is wrong at %d", t->label, orders[o],
                good);
      CHECK_MSG(o == 0 ? racy == 0 : racy > 0, "%s: order %s: the racy kernel wrong at %d",
                t->label, orders[o], racy);
    }
    setenv("RINGRT_EMU_ORDER", "sideways", 1);
    CHECK(RRT_KCALL(t->dev, emu_tc_neighbour, t->stream, dx, dout, T, 1) == RRT_ERR_INVALID_ARG);
    setenv("RINGRT_EMU_ORDER", "shuffle:12x", 1);
    CHECK(RRT_KCALL(t->dev, emu_tc_neighbour, t->stream, dx, dout, T, 1) == RRT_ERR_INVALID_ARG);
    if (saved)
      setenv("RINGRT_EMU_ORDER", saved, 1);
    else
      unsetenv("RINGRT_EMU_ORDER");
    free(saved);
    tc_env_restore("RINGRT_EMU_RACECHECK", checker);
  }
  emu_release(t, dx), emu_release(t, dout);
}

/* Planted misuse is a launch error in the emulator (on a GPU: undefined),
 * reported by the launch or the next synchronisation (emu_fault_status). */
static void tc_check_faults(const emu_target *t) {
  if (t->dev->is_cuda) return;
  uint16_t *src = emu_put(t, NULL, 64 * 8 * sizeof *src);
  float *out = emu_put(t, NULL, 32 * 4 * sizeof *out); /* also the ldmatrix output below */
  /* 0 partial-warp mma, 1 misaligned ldmatrix, 2 misaligned cp.async, 3
   * ldmatrix from global memory, 4 cp.async into global memory (3 and 4
   * where the device layer records its memory: the emu layer, not the
   * plain host layer the executor test also runs on) */
  const int planted = t->dev->owns ? 5 : 3;
  for (int which = 0; which < planted; which++)
    CHECK_MSG(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_fault, t->stream, which, src, out)) ==
                  RRT_ERR_INTERNAL,
              "%s: planted fault %d not reported", t->label, which);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_ldmatrix, t->stream, src, 4, 0, (uint32_t *)out));
  emu_release(t, src), emu_release(t, out);
}

/* RINGRT_EMU_RACECHECK=1 (emulator only): each planted race of emu_tc_race
 * fails the launch, its corrected twin passes with the right count, and
 * so do the correct kernels of tc_check_orders in every order. Cases of
 * plain loads and stores need the instrumented build (not the sanitizer
 * build, which says so). */
static void tc_check_racecheck(const emu_target *t) {
  if (t->dev->is_cuda) return;
  enum { T = 64 };
  uint16_t src[64];
  for (int i = 0; i < 64; i++)
    src[i] = (uint16_t)(i + 1);
  uint16_t *dsrc = emu_put(t, src, sizeof src);
  int out[T], *dout = emu_put(t, NULL, sizeof out);
  char *saved = tc_env_set("RINGRT_EMU_RACECHECK", "1");
  const int plain = rrt_emu_racecheck_observes_plain();
  if (!plain)
    fprintf(stderr,
            "%s: this build does not instrument plain shared-memory accesses: the race "
            "checker's cases 1 and 6 are not run\n",
            t->label);
  const int racy[] = {1, 3, 5, 6}, fine[] = {0, 2, 4, 7};
  for (int i = 0; i < 4; i++) {
    if (!plain && (racy[i] == 1 || racy[i] == 6)) continue;
    CHECK_MSG(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_race, t->stream, racy[i], dsrc, dout)) ==
                  RRT_ERR_INTERNAL,
              "%s: racecheck: planted race %d not reported", t->label, racy[i]);
  }
  for (int i = 0; i < 4; i++) {
    CHECK_OK(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_race, t->stream, fine[i], dsrc, dout)));
    emu_get(t, out, dout, sizeof out);
    /* lane 31 of warp 1: count, plus in case 4 its ldmatrix register (row
     * 7, columns 6 and 7 of the copied tile) */
    const int want = fine[i] == 2   ? T
                     : fine[i] == 7 ? 7
                     : fine[i] == 4 ? (int)((uint32_t)src[62] | (uint32_t)src[63] << 16)
                                    : 0;
    CHECK_MSG(out[T - 1] == want, "%s: racecheck case %d: out %d", t->label, fine[i], out[T - 1]);
  }
  /* .aligned: checked with or without the race checker */
  CHECK_MSG(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_race, t->stream, 8, dsrc, dout)) ==
                RRT_ERR_INTERNAL,
            "%s: ldmatrix at two call sites in one warp not reported", t->label);
  int x[256], nb[256];
  for (int i = 0; i < 256; i++)
    x[i] = i;
  int *dx = emu_put(t, x, sizeof x), *dnb = emu_put(t, NULL, sizeof nb);
  CHECK_OK(RRT_KCALL(t->dev, emu_tc_neighbour, t->stream, dx, dnb, 256, 1));
  if (plain)
    CHECK_MSG(emu_fault_status(t, RRT_KCALL(t->dev, emu_tc_neighbour, t->stream, dx, dnb, 256,
                                            0)) == RRT_ERR_INTERNAL,
              "%s: racecheck: the neighbour kernel without its barrier not reported", t->label);
  tc_env_restore("RINGRT_EMU_RACECHECK", saved);
  emu_release(t, dsrc), emu_release(t, dout), emu_release(t, dx), emu_release(t, dnb);
}

static void tc_run_checks(const emu_target *t) {
  for (int k = 8; k <= 16; k += 8)
    for (int type = 0; type < 2; type++) {
      tc_check_mma(t, k, type);
      tc_check_tile(t, k, type);
    }
  tc_check_ldmatrix(t);
  tc_check_cp_async(t);
  tc_check_big_smem(t);
  tc_check_cvt_ex2(t);
  tc_check_orders(t);
  tc_check_faults(t);
  tc_check_racecheck(t);
}

#endif

/* The emulator's mma.sync (m16n8k16, m16n8k8; bf16 and f16) and ldmatrix
 * (.x1/.x2/.x4, plain and .trans) against CuTe's fragment layouts, a
 * ground truth independent of tc_emu.cpp's reading of the PTX manual
 * (tests/emu/tc_checks.h derives its expectations from the same formulas).
 * The table comes from cute_layouts.cpp (nvcc, CuTe's MMA_Traits and
 * Copy_Traits); tests/emu/cute_truth.sh builds it and runs this program,
 * and a copy of it linked with a planted swap in tc_emu.cpp, which must
 * fail.
 *
 * mma: one block per A element (lane, value): A one-hot there (1.0), B
 * placed by CuTe's B layout with B[k][n] = 1 + k + 16 n (exact in bf16 and
 * f16), C = 0; then D, read by CuTe's C layout, must be B[k0][n] in row m0
 * and 0 elsewhere, with (m0, k0) CuTe's coordinates of the one-hot element.
 * ldmatrix: matrix j, row r, column c holds 1 + 64 j + 8 r + c; each
 * lane's registers and halves must hold what CuTe says they read.
 *   test_emu_cute TABLE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tc_kernels.h"

enum { MAXV = 8 };
typedef struct {
  int a[2][32][MAXV][2], b[2][32][MAXV][2], c[2][32][4][2]; /* [K/8-1][lane][value] */
  int na[2], nb[2], nc[2];
  int l[2][3][32][4][2][3]; /* [trans][x1 x2 x4][lane][reg][half] -> j r c */
  int nl;
} cute_table;

static int read_table(const char *path, cute_table *t) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "FAIL: cannot open the CuTe table %s\n", path);
    return 1;
  }
  memset(t, 0, sizeof *t);
  char kind;
  int x[8], bad = 0;
  while (fscanf(f, " %c", &kind) == 1) {
    if (kind == 'L' && fscanf(f, "%d %d %d %d %d %d %d %d", &x[0], &x[1], &x[2], &x[3], &x[4],
                              &x[5], &x[6], &x[7]) == 8) {
      int *e = t->l[x[0]][x[1] == 4 ? 2 : x[1] - 1][x[2]][x[3]][x[4]];
      e[0] = x[5], e[1] = x[6], e[2] = x[7];
      t->nl++;
    } else if (fscanf(f, "%d %d %d %d %d", &x[0], &x[1], &x[2], &x[3], &x[4]) == 5) {
      const int ki = x[0] / 8 - 1;
      int *e = kind == 'A'   ? t->a[ki][x[1]][x[2]]
               : kind == 'B' ? t->b[ki][x[1]][x[2]]
                             : t->c[ki][x[1]][x[2]];
      e[0] = x[3], e[1] = x[4];
      (kind == 'A' ? t->na : kind == 'B' ? t->nb : t->nc)[ki]++;
    } else {
      bad = 1;
      break;
    }
  }
  fclose(f);
  const int ok = !bad && t->na[1] == 32 * 8 && t->na[0] == 32 * 4 && t->nb[1] == 32 * 4 &&
                 t->nb[0] == 32 * 2 && t->nc[0] == 128 && t->nc[1] == 128 && t->nl == 896;
  CHECK_MSG(ok, "CuTe table %s: unexpected contents", path);
  return !ok;
}

/* bf16 / f16 bits of a small integer (exact in both) */
static uint16_t half_bits(int v, int type) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (type == 0) return (uint16_t)(u >> 16);
  const int e = (int)((u >> 23) & 0xff) - 127 + 15;
  return v == 0 ? 0 : (uint16_t)((e << 10) | ((u >> 13) & 0x3ff));
}

static void check_mma(const cute_table *t, int K, int type) {
  const int ki = K / 8 - 1, nva = K / 2, nvb = K / 4, nra = K / 4, nrb = K / 8, nblk = 32 * nva;
  uint32_t *a = calloc((size_t)nblk * 32 * nra, 4), *b = calloc((size_t)nblk * 32 * nrb, 4);
  float *c = calloc((size_t)nblk * 128, 4), *d = calloc((size_t)nblk * 128, 4);
  for (int blk = 0; blk < nblk; blk++) {
    const int l0 = blk / nva, v0 = blk % nva;
    a[((size_t)blk * 32 + l0) * nra + v0 / 2] = (uint32_t)half_bits(1, type) << (16 * (v0 % 2));
    for (int l = 0; l < 32; l++)
      for (int v = 0; v < nvb; v++) {
        const int *kn = t->b[ki][l][v];
        b[((size_t)blk * 32 + l) * nrb + v / 2] |= (uint32_t)half_bits(1 + kn[0] + 16 * kn[1], type)
                                                   << (16 * (v % 2));
      }
  }
  CHECK_OK(RRT_KCALL(&rrt_device_host, emu_tc_mma, NULL, K, type, a, b, c, d, nblk));
  int bad = 0;
  for (int blk = 0; blk < nblk; blk++) {
    const int m0 = t->a[ki][blk / nva][blk % nva][0], k0 = t->a[ki][blk / nva][blk % nva][1];
    for (int l = 0; l < 32; l++)
      for (int v = 0; v < 4; v++) {
        const int m = t->c[ki][l][v][0], n = t->c[ki][l][v][1];
        const float want = m == m0 ? (float)(1 + k0 + 16 * n) : 0.0f;
        if (d[((size_t)blk * 32 + l) * 4 + v] != want && bad++ < 5)
          fprintf(stderr,
                  "mma k%d type %d: A one-hot at lane %d value %d (CuTe: m %d k %d): D lane %d "
                  "register %d (CuTe: m %d n %d) = %g, want %g\n",
                  K, type, blk / nva, blk % nva, m0, k0, l, v, m, n,
                  d[((size_t)blk * 32 + l) * 4 + v], want);
      }
  }
  CHECK_MSG(bad == 0, "mma m16n8k%d %s: %d elements differ from CuTe's layouts", K,
            type ? "f16" : "bf16", bad);
  free(a), free(b), free(c), free(d);
}

static void check_ldmatrix(const cute_table *t, int trans, int num) {
  uint16_t mats[4 * 64];
  uint32_t out[32 * 4];
  for (int e = 0; e < 4 * 64; e++)
    mats[e] = (uint16_t)(1 + e);
  CHECK_OK(RRT_KCALL(&rrt_device_host, emu_tc_ldmatrix, NULL, mats, num, trans, out));
  int bad = 0;
  for (int l = 0; l < 32; l++)
    for (int reg = 0; reg < num; reg++)
      for (int h = 0; h < 2; h++) {
        const int *jrc = t->l[trans][num == 4 ? 2 : num - 1][l][reg][h];
        const int want = 1 + 64 * jrc[0] + 8 * jrc[1] + jrc[2];
        const int got = (int)((out[l * 4 + reg] >> (16 * h)) & 0xffffu);
        if (got != want && bad++ < 5)
          fprintf(stderr,
                  "ldmatrix .x%d%s: lane %d register %d half %d holds matrix %d row %d col %d, "
                  "CuTe says matrix %d row %d col %d\n",
                  num, trans ? ".trans" : "", l, reg, h, (got - 1) / 64, (got - 1) % 64 / 8,
                  (got - 1) % 8, jrc[0], jrc[1], jrc[2]);
      }
  CHECK_MSG(bad == 0, "ldmatrix .x%d%s: %d values differ from CuTe's layouts", num,
            trans ? ".trans" : "", bad);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_emu_cute TABLE\n");
    return 2;
  }
  static cute_table t;
  if (read_table(argv[1], &t)) return test_result();
  for (int K = 8; K <= 16; K += 8)
    for (int type = 0; type < 2; type++)
      check_mma(&t, K, type);
  for (int trans = 0; trans < 2; trans++)
    for (int num = 1; num <= 4; num *= 2)
      check_ldmatrix(&t, trans, num);
  return test_result();
}

/* The multi-vector Krylov kernels of every host-run table (cpu, and emu:
 * the emulator build of kernels/cuda/ilu0.cu, so the device code runs here):
 * - maxpy, y += sum_t a_t x_t, bit for bit against the test's own loop of
 *   separately rounded steps in t order (the promise that cpu and device
 *   agree exactly);
 * - mdot_partial, k dot products in one pass, partials summed in block
 *   order, against a long double sum: within n * eps * sum |x_i y_i|, the
 *   worst-case bound of any summation order (blocked sums stay far inside
 *   it; a dropped or doubled term does not).
 * Group sizes 1..RRT_VEC_GROUP, lengths 0 to above the threading threshold. */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "kernels/ilu0_table.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

static double urand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

static void check_group(rrt_ctx_t ctx, const rrt_ilu0_kernels *kt, int64_t n, int k,
                        unsigned seed) {
  size_t bytes = (size_t)(n ? n : 1) * sizeof(double);
  double *hx[RRT_VEC_GROUP], *hy = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
  double *dx[RRT_VEC_GROUP], *dy = NULL, *dpart = NULL;
  rrt_vec_group g = {{NULL}, {0}, k};
  for (int t = 0; t < k; t++) {
    hx[t] = malloc(bytes);
    for (int64_t i = 0; i < n; i++)
      hx[t][i] = urand(&seed) * (t + 1);
    CHECK_OK(rrt_malloc(ctx, bytes, (void **)&dx[t]));
    CHECK_OK(rrt_memcpy_to_backend(ctx, dx[t], hx[t], bytes));
    g.x[t] = dx[t], g.a[t] = urand(&seed);
  }
  for (int64_t i = 0; i < n; i++)
    hy[i] = urand(&seed);
  CHECK_OK(rrt_malloc(ctx, bytes, (void **)&dy));
  int nb = kt->dot_max_blocks;
  CHECK_OK(rrt_malloc(ctx, (size_t)nb * RRT_VEC_GROUP * sizeof(double), (void **)&dpart));

  /* mdot against long double */
  CHECK_OK(rrt_memcpy_to_backend(ctx, dy, hy, bytes));
  CHECK_OK(kt->mdot_partial(ctx->compute_stream, n, g, dy, dpart, nb));
  double part[RRT_ILU0_DOT_BLOCKS * RRT_VEC_GROUP];
  CHECK_OK(rrt_memcpy_to_host(ctx, part, dpart, (size_t)nb * k * sizeof(double)));
  for (int t = 0; t < k; t++) {
    double s = 0.0;
    for (int b = 0; b < nb; b++)
      s += part[t * nb + b];
    long double ref = 0.0L, mag = 0.0L;
    for (int64_t i = 0; i < n; i++)
      ref += (long double)hx[t][i] * hy[i], mag += fabsl((long double)hx[t][i] * hy[i]);
    double bound = (double)n * DBL_EPSILON * (double)mag + DBL_MIN;
    CHECK_MSG(fabs(s - (double)ref) <= bound,
              "%s mdot n=%lld k=%d t=%d: %.17g vs %.17Lg (bound %g)", kt->name, (long long)n, k, t,
              s, ref, bound);
  }

  /* maxpy bit for bit against the naive loop */
  CHECK_OK(kt->maxpy(ctx->compute_stream, n, g, dy));
  CHECK_OK(rrt_memcpy_to_host(ctx, got, dy, bytes));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double y = hy[i];
    for (int t = 0; t < k; t++) {
      double p = g.a[t] * hx[t][i];
      y = y + p;
    }
    want[i] = y;
    bad += memcmp(&want[i], &got[i], sizeof(double)) != 0;
  }
  CHECK_MSG(bad == 0, "%s maxpy n=%lld k=%d: %lld values differ", kt->name, (long long)n, k,
            (long long)bad);
  for (int t = 0; t < k; t++)
    rrt_free(ctx, dx[t]), free(hx[t]);
  rrt_free(ctx, dy), rrt_free(ctx, dpart);
  free(hy), free(want), free(got);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const rrt_backend backends[] = {RRT_BACKEND_CPU, RRT_BACKEND_EMU};
  const int64_t lengths[] = {0, 1, 7, 1000, 20000, 100003};
  for (int b = 0; b < 2; b++) {
    rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
    cfg.backend = backends[b];
    rrt_ctx_t ctx = NULL;
    CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx));
    if (!ctx) continue;
    const rrt_ilu0_kernels *kt = rrt_ilu0_kernels_for(backends[b]);
    CHECK(kt && kt->mdot_partial && kt->maxpy);
    for (size_t l = 0; kt && l < sizeof lengths / sizeof *lengths; l++)
      for (int k = 1; k <= RRT_VEC_GROUP; k++)
        check_group(ctx, kt, lengths[l], k, 11u * (unsigned)l + (unsigned)k);
    rrt_ctx_destroy(ctx);
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

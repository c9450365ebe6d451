/* ringrt's kernel matrix M against the reference SEACells' (SEACellGraph.rbf
 * with n_neighbors = 15, saved by bench/seacells-ref-graph.py as rows of a
 * CSR fixture): the same edges and the same values, at the default knn = 15.
 *   pbmc H5AD PREFIX: pbmc68k_reduced's X_pca (700 cells, scanpy's exact
 *     path: 14 other cells per list); all 700 rows.
 *   synth N PREFIX: the script's splitmix64 blobs (N >= 8192 cells, scanpy's
 *     pynndescent path: 15 other cells per list); the fixture's rows, which
 *     the script chose among those its exact kNN reproduces (the reference's
 *     search is approximate: the few rows it gets wrong are counted there).
 * Tolerance: pbmc, both sides float64 (1e-12 absolute on entries <= 1, for
 * the order of the distance sums); synth, the reference's bandwidths are
 * pynndescent's float32 distances of float32 copies of the coordinates
 * (|x| up to 21 against distances of 1-3: a relative error up to about
 * 1e-6 per bandwidth), which moves exp(-t) by at most
 * 2 * 1e-6 * t e^-t <= 7.4e-7: 2e-6 (measured: 5.8e-7). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/npy.h"
#include "seacells/internal.h"
#include "ringrt/ringrt.h"
#include "sc_fixture.h"
#include "test_util.h"

static uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double unit(uint64_t z) { return (double)(splitmix(z) >> 11) * 0x1p-53; }

/* the script's synth(): blob i % 30, centres in [0, 20)^10, noise in [-1, 1) */
static double *synth(int64_t n, int d) {
  double *x = malloc((size_t)n * d * sizeof(double));
  for (int64_t i = 0; x && i < n; i++)
    for (int c = 0; c < d; c++)
      x[i * d + c] = unit((uint64_t)(i % 30) * 16 + c) * 20.0 +
                     (unit(1000003ull + (uint64_t)i * 16 + c) * 2.0 - 1.0);
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 4) {
    fprintf(stderr, "usage: %s pbmc H5AD PREFIX | synth N PREFIX\n", argv[0]);
    return 2;
  }
  int pbmc = !strcmp(argv[1], "pbmc"), d = 10;
  int64_t n = 0;
  double *x = NULL;
  char err[512];
  if (pbmc) {
    CHECK_OK(rrt_h5ad_matrix_shape(argv[2], "X_pca", &n, &(int64_t){0}, err, sizeof err));
    int64_t cols = 0;
    CHECK_MSG(rrt_h5ad_read_matrix_rows(argv[2], "X_pca", 0, n, &x, &cols, err, sizeof err) ==
                  RRT_SUCCESS,
              "%s", err);
    d = (int)cols;
  } else {
    n = atoll(argv[2]);
    x = synth(n, d);
  }
  rrt_npy arow, aptr, acol, aval;
  const int32_t *row = sc_fixture_load(argv[3], "row", "<i4", &arow),
                *ptr = sc_fixture_load(argv[3], "ptr", "<i4", &aptr);
  const int32_t *col = sc_fixture_load(argv[3], "col", "<i4", &acol);
  const double *val = sc_fixture_load(argv[3], "val", "<f8", &aval);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (!ctx || !x || !row || !ptr || !col || !val) return test_result();
  int rank = rrt_ctx_rank(ctx);

  rrt_sc_run s;
  memset(&s, 0, sizeof s);
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER; /* knn = 15: n_neighbors */
  o.n_metacells = 2;
  s.ctx = ctx, s.opt = o, s.rank = rank, s.size = rrt_ctx_size(ctx);
  s.n = n, s.d = d, s.m = 2, s.capa = 2;
  rrt_sc_graph_convention(n, o.knn, &s.knn, &s.kbw);
  CHECK_MSG(s.knn == (n < 8192 ? 14 : 15) && s.kbw == 7, "convention: %d others, bandwidth %d",
            s.knn, s.kbw);
  s.kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx));
  CHECK_OK(rrt_cell_blocks_create(n, s.size, 0, &s.plan));
  s.c0 = s.plan.cell_start[rank];
  s.nl = s.plan.cell_start[rank + 1] - s.c0;
  s.x = x + s.c0 * d;
  CHECK_OK(rrt_sc_alloc_state(&s));
  CHECK_OK(rrt_sc_build_graph(&s));

  double tol = pbmc ? 1e-12 : 2e-6, worst = 0.0;
  int bad = 0, seen = 0;
  for (size_t r = 0; r < arow.count; r++) {
    int64_t i = row[r] - s.c0;
    if (i < 0 || i >= s.nl) continue;
    seen++;
    int64_t len = s.mrow.ptr[i + 1] - s.mrow.ptr[i];
    if (len != ptr[r + 1] - ptr[r]) {
      if (bad++ < 5)
        fprintf(stderr, "row %d: %lld entries, the reference %d\n", row[r], (long long)len,
                ptr[r + 1] - ptr[r]);
      continue;
    }
    for (int64_t q = 0; q < len; q++) {
      int32_t c = s.mrow.col[s.mrow.ptr[i] + q];
      double v = s.mrow.val[s.mrow.ptr[i] + q], rv = val[ptr[r] + q];
      if (c != col[ptr[r] + q] || !(fabs(v - rv) <= tol)) {
        if (bad++ < 5)
          fprintf(stderr, "row %d entry %lld: column %d value %.17g, the reference %d %.17g\n",
                  row[r], (long long)q, c, v, col[ptr[r] + q], rv);
      } else if (fabs(v - rv) > worst) {
        worst = fabs(v - rv);
      }
    }
  }
  int tot[2] = {bad, seen};
  MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK_MSG(tot[1] == (int)arow.count, "%d of %zu fixture rows compared", tot[1], arow.count);
  CHECK_MSG(tot[0] == 0, "%d rows or entries differ from the reference's M", tot[0]);
  if (rank == 0 && tot[0] == 0)
    printf("%s: %d rows of M equal the reference's, largest entry difference %.3g\n", argv[1],
           tot[1], worst);
  rrt_sc_run_free(&s);
  rrt_npy_free(&arow), rrt_npy_free(&aptr), rrt_npy_free(&acol), rrt_npy_free(&aval);
  free(x);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

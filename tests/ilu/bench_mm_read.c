/* Reading a Matrix Market file into row blocks, timed, with each rank's
 * peak memory (VmHWM): `bench_mm_read FILE rows` uses the per-rank reader
 * (io/mm_rows.h), `bench_mm_read FILE whole` what `ringrt ilu` did before
 * it (every rank reads the whole file, then keeps its block). Not a test:
 * the measurement behind the file-reading table of docs/results.md. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/mm_rows.h"
#include "io/mmio.h"
#include "ringrt/ringrt.h"

static long vm_hwm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) kib = atol(line + 6);
  if (f) fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  rrt_ctx_t ctx;
  if (argc < 3 || rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx)) {
    if (rank == 0) fprintf(stderr, "usage: bench_mm_read FILE rows|whole\n");
    MPI_Finalize();
    return 2;
  }
  long before = vm_hwm_kib();
  char err[1024];
  rrt_csr loc = {0};
  int64_t r0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  rrt_status st;
  if (!strcmp(argv[2], "rows")) {
    st = rrt_mm_read_rows(ctx, argv[1], RRT_MM_PATTERN_LAPLACIAN, &r0, &loc, NULL, NULL, err,
                          sizeof err);
  } else {
    rrt_csr a;
    st = rrt_mm_read(argv[1], RRT_MM_PATTERN_LAPLACIAN, &a, NULL, err, sizeof err);
    int64_t *off = malloc(((size_t)P + 1) * 8);
    if (!st) {
      rrt_sparse_partition(a.nrows, a.rowptr, P, off);
      r0 = off[rank];
      int64_t m = off[rank + 1] - r0, b = a.rowptr[r0], nz = a.rowptr[r0 + m] - b;
      loc.nrows = m, loc.nnz = nz;
      loc.rowptr = malloc((size_t)(m + 1) * 8), loc.col = malloc((size_t)nz * 8 + 8);
      loc.val = malloc((size_t)nz * 8 + 8);
      for (int64_t i = 0; i <= m; i++)
        loc.rowptr[i] = a.rowptr[r0 + i] - b;
      memcpy(loc.col, a.col + b, (size_t)nz * 8), memcpy(loc.val, a.val + b, (size_t)nz * 8);
      rrt_csr_free(&a);
    }
    free(off);
  }
  double t = MPI_Wtime() - t0, tmax;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  long peak = vm_hwm_kib();
  for (int r = 0; r < P; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == rank)
      printf("rank %d: %s  rows %lld  nnz %lld  peak %.1f MiB (%.1f before)%s%s\n", rank, argv[2],
             (long long)loc.nrows, (long long)loc.nnz, peak / 1024.0, before / 1024.0,
             st ? "  error: " : "", st ? err : "");
    fflush(stdout);
  }
  if (rank == 0) printf("np %d %s: %.3f s\n", P, argv[2], tmax);
  rrt_csr_free(&loc);
  rrt_ctx_destroy(ctx);
  MPI_Finalize();
  return st ? 1 : 0;
}

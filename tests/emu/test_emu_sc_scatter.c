/* The SEACells A update's scatter of a T1a row into shared memory
 * (kernels/cuda/seacells.cu, row[t1c[q]] = t1v[q], one thread per entry)
 * under the race checker: the rows come from rrt_sc_gram with each column
 * once, and a row that repeated a column (two threads storing to one
 * element) must be reported as a shared-memory race, not computed with
 * whichever store landed last. The correct row gives the Frank-Wolfe
 * result worked out by hand below. */
#include <stdint.h>
#include <stdlib.h>

#include "test_util.h"
#include "kernels/cuda/seacells.h"

int rrt_emu_racecheck_observes_plain(void); /* src/kernels/emu/racecheck.h */

enum { M = 4, CAPA = 4 };

/* One cell, K row = (1 at cell 0), B: cell 0 -> archetype 0 with weight 1,
 * so T2 = (1, 0, 0, 0) and the first step (u = 0, gradient 2(u - T2))
 * picks archetype 0 with step 2/(0+2) = 1: a = e_0, whatever T1a's row 0.
 * cols: T1a row 0's two columns. */
static rrt_status run(const int32_t cols[2], int32_t *a_idx, double *a_w, int *a_nnz) {
  const int64_t kptr[2] = {0, 1}, t1p[M + 1] = {0, 2, 2, 2, 2};
  const int32_t kcol[1] = {0}, bfirst[1] = {0}, bcnt[1] = {1}, bent_j[1] = {0};
  const double kval[1] = {1.0}, bent_w[1] = {1.0}, t1v[2] = {0.5, 0.25};
  double scratch[4 * M];
  return RRT_KCALL(&rrt_device_host, rrt_k_sc_a_solve, NULL, 1, M, 1, CAPA, kptr, kcol, kval,
                   bfirst, bcnt, bent_j, bent_w, t1p, cols, t1v, 1, a_idx, a_w, a_nnz, scratch);
}

int main(void) {
  if (!rrt_emu_racecheck_observes_plain()) {
    fprintf(stderr, "SKIP: this build does not instrument plain shared-memory accesses "
                    "(a sanitizer build): the scatter's race cannot be seen\n");
    return 77;
  }
  setenv("RINGRT_EMU_RACECHECK", "1", 1);
  int32_t a_idx[CAPA];
  double a_w[CAPA];
  int a_nnz[1] = {-1};
  const int32_t unique[2] = {1, 2}, repeated[2] = {1, 1};
  CHECK_OK(run(unique, a_idx, a_w, a_nnz));
  CHECK_MSG(a_nnz[0] == 1 && a_idx[0] == 0 && a_w[0] == 1.0, "a = e_0 expected: nnz %d idx %d w %g",
            a_nnz[0], a_idx[0], a_w[0]);
  CHECK_MSG(run(repeated, a_idx, a_w, a_nnz) == RRT_ERR_INTERNAL,
            "a T1a row repeating a column was not reported as a race");
  return test_result();
}

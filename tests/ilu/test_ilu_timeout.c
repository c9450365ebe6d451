/* The ILU(0) analysis waits through the transport (driven by
 * ilu_timeout_check.sh, which expects this program to FAIL): both ranks
 * build the matrix, then rank 0 starts rrt_ilu0_create while rank 1 never
 * does and blocks in a plain MPI barrier. Rank 0's first collective of the
 * analysis must hit RINGRT_TIMEOUT and abort the whole job, naming the
 * operation; a raw MPI collective there would hang until the guard kills it. */
#include <mpi.h>
#include <stdio.h>

#include "ilu_ref.h"
#include "ringrt/ringrt.h"
#include "test_util.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  int rc = ref_ctx(&ctx);
  if (rc) {
    MPI_Finalize();
    return rc;
  }
  if (rrt_ctx_size(ctx) != 2) {
    fprintf(stderr, "test_ilu_timeout needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  rrt_csr a;
  char err[256];
  rrt_sparse_t A = NULL;
  if (ref_load("laplace2d:8", &a, err, sizeof(err)) || ref_distribute(ctx, &a, &A)) {
    fprintf(stderr, "setup failed: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rrt_ctx_rank(ctx) == 0) {
    rrt_ilu0_options opt = RRT_ILU0_OPTIONS_INITIALIZER;
    opt.ordering = RRT_ILU_ORDER_RCM; /* its pattern gather is one of the waits */
    rrt_ilu0_t M = NULL;
    rrt_ilu0_create(A, &opt, &M); /* must not return */
    fprintf(stderr, "rank 0: rrt_ilu0_create returned although rank 1 never called it\n");
  }
  MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits here, without a timeout, until the abort */
  /* Reaching this point means no abort happened: report success so the
   * driver script, which expects a failure, flags it. */
  printf("no timeout happened\n");
  MPI_Finalize();
  return 0;
}

/* FGMRES(m) (Saad's flexible GMRES, PETSc's KSPFGMRES): right
 * preconditioned, with the preconditioned directions z_j = M_j^-1 v_j kept,
 * so x += Z y needs no apply at the end and the preconditioner may differ
 * from one apply to the next (a user callback running an inner solve). The
 * Arnoldi process is GMRES's (gmres.c); with a fixed preconditioner the
 * iterates are GMRES's up to the rounding of the update. */
#include <stdlib.h>

#include "comm/error.h"
#include "krylov/solver.h"

rrt_status rrt_krylov_fgmres(rrt_krylov_solver *s, const double *b, double *x) {
  int m = s->opt->restart;
  double **Z = calloc((size_t)m, sizeof(double *));
  if (!Z) return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, RRT_KRYLOV_OP, "out of memory");
  rrt_status st = rrt_vec_alloc(&s->v, m, Z);
  if (!st) st = rrt_krylov_gmres_engine(s, b, x, Z);
  rrt_vec_free(&s->v, m, Z);
  free(Z);
  return st;
}

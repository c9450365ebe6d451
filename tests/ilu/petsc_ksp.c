/* A PETSc user's KSP solve, for the ringrt PC plugin (tests/ilu/petsc.cmake).
 *
 * Assembles laplace2d, laplace3d or convdiff2d (the stencils of `ringrt ilu
 * --generate`, so the same matrices) as an AIJ matrix with PETSc's own row
 * distribution, b = A ones, and solves with whatever the options database
 * says (-ksp_type, -pc_type ringrt after -dll_append, -pc_type ilu, ...).
 * Prints on rank 0 one line a script can read:
 *   result: np=N iterations=K reason=REASON pc_failed=REASON relres=X
 * Options: -problem laplace2d|laplace3d|convdiff2d, -grid N, -pe PECLET,
 * -mtx FILE (a Matrix Market file instead),
 * -zero_row R (row R's stored values all 0: its pivot is exactly 0),
 * -no_diagonal R (row R without a stored diagonal entry),
 * -resolve (after the solve, A := 2 A with the same pattern and solve again:
 * a second "result:" line), -reorder_after NAME (linked build: then
 * PCRingrtSetOrdering(pc, NAME) and solve again), -ref (then solve with a
 * second KSP whose options have the prefix ref_, e.g. -ref_pc_type ilu:
 * a "reference:" line). Built twice: plain (the plugin only through
 * -dll_append) and with RINGRT_PETSC_LINKED (linked to libringrt_petsc.so:
 * PCRingrtRegister, the getters, and the failure message on every rank).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <omp.h>
#include <petscksp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#ifdef RINGRT_PETSC_LINKED
#include "ringrt_petsc.h"
#endif

typedef struct {
  char kind[32];
  PetscInt N, zero_row, no_diagonal;
  PetscReal pe;
} problem;

/* Row g of the problem: columns (sorted) and values; returns the count. */
static PetscInt stencil(const problem *p, PetscInt g, PetscInt *c, PetscScalar *v) {
  PetscInt N = p->N, k = 0;
  if (!strcmp(p->kind, "laplace3d")) {
    PetscInt N2 = N * N, z = g / N2, y = (g / N) % N, x = g % N;
    if (z > 0) c[k] = g - N2, v[k++] = -1.0;
    if (y > 0) c[k] = g - N, v[k++] = -1.0;
    if (x > 0) c[k] = g - 1, v[k++] = -1.0;
    c[k] = g, v[k++] = 6.0;
    if (x < N - 1) c[k] = g + 1, v[k++] = -1.0;
    if (y < N - 1) c[k] = g + N, v[k++] = -1.0;
    if (z < N - 1) c[k] = g + N2, v[k++] = -1.0;
  } else {
    PetscReal cc = !strcmp(p->kind, "convdiff2d") ? p->pe / (2.0 * (PetscReal)(N + 1)) : 0.0;
    PetscInt y = g / N, x = g % N;
    if (y > 0) c[k] = g - N, v[k++] = -1.0 - cc;
    if (x > 0) c[k] = g - 1, v[k++] = -1.0 - cc;
    c[k] = g, v[k++] = 4.0;
    if (x < N - 1) c[k] = g + 1, v[k++] = -1.0 + cc;
    if (y < N - 1) c[k] = g + N, v[k++] = -1.0 + cc;
  }
  if (g == p->zero_row)
    for (PetscInt i = 0; i < k; i++)
      v[i] = 0.0;            /* kept in the pattern: explicit zeros */
  if (g == p->no_diagonal) { /* the diagonal entry not stored at all */
    PetscInt j = 0;
    for (PetscInt i = 0; i < k; i++)
      if (c[i] != g) c[j] = c[i], v[j++] = v[i];
    k = j;
  }
  return k;
}

static PetscErrorCode assemble(const problem *p, Mat *A) {
  PetscInt n = !strcmp(p->kind, "laplace3d") ? p->N * p->N * p->N : p->N * p->N, rs, re;
  PetscInt c[7];
  PetscScalar v[7];

  PetscFunctionBegin;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, n, n));
  PetscCall(MatSetType(*A, MATAIJ)); /* seqaij on one rank, mpiaij on more */
  PetscCall(MatSetFromOptions(*A));  /* -mat_type */
  PetscCall(MatSeqAIJSetPreallocation(*A, 7, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 7, NULL, 6, NULL));
  PetscCall(
      MatSeqBAIJSetPreallocation(*A, 1, 7, NULL)); /* -mat_type baij (a type ringrt refuses) */
  PetscCall(MatMPIBAIJSetPreallocation(*A, 1, 7, NULL, 6, NULL));
  PetscCall(MatSetUp(*A)); /* any other -mat_type (dense: a type ringrt refuses) */
  /* explicit zeros (the zero-pivot row) stay in the pattern: MatSetValues keeps them */
  PetscCall(MatGetOwnershipRange(*A, &rs, &re));
  for (PetscInt g = rs; g < re; g++) {
    PetscInt k = stencil(p, g, c, v);
    PetscCall(MatSetValues(*A, 1, &g, k, c, v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* A Matrix Market file (coordinate real general|symmetric), as a user with a
 * file and no MatLoad would assemble it: every rank reads the whole (small)
 * file and sets the entries of its own rows. */
static PetscErrorCode assemble_mtx(const char *path, Mat *A) {
  char line[512], sym[32] = "";
  long long m = 0, n = 0, nnz = 0, i, j;
  double v;
  PetscInt rs, re, *count, maxrow = 1;
  FILE *f = fopen(path, "r");

  PetscFunctionBegin;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "cannot open %s", path);
  PetscCheck(fgets(line, sizeof(line), f) &&
                 sscanf(line, "%%%%MatrixMarket matrix coordinate real %31s", sym) == 1,
             PETSC_COMM_SELF, PETSC_ERR_FILE_UNEXPECTED, "%s: not coordinate real", path);
  while (fgets(line, sizeof(line), f) && line[0] == '%')
    continue;
  PetscCheck(sscanf(line, "%lld %lld %lld", &m, &n, &nnz) == 3 && m == n, PETSC_COMM_SELF,
             PETSC_ERR_FILE_UNEXPECTED, "%s: bad size line", path);
  PetscCall(PetscCalloc1(n, &count)); /* first pass: the longest row, to preallocate */
  for (long long k = 0; k < nnz; k++) {
    PetscCheck(fscanf(f, "%lld %lld %lf", &i, &j, &v) == 3, PETSC_COMM_SELF,
               PETSC_ERR_FILE_UNEXPECTED, "%s: entry %lld", path, k + 1);
    count[i - 1]++;
    if (i != j && !strcmp(sym, "symmetric")) count[j - 1]++;
  }
  for (PetscInt r = 0; r < n; r++)
    maxrow = PetscMax(maxrow, count[r]);
  PetscCall(PetscFree(count));
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, PETSC_DECIDE, PETSC_DECIDE, (PetscInt)n, (PetscInt)n));
  PetscCall(MatSetType(*A, MATAIJ));
  PetscCall(MatSeqAIJSetPreallocation(*A, maxrow, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, maxrow, NULL, maxrow, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rs, &re));
  rewind(f);
  while (fgets(line, sizeof(line), f) && line[0] == '%')
    continue;
  for (long long k = 0; k < nnz; k++) {
    PetscInt r, c;
    PetscCheck(fscanf(f, "%lld %lld %lf", &i, &j, &v) == 3, PETSC_COMM_SELF,
               PETSC_ERR_FILE_UNEXPECTED, "%s: entry %lld", path, k + 1);
    r = (PetscInt)(i - 1), c = (PetscInt)(j - 1);
    if (r >= rs && r < re) PetscCall(MatSetValue(*A, r, c, v, ADD_VALUES));
    if (i != j && !strcmp(sym, "symmetric") && c >= rs && c < re)
      PetscCall(MatSetValue(*A, c, r, v, ADD_VALUES));
  }
  fclose(f);
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode report(KSP ksp, Mat A, Vec x, Vec b, const char *tag) {
  KSPConvergedReason reason;
  PCFailedReason pcreason;
  PetscInt its;
  PetscReal rnorm, bnorm;
  PetscMPIInt size;
  PC pc;
  Vec r;

  PetscFunctionBegin;
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetFailedReason(pc, &pcreason));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rnorm));
  PetscCall(VecNorm(b, NORM_2, &bnorm));
  PetscCall(VecDestroy(&r));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscPrintf(
      PETSC_COMM_WORLD,
      "%s: np=%d iterations=%" PetscInt_FMT " reason=%s pc_failed=%s relres=%.3e\n", tag, size, its,
      KSPConvergedReasons[reason], PCFailedReasons[pcreason], (double)(rnorm / bnorm)));
#ifdef RINGRT_PETSC_LINKED
  {
    PetscInt lv_l, lv_u;
    const char *ordering, *failure;
    PetscMPIInt rank;
    PetscCall(PCRingrtGetOrdering(pc, &ordering));
    PetscCall(PCRingrtGetLevels(pc, &lv_l, &lv_u));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "linked: ordering=%s levels_l=%" PetscInt_FMT " levels_u=%" PetscInt_FMT
                          "\n",
                          ordering, lv_l, lv_u));
    PetscCall(PCRingrtGetFailure(pc, &failure));
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCall(PetscSynchronizedPrintf(PETSC_COMM_WORLD, "linked failure [%d]: %s\n", rank,
                                      failure[0] ? failure : "none"));
    PetscCall(PetscSynchronizedFlush(PETSC_COMM_WORLD, PETSC_STDOUT));
  }
#endif
  PetscFunctionReturn(0);
}

/* A solve that raised an error: wait (at most 10 s) until every rank got
 * there before returning it. PETSc prints a rank's error where it is
 * raised, but mpirun ends the job at the first process that exits nonzero,
 * which could cut off another rank's message (the zero-pivot case checks
 * the error on every rank). */
static PetscErrorCode await_failed_ranks(PetscErrorCode err) {
  MPI_Request req;
  int done = 0;
  if (!err || MPI_Ibarrier(PETSC_COMM_WORLD, &req) != MPI_SUCCESS) return err;
  for (double t0 = MPI_Wtime(); !done && MPI_Wtime() - t0 < 10.0;)
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  return err;
}

/* -guest_report: the process state a library must leave alone unless asked
 * (CPU affinity, OpenMP threads), as "CPUS THREADS". */
static void process_state(char *buf, size_t len) {
  cpu_set_t set;
  size_t n = 0;
  buf[0] = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && n + 8 < len; c++)
      if (CPU_ISSET(c, &set)) n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? "," : "", c);
  snprintf(buf + n, len - n, " %d", omp_get_max_threads());
}

int main(int argc, char **argv) {
  problem p = {"laplace2d", 30, -1, -1, 100.0};
  PetscBool resolve = PETSC_FALSE, from_file, reorder = PETSC_FALSE, ref = PETSC_FALSE;
  PetscBool guest = PETSC_FALSE;
  char before[4096], after[4096];
  char mtx[PETSC_MAX_PATH_LEN], reorder_after[32] = "";
  Mat A;
  Vec x, b, ones;
  KSP ksp;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
#ifdef RINGRT_PETSC_LINKED
  PetscCall(PCRingrtRegister());
#endif
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "ringrt PC test", NULL);
  PetscCall(PetscOptionsString("-problem", "laplace2d, laplace3d or convdiff2d", NULL, p.kind,
                               p.kind, sizeof(p.kind), NULL));
  PetscCall(PetscOptionsString("-mtx", "read this Matrix Market file instead", NULL, "", mtx,
                               sizeof(mtx), &from_file));
  PetscCall(PetscOptionsInt("-grid", "grid points per dimension", NULL, p.N, &p.N, NULL));
  PetscCall(PetscOptionsReal("-pe", "Peclet number (convdiff2d)", NULL, p.pe, &p.pe, NULL));
  PetscCall(PetscOptionsInt("-zero_row", "row whose values are all 0", NULL, p.zero_row,
                            &p.zero_row, NULL));
  PetscCall(PetscOptionsInt("-no_diagonal", "row stored without its diagonal entry", NULL,
                            p.no_diagonal, &p.no_diagonal, NULL));
  PetscCall(PetscOptionsString("-reorder_after", "linked: PCRingrtSetOrdering, solve again", NULL,
                               reorder_after, reorder_after, sizeof(reorder_after), &reorder));
  PetscCall(PetscOptionsBool("-ref", "then solve with a second KSP, options prefix ref_", NULL, ref,
                             &ref, NULL));
  PetscCall(PetscOptionsBool("-resolve", "solve again with 2 A (same pattern)", NULL, resolve,
                             &resolve, NULL));
  PetscCall(PetscOptionsBool("-guest_report", "print affinity and threads before and after", NULL,
                             guest, &guest, NULL));
  PetscOptionsEnd();

  if (from_file)
    PetscCall(assemble_mtx(mtx, &A));
  else
    PetscCall(assemble(&p, &A));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(x, &ones));
  PetscCall(VecSet(ones, 1.0));
  PetscCall(MatMult(A, ones, b));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 1000));
  PetscCall(KSPSetFromOptions(ksp));
  process_state(before, sizeof before);
  PetscCall(await_failed_ranks(KSPSolve(ksp, b, x)));
  PetscCall(report(ksp, A, x, b, "result"));
  if (resolve) { /* same pattern, new values: PETSc says SAME_NONZERO_PATTERN */
    PetscCall(MatScale(A, 2.0));
    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPSolve(ksp, b, x));
    PetscCall(report(ksp, A, x, b, "result"));
  }
  if (ref) { /* a second KSP, options prefix ref_, on the same system */
    KSP kref;
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &kref));
    PetscCall(KSPSetOptionsPrefix(kref, "ref_"));
    PetscCall(KSPSetOperators(kref, A, A));
    PetscCall(KSPSetTolerances(kref, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 1000));
    PetscCall(KSPSetFromOptions(kref));
    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPSolve(kref, b, x));
    PetscCall(report(kref, A, x, b, "reference"));
    PetscCall(KSPDestroy(&kref));
  }
#ifdef RINGRT_PETSC_LINKED
  if (reorder) { /* an option changed after PCSetUp: the next solve starts over */
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCRingrtSetOrdering(pc, reorder_after));
    PetscCall(VecSet(x, 0.0));
    PetscCall(KSPSolve(ksp, b, x));
    PetscCall(report(ksp, A, x, b, "result"));
  }
#endif
  PetscCall(KSPDestroy(&ksp));
  if (guest) {
    PetscMPIInt rank;
    process_state(after, sizeof after);
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCall(PetscSynchronizedPrintf(PETSC_COMM_WORLD, "guest: rank=%d before=%s after=%s\n",
                                      (int)rank, before, after));
    PetscCall(PetscSynchronizedFlush(PETSC_COMM_WORLD, PETSC_STDOUT));
  }
  PetscCall(VecDestroy(&ones));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}

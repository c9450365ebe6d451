/* The numeric factorization under PETSc's zero-pivot and shift rules
 * (-pc_factor_shift_type, -pc_factor_shift_amount, -pc_factor_zeropivot),
 * with PETSc's meaning: petsc 3.18's MatPivotCheck (petsc/private/matimpl.h)
 * and the retry loop of MatLUFactorNumeric_SeqAIJ (aijfact.c), which PCILU
 * runs at np 1. There a pivot pv of row i fails when
 *   NONE               |pv| <= zeropivot                 (a zero pivot: the PC fails)
 *   NONZERO            |pv| <= zeropivot * rs_i          (then the whole factorization
 *                      is redone with shift added to every diagonal entry of A: first
 *                      shift_amount, then doubled at each new failure)
 *   POSITIVE_DEFINITE  pv <= zeropivot * rs_i            (shift = fraction * 1.1 max(zeropivot,
 *                      max_i sum_j |a_ij| - |a_ii| - a_ii), the fraction bisected in (0, 1]
 *                      up to 5 times, and refined down after a success)
 * with rs_i the sum of |entries| of row i of the factors off the diagonal (L's
 * multipliers and U's row). PETSc adds the shift to a_ii before the row's
 * elimination, so adding it to A's diagonal values before ringrt's factor is
 * the same arithmetic; the tests run on ringrt's factors afterwards (read
 * back: rows before the first failing one in elimination order are exact,
 * whatever follows). INBLOCKS (|pv| <= zeropivot -> pv + shift_amount, no
 * retry) runs inside ringrt's factor as its additive pivot boost
 * (RRT_ILU0_BOOST_ADD, pc_ringrt.c), the same arithmetic at the same point
 * (after the row's elimination, before the pivot divides). A pivot still 0
 * after it is ringrt's zero pivot (PETSc would divide by it). */
#include <math.h>

#include "pc_ringrt_impl.h"

enum { PIVOT_OK = 0, PIVOT_ZERO, PIVOT_NONFINITE };

/* A failed factorization: the PC's failed reason (KSPSolve then ends with
 * KSP_DIVERGED_PC_FAILED) and the message for PCRingrtGetFailure and
 * PCView, or an error under PCSetErrorIfFailure. The message starts as
 * ringrt's do ("rank R: ..."): every rank has it. */
PetscErrorCode PCRingrtRecordFailure(PC pc, PCFailedReason reason, const char *message) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  PetscCheck(!pc->erroriffailure, PETSC_COMM_SELF, PETSC_ERR_MAT_LU_ZRPVT, "PC ringrt: %s",
             message);
  d->failed = PETSC_TRUE;
  PetscCall(PetscStrncpy(d->failure, message, sizeof(d->failure)));
  PetscCall(PCSetFailedReason(pc, reason));
  PetscCall(PetscInfo(pc, "ringrt ILU failed: %s\n", d->failure));
  PetscFunctionReturn(0);
}

/* Whether pivot pv (row off-diagonal sum rs) fails the rule's test. */
static int pivot_state(const PC_Ringrt *d, double pv, double rs) {
  double zero = (double)d->zeropivot;
  if (!isfinite(pv)) return PIVOT_NONFINITE; /* PETSc would go on; ringrt stops */
  switch (d->shift_type) {
  case MAT_SHIFT_NONZERO: return fabs(pv) <= zero * rs ? PIVOT_ZERO : PIVOT_OK;
  case MAT_SHIFT_POSITIVE_DEFINITE: return pv <= zero * rs ? PIVOT_ZERO : PIVOT_OK;
  default: return fabs(pv) <= zero ? PIVOT_ZERO : PIVOT_OK;
  }
}

/* The first row in elimination order (over all ranks) whose pivot fails:
 * *state PIVOT_OK if none, else its kind, global row and pivot. */
static PetscErrorCode first_failing_pivot(PC pc, int *state, PetscInt *row, double *pivot) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  MPI_Comm comm = PetscObjectComm((PetscObject)pc->pmat);
  int64_t best[2] = {INT64_MAX, INT64_MAX}, gbest[2]; /* position of a zero / non-finite pivot */
  double mine[2] = {0.0, 0.0}, found[2];              /* the row and pivot at that position */
  int64_t row_begin = rrt_sparse_row_begin(d->A);

  PetscFunctionBegin;
  RINGRT_CALL(d, rrt_ilu0_get_factors(d->ilu, d->fvals));
  for (int64_t i = 0; i < d->nloc; i++) {
    double rs = 0.0, pv = d->fvals[d->fdiag[i]];
    for (int64_t e = d->frowptr[i]; e < d->frowptr[i + 1]; e++)
      if (e != d->fdiag[i]) rs += fabs(d->fvals[e]);
    int s = pivot_state(d, pv, rs);
    if (s != PIVOT_OK && d->pos[i] < best[s - 1]) best[s - 1] = d->pos[i];
  }
  PetscCall(MPIU_Allreduce(best, gbest, 2, MPIU_INT64, MPI_MIN, comm));
  *state = gbest[0] == INT64_MAX && gbest[1] == INT64_MAX ? PIVOT_OK
           : gbest[0] <= gbest[1]                         ? PIVOT_ZERO
                                                          : PIVOT_NONFINITE;
  if (*state == PIVOT_OK) PetscFunctionReturn(0);
  for (int64_t i = 0; i < d->nloc; i++)
    if (d->pos[i] == gbest[*state - 1])
      mine[0] = (double)(row_begin + i), mine[1] = d->fvals[d->fdiag[i]];
  /* one rank owns the position: the others add zeros */
  PetscCall(MPIU_Allreduce(mine, found, 2, MPI_DOUBLE, MPI_SUM, comm));
  *row = (PetscInt)found[0];
  *pivot = found[1];
  PetscFunctionReturn(0);
}

/* A's values with `shift` added to every diagonal entry, to ringrt. */
static PetscErrorCode set_shift(PC_Ringrt *d, double shift) {
  PetscFunctionBegin;
  PetscCall(PetscArraycpy(d->svals, d->vals, d->nnz));
  for (int64_t i = 0; i < d->nloc; i++)
    d->svals[d->diag[i]] += shift;
  RINGRT_CALL(d, rrt_sparse_set_values(d->A, d->svals));
  PetscFunctionReturn(0);
}

/* POSITIVE_DEFINITE's largest shift: 1.1 max(zeropivot, max_i sum_j |a_ij|
 * - |a_ii| - a_ii) over all rows (aijfact.c). */
static PetscErrorCode pd_shift_top(PC pc, double *top) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  double t = (double)d->zeropivot;

  PetscFunctionBegin;
  for (int64_t i = 0; i < d->nloc; i++) {
    double a = d->vals[d->diag[i]], rs = -fabs(a) - a;
    for (int64_t e = d->rowptr[i]; e < d->rowptr[i + 1]; e++)
      rs += fabs(d->vals[e]);
    if (rs > t) t = rs;
  }
  PetscCall(
      MPIU_Allreduce(&t, top, 1, MPI_DOUBLE, MPI_MAX, PetscObjectComm((PetscObject)pc->pmat)));
  *top *= 1.1;
  PetscFunctionReturn(0);
}

/* Each row's diagonal entry in a pattern (global columns). */
static void find_diagonals(int64_t nloc, int64_t row_begin, const int64_t *rowptr,
                           const int64_t *cols, int64_t *diag) {
  for (int64_t i = 0; i < nloc; i++) {
    diag[i] = -1; /* ringrt's analysis refused a row without one */
    for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
      if (cols[e] == row_begin + i) diag[i] = e;
  }
}

/* The buffers the rules read: A's diagonal entries (the shifts), the
 * factors' pattern and its diagonal entries (ILU(k) adds fill), the
 * positions, the factors and the shifted values (once per analysis). */
static PetscErrorCode ensure_buffers(PC_Ringrt *d) {
  int64_t row_begin = rrt_sparse_row_begin(d->A), fnnz = rrt_ilu0_factor_nnz(d->ilu);
  int64_t *fcols;

  PetscFunctionBegin;
  if (d->diag) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1(d->nloc, &d->diag));
  PetscCall(PetscMalloc1(d->nloc, &d->fdiag));
  PetscCall(PetscMalloc1(d->nloc, &d->pos));
  PetscCall(PetscMalloc1(d->nloc + 1, &d->frowptr));
  PetscCall(PetscMalloc1(fnnz, &d->fvals));
  PetscCall(PetscMalloc1(d->nnz, &d->svals));
  PetscCall(PetscMalloc1(fnnz, &fcols));
  find_diagonals(d->nloc, row_begin, d->rowptr, d->cols, d->diag);
  RINGRT_CALL(d, rrt_ilu0_get_factor_pattern(d->ilu, d->frowptr, fcols));
  find_diagonals(d->nloc, row_begin, d->frowptr, fcols, d->fdiag);
  PetscCall(PetscFree(fcols));
  RINGRT_CALL(d, rrt_ilu0_get_positions(d->ilu, d->pos));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtFreeShift(PC_Ringrt *d) {
  PetscFunctionBegin;
  PetscCall(PetscFree(d->diag));
  PetscCall(PetscFree(d->fdiag));
  PetscCall(PetscFree(d->frowptr));
  PetscCall(PetscFree(d->pos));
  PetscCall(PetscFree(d->fvals));
  PetscCall(PetscFree(d->svals));
  PetscFunctionReturn(0);
}

/* One factorization: ringrt's own failures (a zero or non-finite pivot) are
 * returned in *st; others are errors. */
static PetscErrorCode factor_once(PC_Ringrt *d, rrt_status *st_out) {
  rrt_status st;

  PetscFunctionBegin;
  PetscCall(PCRingrtLogBegin(d, PCRINGRT_Factor, NULL, NULL, NULL));
  st = rrt_ilu0_factor(d->ilu);
  /* ringrt's count is over all ranks; each rank logs its share */
  PetscCall(PetscLogFlops(rrt_ilu0_factor_flops(d->ilu) / (double)rrt_ctx_size(d->ctx)));
  PetscCall(PCRingrtLogEnd(d, PCRINGRT_Factor, NULL, NULL, NULL));
  if (st != RRT_ERR_SINGULAR && st != RRT_ERR_NUMERIC) RINGRT_CALL(d, st);
  *st_out = st;
  d->shift_tries++;
  PetscFunctionReturn(0);
}

/* PETSc's shift search (NONZERO: doubling; POSITIVE_DEFINITE: bisection
 * then refinement), one whole factorization per try; *state is the
 * outcome of the last try. */
typedef struct {
  double amount, top, lo, hi, fraction;
  PetscInt n;
} shift_search;

/* The next shift after a failed try (MatPivotCheck_nz / _pd); false when
 * NONZERO's doubling ran out of range. */
static PetscBool next_shift(const PC_Ringrt *d, shift_search *s) {
  if (d->shift_type == MAT_SHIFT_NONZERO) {
    s->amount = s->n ? 2.0 * s->amount : (double)d->shift_amount;
    s->n++;
    return (PetscBool)(isfinite(s->amount) && s->n < 1000);
  }
  if (s->n == 5)
    s->fraction = s->hi;
  else
    s->lo = s->fraction, s->fraction = (s->hi + s->lo) / 2.0;
  s->amount = s->fraction * s->top;
  s->n++;
  return (PetscBool)(s->n < 1000);
}

/* POSITIVE_DEFINITE after a success: try a lower shift (MatPivotRefine). */
static PetscBool refine_shift(const PC_Ringrt *d, shift_search *s) {
  if (d->shift_type != MAT_SHIFT_POSITIVE_DEFINITE || !(s->fraction > 0) || s->n >= 5)
    return PETSC_FALSE;
  s->hi = s->fraction;
  s->fraction = (s->hi + s->lo) / 2.0;
  s->amount = s->fraction * s->top;
  s->n++;
  return PETSC_TRUE;
}

static PetscErrorCode report(PC pc, int state, PetscInt row, double pivot, PetscBool *ok) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  char msg[512];
  int rank = rrt_ctx_rank(d->ctx);

  PetscFunctionBegin;
  *ok = (PetscBool)(state == PIVOT_OK);
  if (*ok) PetscFunctionReturn(0);
  if (state == PIVOT_NONFINITE)
    PetscCall(PetscSNPrintf(
        msg, sizeof(msg),
        "rank %d: rrt_ilu0_factor: non-finite pivot at global row %" PetscInt_FMT " (0-based)",
        rank, row));
  else
    PetscCall(PetscSNPrintf(msg, sizeof(msg),
                            "rank %d: rrt_ilu0_factor: zero pivot at global row %" PetscInt_FMT
                            " (0-based): u_ii = %g after %" PetscInt_FMT
                            " factorizations with a diagonal shift (last %g)",
                            rank, row, pivot, d->shift_tries, d->shift_used));
  PetscCall(PCRingrtRecordFailure(
      pc, state == PIVOT_ZERO ? PC_FACTOR_NUMERIC_ZEROPIVOT : PC_FACTOR_OTHER, msg));
  PetscFunctionReturn(0);
}

/* NONE (or the user's -pc_ringrt_boost): one factorization. The analysis
 * gave ringrt the boost |u_ii| <= zeropivot -> 0 (pc_ringrt.c), so ringrt's
 * zero pivot, the first in elimination order, is PETSc's, and nothing is
 * read back. */
static PetscErrorCode factor_plain(PC pc, PetscBool *ok) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_status st;

  PetscFunctionBegin;
  PetscCall(factor_once(d, &st));
  *ok = (PetscBool)(st == RRT_SUCCESS);
  if (!*ok)
    PetscCall(PCRingrtRecordFailure(
        pc, st == RRT_ERR_SINGULAR ? PC_FACTOR_NUMERIC_ZEROPIVOT : PC_FACTOR_OTHER,
        rrt_ctx_last_error(d->ctx)));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtFactorShifted(PC pc, PetscBool *ok) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  shift_search s = {0.0, 0.0, 0.0, 1.0, 0.0, 0};
  int state = PIVOT_OK;
  PetscInt row = -1;
  double pivot = 0.0;
  rrt_status st;

  PetscFunctionBegin;
  d->shift_tries = 0;
  d->shift_used = 0.0;
  PetscCheck(!d->boost || d->shift_type == MAT_SHIFT_NONE, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_INCOMP,
             "PC ringrt: -pc_ringrt_boost and -pc_factor_shift_type %s both decide what a small "
             "pivot becomes: choose one",
             MatFactorShiftTypes[d->shift_type]);
  if (d->shift_type == MAT_SHIFT_NONE || d->shift_type == MAT_SHIFT_INBLOCKS || d->boost) {
    PetscCall(factor_plain(pc, ok));
    PetscFunctionReturn(0);
  }
  PetscCall(ensure_buffers(d));
  if (d->shift_type == MAT_SHIFT_POSITIVE_DEFINITE) PetscCall(pd_shift_top(pc, &s.top));
  for (;;) {
    PetscCall(factor_once(d, &st));
    rrt_ctx_clear_error(d->ctx); /* the pivot tests below see ringrt's failures too */
    PetscCall(first_failing_pivot(pc, &state, &row, &pivot));
    PetscBool again = state == PIVOT_ZERO ? next_shift(d, &s)
                      : state == PIVOT_OK ? refine_shift(d, &s)
                                          : PETSC_FALSE;
    if (!again) break;
    d->shift_used = s.amount;
    PetscCall(set_shift(d, s.amount));
  }
  PetscCall(report(pc, state, row, pivot, ok));
  PetscFunctionReturn(0);
}

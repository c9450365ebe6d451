/* -log_view: PETSc log events for ringrt's analysis, numeric factorization
 * and apply (flops from rrt_ilu0_factor_flops / the factors' entries), and
 * the reductions of ringrt's own communicator counted where PETSc counts
 * its own (the "Reduct" column), from ringrt's per-phase counters.
 *
 * What ringrt does not report yet, so is not shown: its point-to-point
 * messages and bytes (the halo exchanges: ringrt counts grouped exchanges,
 * not messages, and no bytes), and the forward / backward sweeps and the
 * halo waits inside one apply as separate times (ringrt times the apply
 * as a whole). PCView prints the grouped exchanges ringrt counted. */
#include "pc_ringrt_impl.h"

PetscLogEvent PCRINGRT_Analysis, PCRINGRT_Factor, PCRINGRT_Apply, PCRINGRT_ApplyTranspose;

PetscErrorCode PCRingrtLogRegister(void) {
  static PetscBool done = PETSC_FALSE;

  PetscFunctionBegin;
  if (done) PetscFunctionReturn(0);
  done = PETSC_TRUE;
  PetscCall(PetscLogEventRegister("RingrtAnalysis", PC_CLASSID, &PCRINGRT_Analysis));
  PetscCall(PetscLogEventRegister("RingrtFactor", PC_CLASSID, &PCRINGRT_Factor));
  PetscCall(PetscLogEventRegister("RingrtApply", PC_CLASSID, &PCRINGRT_Apply));
  PetscCall(PetscLogEventRegister("RingrtApplyTrans", PC_CLASSID, &PCRINGRT_ApplyTranspose));
  PetscFunctionReturn(0);
}

/* ringrt's reductions so far on this rank (rrt_allreduce and its variants). */
static double reductions(rrt_ctx_t ctx) {
  static const char *const names[] = {"allreduce", "allreduce_minloc", "allgather", "allgatherv"};
  double n = 0.0;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    int count = 0;
    (void)rrt_phase_seconds(ctx, names[i], &count);
    n += count;
  }
  return n;
}

PetscErrorCode PCRingrtLogCommBegin(PC_Ringrt *d, double *mark) {
  PetscFunctionBegin;
  *mark = d->ctx ? reductions(d->ctx) : 0.0;
  PetscFunctionReturn(0);
}

/* Called before the event's end: PETSc credits the event with the counts
 * added since its begin. */
PetscErrorCode PCRingrtLogCommEnd(PC_Ringrt *d, const double *mark) {
  PetscFunctionBegin;
#if defined(PETSC_USE_LOG)
  if (d->ctx) petsc_allreduce_ct += reductions(d->ctx) - *mark;
#endif
  PetscFunctionReturn(0);
}

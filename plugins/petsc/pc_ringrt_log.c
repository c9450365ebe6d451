/* -log_view: PETSc log events for ringrt's analysis, numeric factorization
 * and apply (flops from rrt_ilu0_factor_flops / the factors' entries), and
 * the traffic of ringrt's own communicator (rrt_ctx_comm_stats) credited
 * where PETSc counts its own: messages and bytes into the counters of
 * MPI_Isend / MPI_Irecv (the "Mess" and "AvgLen" columns and the summary's
 * "Messages" and "Message Lengths"), collectives into the reductions
 * ("Reduct", as PETSc counts MPI_Allreduce on more than one rank).
 *
 * PETSc credits an event with what its counters gained between the
 * event's begin and end, so ringrt's counts are moved over before each
 * begin (traffic before the event is not its) and before each end.
 *
 * What ringrt does not time separately, so is not shown: the forward and
 * backward sweeps and the halo waits inside one apply (ringrt times the
 * apply as a whole). */
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

PetscErrorCode PCRingrtLogComm(PC_Ringrt *d) {
  rrt_comm_stats now;

  PetscFunctionBegin;
  if (!d->ctx || rrt_ctx_comm_stats(d->ctx, &now) != RRT_SUCCESS) PetscFunctionReturn(0);
#if defined(PETSC_USE_LOG)
  petsc_isend_ct += (PetscLogDouble)(now.msgs_sent - d->logged.msgs_sent);
  petsc_isend_len += (PetscLogDouble)(now.bytes_sent - d->logged.bytes_sent);
  petsc_irecv_ct += (PetscLogDouble)(now.msgs_recv - d->logged.msgs_recv);
  petsc_irecv_len += (PetscLogDouble)(now.bytes_recv - d->logged.bytes_recv);
  if (rrt_ctx_size(d->ctx) > 1)
    petsc_allreduce_ct += (PetscLogDouble)(now.collectives - d->logged.collectives);
#endif
  d->logged = now;
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtLogBegin(PC_Ringrt *d, PetscLogEvent e, PetscObject o1, PetscObject o2,
                                PetscObject o3) {
  PetscFunctionBegin;
  PetscCall(PCRingrtLogComm(d));
  PetscCall(PetscLogEventBegin(e, o1, o2, o3, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtLogEnd(PC_Ringrt *d, PetscLogEvent e, PetscObject o1, PetscObject o2,
                              PetscObject o3) {
  PetscFunctionBegin;
  PetscCall(PCRingrtLogComm(d));
  PetscCall(PetscLogEventEnd(e, o1, o2, o3, 0));
  PetscFunctionReturn(0);
}

/* PC type "ringrt": PCSetUp builds ringrt's distributed CSR and ILU(0) from
 * the preconditioning matrix (again only the numeric factorization when
 * PETSc says the pattern is the same), PCApply is one L and one U solve,
 * PCReset/PCDestroy free them. Registered through PETSc's dynamic-library
 * hook, so -dll_append libringrt_petsc.so -pc_type ringrt works in any PETSc
 * program. */
#include "pc_ringrt_impl.h"

/* The analysis can meet a row without a diagonal entry (RRT_ERR_SINGULAR on
 * every rank: ringrt agrees on it and names the global row). As for PETSc's
 * own ILU that is the PC's failed reason, so KSPSolve ends with
 * KSP_DIVERGED_PC_FAILED, or an error under PCSetErrorIfFailure. *ok says
 * whether it succeeded. */
static PetscErrorCode check_analysis(PC pc, rrt_status st, PetscBool *ok) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  *ok = (PetscBool)(st == RRT_SUCCESS);
  if (st == RRT_SUCCESS) PetscFunctionReturn(0);
  if (st != RRT_ERR_SINGULAR && st != RRT_ERR_NUMERIC) RINGRT_CALL(d, st);
  PetscCall(PCRingrtRecordFailure(
      pc, st == RRT_ERR_SINGULAR ? PC_FACTOR_STRUCT_ZEROPIVOT : PC_FACTOR_OTHER,
      rrt_ctx_last_error(d->ctx)));
  PetscFunctionReturn(0);
}

/* The context on the matrix's communicator (ringrt dups it). */
static PetscErrorCode ensure_context(PC pc) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  rrt_status st;

  PetscFunctionBegin;
  if (d->ctx) PetscFunctionReturn(0);
  cfg.backend = d->backend;
  cfg.bind = d->bind;
  st = rrt_ctx_create(PetscObjectComm((PetscObject)pc->pmat), &cfg, &d->ctx);
  /* no context keeps the message: ringrt printed it to stderr */
  PetscCheck(st == RRT_SUCCESS, PetscObjectComm((PetscObject)pc), PETSC_ERR_LIB,
             "PC ringrt: creating the ringrt context (backend %s) failed: %s",
             rrt_backend_name(d->backend), rrt_status_string(st));
  PetscFunctionReturn(0);
}

/* ringrt's ILU options from the PC's. */
static rrt_ilu0_options ilu_options(const PC_Ringrt *d) {
  rrt_ilu0_options opts = RRT_ILU0_OPTIONS_INITIALIZER;
  opts.ordering = d->ordering;
  opts.boost = d->boost;
  opts.boost_tol = d->boost_tol;
  opts.boost_value = d->boost_value;
  if (!d->boost && d->shift_type == MAT_SHIFT_NONE && d->zeropivot > 0) {
    /* PETSc's NONE test, |u_ii| <= zeropivot, inside ringrt's factor: such a
     * pivot becomes 0, which ringrt reports as the zero pivot of the first
     * such row in elimination order (pc_ringrt_shift.c) */
    opts.boost = RRT_ILU0_BOOST_REPLACE;
    opts.boost_tol = d->zeropivot;
    opts.boost_value = 0.0;
  } else if (!d->boost && d->shift_type == MAT_SHIFT_INBLOCKS) {
    /* PETSc's MatPivotCheck_inblocks: |pv| <= zeropivot -> pv + shift
     * amount, once the row is eliminated, and on with the next row */
    opts.boost = RRT_ILU0_BOOST_ADD;
    opts.boost_tol = d->zeropivot;
    opts.boost_value = d->shift_amount;
  }
  opts.factors_f32 = d->single;
  opts.dd_blocks = (int)d->dd_blocks;
  opts.levels = (int)d->levels;
  return opts;
}

/* A new pattern: the CSR, the analysis (ordering, levels, plans), the
 * vector copies in backend memory when that is not the host. -info says
 * where the time went (the first PCSetUp's profile, bench/ilu_petsc_plugin.py). */
static PetscErrorCode analyse(PC pc, PetscBool *ok) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_ilu0_options opts = ilu_options(d);
  int64_t n, row_begin;
  PetscLogDouble t[4];
  rrt_status st;

  PetscFunctionBegin;
  PetscCall(PCRingrtDrop(pc, PETSC_FALSE));
  PetscCall(ensure_context(pc));
  PetscCall(PetscTime(&t[0]));
  PetscCall(PCRingrtReadPattern(pc->pmat, d, &n, &row_begin));
  PetscCall(PCRingrtLogBegin(d, PCRINGRT_Analysis, (PetscObject)pc, (PetscObject)pc->pmat, NULL));
  PetscCall(PetscTime(&t[1]));
  st = rrt_sparse_create(d->ctx, n, row_begin, d->nloc, d->rowptr, d->cols, d->vals, &d->A);
  PetscCall(PetscTime(&t[2]));
  /* a row without a diagonal entry is RRT_ERR_SINGULAR here */
  if (st == RRT_SUCCESS) st = rrt_ilu0_create(d->A, &opts, &d->ilu);
  PetscCall(PetscTime(&t[3]));
  PetscCall(PCRingrtLogEnd(d, PCRINGRT_Analysis, (PetscObject)pc, (PetscObject)pc->pmat, NULL));
  PetscCall(PetscInfo(pc,
                      "ringrt setup on rank %d: read the rows %.4f s, distributed CSR "
                      "(rrt_sparse_create) %.4f s, ILU analysis (rrt_ilu0_create) %.4f s\n",
                      d->ctx ? rrt_ctx_rank(d->ctx) : -1, (double)(t[1] - t[0]),
                      (double)(t[2] - t[1]), (double)(t[3] - t[2])));
  if (!d->A) RINGRT_CALL(d, st);
  PetscCall(check_analysis(pc, st, ok));
  if (!*ok) PetscFunctionReturn(0);
  d->analyses++;
  if (rrt_ctx_backend(d->ctx) == RRT_BACKEND_CUDA) {
    size_t bytes = (size_t)d->nloc * sizeof(double);
    RINGRT_CALL(d, rrt_malloc(d->ctx, bytes, (void **)&d->r));
    RINGRT_CALL(d, rrt_malloc(d->ctx, bytes, (void **)&d->z));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCSetUp_Ringrt(PC pc) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  PetscBool ok = PETSC_TRUE;

  PetscFunctionBegin;
  d->failed = PETSC_FALSE;
  d->failure[0] = '\0';
  PetscCall(PCSetFailedReason(pc, PC_NOERROR));
  if (pc->setupcalled && pc->flag == SAME_NONZERO_PATTERN && d->ilu) {
    PetscBool same;
    PetscCall(PCRingrtReadValues(pc->pmat, d, &same));
    /* all ranks take the same path, whatever one rank saw */
    same = (PetscBool)(rrt_agree(d->ctx, same ? RRT_SUCCESS : RRT_ERR_INVALID_ARG) == RRT_SUCCESS);
    rrt_ctx_clear_error(d->ctx);
    if (same)
      RINGRT_CALL(d, rrt_sparse_set_values(d->A, d->vals));
    else
      PetscCall(analyse(pc, &ok));
  } else {
    PetscCall(analyse(pc, &ok));
  }
  if (ok) {
    PetscCall(PCRingrtFactorShifted(pc, &ok));
    if (ok) d->factorizations++;
  }
  PetscCall(PCRingrtLogComm(d)); /* the rest of PCSetUp's traffic (agreements) */
  PetscFunctionReturn(0);
}

/* y = M^-1 x (transpose: M^-T x) on this rank's rows; backend copies of
 * the vectors where the backend is not the host. */
static PetscErrorCode apply(PC pc, Vec x, Vec y, PetscBool transpose) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_status (*solve)(rrt_ilu0_t, const double *, double *) =
      transpose ? rrt_ilu0_apply_transpose : rrt_ilu0_apply;
  PetscLogEvent event = transpose ? PCRINGRT_ApplyTranspose : PCRINGRT_Apply;
  const PetscScalar *r;
  PetscScalar *z;
  size_t bytes = (size_t)d->nloc * sizeof(double);

  PetscFunctionBegin;
  if (d->failed || !d->ilu) { /* as MatSolve after a failed factorization */
    PetscCall(VecSetInf(y));
    PetscFunctionReturn(0);
  }
  PetscCall(PCRingrtLogBegin(d, event, (PetscObject)pc, (PetscObject)x, (PetscObject)y));
  PetscCall(VecGetArrayRead(x, &r));
  PetscCall(VecGetArrayWrite(y, &z));
  if (d->r) {
    RINGRT_CALL(d, rrt_memcpy_to_backend(d->ctx, d->r, r, bytes));
    RINGRT_CALL(d, solve(d->ilu, d->r, d->z));
    RINGRT_CALL(d, rrt_memcpy_to_host(d->ctx, z, d->z, bytes));
  } else {
    RINGRT_CALL(d, solve(d->ilu, r, z));
  }
  PetscCall(VecRestoreArrayWrite(y, &z));
  PetscCall(VecRestoreArrayRead(x, &r));
  /* ringrt's count is over all ranks (the same for the transpose: the same
   * entries); each rank logs its share */
  PetscCall(PetscLogFlops(rrt_ilu0_apply_flops(d->ilu) / (double)rrt_ctx_size(d->ctx)));
  PetscCall(PCRingrtLogEnd(d, event, (PetscObject)pc, (PetscObject)x, (PetscObject)y));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCApply_Ringrt(PC pc, Vec x, Vec y) {
  PetscFunctionBegin;
  PetscCall(apply(pc, x, y, PETSC_FALSE));
  PetscFunctionReturn(0);
}

/* KSPBICG, KSPSolveTranspose, adjoint solves: (LU)^-T through the same levels. */
static PetscErrorCode PCApplyTranspose_Ringrt(PC pc, Vec x, Vec y) {
  PetscFunctionBegin;
  PetscCall(apply(pc, x, y, PETSC_TRUE));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCReset_Ringrt(PC pc) {
  PetscFunctionBegin;
  PetscCall(PCRingrtDrop(pc, PETSC_FALSE));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCDestroy_Ringrt(PC pc) {
  PetscFunctionBegin;
  PetscCall(PCRingrtDrop(pc, PETSC_TRUE));
  PetscCall(PCRingrtClearSetters(pc));
  PetscCall(PetscFree(pc->data));
  PetscFunctionReturn(0);
}

/*MC
   PCRINGRT - ringrt's exact global ILU(0): level-scheduled over all ranks,
   the same preconditioner for every rank count (see ringrt_petsc.h for the
   options database keys).
M*/
PETSC_EXTERN PetscErrorCode PCCreate_Ringrt(PC pc) {
  PC_Ringrt *d;

  PetscFunctionBegin;
  PetscCall(PetscNew(&d));
  d->ordering = RRT_ILU_ORDER_NATURAL;
  d->boost_tol = 0.0;
  d->boost_value = 1.0;
  d->backend = RRT_BACKEND_DEFAULT;
  d->bind = -1;
  /* PETSc's factor defaults (PCFactorInitialize): no shift, 100 eps */
  d->shift_type = MAT_SHIFT_NONE;
  d->shift_amount = 100.0 * PETSC_MACHINE_EPSILON;
  d->zeropivot = 100.0 * PETSC_MACHINE_EPSILON;
  PetscCall(PCRingrtLogRegister());
  pc->data = d;
  pc->ops->setup = PCSetUp_Ringrt;
  pc->ops->apply = PCApply_Ringrt;
  pc->ops->reset = PCReset_Ringrt;
  pc->ops->destroy = PCDestroy_Ringrt;
  pc->ops->view = PCView_Ringrt;
  pc->ops->setfromoptions = PCSetFromOptions_Ringrt;
  pc->ops->applytranspose = PCApplyTranspose_Ringrt;
  PetscCall(PCRingrtComposeSetters(pc));
  PetscFunctionReturn(0);
}

PETSC_EXTERN PetscErrorCode PCRingrtRegister(void) {
  PetscFunctionBegin;
  PetscCall(PCRingrtLogRegister());
  PetscCall(PCRegister(PCRINGRT, PCCreate_Ringrt));
  PetscFunctionReturn(0);
}

/* PETSc looks this name up in a library it opens (-dll_append): "PetscDLLibraryRegister_" + the
 * file name without "lib" and the suffix (petsc 3.18, src/sys/dll/dl.c). */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_ringrt_petsc(void) {
  PetscFunctionBegin;
  PetscCall(PCRingrtRegister());
  PetscFunctionReturn(0);
}

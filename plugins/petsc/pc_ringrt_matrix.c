/* This rank's rows of the preconditioning matrix, as ringrt takes them:
 * PETSc's ownership range is the row block (rows never move), columns are
 * global and sorted (MatGetRow gives them so for SeqAIJ and MPIAIJ), 64-bit
 * indices whatever PetscInt is. */
#include "pc_ringrt_impl.h"

static PetscErrorCode check_type(Mat P, int64_t *n, int64_t *row_begin, int64_t *nloc) {
  PetscBool aij;
  PetscInt m, nc, rs, re;
  MatType type;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)P, &aij, MATSEQAIJ, MATMPIAIJ, ""));
  PetscCall(MatGetType(P, &type));
  PetscCheck(aij, PetscObjectComm((PetscObject)P), PETSC_ERR_SUP,
             "PC ringrt: the preconditioning matrix must be %s or %s, got %s", MATSEQAIJ, MATMPIAIJ,
             type);
  PetscCall(MatGetSize(P, &m, &nc));
  PetscCheck(m == nc, PetscObjectComm((PetscObject)P), PETSC_ERR_ARG_SIZ,
             "PC ringrt: the preconditioning matrix must be square, got %" PetscInt_FMT
             " x %" PetscInt_FMT,
             m, nc);
  PetscCall(MatGetOwnershipRange(P, &rs, &re));
  *n = m;
  *row_begin = rs;
  *nloc = re - rs;
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtFreeRows(PC_Ringrt *d) {
  PetscFunctionBegin;
  PetscCall(PetscFree(d->rowptr));
  PetscCall(PetscFree(d->cols));
  PetscCall(PetscFree(d->vals));
  d->nloc = d->nnz = 0;
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtReadPattern(Mat P, PC_Ringrt *d, int64_t *n, int64_t *row_begin) {
  int64_t nloc;

  PetscFunctionBegin;
  PetscCall(PCRingrtFreeRows(d));
  PetscCall(check_type(P, n, row_begin, &nloc));
  PetscCall(PetscMalloc1(nloc + 1, &d->rowptr));
  d->rowptr[0] = 0;
  for (int64_t i = 0; i < nloc; i++) { /* first pass: row lengths */
    PetscInt len;
    PetscCall(MatGetRow(P, (PetscInt)(*row_begin + i), &len, NULL, NULL));
    d->rowptr[i + 1] = d->rowptr[i] + len;
    PetscCall(MatRestoreRow(P, (PetscInt)(*row_begin + i), &len, NULL, NULL));
  }
  d->nloc = nloc;
  d->nnz = d->rowptr[nloc];
  PetscCall(PetscMalloc1(d->nnz, &d->cols));
  PetscCall(PetscMalloc1(d->nnz, &d->vals));
  for (int64_t i = 0; i < nloc; i++) {
    const PetscInt *cols;
    const PetscScalar *vals;
    PetscInt len, row = (PetscInt)(*row_begin + i);
    PetscCall(MatGetRow(P, row, &len, &cols, &vals));
    for (PetscInt k = 0; k < len; k++) {
      d->cols[d->rowptr[i] + k] = cols[k];
      d->vals[d->rowptr[i] + k] = vals[k];
    }
    PetscCall(MatRestoreRow(P, row, &len, &cols, &vals));
  }
  PetscFunctionReturn(0);
}

/* New values on the pattern read before. *same: every local row still has
 * its length (PETSc said SAME_NONZERO_PATTERN, so it has; the caller agrees
 * on it over the ranks before relying on it). */
PetscErrorCode PCRingrtReadValues(Mat P, PC_Ringrt *d, PetscBool *same) {
  PetscInt rs, re;

  PetscFunctionBegin;
  PetscCall(MatGetOwnershipRange(P, &rs, &re));
  *same = (PetscBool)(re - rs == d->nloc);
  for (int64_t i = 0; *same && i < d->nloc; i++) {
    const PetscScalar *vals;
    PetscInt len, row = rs + (PetscInt)i;
    PetscCall(MatGetRow(P, row, &len, NULL, &vals));
    if (len == d->rowptr[i + 1] - d->rowptr[i])
      PetscCall(PetscArraycpy(d->vals + d->rowptr[i], vals, len));
    else
      *same = PETSC_FALSE;
    PetscCall(MatRestoreRow(P, row, &len, NULL, &vals));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtDrop(PC pc, PetscBool context) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  RINGRT_CALL(d, rrt_ilu0_destroy(d->ilu));
  RINGRT_CALL(d, rrt_sparse_destroy(d->A));
  d->ilu = NULL;
  d->A = NULL;
  if (d->ctx) {
    RINGRT_CALL(d, rrt_free(d->ctx, d->r));
    RINGRT_CALL(d, rrt_free(d->ctx, d->z));
  }
  d->r = d->z = NULL;
  PetscCall(PCRingrtFreeShift(d));
  PetscCall(PCRingrtFreeRows(d));
  if (context && d->ctx) {
    rrt_ctx_t ctx = d->ctx;
    d->ctx = NULL;
    RINGRT_CALL(d, rrt_ctx_destroy(ctx));
  }
  PetscFunctionReturn(0);
}

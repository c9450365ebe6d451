/* This rank's rows of the preconditioning matrix, as ringrt takes them:
 * PETSc's ownership range is the row block (rows never move), columns are
 * global and sorted, 64-bit indices whatever PetscInt is. Read straight from
 * the AIJ arrays (MatGetRow per row costs a call and, for MPIAIJ, a merge
 * into a scratch row for each of a million rows). */
#include "pc_ringrt_impl.h"

/* The AIJ matrix the rows are read from: P itself for every AIJ type
 * (seqaij/mpiaij and the subclasses that keep their storage: aijperm,
 * aijsell, aijmkl, aijcrl, aijcusparse, aijkokkos, ...), or for baij and
 * sbaij P converted to AIJ (MatConvert: one more copy of the matrix, in
 * time and memory, for each PCSetUp; freed once the rows are read). */
static PetscErrorCode open_rows(Mat P, Mat *S, PetscBool *mpi) {
  PetscBool seq, block;
  MatType type;

  PetscFunctionBegin;
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)P, MATSEQAIJ, &seq));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)P, MATMPIAIJ, mpi));
  if (seq || *mpi) {
    PetscCall(PetscObjectReference((PetscObject)P));
    *S = P;
    PetscFunctionReturn(0);
  }
  PetscCall(MatGetType(P, &type));
  PetscCall(PetscObjectTypeCompareAny((PetscObject)P, &block, MATSEQBAIJ, MATMPIBAIJ, MATSEQSBAIJ,
                                      MATMPISBAIJ, ""));
  PetscCheck(block, PetscObjectComm((PetscObject)P), PETSC_ERR_SUP,
             "PC ringrt: the preconditioning matrix must be AIJ (seqaij, mpiaij or a subtype: "
             "aijperm, aijsell, aijmkl, aijcusparse, aijkokkos, ...) or baij/sbaij (converted to "
             "AIJ), got %s",
             type);
  PetscCall(
      PetscInfo(P, "PC ringrt: converting %s to AIJ (a copy of the matrix per PCSetUp)\n", type));
  PetscCall(MatConvert(P, MATAIJ, MAT_INITIAL_MATRIX, S));
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)*S, MATMPIAIJ, mpi));
  PetscFunctionReturn(0);
}

static PetscErrorCode check_size(Mat P, int64_t *n, int64_t *row_begin, int64_t *nloc) {
  PetscInt m, nc, rs, re;

  PetscFunctionBegin;
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

/* The local CSR blocks of an AIJ matrix, read in place: for seqaij the whole
 * matrix (od NULL); for mpiaij the diagonal block (local columns, from
 * cstart) and the off-diagonal one (columns garray[j]). Reading the value
 * arrays (MatSeqAIJGetArrayRead) brings a device type's values to the host. */
typedef struct {
  Mat ad, od;
  const PetscInt *ai, *aj, *oi, *oj, *garray;
  const PetscScalar *av, *ov;
  PetscInt cstart;
} aij_blocks;

static PetscErrorCode blocks_get(Mat S, PetscBool mpi, aij_blocks *b) {
  PetscInt nr;
  PetscBool done;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(b, sizeof(*b)));
  if (mpi) {
    PetscCall(MatMPIAIJGetSeqAIJ(S, &b->ad, &b->od, &b->garray));
    PetscCall(MatGetOwnershipRangeColumn(S, &b->cstart, NULL));
    PetscCall(MatGetRowIJ(b->od, 0, PETSC_FALSE, PETSC_FALSE, &nr, &b->oi, &b->oj, &done));
    PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "PC ringrt: MatGetRowIJ failed");
    PetscCall(MatSeqAIJGetArrayRead(b->od, &b->ov));
  } else {
    b->ad = S;
  }
  PetscCall(MatGetRowIJ(b->ad, 0, PETSC_FALSE, PETSC_FALSE, &nr, &b->ai, &b->aj, &done));
  PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "PC ringrt: MatGetRowIJ failed");
  PetscCall(MatSeqAIJGetArrayRead(b->ad, &b->av));
  PetscFunctionReturn(0);
}

static PetscErrorCode blocks_restore(aij_blocks *b) {
  PetscInt nr;
  PetscBool done;

  PetscFunctionBegin;
  PetscCall(MatSeqAIJRestoreArrayRead(b->ad, &b->av));
  PetscCall(MatRestoreRowIJ(b->ad, 0, PETSC_FALSE, PETSC_FALSE, &nr, &b->ai, &b->aj, &done));
  if (b->od) {
    PetscCall(MatSeqAIJRestoreArrayRead(b->od, &b->ov));
    PetscCall(MatRestoreRowIJ(b->od, 0, PETSC_FALSE, PETSC_FALSE, &nr, &b->oi, &b->oj, &done));
  }
  PetscFunctionReturn(0);
}

static int64_t row_length(const aij_blocks *b, int64_t i) {
  return b->ai[i + 1] - b->ai[i] + (b->od ? b->oi[i + 1] - b->oi[i] : 0);
}

/* Row i with global, sorted columns (as MatGetRow_MPIAIJ merges them: the
 * off-diagonal columns left of the diagonal block, the block, the rest;
 * garray is sorted). cols may be NULL (values only). */
static void copy_row(const aij_blocks *b, int64_t i, int64_t *cols, double *vals) {
  int64_t k = 0, o = b->od ? b->oi[i] : 0, o1 = b->od ? b->oi[i + 1] : 0;
  for (; o < o1 && b->garray[b->oj[o]] < b->cstart; o++, k++) {
    if (cols) cols[k] = b->garray[b->oj[o]];
    vals[k] = b->ov[o];
  }
  for (PetscInt e = b->ai[i]; e < b->ai[i + 1]; e++, k++) {
    if (cols) cols[k] = b->aj[e] + b->cstart;
    vals[k] = b->av[e];
  }
  for (; o < o1; o++, k++) {
    if (cols) cols[k] = b->garray[b->oj[o]];
    vals[k] = b->ov[o];
  }
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
  int64_t nloc = 0;
  PetscBool mpi;
  aij_blocks b;
  Mat S;

  PetscFunctionBegin;
  PetscCall(PCRingrtFreeRows(d));
  PetscCall(check_size(P, n, row_begin, &nloc));
  PetscCall(open_rows(P, &S, &mpi));
  PetscCall(blocks_get(S, mpi, &b));
  PetscCall(PetscMalloc1(nloc + 1, &d->rowptr));
  d->rowptr[0] = 0;
  for (int64_t i = 0; i < nloc; i++)
    d->rowptr[i + 1] = d->rowptr[i] + row_length(&b, i);
  d->nloc = nloc;
  d->nnz = d->rowptr[nloc];
  PetscCall(PetscMalloc1(d->nnz, &d->cols));
  PetscCall(PetscMalloc1(d->nnz, &d->vals));
  for (int64_t i = 0; i < nloc; i++)
    copy_row(&b, i, d->cols + d->rowptr[i], d->vals + d->rowptr[i]);
  PetscCall(blocks_restore(&b));
  PetscCall(MatDestroy(&S));
  PetscFunctionReturn(0);
}

/* New values on the pattern read before. *same: every local row still has
 * its length (PETSc said SAME_NONZERO_PATTERN, so it has; the caller agrees
 * on it over the ranks before relying on it). */
PetscErrorCode PCRingrtReadValues(Mat P, PC_Ringrt *d, PetscBool *same) {
  PetscInt rs, re;
  PetscBool mpi;
  aij_blocks b;
  Mat S;

  PetscFunctionBegin;
  PetscCall(MatGetOwnershipRange(P, &rs, &re));
  *same = (PetscBool)(re - rs == d->nloc);
  if (!*same) PetscFunctionReturn(0);
  PetscCall(open_rows(P, &S, &mpi));
  PetscCall(blocks_get(S, mpi, &b));
  for (int64_t i = 0; *same && i < d->nloc; i++)
    *same = (PetscBool)(row_length(&b, i) == d->rowptr[i + 1] - d->rowptr[i]);
  for (int64_t i = 0; *same && i < d->nloc; i++)
    copy_row(&b, i, NULL, d->vals + d->rowptr[i]);
  PetscCall(blocks_restore(&b));
  PetscCall(MatDestroy(&S));
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
    PetscCall(PCRingrtLogComm(d)); /* the counts end with the context */
    d->ctx = NULL;
    RINGRT_CALL(d, rrt_ctx_destroy(ctx));
    PetscCall(PetscMemzero(&d->logged, sizeof(d->logged)));
  }
  PetscFunctionReturn(0);
}

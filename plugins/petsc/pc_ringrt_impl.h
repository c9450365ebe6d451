/* The ringrt PC's private state, shared by its three files: pc_ringrt.c
 * (the PC operations), pc_ringrt_options.c (options, setters, view) and
 * pc_ringrt_matrix.c (this rank's rows of the PETSc matrix, and dropping
 * the state built from them). They call downwards only: pc_ringrt.c ->
 * pc_ringrt_options.c -> pc_ringrt_matrix.c. */
#ifndef RINGRT_PETSC_IMPL_H
#define RINGRT_PETSC_IMPL_H

#include <inttypes.h>

#include <petsc/private/pcimpl.h>
#include <ringrt/ringrt.h>

#include "ringrt_petsc.h"

/* ringrt factors double-precision real matrices; a PETSc built otherwise
 * cannot hand it its arrays without a conversion this plugin does not do. */
#if defined(PETSC_USE_COMPLEX) || !defined(PETSC_USE_REAL_DOUBLE)
#error "libringrt_petsc needs a PETSc built with real double-precision scalars"
#endif

typedef struct {
  /* options (PCSetFromOptions, PCRingrtSet*) */
  rrt_ilu_ordering ordering;
  PetscBool boost;
  PetscReal boost_tol, boost_value;
  PetscBool single; /* f32 factors in the apply */
  rrt_backend backend;
  int bind;           /* -1: RINGRT_BIND decides, else 0/1 */
  PetscInt dd_blocks; /* subdomains of the dd orderings (0: one per rank) */
  PetscInt levels;    /* ILU(k) levels of fill */
  /* PETSc's factor options (-pc_factor_*, PCFactorSet*), PETSc's meaning */
  MatFactorShiftType shift_type;
  PetscReal shift_amount; /* PETSc's shiftamount (default 100 eps) */
  PetscReal zeropivot;    /* PETSc's zeropivot (default 100 eps) */
  /* state, built by PCSetUp */
  rrt_ctx_t ctx;
  rrt_sparse_t A;
  rrt_ilu0_t ilu;
  int64_t nloc, nnz;      /* this rank's rows and entries */
  int64_t *rowptr, *cols; /* this rank's pattern, global columns */
  double *vals;           /* its values, refilled for a new factorization */
  double *r, *z;          /* backend copies of the vectors (cuda only) */
  int64_t *diag;          /* each local row's diagonal entry in vals (shifts) */
  double *svals;          /* vals with a diagonal shift (NONZERO, POSITIVE_DEFINITE) */
  int64_t *frowptr;       /* the factors' pattern (A's with the ILU(k) fill), */
  int64_t *fdiag;         /* each row's diagonal entry in it, */
  double *fvals;          /* and the factors, read back for PETSc's pivot tests */
  int64_t *pos;           /* each local row's position in the elimination order */
  PetscReal shift_used;   /* the diagonal shift of the last factorization */
  PetscInt shift_tries;   /* factorizations it took */
  PetscBool failed;       /* the last factorization hit a zero pivot */
  char failure[512];      /* ringrt's message for it (names the row) */
  PetscInt analyses, factorizations;
  rrt_comm_stats logged; /* ringrt's traffic already credited to PETSc's log */
} PC_Ringrt;

/* A ringrt call that fails is a PETSc error carrying ringrt's message
 * (ringrt agrees on failure, so every rank raises it). */
#define RINGRT_CALL(d, call)                                                                       \
  do {                                                                                             \
    rrt_status st_ = (call);                                                                       \
    PetscCheck(st_ == RRT_SUCCESS, PETSC_COMM_SELF, PETSC_ERR_LIB, "PC ringrt: %s (%s)",           \
               (d)->ctx ? rrt_ctx_last_error((d)->ctx) : #call, rrt_status_string(st_));           \
  } while (0)

/* pc_ringrt_shift.c: the numeric factorization under PETSc's shift rule */
PetscErrorCode PCRingrtFactorShifted(PC pc, PetscBool *ok);
PetscErrorCode PCRingrtRecordFailure(PC pc, PCFailedReason reason, const char *message);
PetscErrorCode PCRingrtFreeShift(PC_Ringrt *d);

/* pc_ringrt_log.c: -log_view events */
extern PetscLogEvent PCRINGRT_Analysis, PCRINGRT_Factor, PCRINGRT_Apply, PCRINGRT_ApplyTranspose;
PetscErrorCode PCRingrtLogRegister(void);
/* Credit ringrt's traffic since the last call to PETSc's message and
 * reduction counters; the Begin/End pair does so around one event. */
PetscErrorCode PCRingrtLogComm(PC_Ringrt *d);
PetscErrorCode PCRingrtLogBegin(PC_Ringrt *d, PetscLogEvent e, PetscObject o1, PetscObject o2,
                                PetscObject o3);
PetscErrorCode PCRingrtLogEnd(PC_Ringrt *d, PetscLogEvent e, PetscObject o1, PetscObject o2,
                              PetscObject o3);

/* pc_ringrt_matrix.c */
PetscErrorCode PCRingrtReadPattern(Mat P, PC_Ringrt *d, int64_t *n, int64_t *row_begin);
PetscErrorCode PCRingrtReadValues(Mat P, PC_Ringrt *d, PetscBool *same);
PetscErrorCode PCRingrtFreeRows(PC_Ringrt *d);
/* Drop the factors and the rows (and with `context`, the ringrt context):
 * the next PCSetUp starts over. */
PetscErrorCode PCRingrtDrop(PC pc, PetscBool context);

/* pc_ringrt_options.c */
PetscErrorCode PCSetFromOptions_Ringrt(PC pc, PetscOptionItems *PetscOptionsObject);
PetscErrorCode PCView_Ringrt(PC pc, PetscViewer viewer);
PetscErrorCode PCRingrtComposeSetters(PC pc);
PetscErrorCode PCRingrtClearSetters(PC pc);

#endif

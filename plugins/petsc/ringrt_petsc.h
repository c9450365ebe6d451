/* ringrt's exact global ILU(0) as a PETSc preconditioner: PC type "ringrt".
 *
 * Any PETSc program gets it without relinking:
 *     mpirun -np 4 ./app -dll_append /path/libringrt_petsc.so -pc_type ringrt
 * (PETSc calls PetscDLLibraryRegister_ringrt_petsc when it opens the
 * library). A program that links libringrt_petsc.so calls
 * PCRingrtRegister() once after PetscInitialize instead.
 *
 * The PC factors the preconditioning matrix (any AIJ type, read in place
 * with PETSc's row blocks as they are: rows never move; baij/sbaij
 * converted to AIJ) with ringrt's level-scheduled ILU(k) on a ringrt
 * context over the matrix's communicator. The preconditioner is the ILU of
 * the whole matrix, the same for every rank count (PETSc's parallel ILU is
 * block Jacobi, which changes with it).
 *
 * Options database (with the PC's prefix; docs/ilu.md has the full table):
 *   -pc_ringrt_ordering <natural>        elimination order (names: -help)
 *   -pc_ringrt_dd_blocks <0>             subdomains of the dd orderings (0: one per rank)
 *   -pc_ringrt_levels, -pc_factor_levels <0>  levels of fill
 *   -pc_factor_shift_type <NONE>         NONE, NONZERO, POSITIVE_DEFINITE (PETSc's meaning)
 *   -pc_factor_shift_amount, -pc_factor_zeropivot <2.22e-14>
 *   -pc_factor_mat_ordering_type         natural or rcm (ringrt's RCM)
 *   -pc_ringrt_boost <TOL[,VALUE]>       pivots with |u_ii| <= TOL become VALUE (default 1)
 *   -pc_ringrt_factor_precision <double> double or single (f32 factors, f64 solve)
 *   -pc_ringrt_backend <auto>            auto, cpu, cuda or emu
 *   -pc_ringrt_bind <bool>               let ringrt bind the rank's cores (default: RINGRT_BIND)
 * Any other -pc_factor_* or -pc_ringrt_* option is an error naming it.
 * PCFactorSetLevels/ShiftType/ShiftAmount/ZeroPivot/MatOrderingType work on
 * this PC. A zero pivot sets PC_FACTOR_NUMERIC_ZEROPIVOT (a row without a
 * diagonal entry: PC_FACTOR_STRUCT_ZEROPIVOT), so KSPSolve reports
 * KSP_DIVERGED_PC_FAILED; the global row is in the -info message and in
 * PCView. -log_view shows the events RingrtAnalysis, RingrtFactor and
 * RingrtApply (RingrtApplyTrans). PCApplyTranspose applies (LU)^-T through the
 * same levels (KSPBICG, KSPSolveTranspose).
 */
#ifndef RINGRT_PETSC_H
#define RINGRT_PETSC_H

#include <petscpc.h>

#define PCRINGRT "ringrt"

/** Registers PCRINGRT with PCRegister (idempotent). */
PETSC_EXTERN PetscErrorCode PCRingrtRegister(void);
/** The PC type's constructor, for PCRegister(PCRINGRT, PCCreate_Ringrt). */
PETSC_EXTERN PetscErrorCode PCCreate_Ringrt(PC pc);
/** The hook PETSc calls when -dll_append opens libringrt_petsc.so. */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_ringrt_petsc(void);

/* Setters and getters, as the options above. A setter on a PC of another
 * type does nothing (PetscTryMethod); changing a value after PCSetUp frees
 * the factors, and the next PCSetUp starts over. */
/** Elimination order by name ("natural", "rcm", "multicolor", ...). */
PETSC_EXTERN PetscErrorCode PCRingrtSetOrdering(PC pc, const char ordering[]);
PETSC_EXTERN PetscErrorCode PCRingrtGetOrdering(PC pc, const char *ordering[]);
/** Pivot boost: on, |u_ii| <= tol -> u_ii = value. */
PETSC_EXTERN PetscErrorCode PCRingrtSetBoost(PC pc, PetscBool on, PetscReal tol, PetscReal value);
PETSC_EXTERN PetscErrorCode PCRingrtGetBoost(PC pc, PetscBool *on, PetscReal *tol,
                                             PetscReal *value);
/** "double" (default) or "single": the apply uses the factors rounded to
 *  float (vectors and arithmetic stay double). */
PETSC_EXTERN PetscErrorCode PCRingrtSetFactorPrecision(PC pc, const char precision[]);
PETSC_EXTERN PetscErrorCode PCRingrtGetFactorPrecision(PC pc, const char *precision[]);
/** ringrt backend by name: "auto" (default), "cpu", "cuda" or "emu". */
PETSC_EXTERN PetscErrorCode PCRingrtSetBackend(PC pc, const char backend[]);
PETSC_EXTERN PetscErrorCode PCRingrtGetBackend(PC pc, const char *backend[]);
/** Subdomains of the dd orderings: 0 (default) one per rank, K > 0 the
 *  same K-way split of the rows on any rank count. */
PETSC_EXTERN PetscErrorCode PCRingrtSetDDBlocks(PC pc, PetscInt blocks);
PETSC_EXTERN PetscErrorCode PCRingrtGetDDBlocks(PC pc, PetscInt *blocks);
/** Levels of L and U of the current factorization (0 before PCSetUp). */
PETSC_EXTERN PetscErrorCode PCRingrtGetLevels(PC pc, PetscInt *levels_l, PetscInt *levels_u);
/** ringrt's message of the last failed factorization ("" if none): it names
 *  the global row of a zero pivot. */
PETSC_EXTERN PetscErrorCode PCRingrtGetFailure(PC pc, const char *message[]);

#endif

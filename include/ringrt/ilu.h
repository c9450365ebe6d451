/* ringrt: distributed level-scheduled ILU(0) and Krylov solvers.
 *
 * rrt_ilu0_create analyses the pattern: the elimination order (natural, RCM
 * or multicolour), the dependency levels of L (level(i) = 1 + max level(k)
 * over k before i with a_ik != 0) and of U (mirrored), and the communication
 * plans: after each level a rank sends the factored rows another rank needs
 * to that rank only. rrt_ilu0_factor then factors level by level, and the
 * result is bitwise identical to the serial IKJ ILU(0) of the same ordering
 * for every rank count and backend (cpu, cuda, emu). A reordering changes
 * the preconditioner (not the matrix the Krylov solvers see): it is the
 * ILU(0) of P A P^T applied as P^T (LU)^-1 P. Rows never move between ranks.
 */
#ifndef RINGRT_ILU_H
#define RINGRT_ILU_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rrt_ilu_ordering {
  RRT_ILU_ORDER_NATURAL = 0,
  RRT_ILU_ORDER_RCM,        /**< reverse Cuthill-McKee of the symmetrised graph */
  RRT_ILU_ORDER_MULTICOLOR, /**< greedy colouring, colours in order: few levels */
  /** Domain decomposition: the interior rows of every subdomain first (in
   *  natural order, subdomain after subdomain), then the interface rows
   *  (coupled to another subdomain in the symmetrised pattern) in natural
   *  order. Subdomains: options.dd_blocks. Ranks factor and solve their
   *  interiors at the same time; only the interface is ordered across them. */
  RRT_ILU_ORDER_DD,
  /** RRT_ILU_ORDER_DD with the interface rows greedily coloured (sorted by
   *  colour, then index): the interface is parallel too, at some cost in
   *  iterations. */
  RRT_ILU_ORDER_DD_COLOR
} rrt_ilu_ordering;

/** rrt_ilu0_options.boost: what a pivot with |u_ii| <= boost_tol becomes. */
#define RRT_ILU0_BOOST_REPLACE 1 /**< boost_value */
#define RRT_ILU0_BOOST_ADD 2     /**< u_ii + boost_value */

typedef struct rrt_ilu0_options {
  size_t size;               /**< sizeof(rrt_ilu0_options), set by the initializer */
  rrt_ilu_ordering ordering; /**< default natural */
  /** Pivot boost, applied to each pivot after its row's elimination and
   *  before it divides: 0 off (default); RRT_ILU0_BOOST_REPLACE (1):
   *  |u_ii| <= boost_tol -> u_ii = boost_value (as cuSPARSE's
   *  csrilu02_numericBoost); RRT_ILU0_BOOST_ADD (2): |u_ii| <= boost_tol ->
   *  u_ii + boost_value (PETSc's -pc_factor_shift_type INBLOCKS on AIJ). */
  int boost;
  double boost_tol;
  double boost_value;
  /** 1: the apply uses the factors rounded to f32 (half the bytes each
   *  triangular solve streams). The factorisation still runs in f64 (its
   *  factors, rrt_ilu0_get_factors, are unchanged) and the apply keeps f64
   *  vectors and f64 arithmetic: the preconditioner is M32 = fl32(L) fl32(U),
   *  z = M32^-1 r, bitwise the same for every rank count and backend. The
   *  Krylov solvers stay f64 (mixed precision: f32 preconditioner storage,
   *  f64 residuals). Default 0. */
  int factors_f32;
  /** Subdomains of the dd orderings. 0 (default): one per rank, its row
   *  block. k > 0: the nonzero-balanced k-way split of the rows (the blocks
   *  rrt_sparse_partition gives k ranks), the same for every rank count, so
   *  the preconditioner (and its factors, bit for bit) does not depend on
   *  how many ranks run it. Ignored by the other orderings. */
  int dd_blocks;
  /** levels of fill, ILU(k) with PETSc's level definition; default 0 = ILU(0).
   *  The symbolic phase of rrt_ilu0_create adds the fill entries of level
   *  <= levels (lev(a_ij != 0) = 0, fill at (i,j) from k: lev(i,k) +
   *  lev(k,j) + 1, the minimum over k) of the matrix in elimination order,
   *  so with the natural ordering the pattern is PETSc's -pc_factor_levels
   *  k. The numeric factorisation is ILU(0) on that pattern, with the same
   *  bitwise promise. */
  int levels;
} rrt_ilu0_options;

#define RRT_ILU0_OPTIONS_INITIALIZER                                                               \
  { sizeof(rrt_ilu0_options), RRT_ILU_ORDER_NATURAL, 0, 0.0, 1.0, 0, 0, 0 }

typedef struct rrt_ilu0 *rrt_ilu0_t;

/** Analysis (collective): ordering, levels, plans. The handle refers to A,
 *  which must outlive it. A row without a diagonal entry is RRT_ERR_SINGULAR
 *  on every rank, naming the global row. */
RRT_API rrt_status rrt_ilu0_create(rrt_sparse_t A, const rrt_ilu0_options *options,
                                   rrt_ilu0_t *ilu);

/** Numeric factorisation from A's current values (collective; call again
 *  after rrt_sparse_set_values). A zero pivot is RRT_ERR_SINGULAR on every
 *  rank, naming the first global row in elimination order; a non-finite
 *  pivot is RRT_ERR_NUMERIC. */
RRT_API rrt_status rrt_ilu0_factor(rrt_ilu0_t ilu);

/** z = U^-1 L^-1 r (collective): local_rows doubles in backend memory each. */
RRT_API rrt_status rrt_ilu0_apply(rrt_ilu0_t ilu, const double *r, double *z);

/** z = (LU)^-T r = L^-T U^-T r (collective): local_rows doubles in backend
 *  memory each; r and z may not overlap. Deterministic: the same bits for
 *  every rank count and backend. */
RRT_API rrt_status rrt_ilu0_apply_transpose(rrt_ilu0_t ilu, const double *r, double *z);

/** Destroy (local). Safe on NULL. */
RRT_API rrt_status rrt_ilu0_destroy(rrt_ilu0_t ilu);

/** Global number of levels of L and of U (either pointer may be NULL).
 *  Local. One rank on one cpu thread sweeps in elimination order and needs
 *  no levels, so there they are counted at the first query (-1 if that
 *  runs out of memory). */
RRT_API void rrt_ilu0_levels(rrt_ilu0_t ilu, int *levels_l, int *levels_u);

/** Kernel launches of one factorisation and of one apply on this rank, the
 *  halo packing aside (either pointer may be NULL). cuda and emu sweep a run
 *  of levels with no message between them in one sync-free launch, so one
 *  rank factors in 1 launch and applies in 2 (RINGRT_ILU_SWEEP=levels: one
 *  launch per level holding local rows); 0 on cpu, whose kernels are host
 *  loops. Local. */
RRT_API void rrt_ilu0_launches(rrt_ilu0_t ilu, int64_t *factor, int64_t *apply);

/** Rows per level over all ranks: which = 0 (L) or 1 (U); counts has
 *  levels entries. Local (computed at creation, or at the first query as
 *  for rrt_ilu0_levels). */
RRT_API rrt_status rrt_ilu0_level_histogram(rrt_ilu0_t ilu, int which, int64_t *counts);

/** Local entries of the factor pattern: A's local_nnz for levels = 0, more
 *  with fill (levels > 0). Local. */
RRT_API int64_t rrt_ilu0_factor_nnz(rrt_ilu0_t ilu);

/** The local rows of the factor pattern on the host (A's pattern plus the
 *  fill): rowptr has local_rows + 1 entries (from 0), cols
 *  rrt_ilu0_factor_nnz entries, global columns sorted within a row. For
 *  levels = 0 it is A's local pattern. Either pointer may be NULL. Local. */
RRT_API rrt_status rrt_ilu0_get_factor_pattern(rrt_ilu0_t ilu, int64_t *rowptr, int64_t *cols);

/** The local factors on the host, in the order of rrt_ilu0_get_factor_pattern
 *  (for levels = 0: A's local entry order) (combined LU: entries before the
 *  diagonal in elimination order hold L, unit diagonal implied; the others
 *  hold U). vals has rrt_ilu0_factor_nnz entries. */
RRT_API rrt_status rrt_ilu0_get_factors(rrt_ilu0_t ilu, double *vals);

/** Position of every local row in the elimination order (local_rows entries). */
RRT_API rrt_status rrt_ilu0_get_positions(rrt_ilu0_t ilu, int64_t *pos);

/** Floating-point operations of one factorisation / one apply, over all ranks. */
RRT_API double rrt_ilu0_factor_flops(rrt_ilu0_t ilu);
RRT_API double rrt_ilu0_apply_flops(rrt_ilu0_t ilu);

/* ---- Krylov solvers ------------------------------------------------------- */

typedef enum rrt_krylov_method {
  RRT_KRYLOV_GMRES = 0, /**< restarted GMRES(m), right preconditioned by default */
  RRT_KRYLOV_BICGSTAB,  /**< preconditioned BiCGSTAB */
  RRT_KRYLOV_CG,        /**< preconditioned CG (A and M symmetric positive definite) */
  RRT_KRYLOV_FGMRES     /**< flexible GMRES(m): right preconditioned only; the
                             preconditioner may change from one apply to the next */
} rrt_krylov_method;

/** Why a solve stopped: PETSc's KSPConvergedReason values (positive:
 *  converged, negative: diverged), so a PETSc user reads them as they know
 *  them. rnorm0 below is the norm of b in the monitored norm (||b||, or
 *  ||M^-1 b|| with left preconditioning), ttol = max(rtol rnorm0, atol). */
typedef enum rrt_krylov_reason {
  RRT_KRYLOV_ITERATING = 0,      /**< not finished (never returned) */
  RRT_KRYLOV_CONVERGED_RTOL = 2, /**< ||r|| <= rtol rnorm0 */
  RRT_KRYLOV_CONVERGED_ATOL = 3, /**< ||r|| < atol, or ||r|| = 0 (b = 0: x = 0, 0 iterations) */
  RRT_KRYLOV_DIVERGED_ITS = -3,  /**< maxit iterations without convergence */
  RRT_KRYLOV_DIVERGED_DTOL = -4, /**< ||r|| >= dtol rnorm0 */
  RRT_KRYLOV_DIVERGED_BREAKDOWN = -5,      /**< the method broke down (a zero inner product, an
                                               invariant subspace without the solution, or
                                               GMRES's estimate far from the true residual) */
  RRT_KRYLOV_DIVERGED_INDEFINITE_PC = -8,  /**< CG: r^T M^-1 r <= 0 */
  RRT_KRYLOV_DIVERGED_NANORINF = -9,       /**< a residual norm is NaN or Inf (e.g. in b) */
  RRT_KRYLOV_DIVERGED_INDEFINITE_MAT = -10 /**< CG: p^T A p <= 0 */
} rrt_krylov_reason;

/** Which side the preconditioner goes on. The monitored norm (the one the
 *  tolerances, the history and the monitor see) is, as in PETSc: right ->
 *  the unpreconditioned ||b - A x||; left -> the preconditioned
 *  ||M^-1 (b - A x)||. CG runs the same iteration on both sides and the
 *  side picks only the monitored norm. */
/** GMRES / FGMRES orthogonalisation: classical Gram-Schmidt, refined by a
 *  second pass never (PETSc's default, -ksp_gmres_cgs_refinement_type
 *  REFINE_NEVER: one pass, two reductions per iteration), when the first
 *  pass removed most of the new vector (|w| after < |w| before / sqrt 2,
 *  the DGKS test), or always (four reductions, twice the basis traffic). */
typedef enum rrt_krylov_refine {
  RRT_KRYLOV_REFINE_NEVER = 0,
  RRT_KRYLOV_REFINE_IFNEEDED,
  RRT_KRYLOV_REFINE_ALWAYS
} rrt_krylov_refine;

typedef enum rrt_krylov_side {
  RRT_KRYLOV_SIDE_DEFAULT = 0, /**< right (ringrt's default for every method) */
  RRT_KRYLOV_SIDE_LEFT,
  RRT_KRYLOV_SIDE_RIGHT
} rrt_krylov_side;

/** Called on every rank after each iteration (it = 0: the initial
 *  residual) with the monitored residual norm (the same on every rank). */
typedef void (*rrt_krylov_monitor_fn)(int it, double rnorm, void *user);

/** A user operator (y = A x) or preconditioner (y = M^-1 x), called
 *  collectively on every rank: x and y are local_rows doubles in backend
 *  memory, in the row layout of the solve's matrix. Return 0 on success;
 *  any other value fails the solve on every rank (agreed at the next
 *  reduction, no extra messages): RRT_ERR_INVALID_ARG where it failed, with
 *  the value and the rank in the message, RRT_ERR_REMOTE elsewhere. A
 *  failing callback must still take part in any communication of its own
 *  that the other ranks' calls do. */
typedef int (*rrt_krylov_apply_fn)(const double *x, double *y, void *user);

typedef struct rrt_krylov_options {
  size_t size;              /**< sizeof(rrt_krylov_options), set by the initializer */
  rrt_krylov_method method; /**< default GMRES */
  double rtol;              /**< converged when ||r|| <= max(rtol rnorm0, atol) (default 1e-8) */
  int maxit;                /**< iteration cap (default 1000) */
  int restart;              /**< GMRES / FGMRES restart length (default 30) */
  int progress;             /**< print a progress line on rank 0 every N iterations; 0: never */
  /* ---- fields appended later: older headers end above this line ---- */
  double atol;                   /**< absolute tolerance (default 0; PETSc's 1e-50 acts the same) */
  double dtol;                   /**< diverged when ||r|| >= dtol rnorm0 (default 1e4, PETSc's
                                      default; INFINITY: off) */
  rrt_krylov_side side;          /**< default right */
  int guess_zero;                /**< 1: start from x = 0 whatever x holds; 0 (default): x is the
                                      initial guess */
  rrt_krylov_monitor_fn monitor; /**< per-iteration callback, or NULL */
  void *monitor_user;
  /** y = A x instead of the SpMV of the solve's matrix (which still gives
   *  the row layout, the backend and the communicator: a matrix-free
   *  operator passes a matrix with the layout and no entries). NULL: A. */
  rrt_krylov_apply_fn op;
  void *op_user;
  /** z = M^-1 r instead of the ILU(0) handle (then pass M = NULL). NULL:
   *  the handle, or no preconditioner. */
  rrt_krylov_apply_fn pc;
  void *pc_user;
  rrt_krylov_refine refine; /**< GMRES / FGMRES second Gram-Schmidt pass (default never) */
} rrt_krylov_options;

#define RRT_KRYLOV_OPTIONS_INITIALIZER                                                             \
  {                                                                                                \
    sizeof(rrt_krylov_options), RRT_KRYLOV_GMRES, 1e-8, 1000, 30, 0, 0.0, 1e4,                     \
        RRT_KRYLOV_SIDE_DEFAULT, 0, NULL, NULL, NULL, NULL, NULL, NULL, RRT_KRYLOV_REFINE_NEVER    \
  }

typedef struct rrt_krylov_result {
  int iterations;  /**< iterations done (GMRES: inner iterations) */
  int converged;   /**< 1 if reason > 0 */
  double bnorm;    /**< ||b|| */
  double rnorm;    /**< the last monitored residual norm (right: unpreconditioned) */
  double *history; /**< monitored residual norm per iteration, history[0] = initial (at a GMRES
                        restart: the residual computed afresh, as PETSc's); malloc'd */
  int history_len; /**< iterations + 1 (a CG stop on an indefinite curvature counts the
                        iteration it happened in, as PETSc, without a norm for it) */
  /* ---- fields appended later: filled only when the options struct passed
   * to rrt_krylov_solve is non-NULL and has this header's size (a program
   * built against an older header has the shorter result) ---- */
  rrt_krylov_reason reason;
  double true_rnorm; /**< ||b - A x|| of the returned x, computed afresh */
} rrt_krylov_result;

/** Solve A x = b (collective) with preconditioner M (NULL: none, or
 *  options->pc), from the initial guess in x (unless options->guess_zero).
 *  b and x: local_rows doubles in backend memory. Not converging is not an
 *  error: result->reason says why it stopped. On a converged reason x is
 *  the last iterate; on a diverged one, x is the iterate with the smallest
 *  true residual among those whose true residual was computed (the initial
 *  guess, each GMRES restart, the last iterate), so a failed solve never
 *  returns an x worse than the guess. A converged reason whose x has a
 *  larger true residual than the guess (possible with left preconditioning
 *  by a numerically singular M) becomes DIVERGED_BREAKDOWN. */
RRT_API rrt_status rrt_krylov_solve(rrt_sparse_t A, rrt_ilu0_t M, const rrt_krylov_options *options,
                                    const double *b, double *x, rrt_krylov_result *result);

/** Free the history of a result. */
RRT_API void rrt_krylov_result_free(rrt_krylov_result *result);

/** PETSc's name of a reason ("CONVERGED_RTOL", "DIVERGED_ITS", ...);
 *  "UNKNOWN" for a value not in the enum. */
RRT_API const char *rrt_krylov_reason_name(rrt_krylov_reason reason);

/** "gmres", "bicgstab", "cg", "fgmres" <-> method; "natural", "rcm", "multicolor",
 *  "dd", "dd-color" <-> ordering ("multicolour", "dd-colour" are accepted too). */
RRT_API const char *rrt_krylov_method_name(rrt_krylov_method method);
RRT_API rrt_status rrt_krylov_method_parse(const char *name, rrt_krylov_method *method);
RRT_API const char *rrt_ilu_ordering_name(rrt_ilu_ordering ordering);
RRT_API rrt_status rrt_ilu_ordering_parse(const char *name, rrt_ilu_ordering *ordering);

#ifdef __cplusplus
}
#endif
#endif

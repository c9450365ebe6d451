/* ringrt: SEACells metacells, distributed over the ranks of a context.
 *
 * Each rank passes its contiguous block of cells (rows of the PCA matrix)
 * as planned by rrt_seacells_partition(). The run builds the exact kNN graph
 * by passing coordinate blocks around the ring, the adaptive Gaussian kernel
 * M (sparse, union symmetrised), keeps K = M M^T implicit as sparse rows,
 * and minimises |M - M B A|_F by Frank-Wolfe with A (k x n) and B (n x k)
 * sparse and column-stochastic. Same seed and inputs give the same
 * assignments for any number of ranks and for the cpu and emu backends.
 */
#ifndef RINGRT_SEACELLS_H
#define RINGRT_SEACELLS_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How the initial archetypes are chosen. */
typedef enum rrt_seacells_init {
  RRT_SEACELLS_INIT_CSSP = 0, /**< deterministic greedy column subset selection on K */
  RRT_SEACELLS_INIT_MAXMIN,   /**< seeded farthest-point (max-min) sampling on the coordinates */
  RRT_SEACELLS_INIT_GIVEN,    /**< the global cell indices in rrt_seacells_options.archetypes */
  RRT_SEACELLS_INIT_WAYPOINT  /**< the reference's default: max-min waypoints on diffusion
                                   components (palantir's kernel and sampling), then greedy
                                   CSSP for the rest (see docs/seacells.md) */
} rrt_seacells_init;

/** How the kNN lists become the symmetric graph of the kernel M (the
 *  reference's graph_construction). */
typedef enum rrt_seacells_graph {
  RRT_SEACELLS_GRAPH_UNION = 0, /**< an edge where either cell lists the other (default) */
  RRT_SEACELLS_GRAPH_INTERSECT  /**< an edge only where both cells list each other */
} rrt_seacells_graph;

#define RRT_SEACELLS_OPTIONS_MAGIC 0x53454131u /* "SEA1" */

typedef struct rrt_seacells_options {
  size_t size;               /**< sizeof(rrt_seacells_options), set by the initializer */
  unsigned magic;            /**< RRT_SEACELLS_OPTIONS_MAGIC */
  int64_t n_metacells;       /**< archetypes; <= 0: max(1, n / 75) */
  int knn;                   /**< the reference's n_neighbors (default 15, at least 2): the
                                  kNN lists hold knn - 1 other cells below 8192 cells and knn
                                  from 8192 on, as scanpy's exact and pynndescent paths do;
                                  bandwidth = distance to the (knn / 2)-th nearest other cell */
  uint64_t seed;             /**< for MAXMIN (default 0) */
  rrt_seacells_init init;    /**< default WAYPOINT (the reference's start) */
  const int64_t *archetypes; /**< INIT_GIVEN: n_metacells global cell indices (same on all ranks) */
  int min_iter;              /**< default 10 */
  int max_iter;              /**< default 100 */
  double eps;                /**< converged when |RSS_{t-1} - RSS_t| < eps * RSS_0 (default 1e-3) */
  int fw_iter;               /**< inner Frank-Wolfe iterations per A / B update (default 50) */
  int verbose;               /**< 1: a progress line per iteration on rank 0 (stderr) */
  rrt_seacells_graph graph;  /**< default UNION */
} rrt_seacells_options;

#define RRT_SEACELLS_OPTIONS_INITIALIZER                                                           \
  {                                                                                                \
    sizeof(rrt_seacells_options), RRT_SEACELLS_OPTIONS_MAGIC, 0, 15, 0,                            \
        RRT_SEACELLS_INIT_WAYPOINT, NULL, 10, 100, 1e-3, 50, 0, RRT_SEACELLS_GRAPH_UNION           \
  }

/** The global row range [*first, *first + *count) this rank must pass for
 *  n cells (cells are dealt in fixed reduction blocks; see the docs). */
RRT_API rrt_status rrt_seacells_partition(rrt_ctx_t ctx, int64_t n, int64_t *first, int64_t *count);

typedef struct rrt_seacells *rrt_seacells_t;

/** Run SEACells (collective). `x` holds this rank's rows (count x dims,
 *  row-major, float64) as given by rrt_seacells_partition(). Inputs are
 *  validated and agreed on all ranks first: NaN/Inf coordinates, fewer
 *  cells than metacells or than the kNN lists need, bad archetype indices are errors
 *  on every rank. */
RRT_API rrt_status rrt_seacells_run(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                                    const rrt_seacells_options *opt, rrt_seacells_t *result);

/** The run in phases (the reference's construct_kernel_matrix, initialize,
 *  step); rrt_seacells_run is create, initialize(NULL) and
 *  step(opt->max_iter), with the same bits.
 *
 *  Create (collective): validate and agree as rrt_seacells_run does, then
 *  build the kNN graph and the kernel M. The handle keeps a copy of this
 *  rank's rows and of opt->archetypes: the caller may free `x` after the
 *  call. */
RRT_API rrt_status rrt_seacells_create(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                                       const rrt_seacells_options *opt, rrt_seacells_t *result);

/** Choose the archetypes and form the first state (collective): B the
 *  archetype cells, A0 one A update from A = 0, RSS_0; resets the RSS
 *  history and the iteration count. `archetypes`: NULL to choose them by
 *  opt->init, or n_metacells distinct global cells (the same on every
 *  rank; an error on every rank otherwise). May be called again to restart. */
RRT_API rrt_status rrt_seacells_initialize(rrt_seacells_t s, const int64_t *archetypes);

/** Up to `iterations` more outer iterations (A update, B update, RSS) on
 *  the kept state (collective), at least one when iterations > 0; stops
 *  after an iteration that meets the convergence test (iteration count >=
 *  opt->min_iter and |RSS_{t-1} - RSS_t| < opt->eps * RSS_0), which sets
 *  rrt_seacells_converged (and an iteration that does not clears it). The
 *  RSS history grows past opt->max_iter as needed. Errors: no
 *  rrt_seacells_initialize yet, iterations < 0. */
RRT_API rrt_status rrt_seacells_step(rrt_seacells_t s, int iterations);

/** Free a result (NULL is fine). */
RRT_API void rrt_seacells_destroy(rrt_seacells_t s);

/** This rank's cells: global indices [*first, *first + *count). */
RRT_API rrt_status rrt_seacells_local_cells(rrt_seacells_t s, int64_t *first, int64_t *count);

/** This rank's columns of A (k x n; one column per local cell), CSC: cell
 *  i's entries are [ptr[i], ptr[i + 1]) of metacell/weight, metacells
 *  ascending; each column sums to 1 (up to rounding) once initialized, all
 *  empty before. `ptr` has count + 1 values; metacell/weight may be NULL
 *  (a first call sizes them by ptr[count]). Local, no communication. */
RRT_API rrt_status rrt_seacells_local_a(rrt_seacells_t s, int64_t *ptr, int32_t *metacell,
                                        double *weight);

/** All of B (n x k), CSC: archetype j's cells are [ptr[j], ptr[j + 1]) of
 *  cell/weight (global indices ascending). B is replicated: the same on
 *  every rank. `ptr` has n_metacells + 1 values; cell/weight may be NULL. */
RRT_API rrt_status rrt_seacells_b(rrt_seacells_t s, int64_t *ptr, int32_t *cell, double *weight);

/** This rank's rows of the kernel M (n x n, symmetric), CSR: local cell i's
 *  entries are [ptr[i], ptr[i + 1]) of col/val, global columns ascending,
 *  the diagonal (1) included. `ptr` has count + 1 values; col/val may be
 *  NULL. */
RRT_API rrt_status rrt_seacells_local_kernel(rrt_seacells_t s, int64_t *ptr, int32_t *col,
                                             double *val);

/** Sizes and outcome. */
RRT_API int64_t rrt_seacells_n_metacells(rrt_seacells_t s);
RRT_API int rrt_seacells_iterations(rrt_seacells_t s);
RRT_API int rrt_seacells_converged(rrt_seacells_t s);
/** RSS = |M - M B A|_F per iteration: rss[0] after initialisation, then one
 *  per iteration (iterations + 1 values). Pointer valid until destroy. */
RRT_API const double *rrt_seacells_rss(rrt_seacells_t s, int *count);
/** Archetype cells (global indices, n_metacells values, same on all ranks). */
RRT_API const int64_t *rrt_seacells_archetypes(rrt_seacells_t s);

/** This rank's cells: hard assignment (argmax of the A column, lowest
 *  metacell on ties) and up to `top` largest weights (metacell, weight) in
 *  decreasing order, lowest metacell first on ties, so the first is the hard
 *  assignment; every weight of the column takes part; padded with (-1, 0).
 *  `assign` has count values, `top_idx`/`top_w` count * top. */
RRT_API rrt_status rrt_seacells_local_assignments(rrt_seacells_t s, int top, int64_t *assign,
                                                  int64_t *top_idx, double *top_w);

/** Quality of the hard assignments on the input coordinates, as the
 *  reference SEACells evaluation defines them (collective). Per metacell:
 *  compactness = mean over components of the variance (n - 1 denominator)
 *  of its cells' coordinates (NaN with fewer than 2 cells); separation =
 *  Euclidean distance from its centroid to the nearest other non-empty
 *  metacell's centroid (NaN when empty or alone). `x`: this rank's rows as
 *  passed to rrt_seacells_run. Both arrays have n_metacells values, the
 *  same on every rank (up to the order of the cross-rank sums). */
RRT_API rrt_status rrt_seacells_metrics(rrt_ctx_t ctx, rrt_seacells_t s, const double *x,
                                        double *compactness, double *separation);

/** The same metrics on the diffusion components the reference's
 *  SEACells.evaluate uses (collective): palantir's run_diffusion_maps on
 *  `x` with its defaults (30 neighbours in scanpy's convention, adaptive
 *  width = the distance to the 10th entry of a cell's distance row, kernel
 *  W + W^T with W_ij = exp(-|x_i - x_j| / width_i), 10 eigenvectors of the
 *  row-normalised kernel) and determine_multiscale_space(n_eigs = 10):
 *  eigenvectors 1..9 at unit norm (sign: the entry of largest magnitude
 *  positive), each scaled by l / (1 - l). The eigenvectors come from a
 *  distributed Krylov-Schur iteration to residual 1e-9 and are the same
 *  bits for any rank count; the sums over metacells are as in
 *  rrt_seacells_metrics. Costs a second kNN (30 neighbours) and the
 *  eigensolve; needs at least 30 cells. Arguments as rrt_seacells_metrics. */
RRT_API rrt_status rrt_seacells_metrics_diffusion(rrt_ctx_t ctx, rrt_seacells_t s, const double *x,
                                                  double *compactness, double *separation);

/** The diffusion components of rrt_seacells_metrics_diffusion without a
 *  run (collective): palantir's run_diffusion_maps on the n x dims rows
 *  (this rank's block, as rrt_seacells_partition gives it, in `x`) and
 *  determine_multiscale_space(n_eigs): `dc` gets this rank's rows, count x
 *  (n_eigs - 1), row-major. The reference's evaluate uses n_eigs = 10
 *  (compactness, separation) and 8 (get_density). Needs at least 30 cells;
 *  NaN/Inf coordinates are an error on every rank. */
RRT_API rrt_status rrt_seacells_diffusion_components(rrt_ctx_t ctx, int64_t n, int dims,
                                                     const double *x, int n_eigs, double *dc);

/** Seconds spent in the phases "knn", "kernel", "init", "update_a", "update_b",
 *  "rss" on this rank (0 for an unknown name). */
RRT_API double rrt_seacells_seconds(rrt_seacells_t s, const char *phase);

/* ---- Metacell x gene summaries (the reference's summarize_by_SEACell and
 * summarize_by_soft_SEACell) ------------------------------------------------ */

#define RRT_SEACELLS_SUMMARY_OPTIONS_MAGIC 0x53454153u /* "SEAS" */

typedef struct rrt_seacells_summary_options {
  size_t size;       /**< sizeof(rrt_seacells_summary_options), set by the initializer */
  unsigned magic;    /**< RRT_SEACELLS_SUMMARY_OPTIONS_MAGIC */
  int soft;          /**< 0 (default): summarize_by_SEACell, the sum of each metacell's
                          cells' rows; 1: summarize_by_soft_SEACell, the weighted mean
                          sum_i w_ij x_i / sum_i w_ij after sparsifying each cell's weights */
  double min_weight; /**< soft: the reference's minimum_weight (default 0.05): a cell keeps
                          its weights >= min(min_weight, the 95th percentile of its nonzero
                          weights, numpy's linear interpolation), renormalised to sum 1 */
  int32_t n_labels;  /**< label categories (codes 0..n_labels - 1); 0 (default): no labels */
  void (*rows_done)(void *arg); /**< NULL (default), or called once on this rank, before the call
                                     returns (unless opt itself is refused), as soon as it no
                                     longer reads x, metacell, weight and label (they are copied
                                     before the exchange): a caller may free them there to keep
                                     them out of the exchange's peak memory */
  void *rows_done_arg;          /**< its argument */
} rrt_seacells_summary_options;

#define RRT_SEACELLS_SUMMARY_OPTIONS_INITIALIZER                                                   \
  {                                                                                                \
    sizeof(rrt_seacells_summary_options), RRT_SEACELLS_SUMMARY_OPTIONS_MAGIC, 0, 0.05, 0, NULL,    \
        NULL                                                                                       \
  }

/** This rank's rows of a cells x genes matrix (float64): CSR when ptr is
 *  not NULL (row i is entries [ptr[i], ptr[i + 1]) of col/val, ptr[0] = 0,
 *  columns in 0..cols - 1), otherwise dense row-major (rows * cols values). */
typedef struct rrt_seacells_matrix {
  int64_t rows, cols;
  const int64_t *ptr;
  const int32_t *col;
  const double *val;
} rrt_seacells_matrix;

/** rrt_seacells_create with a given kernel M in place of the one built from
 *  `x` (the reference's add_precomputed_kernel_matrix; collective): `m` is
 *  this rank's rows of M (CSR, count x n, columns ascending, finite values;
 *  the diagonal is not required). M must be symmetric bit for bit (the
 *  drivers take K = M M^T as M M): checked, an error on every rank
 *  otherwise, naming an entry. `x` is still needed (the waypoint
 *  initialisation and the diffusion metrics use the coordinates, as the
 *  reference's do); opt->knn and opt->graph are not used for M. The
 *  handle copies the rows. */
RRT_API rrt_status rrt_seacells_create_with_kernel(rrt_ctx_t ctx, int64_t n, int dims,
                                                   const double *x, const rrt_seacells_matrix *m,
                                                   const rrt_seacells_options *opt,
                                                   rrt_seacells_t *result);

typedef struct rrt_seacells_summary *rrt_seacells_summary_t;

/** The metacell x gene summary (collective). Every rank passes a contiguous
 *  block of cells, the blocks in rank order (as rrt_seacells_partition
 *  gives them; any block sizes, empty ones included): `x` their rows,
 *  `metacell`/`weight` (rows * top each) up to `top` (metacell, weight)
 *  per cell, metacells in 0..n_metacells - 1, -1 for an unused slot.
 *  Hard: only metacell[i * top] counts (-1: the cell is in no metacell)
 *  and `weight` may be NULL. Soft: the slots with a positive weight
 *  are the cell's weights, in any order (ties are ordered heaviest first,
 *  lowest metacell first). `label` (rows codes, -1: none) may be NULL
 *  when opt->n_labels is 0.
 *
 *  Each metacell's row is summed by one rank (metacells dealt in
 *  contiguous ranges) in ascending cell order, so the result is the same
 *  bits for any number of ranks. The output is CSR (float64, int32
 *  columns, explicit zeros dropped) where `x` is CSR, dense where it is
 *  dense; a metacell with no cell (soft: no kept weight) has no row.
 *  Inputs are validated and agreed on every rank first (malformed rows,
 *  metacells or labels out of range, negative or non-finite weights,
 *  ranks that disagree on cols, n_metacells, the layout or the options
 *  are errors on every rank); the caller's arrays may be freed after the
 *  call (or in opt->rows_done). Free the result with
 *  rrt_seacells_summary_destroy. */
RRT_API rrt_status rrt_seacells_summarize(rrt_ctx_t ctx, int64_t n_metacells,
                                          const rrt_seacells_matrix *x, int top,
                                          const int64_t *metacell, const double *weight,
                                          const int32_t *label,
                                          const rrt_seacells_summary_options *opt,
                                          rrt_seacells_summary_t *result);

/** Free a summary (NULL is fine). */
RRT_API void rrt_seacells_summary_destroy(rrt_seacells_summary_t s);

/** Per metacell (n_metacells values, the same on every rank; valid until
 *  destroy): `size` is the number of cells (soft: the sum of the kept
 *  weights, the reference's Pseudo-sizes); with labels, `majority` the
 *  label code with the largest (soft: weighted) share of the metacell's
 *  labelled cells, lowest code on ties (-1: none), and `purity` that
 *  share (NaN without labels or labelled cells); NULL arguments are
 *  skipped. */
RRT_API rrt_status rrt_seacells_summary_metacells(rrt_seacells_summary_t s, const double **size,
                                                  const int32_t **majority, const double **purity);

/** This rank's rows of the summary: the non-empty metacells of
 *  [first, last), in metacell order. CSR when sparse (ptr has rows + 1
 *  offsets from 0, nnz entries), otherwise dense (rows * cols values). */
typedef struct rrt_seacells_summary_rows {
  int sparse;
  int64_t first, last;     /**< the metacells this rank summed */
  int64_t rows, cols, nnz; /**< dense: nnz = rows * cols */
  const int64_t *metacell; /**< rows values: each row's metacell */
  const int64_t *ptr;      /**< CSR offsets (NULL when dense) */
  const int32_t *col;      /**< CSR columns (NULL when dense) */
  const double *val;
} rrt_seacells_summary_rows;

/** Fill `rows` with this rank's rows (local; pointers valid until destroy). */
RRT_API rrt_status rrt_seacells_summary_local_rows(rrt_seacells_summary_t s,
                                                   rrt_seacells_summary_rows *rows);

#ifdef __cplusplus
}
#endif
#endif

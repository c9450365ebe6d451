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
  rrt_seacells_init init;    /**< default CSSP */
  const int64_t *archetypes; /**< INIT_GIVEN: n_metacells global cell indices (same on all ranks) */
  int min_iter;              /**< default 10 */
  int max_iter;              /**< default 100 */
  double eps;                /**< converged when |RSS_{t-1} - RSS_t| < eps * RSS_0 (default 1e-3) */
  int fw_iter;               /**< inner Frank-Wolfe iterations per A / B update (default 50) */
  int verbose;               /**< 1: a progress line per iteration on rank 0 (stderr) */
} rrt_seacells_options;

#define RRT_SEACELLS_OPTIONS_INITIALIZER                                                           \
  {                                                                                                \
    sizeof(rrt_seacells_options), RRT_SEACELLS_OPTIONS_MAGIC, 0, 15, 0, RRT_SEACELLS_INIT_CSSP,    \
        NULL, 10, 100, 1e-3, 50, 0                                                                 \
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

/** Free a result (NULL is fine). */
RRT_API void rrt_seacells_destroy(rrt_seacells_t s);

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

/** Seconds spent in the phases "knn", "kernel", "init", "update_a", "update_b",
 *  "rss" on this rank (0 for an unknown name). */
RRT_API double rrt_seacells_seconds(rrt_seacells_t s, const char *phase);

#ifdef __cplusplus
}
#endif
#endif

/* The .h5ad outputs of a metacell run, in anndata's current encoding.
 *
 * rrt_h5ad_write_result (`ringrt seacells --h5ad-out`): the input file
 * copied whole (X, layers, var, obsm, raw, uns as they were: the AnnData a
 * reference SEACells user has after model.fit()) plus what the Python
 * front ringrt.seacells() writes into adata (the same keys, so one reader
 * serves both; KEY is "SEACell"):
 *   obs/KEY                  categorical: each cell's metacell; categories
 *                            the archetype cells' obs names in metacell
 *                            order (code = metacell index; -1: no weight);
 *   obsm/KEY_soft_labels     dataframe, categorical columns KEY_0..KEY_4:
 *                            the names of each cell's 5 heaviest metacells
 *                            (the reference's get_soft_assignments()
 *                            labels), missing past its last nonzero weight;
 *   obsm/KEY_soft_index      n x 5 int64: their metacell indices (-1 past);
 *   obsm/KEY_soft_weights    n x 5 float64: their weights (0 past);
 *   uns/KEY/archetypes       int64 [m]: the archetype cells (obs rows);
 *   uns/KEY/archetype_names  string [m]: their obs names;
 *   uns/KEY/rss              float64: the RSS per iteration, the initial one
 *                            first (the reference's model.RSS_iters);
 *   uns/KEY/iterations, converged, compactness, separation [m], params
 *                            (a dict: obsm, n_metacells, knn, init, ...).
 * Existing entries of those names are replaced; the input is only read.
 *
 * rrt_h5ad_summary_*: a metacell x gene AnnData written in pieces by one
 * process (`ringrt seacells --summary-out`): obs (the metacells' names and
 * columns), var copied from the input, X dense float64 or CSR
 * (data float64, indices int32, indptr int64) appended a block of rows at a
 * time, so the writer never holds the whole matrix. */
#ifndef RRT_IO_H5AD_RESULT_H
#define RRT_IO_H5AD_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What --h5ad-out records of a run (all on the writing process). */
typedef struct rrt_h5ad_result {
  int64_t n, m;
  const char *const *names;  /* [n] obs names */
  const int64_t *assign;     /* [n] metacell of each cell, -1: none */
  const int64_t *top_i;      /* [n * 5] the 5 heaviest metacells, -1 padded */
  const double *top_w;       /* [n * 5] their weights */
  const int64_t *archetypes; /* [m] archetype cells */
  const double *rss;         /* [nrss] */
  int nrss, iterations, converged;
  const double *comp, *sep;            /* [m] */
  const struct rrt_h5ad_param *params; /* uns/KEY/params */
  int nparams;
} rrt_h5ad_result;

/** One entry of uns/KEY/params: a string (str set), a float (is_float) or
 *  an integer. */
typedef struct rrt_h5ad_param {
  const char *name, *str;
  int is_float;
  int64_t i;
  double f;
} rrt_h5ad_param;

/** Write `path` as the input plus the result: a copy of the input, or for
 *  an input in the legacy (anndata < 0.7) layout a new file in the current
 *  one with its X, obs, var and obsm (h5ad_upgrade.h; uns, layers and raw
 *  are not carried). Refuses an existing path unless force. */
rrt_status rrt_h5ad_write_result(const char *input, const char *path, int force,
                                 const rrt_h5ad_result *r, char *err, size_t errlen);

/** An obs column of the summary: float64 (f64), int64 (i64) or categorical
 *  (codes over ncat cats); exactly one of them set. */
typedef struct rrt_h5ad_column {
  const char *name;
  const double *f64;
  const int64_t *i64;
  const int32_t *codes;
  const char *const *cats;
  int64_t ncat;
} rrt_h5ad_column;

typedef struct rrt_h5ad_summary rrt_h5ad_summary;

/** Start the summary file: rows metacells (names, obs columns) by the cols
 *  columns of the input's var table var_path ("var", "raw/var"), which is
 *  copied; sparse selects CSR. */
rrt_status rrt_h5ad_summary_begin(const char *input, const char *var_path, const char *path,
                                  int force, int sparse, int64_t rows, int64_t cols,
                                  const char *const *names, const rrt_h5ad_column *obs, int nobs,
                                  rrt_h5ad_summary **out, char *err, size_t errlen);

/** Append rows: dense (rows * cols values) or CSR (ptr from 0, rows + 1). */
rrt_status rrt_h5ad_summary_dense(rrt_h5ad_summary *s, int64_t rows, const double *val, char *err,
                                  size_t errlen);
rrt_status rrt_h5ad_summary_csr(rrt_h5ad_summary *s, int64_t rows, const int64_t *ptr,
                                const int32_t *col, const double *val, char *err, size_t errlen);

/** Finish (all rows given) and rename into place; or abort (removes it).
 *  Both release s. */
rrt_status rrt_h5ad_summary_end(rrt_h5ad_summary *s, char *err, size_t errlen);
void rrt_h5ad_summary_abort(rrt_h5ad_summary *s);

#ifdef __cplusplus
}
#endif
#endif

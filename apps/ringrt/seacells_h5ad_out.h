/* `ringrt seacells` AnnData outputs: --h5ad-out (the input plus the result,
 * written on rank 0) and --summary-out (the metacell x gene matrix, formed
 * by every rank from its own cells' rows). The file layouts are in
 * io/h5ad_result.h; docs/seacells.md has the recipe. */
#ifndef RRT_APP_SEACELLS_H5AD_OUT_H
#define RRT_APP_SEACELLS_H5AD_OUT_H

#include <stdint.h>

#include "app.h"
#include "io/strings.h"
#include "seacells_report.h"

/** The options of these outputs. */
typedef struct rrt_app_sc_outs {
  const char *h5ad_out, *summary_out; /* NULL: not asked for */
  const char *layer;                  /* --summary-layer: X, raw, or a layers/ name; NULL: raw, else
                                         layers/counts, else X (resolved by rrt_app_sc_outs_check) */
  int soft;                           /* --summary soft */
  double min_weight;                  /* --summary-min-weight (the reference's 0.05) */
} rrt_app_sc_outs;

#define RRT_APP_SC_OUTS_INIT                                                                       \
  { NULL, NULL, NULL, 0, 0.05 }

/** The --help lines of these options. */
extern const char rrt_app_sc_outs_help[];

/** argv option a (value val, NULL if none): 0 not one of these, 1 parsed
 *  with its value, 3 parsed without a value (--force), 2 usage error
 *  (printed). */
int rrt_app_sc_outs_option(rrt_app_common *c, const char *a, const char *val, rrt_app_sc_outs *o);

/** After parsing (every rank, no communication): the input must be an
 *  .h5ad file and the summary's matrix must exist (the default layer is
 *  chosen here). Returns an exit code (printed on rank 0), 0 when fine. */
int rrt_app_sc_outs_check(rrt_app_common *c, rrt_app_sc_outs *o, const char *input);

/** Rank 0: write --h5ad-out. Returns RRT_SUCCESS or fills err. */
rrt_status rrt_app_sc_write_h5ad(const rrt_app_sc_outs *o, rrt_seacells_t s, const char *key,
                                 const rrt_seacells_options *opt, const rrt_app_seacells_result *r,
                                 char *err, size_t errlen);

/** What every rank knows for the summary (the labels and names whole). */
typedef struct rrt_app_sc_cells {
  const char *input, *labels;
  int64_t n, first, count;
  const rrt_strings *names, *cats;
  const int32_t *codes;     /* [n] or NULL */
  const double *comp, *sep; /* [m] the metrics (rrt_seacells_metrics) */
  int fw_iter;              /* --fw-iter: a cell's weights are at most min(m, fw_iter) */
  const int64_t *row_of;    /* [m] hard summary: each metacell's row, in order of first
                               appearance among the cells (the reference's unique()) */
} rrt_app_sc_cells;

/** Collective: --summary-out. Returns 0, or RRT_EXIT_FAILURE on every rank
 *  after the message (file and dataset named; no file left behind). */
int rrt_app_sc_summary(rrt_ctx_t ctx, rrt_app_common *c, rrt_seacells_t s, const rrt_app_sc_outs *o,
                       const rrt_app_sc_cells *cells);

#endif

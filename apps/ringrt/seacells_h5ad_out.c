/* `ringrt seacells`: the options of the AnnData outputs and --h5ad-out
 * (rank 0 holds every cell's assignment already; the file is the input
 * copied plus the result, see io/h5ad_result.h). */
#include "seacells_h5ad_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/h5ad_result.h"
#include "io/h5ad_rows.h"

const char rrt_app_sc_outs_help[] =
    "  --h5ad-out FILE       AnnData: the input plus obs SEACell, obsm SEACell_soft_labels /\n"
    "                        _soft_index / _soft_weights (top 5), uns SEACell (archetypes,\n"
    "                        rss, params), as ringrt.seacells() writes into adata\n"
    "  --summary-out FILE    AnnData of metacells x genes: sums of --summary-layer over each\n"
    "                        metacell's cells (obs: size, --labels purity, compactness,\n"
    "                        separation)\n"
    "  --summary hard|soft   hard sums (default) or the reference's soft weighted means\n"
    "  --summary-layer L     X, raw (raw/X), or a name under layers/ (default: raw, else\n"
    "                        the layer counts, else X: the reference sums raw counts)\n"
    "  --summary-min-weight W  soft: weights below min(W, the cell's 95th percentile) dropped\n"
    "                        (default 0.05)\n"
    "  --force               accepted, no effect: every output is replaced (Output files,\n"
    "                        below)\n";

int rrt_app_sc_outs_option(rrt_app_common *c, const char *a, const char *val, rrt_app_sc_outs *o) {
  if (!strcmp(a, "--force")) return 3; /* scripts written when it was needed */
  const char **slot = !strcmp(a, "--h5ad-out")        ? &o->h5ad_out
                      : !strcmp(a, "--summary-out")   ? &o->summary_out
                      : !strcmp(a, "--summary-layer") ? &o->layer
                                                      : NULL;
  int mode = !strcmp(a, "--summary"), mw = !strcmp(a, "--summary-min-weight");
  if (!slot && !mode && !mw) return 0;
  if (!val) {
    rrt_app_usage_error(c, "%s needs a value", a);
    return 2;
  }
  if (slot) {
    *slot = val;
  } else if (mode) {
    if (strcmp(val, "hard") && strcmp(val, "soft")) {
      rrt_app_usage_error(c, "bad --summary '%s' (hard or soft)", val);
      return 2;
    }
    o->soft = !strcmp(val, "soft");
  } else {
    double w;
    if (rrt_app_parse_double(c, a, val, &w)) return 2;
    if (!(w >= 0.0 && w <= 1.0)) {
      rrt_app_usage_error(c, "--summary-min-weight %s is outside [0, 1]", val);
      return 2;
    }
    o->min_weight = w;
  }
  return 1;
}

int rrt_app_sc_outs_check(rrt_app_common *c, rrt_app_sc_outs *o, const char *input) {
  if (!o->h5ad_out && !o->summary_out) return 0;
  if (!rrt_app_ends_with(input, ".h5ad") && !rrt_app_ends_with(input, ".h5")) {
    if (c->rank == 0)
      rrt_app_error(c, "--h5ad-out and --summary-out need an .h5ad INPUT (%s is not one)", input);
    return RRT_EXIT_USAGE;
  }
  char err[1400];
  int64_t rows, cols;
  int sparse;
  /* a legacy input's var is no dataframe group to copy: known now, not
   * after the run (its --h5ad-out is rewritten in the current layout) */
  if (o->summary_out && rrt_h5ad_check_current_layout(input, err, sizeof err) != RRT_SUCCESS) {
    if (c->rank == 0) rrt_app_error(c, "--summary-out: %s", err);
    return RRT_EXIT_FAILURE;
  }
  /* the reference sums raw counts: adata.raw, else a counts layer (each
   * checked as it is found), else X (checked below) */
  static const char *const by_default[] = {"raw", "counts"};
  int checked = 0;
  for (int k = 0; o->summary_out && !o->layer && k < 2; k++)
    if (rrt_h5ad_rows_shape(input, by_default[k], &rows, &cols, &sparse, err, sizeof err) ==
        RRT_SUCCESS)
      o->layer = by_default[k], checked = 1;
  if (!o->layer) o->layer = "X";
  /* a missing layer or a CSC matrix is known before the run, not after it */
  if (o->summary_out && !checked &&
      rrt_h5ad_rows_shape(input, o->layer, &rows, &cols, &sparse, err, sizeof err) != RRT_SUCCESS) {
    if (c->rank == 0) rrt_app_error(c, "--summary-out: %s", err);
    return RRT_EXIT_FAILURE;
  }
  return 0;
}

static const char *init_name(rrt_seacells_init i) {
  return i == RRT_SEACELLS_INIT_MAXMIN     ? "maxmin"
         : i == RRT_SEACELLS_INIT_GIVEN    ? "given"
         : i == RRT_SEACELLS_INIT_WAYPOINT ? "waypoint"
                                           : "cssp";
}

rrt_status rrt_app_sc_write_h5ad(const rrt_app_sc_outs *o, rrt_seacells_t s, const char *key,
                                 const rrt_seacells_options *opt, const rrt_app_seacells_result *r,
                                 char *err, size_t errlen) {
  if (r->names->count != r->n) {
    snprintf(err, errlen, "%s: obs: no obs names for the %lld cells", r->input, (long long)r->n);
    return RRT_ERR_INVALID_ARG;
  }
  int nr = 0;
  const double *rss = rrt_seacells_rss(s, &nr);
  /* the parameters as ringrt.seacells() records them in uns["SEACell"]["params"] */
  const rrt_h5ad_param params[] = {{.name = "obsm", .str = key},
                                   {.name = "n_metacells", .i = r->m},
                                   {.name = "knn", .i = opt->knn},
                                   {.name = "init", .str = init_name(opt->init)},
                                   {.name = "seed", .i = (int64_t)opt->seed},
                                   {.name = "min_iter", .i = opt->min_iter},
                                   {.name = "max_iter", .i = opt->max_iter},
                                   {.name = "eps", .is_float = 1, .f = opt->eps},
                                   {.name = "fw_iter", .i = opt->fw_iter},
                                   {.name = "n_top", .i = 5},
                                   {.name = "n_components", .i = r->d}};
  rrt_h5ad_result hr = {.n = r->n,
                        .m = r->m,
                        .names = (const char *const *)r->names->items,
                        .assign = r->assign,
                        .top_i = r->top_i,
                        .top_w = r->top_w,
                        .archetypes = rrt_seacells_archetypes(s),
                        .rss = rss,
                        .nrss = nr,
                        .iterations = rrt_seacells_iterations(s),
                        .converged = rrt_seacells_converged(s),
                        .comp = r->comp,
                        .sep = r->sep,
                        .params = params,
                        .nparams = (int)(sizeof params / sizeof params[0])};
  return rrt_h5ad_write_result(r->input, o->h5ad_out, 1, &hr, err, errlen);
}

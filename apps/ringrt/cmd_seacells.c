/* `ringrt seacells`: SEACells metacells of single-cell PCA coordinates.
 * Every rank reads its own block of rows; errors are agreed on all ranks.
 *
 * Phases of rrt_cmd_seacells: parse options, read the inputs (coordinates,
 * labels, cell ids, given archetypes), run, metrics, gather the assignments
 * on rank 0, write and report there (seacells_report.c). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/host_coll.h"
#include "io/csv_matrix.h"
#include "io/h5ad.h"
#include "io/int_list.h"
#include "io/npy.h"
#include "io/sniff.h"
#include "seacells_h5ad_out.h"
#include "seacells_report.h"

static const char usage[] = "usage: ringrt seacells INPUT (.h5ad | .npy | .csv) [options]\n"
                            "  --obsm KEY            h5ad matrix (default X_pca)\n"
                            "  --header yes|no|auto  CSV: is the first row a header (default\n"
                            "                        auto: not numbers, or the column numbers\n"
                            "                        0..d-1 or 1..d; other integers: an error)\n"
                            "  --labels COLUMN       h5ad obs categorical: purity per metacell\n"
                            "  --n-metacells N       at least 1; default n / 75\n"
                            "  --knn K               the reference's n_neighbors (default 15)\n"
                            "  --seed S              seed of --init maxmin\n"
                            "  --init cssp|maxmin|waypoint  initial archetypes (default waypoint)\n"
                            "  --archetypes-in FILE  start from these cells (one index per line)\n"
                            "  --archetypes-out FILE write the initial archetypes\n"
                            "  --diffusion-metrics   also compactness and separation on the\n"
                            "                        diffusion components (SEACells.evaluate's)\n"
                            "  --max-iter N --min-iter N --eps E --fw-iter N\n"
                            "  --out FILE            CSV: cell,metacell,top-5 (metacell, weight)\n"
                            "%s"
                            "Exit status 3 when the RSS has not converged after --max-iter (the\n"
                            "outputs and the report are still written).\n";

/* Options of the subcommand beyond rrt_seacells_options. */
typedef struct sc_opts {
  const char *input, *key, *labels, *out, *ain, *aout;
  rrt_app_sc_outs outs; /* --h5ad-out, --summary-out (seacells_h5ad_out.h) */
  int diffusion;        /* --diffusion-metrics */
  int header;           /* --header: 1 yes, 0 no, -1 auto */
} sc_opts;

/* This rank's inputs: its block of rows, the labels and cell ids (whole),
 * archetypes given with --archetypes-in. */
typedef struct sc_inputs {
  int64_t n, first, count, *arch_in, na, ncodes;
  int d;
  double *x;
  rrt_strings names, cats;
  int32_t *codes;
} sc_inputs;

/* The assignments of every cell, gathered on rank 0 (NULL elsewhere except
 * the local parts). */
typedef struct sc_gathered {
  int64_t *assign, *all, *ti, *tia;
  double *tw, *twa;
} sc_gathered;

/* ------------------------------------------------------------ options --- */

/* An option with a numeric value of rrt_seacells_options: 0, or 2. */
static int parse_number(rrt_app_common *c, const char *a, const char *val,
                        rrt_seacells_options *o) {
  long v;
  double dv;
  if (!strcmp(a, "--eps")) {
    if (rrt_app_parse_double(c, a, val, &dv)) return 2;
    o->eps = dv;
    return 0;
  }
  /* the iteration counts and --knn are ints: a larger value must not wrap */
  int wide = !strcmp(a, "--n-metacells") || !strcmp(a, "--seed");
  /* --n-metacells 0 is refused, as Python's n_metacells=0: the default is
   * what leaving the option out gives */
  long lo = !strcmp(a, "--n-metacells") ? 1 : 0;
  if (rrt_app_parse_long(c, a, val, lo, wide ? 1L << 40 : INT_MAX, &v)) return 2;
  if (!strcmp(a, "--n-metacells"))
    o->n_metacells = v;
  else if (!strcmp(a, "--knn"))
    o->knn = (int)v;
  else if (!strcmp(a, "--seed"))
    o->seed = (uint64_t)v;
  else if (!strcmp(a, "--max-iter"))
    o->max_iter = (int)v;
  else if (!strcmp(a, "--min-iter"))
    o->min_iter = (int)v;
  else
    o->fw_iter = (int)v;
  return 0;
}

static int is_number_option(const char *a) {
  static const char *const names[] = {"--n-metacells", "--knn",     "--seed", "--max-iter",
                                      "--min-iter",    "--fw-iter", "--eps"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if (!strcmp(a, names[k])) return 1;
  return 0;
}

/* An option that takes a value (val, NULL if missing): 1 parsed (consumes
 * val), 0 not such an option, 2 usage error (printed). */
static int parse_valued(rrt_app_common *c, const char *a, const char *val, sc_opts *so,
                        rrt_seacells_options *o) {
  const char **slot = !strcmp(a, "--obsm")             ? &so->key
                      : !strcmp(a, "--labels")         ? &so->labels
                      : !strcmp(a, "--out")            ? &so->out
                      : !strcmp(a, "--archetypes-in")  ? &so->ain
                      : !strcmp(a, "--archetypes-out") ? &so->aout
                                                       : NULL;
  if (!slot && strcmp(a, "--init") && strcmp(a, "--header") && !is_number_option(a)) return 0;
  if (!val) {
    rrt_app_usage_error(c, "%s needs a value", a);
    return 2;
  }
  if (slot) {
    *slot = val;
  } else if (!strcmp(a, "--header")) {
    so->header = !strcmp(val, "yes") ? 1 : !strcmp(val, "no") ? 0 : !strcmp(val, "auto") ? -1 : -2;
    if (so->header == -2) {
      rrt_app_usage_error(c, "bad --header '%s' (yes, no or auto)", val);
      return 2;
    }
  } else if (!strcmp(a, "--init")) {
    if (!strcmp(val, "maxmin"))
      o->init = RRT_SEACELLS_INIT_MAXMIN;
    else if (!strcmp(val, "waypoint"))
      o->init = RRT_SEACELLS_INIT_WAYPOINT;
    else if (!strcmp(val, "cssp"))
      o->init = RRT_SEACELLS_INIT_CSSP;
    else {
      rrt_app_usage_error(c, "bad --init '%s' (cssp, maxmin or waypoint)", val);
      return 2;
    }
  } else if (parse_number(c, a, val, o)) {
    return 2;
  }
  return 1;
}

/* 0: run; 1: --help was printed; 2: usage error (printed on rank 0). */
static int parse(int argc, char **argv, sc_opts *so, rrt_app_common *c, rrt_seacells_options *o) {
  for (int i = 1; i < argc; i++) {
    int r = rrt_app_common_option(c, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (c->rank == 0) {
        printf(usage, rrt_app_sc_outs_help);
        printf("\n%s%s", rrt_app_common_help, rrt_app_exit_help);
      }
      return 1;
    }
    if (!strcmp(a, "--diffusion-metrics")) {
      so->diffusion = 1;
      continue;
    }
    r = rrt_app_sc_outs_option(c, a, val, &so->outs);
    if (r == 3) continue;
    if (r == 0) r = parse_valued(c, a, val, so, o);
    if (r == 2) return 2;
    if (r == 1) {
      i++;
    } else if (a[0] != '-' && !so->input) {
      so->input = a;
    } else {
      rrt_app_usage_error(c, "unknown option '%s'", a);
      if (c->rank == 0) fprintf(stderr, usage, rrt_app_sc_outs_help);
      return 2;
    }
  }
  if (!so->input) {
    rrt_app_usage_error(c, "no INPUT file given");
    if (c->rank == 0) fprintf(stderr, usage, rrt_app_sc_outs_help);
    return 2;
  }
  if (o->min_iter > o->max_iter) {
    rrt_app_usage_error(c, "--min-iter %d is above --max-iter %d", o->min_iter, o->max_iter);
    return 2;
  }
  return 0;
}

/* ------------------------------------------------------------- inputs --- */

/* A file that holds no coordinates ringrt reads: 1 with a message that says
 * what to give instead. */
static int input_refused(const char *path, rrt_file_kind kind, char *err, size_t len) {
  static const char give[] = "ringrt seacells reads PCA coordinates, cells x dims (an .h5ad "
                             "with obsm, .npy or .csv; scanpy: sc.pp.pca, adata.write_h5ad)";
  if (kind == RRT_FILE_MATRIX_MARKET)
    snprintf(err, len, "%s: a Matrix Market file (a count matrix, e.g. 10x's matrix.mtx): %s", path,
             give);
  else if (kind == RRT_FILE_GZIP)
    snprintf(err, len, "%s: gzip-compressed (.mtx.gz, .csv.gz, ...): %s, uncompressed", path, give);
  else if (kind == RRT_FILE_EMPTY)
    snprintf(err, len, "%s: an empty file: %s", path, give);
  else
    return 0;
  return 1;
}

/* Read this rank's rows (and a CSV file's row names, all of them, for the
 * output). Returns 0 or fills err. */
static rrt_status read_input(const sc_opts *so, rrt_ctx_t ctx, sc_inputs *in, char *err,
                             size_t len) {
  const char *path = so->input, *key = so->key;
  int64_t *n = &in->n, *first = &in->first, *count = &in->count;
  int *d = &in->d;
  double **x = &in->x;
  rrt_status st;
  *x = NULL;
  rrt_file_kind kind = rrt_file_sniff(path, err, len);
  if (input_refused(path, kind, err, len)) return RRT_ERR_INVALID_ARG;
  if (kind == RRT_FILE_MISSING) return RRT_ERR_IO;
  /* by content; zarr stores go to the h5ad reader too, which says how to
   * convert them */
  if (kind == RRT_FILE_HDF5 || kind == RRT_FILE_DIRECTORY || kind == RRT_FILE_ZIP ||
      rrt_app_ends_with(path, ".h5ad") || rrt_app_ends_with(path, ".h5")) {
    int64_t rows = 0, cols = 0;
    st = rrt_h5ad_matrix_shape(path, key, &rows, &cols, err, len);
    if (st != RRT_SUCCESS) return st;
    *n = rows, *d = (int)cols;
    rrt_seacells_partition(ctx, rows, first, count);
    return rrt_h5ad_read_matrix_rows(path, key, *first, *count, x, &cols, err, len);
  }
  double *all = NULL;
  /* a malformed .npy gets the npy reader's message, not the CSV reader's */
  if (kind == RRT_FILE_NPY || rrt_app_ends_with(path, ".npy")) {
    rrt_npy a;
    st = rrt_npy_read(path, &a, err, len);
    if (st != RRT_SUCCESS) return st;
    if (a.ndim != 2) {
      snprintf(err, len, "%s: a %d-D array; expected cells x dims (2-D)", path, a.ndim);
      rrt_npy_free(&a);
      return RRT_ERR_INVALID_ARG;
    }
    *n = a.shape[0], *d = (int)a.shape[1];
    all = malloc((a.count + 1) * sizeof(double));
    if (all && rrt_npy_to_double(&a, all) != 0) { /* every numeric type, as h5ad and Python */
      snprintf(err, len, "%s: dtype %s is not a number type", path, a.descr);
      free(all), rrt_npy_free(&a);
      return RRT_ERR_INVALID_ARG;
    }
    rrt_npy_free(&a);
  } else {
    rrt_csv_matrix m;
    st = rrt_csv_read_matrix(path, so->header, &m, err, len);
    if (st != RRT_SUCCESS) return st;
    *n = m.rows, *d = (int)m.cols;
    all = m.data;
    in->names = m.row_names;
    m.data = NULL, m.row_names = (rrt_strings){0};
    rrt_csv_matrix_free(&m);
  }
  if (!all) return RRT_ERR_OUT_OF_MEMORY;
  rrt_seacells_partition(ctx, *n, first, count);
  *x = malloc((size_t)(*count * *d + 1) * sizeof(double));
  if (*x) memcpy(*x, all + *first * *d, (size_t)(*count * *d) * sizeof(double));
  free(all);
  return *x ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

/* --archetypes-in: cell indices, one per line; they set --n-metacells. */
static rrt_status read_archetypes(const char *path, sc_inputs *in, rrt_seacells_options *o,
                                  char *err, size_t len) {
  rrt_int_list l;
  rrt_status st = rrt_int_list_read(path, 0, &l, err, len);
  if (st != RRT_SUCCESS) return st;
  in->arch_in = l.values;
  in->na = l.count;
  o->init = RRT_SEACELLS_INIT_GIVEN;
  o->archetypes = in->arch_in;
  o->n_metacells = in->na;
  return RRT_SUCCESS;
}

/* Every input of this rank; the outcome is agreed on all ranks (each rank
 * names its own problem). Returns 0 or 1. */
static int read_all(rrt_ctx_t ctx, rrt_app_common *com, const sc_opts *so, rrt_seacells_options *o,
                    sc_inputs *in) {
  char err[1024] = "";
  rrt_status st = read_input(so, ctx, in, err, sizeof err);
  if (st == RRT_SUCCESS && so->labels) {
    st = rrt_h5ad_read_categorical(so->input, so->labels, &in->codes, &in->ncodes, &in->cats, err,
                                   sizeof err);
    if (st == RRT_SUCCESS && in->ncodes != in->n) {
      snprintf(err, sizeof err, "%s: obs/%s has %lld rows, the matrix %lld", so->input, so->labels,
               (long long)in->ncodes, (long long)in->n);
      st = RRT_ERR_INVALID_ARG;
    }
  }
  if (st == RRT_SUCCESS && (rrt_app_ends_with(so->input, ".h5ad")))
    if (rrt_h5ad_read_obs_names(so->input, &in->names, err, sizeof err) != RRT_SUCCESS) err[0] = 0;
  if (st == RRT_SUCCESS && so->ain) st = read_archetypes(so->ain, in, o, err, sizeof err);
  st = rrt_agree(ctx, st);
  if (st != RRT_SUCCESS) {
    rrt_app_error(com, "rank %d: %s", rrt_ctx_rank(ctx), err[0] ? err : rrt_ctx_last_error(ctx));
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------- gathering --- */

/* Assignments and the top-5 metacells of every cell, on rank 0 (gathers
 * with size_t counts and the library's timeout). Returns 0, or 1 after a
 * message on every rank. */
static int gather_assignments(rrt_ctx_t ctx, rrt_app_common *com, rrt_seacells_t s,
                              const sc_inputs *in, sc_gathered *g) {
  const int64_t count = in->count;
  const char *op = "ringrt seacells: gathering the assignments";
  memset(g, 0, sizeof *g);
  g->assign = malloc((size_t)(count + 1) * sizeof(int64_t));
  g->ti = malloc((size_t)(count * 5 + 1) * sizeof(int64_t));
  g->tw = malloc((size_t)(count * 5 + 1) * sizeof(double));
  rrt_status st = g->assign && g->ti && g->tw ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS) rrt_seacells_local_assignments(s, 5, g->assign, g->ti, g->tw);
  st = rrt_agree(ctx, st);
  const size_t n1 = (size_t)count * sizeof(int64_t), n5 = 5 * n1;
  if (st == RRT_SUCCESS)
    st = rrt_host_gatherv_alloc(ctx, op, g->assign, n1, 0, (void **)&g->all, NULL, NULL);
  if (st == RRT_SUCCESS)
    st = rrt_host_gatherv_alloc(ctx, op, g->ti, n5, 0, (void **)&g->tia, NULL, NULL);
  if (st == RRT_SUCCESS)
    st = rrt_host_gatherv_alloc(ctx, op, g->tw, 5 * (size_t)count * sizeof(double), 0,
                                (void **)&g->twa, NULL, NULL);
  if (st == RRT_SUCCESS) return 0;
  rrt_app_error(com, "rank %d: %s", rrt_ctx_rank(ctx), rrt_ctx_last_error(ctx));
  return 1;
}

static void gathered_free(sc_gathered *g) {
  free(g->assign), free(g->all), free(g->ti), free(g->tia), free(g->tw), free(g->twa);
}

/* Rank 0: the CSV, the archetypes, the JSON report, the summary lines.
 * Returns the exit code: 1 when a file could not be written, 3 when the
 * RSS did not converge, else 0. */
static int write_and_report(rrt_ctx_t ctx, rrt_seacells_t s, const sc_opts *so,
                            const rrt_seacells_options *o, rrt_app_common *com,
                            const rrt_app_seacells_result *r) {
  rrt_app_seacells_summary sm;
  rrt_app_seacells_summarise(r, &sm);
  char err[1200];
  if (so->out && rrt_app_seacells_write_csv(so->out, r, err, sizeof err) != RRT_SUCCESS) {
    rrt_app_error(com, "--out %s", err);
  } else if (so->aout &&
             rrt_app_seacells_write_archetypes(so->aout, s, r->m, err, sizeof err) != RRT_SUCCESS) {
    rrt_app_error(com, "--archetypes-out %s", err);
  } else if (so->outs.h5ad_out &&
             rrt_app_sc_write_h5ad(&so->outs, s, so->key, o, r, err, sizeof err) != RRT_SUCCESS) {
    rrt_app_error(com, "--h5ad-out %s", err);
  } else {
    int rc = rrt_seacells_converged(s) ? RRT_EXIT_OK : RRT_EXIT_NOT_CONVERGED;
    FILE *js = rrt_app_json_open(com);
    if (js) {
      rrt_app_seacells_json(js, ctx, s, r, &sm);
      rrt_app_json_close(com, rc);
    }
    if (!com->quiet) rrt_app_seacells_text(s, r, &sm);
    free(sm.size);
    return rc;
  }
  free(sm.size);
  return RRT_EXIT_FAILURE;
}

/* Each metacell's row in the hard summary: the order in which metacells
 * first appear among the cells (the reference's obs[label].unique()), empty
 * ones last. Rank 0 has every assignment; the order is broadcast. */
static rrt_status appearance_order(rrt_ctx_t ctx, const int64_t *assign_all, int64_t n, int64_t m,
                                   int64_t *row_of) {
  if (rrt_ctx_rank(ctx) == 0) {
    int64_t next = 0;
    for (int64_t j = 0; j < m; j++)
      row_of[j] = -1;
    for (int64_t i = 0; i < n; i++)
      if (assign_all[i] >= 0 && row_of[assign_all[i]] < 0) row_of[assign_all[i]] = next++;
    for (int64_t j = 0; j < m; j++)
      if (row_of[j] < 0) row_of[j] = next++;
  }
  return rrt_host_bcast(ctx, row_of, (size_t)m * sizeof(int64_t), 0);
}

/* --summary-out (collective; 0 when not asked for or written). */
static int summary_out(rrt_ctx_t ctx, rrt_app_common *com, rrt_seacells_t s, const sc_opts *so,
                       const sc_inputs *in, const double *comp, const double *sep, int fw_iter,
                       const int64_t *row_of) {
  const rrt_app_sc_cells cells = {.input = so->input,
                                  .labels = so->labels,
                                  .n = in->n,
                                  .first = in->first,
                                  .count = in->count,
                                  .names = &in->names,
                                  .cats = &in->cats,
                                  .codes = in->codes,
                                  .comp = comp,
                                  .sep = sep,
                                  .fw_iter = fw_iter,
                                  .row_of = row_of};
  return rrt_app_sc_summary(ctx, com, s, &so->outs, &cells);
}

/* Outputs and inputs named on the command line, for the path checks. */
static int check_paths(rrt_app_common *com, sc_opts *so) {
  const rrt_app_path outs[] = {{"--out", so->out},
                               {"--archetypes-out", so->aout},
                               {"--h5ad-out", so->outs.h5ad_out},
                               {"--summary-out", so->outs.summary_out}};
  const rrt_app_path ins[] = {{"INPUT", so->input}, {"--archetypes-in", so->ain}};
  int rc = rrt_app_sc_outs_check(com, &so->outs, so->input);
  return rc ? rc : rrt_app_check_paths(com, outs, 4, ins, 2);
}

int rrt_cmd_seacells(MPI_Comm comm, int argc, char **argv) {
  rrt_app_common com;
  rrt_app_common_init(&com, "seacells", comm, argc, argv);
  sc_opts so = {NULL, "X_pca", NULL, NULL, NULL, NULL, RRT_APP_SC_OUTS_INIT, 0, -1};
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER;
  int pr = rrt_app_agree_args(comm, &com, parse(argc, argv, &so, &com, &o));
  if (pr) return pr == 1 ? 0 : rrt_app_finish(NULL, &com, RRT_EXIT_USAGE);
  int rc = check_paths(&com, &so);
  rrt_ctx_t ctx = NULL;
  if (rrt_app_ctx_create(comm, &com, &ctx) != RRT_SUCCESS)
    return rrt_app_finish(NULL, &com, RRT_EXIT_FAILURE);
  int rank = rrt_ctx_rank(ctx);
  o.verbose = !com.quiet;
  sc_inputs in;
  memset(&in, 0, sizeof in);
  rrt_seacells_t s = NULL;
  if ((rc = rrt_app_agree_code(ctx, &com, rc)) != 0) goto done;
  rc = RRT_EXIT_FAILURE;
  if (read_all(ctx, &com, &so, &o, &in) != 0) goto done;
  if (rrt_seacells_run(ctx, in.n, in.d, in.x, &o, &s) != RRT_SUCCESS) {
    /* every rank reports: the run agreed on the failure, so all of them exit */
    rrt_app_error(&com, "%s", rrt_ctx_last_error(ctx)); /* names the rank */
    goto done;
  }
  int64_t m = rrt_seacells_n_metacells(s);
  double *comp = malloc((size_t)m * sizeof(double)), *sep = malloc((size_t)m * sizeof(double));
  double *dcomp = so.diffusion ? malloc((size_t)m * sizeof(double)) : NULL;
  double *dsep = so.diffusion ? malloc((size_t)m * sizeof(double)) : NULL;
  if (!comp || !sep || rrt_seacells_metrics(ctx, s, in.x, comp, sep) != RRT_SUCCESS ||
      (so.diffusion &&
       (!dcomp || !dsep ||
        rrt_seacells_metrics_diffusion(ctx, s, in.x, dcomp, dsep) != RRT_SUCCESS))) {
    if (rank == 0) rrt_app_error(&com, "metrics: %s", rrt_ctx_last_error(ctx));
    free(comp), free(sep), free(dcomp), free(dsep);
    goto done;
  }
  sc_gathered g;
  int gather_failed = gather_assignments(ctx, &com, s, &in, &g);
  int code = RRT_EXIT_OK;
  if (!gather_failed && rank == 0) {
    rrt_app_seacells_result r = {.input = so.input,
                                 .labels = so.labels,
                                 .n = in.n,
                                 .m = m,
                                 .d = in.d,
                                 .P = rrt_ctx_size(ctx),
                                 .assign = g.all,
                                 .top_i = g.tia,
                                 .top_w = g.twa,
                                 .comp = comp,
                                 .sep = sep,
                                 .dcomp = dcomp,
                                 .dsep = dsep,
                                 .names = &in.names,
                                 .codes = in.codes,
                                 .ncat = in.cats.count,
                                 .seed = o.seed};
    code = write_and_report(ctx, s, &so, &o, &com, &r);
  }
  /* rank 0 wrote the files: its failure is everyone's; convergence is common */
  int wrote = !gather_failed && !rrt_app_any_rank(ctx, code == RRT_EXIT_FAILURE);
  int64_t *row_of = malloc((size_t)(m + 1) * sizeof(int64_t));
  if (wrote && so.outs.summary_out) {
    rrt_status ost = rrt_agree(ctx, row_of ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY);
    if (ost == RRT_SUCCESS) ost = appearance_order(ctx, g.all, in.n, m, row_of);
    if (ost != RRT_SUCCESS) rrt_app_error(&com, "--summary-out: %s", rrt_ctx_last_error(ctx));
    wrote = ost == RRT_SUCCESS;
  }
  gathered_free(&g);
  if (wrote && summary_out(ctx, &com, s, &so, &in, comp, sep, o.fw_iter, row_of) == 0)
    rc = rrt_seacells_converged(s) ? RRT_EXIT_OK : RRT_EXIT_NOT_CONVERGED;
  free(comp), free(sep), free(dcomp), free(dsep), free(row_of);
done:
  rrt_seacells_destroy(s);
  free(in.x), free(in.codes), free(in.arch_in);
  rrt_strings_free(&in.names);
  rrt_strings_free(&in.cats);
  return rrt_app_finish(ctx, &com, rc);
}

/* `ringrt seacells`: what rank 0 writes once the metacells exist. */
#ifndef RRT_APP_SEACELLS_REPORT_H
#define RRT_APP_SEACELLS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "io/h5ad.h"
#include "ringrt/ringrt.h"

/** All of a run's results gathered on rank 0, and what describes them. */
typedef struct rrt_app_seacells_result {
  const char *input, *labels; /* the input file; the --labels column or NULL */
  int64_t n, m;               /* cells, metacells */
  int d, P;                   /* input dimensions, ranks */
  const int64_t *assign;      /* [n] metacell of each cell (-1: none) */
  const int64_t *top_i;       /* [n * 5] the 5 heaviest metacells of each cell */
  const double *top_w;        /* [n * 5] and their weights */
  const double *comp, *sep;   /* [m] compactness and separation per metacell */
  const double *dcomp, *dsep; /* [m] the same on diffusion components, or NULL */
  const rrt_strings *names;   /* cell ids (obs index) when names->count == n */
  const int32_t *codes;       /* [n] label codes, or NULL without --labels */
  int64_t ncat;               /* label categories */
  uint64_t seed;              /* seed of the random-groups baseline */
} rrt_app_seacells_result;

/** Derived summaries: metacell sizes (malloc'd [m]), purities, mean metrics. */
typedef struct rrt_app_seacells_summary {
  int64_t *size;
  double purity, rpurity, mcomp, msep;
} rrt_app_seacells_summary;

/** Fill the summary of r (purity only with codes). */
void rrt_app_seacells_summarise(const rrt_app_seacells_result *r, rrt_app_seacells_summary *s);

/** --out: CSV cell,metacell,top-5 (metacell, weight), written whole or not
 *  at all (comm/outfile.h). Returns RRT_SUCCESS or RRT_ERR_IO with err. */
rrt_status rrt_app_seacells_write_csv(const char *path, const rrt_app_seacells_result *r, char *err,
                                      size_t errlen);

/** --archetypes-out: one cell index per line, like the CSV. */
rrt_status rrt_app_seacells_write_archetypes(const char *path, rrt_seacells_t s, int64_t m,
                                             char *err, size_t errlen);

/** The JSON report, without its closing brace (rrt_app_json_close adds the
 *  status). */
void rrt_app_seacells_json(FILE *js, rrt_ctx_t ctx, rrt_seacells_t s,
                           const rrt_app_seacells_result *r, const rrt_app_seacells_summary *sm);

/** The summary lines on stderr. */
void rrt_app_seacells_text(rrt_seacells_t s, const rrt_app_seacells_result *r,
                           const rrt_app_seacells_summary *sm);

#endif

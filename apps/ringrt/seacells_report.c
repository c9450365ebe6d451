/* `ringrt seacells` on rank 0: purity against the labels (and the same for
 * random groups of the same sizes), the assignment CSV, the archetypes, the
 * JSON report and the summary lines. */
#include "seacells_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/json_out.h"
#include "comm/outfile.h"

/* Share of the most common label per metacell, averaged over the non-empty
 * metacells (cells with a missing label, code -1, count in the size only). */
static double mean_purity(const int64_t *assign, const int32_t *codes, int64_t n, int64_t m,
                          int64_t ncat) {
  int64_t *h = calloc((size_t)m * (ncat + 1), sizeof(int64_t)), *size = calloc((size_t)m, 8);
  double purity = 0.0;
  int64_t used = 0;
  for (int64_t i = 0; h && size && i < n; i++) {
    if (assign[i] < 0) continue;
    size[assign[i]]++;
    if (codes[i] >= 0 && codes[i] < ncat) h[assign[i] * (ncat + 1) + codes[i]]++;
  }
  for (int64_t j = 0; h && size && j < m; j++) {
    int64_t best = 0;
    for (int64_t k = 0; k < ncat; k++)
      if (h[j * (ncat + 1) + k] > best) best = h[j * (ncat + 1) + k];
    if (size[j]) purity += (double)best / size[j], used++;
  }
  free(h), free(size);
  return used ? purity / used : 0.0;
}

/* Baseline: the purity of random groups with the metacells' sizes (the
 * labels shuffled over the cells, seeded), averaged over `reps` shuffles. */
static double random_purity(const int64_t *assign, const int32_t *codes, int64_t n, int64_t m,
                            int64_t ncat, uint64_t seed, int reps) {
  int32_t *perm = malloc((size_t)(n + 1) * sizeof(int32_t));
  if (!perm) return NAN;
  uint64_t z = seed ^ 0x5ea5eedull;
  double acc = 0.0;
  for (int r = 0; r < reps; r++) {
    memcpy(perm, codes, (size_t)n * sizeof(int32_t));
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates with splitmix64 */
      z += 0x9e3779b97f4a7c15ull;
      uint64_t v = z;
      v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
      v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
      v ^= v >> 31;
      int64_t k = (int64_t)(v % (uint64_t)(i + 1));
      int32_t t = perm[i];
      perm[i] = perm[k], perm[k] = t;
    }
    acc += mean_purity(assign, perm, n, m, ncat);
  }
  free(perm);
  return acc / reps;
}

/* Mean of the finite values (NaN marks an undefined metric). */
static double finite_mean(const double *v, int64_t m) {
  double s = 0.0;
  int64_t c = 0;
  for (int64_t j = 0; j < m; j++)
    if (isfinite(v[j])) s += v[j], c++;
  return c ? s / c : NAN;
}

void rrt_app_seacells_summarise(const rrt_app_seacells_result *r, rrt_app_seacells_summary *s) {
  s->size = calloc((size_t)r->m, sizeof(int64_t));
  for (int64_t i = 0; i < r->n; i++)
    if (r->assign[i] >= 0) s->size[r->assign[i]]++;
  s->purity = 0.0, s->rpurity = 0.0;
  if (r->codes) {
    s->purity = mean_purity(r->assign, r->codes, r->n, r->m, r->ncat);
    s->rpurity = random_purity(r->assign, r->codes, r->n, r->m, r->ncat, r->seed, 20);
  }
  s->mcomp = finite_mean(r->comp, r->m), s->msep = finite_mean(r->sep, r->m);
}

/* One CSV field as RFC 4180 writes it (and pandas and R read it): quoted,
 * inner quotes doubled, when it holds a separator, a quote, a line break or
 * an edge space; as it is otherwise. */
static void csv_field(FILE *f, const char *v) {
  size_t len = strlen(v);
  int quote = strpbrk(v, ",\"\r\n;\t") != NULL || (len && (v[0] == ' ' || v[len - 1] == ' '));
  if (!quote) {
    fputs(v, f);
    return;
  }
  fputc('"', f);
  for (const char *c = v; *c; c++) {
    if (*c == '"') fputc('"', f);
    fputc(*c, f);
  }
  fputc('"', f);
}

rrt_status rrt_app_seacells_write_csv(const char *path, const rrt_app_seacells_result *r, char *err,
                                      size_t errlen) {
  rrt_outfile out;
  if (rrt_outfile_open(&out, path, err, errlen) != RRT_SUCCESS) return RRT_ERR_IO;
  FILE *f = out.f;
  fprintf(f, "cell,metacell,mc1,w1,mc2,w2,mc3,w3,mc4,w4,mc5,w5\n");
  for (int64_t i = 0; i < r->n && !ferror(f); i++) { /* a full disk fails every later row */
    if (r->names->count == r->n)
      csv_field(f, r->names->items[i]);
    else
      fprintf(f, "%lld", (long long)i);
    fprintf(f, ",%lld", (long long)r->assign[i]);
    for (int t = 0; t < 5; t++)
      fprintf(f, ",%lld,%.6g", (long long)r->top_i[i * 5 + t], r->top_w[i * 5 + t]);
    fputc('\n', f);
  }
  return rrt_outfile_commit(&out, err, errlen);
}

rrt_status rrt_app_seacells_write_archetypes(const char *path, rrt_seacells_t s, int64_t m,
                                             char *err, size_t errlen) {
  rrt_outfile out;
  if (rrt_outfile_open(&out, path, err, errlen) != RRT_SUCCESS) return RRT_ERR_IO;
  const int64_t *ar = rrt_seacells_archetypes(s);
  for (int64_t j = 0; j < m; j++)
    fprintf(out.f, "%lld\n", (long long)ar[j]);
  return rrt_outfile_commit(&out, err, errlen);
}

static void json_array(FILE *js, const char *key, const double *v, int64_t m) {
  fprintf(js, ", \"%s\": [", key);
  for (int64_t j = 0; j < m; j++) {
    if (j) fputs(", ", js);
    rrt_app_json_number(js, v[j]);
  }
  fprintf(js, "]");
}

void rrt_app_seacells_json(FILE *js, rrt_ctx_t ctx, rrt_seacells_t s,
                           const rrt_app_seacells_result *r, const rrt_app_seacells_summary *sm) {
  int nr = 0;
  const double *rss = rrt_seacells_rss(s, &nr);
  fprintf(js, "{\"command\": \"seacells\", \"input\": ");
  rrt_json_string(js, r->input);
  fprintf(js,
          ", \"cells\": %lld, \"dims\": %d, \"metacells\": %lld, \"ranks\": %d, \"backend\": "
          "\"%s\", \"iterations\": %d, \"converged\": %s, \"rss\": [",
          (long long)r->n, r->d, (long long)r->m, r->P, rrt_backend_name(rrt_ctx_backend(ctx)),
          rrt_seacells_iterations(s), rrt_seacells_converged(s) ? "true" : "false");
  for (int t = 0; t < nr; t++) {
    if (t) fputs(", ", js);
    rrt_app_json_number(js, rss[t]);
  }
  fprintf(js, "], \"sizes\": [");
  for (int64_t j = 0; j < r->m; j++)
    fprintf(js, "%s%lld", j ? ", " : "", (long long)sm->size[j]);
  fprintf(js, "]");
  if (r->codes) {
    fprintf(js, ", \"labels\": ");
    rrt_json_string(js, r->labels);
    rrt_app_json_field(js, "mean_purity", sm->purity);
    rrt_app_json_field(js, "random_purity", sm->rpurity);
    fprintf(js, ", \"random_purity_seed\": %llu, \"random_purity_reps\": 20",
            (unsigned long long)r->seed);
  }
  rrt_app_json_field(js, "mean_compactness", sm->mcomp);
  rrt_app_json_field(js, "mean_separation", sm->msep);
  json_array(js, "compactness", r->comp, r->m);
  json_array(js, "separation", r->sep, r->m);
  if (r->dcomp && r->dsep) { /* SEACells.evaluate's: on palantir's diffusion components */
    rrt_app_json_field(js, "mean_diffusion_compactness", finite_mean(r->dcomp, r->m));
    rrt_app_json_field(js, "mean_diffusion_separation", finite_mean(r->dsep, r->m));
    json_array(js, "diffusion_compactness", r->dcomp, r->m);
    json_array(js, "diffusion_separation", r->dsep, r->m);
  }
  fprintf(js, ", \"seconds\": {");
  const char *ph[] = {"knn", "kernel", "init", "update_a", "update_b", "rss"};
  for (int p = 0; p < 6; p++) {
    fprintf(js, "%s\"%s\": ", p ? ", " : "", ph[p]);
    rrt_app_json_number(js, rrt_seacells_seconds(s, ph[p]));
  }
  fprintf(js, "}");
}

void rrt_app_seacells_text(rrt_seacells_t s, const rrt_app_seacells_result *r,
                           const rrt_app_seacells_summary *sm) {
  fprintf(stderr, "seacells: %lld metacells, %d iterations%s, RSS %.6g -> %.6g\n", (long long)r->m,
          rrt_seacells_iterations(s), rrt_seacells_converged(s) ? "" : " (not converged)",
          rrt_seacells_rss(s, NULL)[0], rrt_seacells_rss(s, NULL)[rrt_seacells_iterations(s)]);
  fprintf(stderr, "seacells: mean compactness %.4g, mean separation %.4g (input coordinates)\n",
          sm->mcomp, sm->msep);
  if (r->dcomp && r->dsep)
    fprintf(stderr,
            "seacells: mean compactness %.4g, mean separation %.4g (diffusion components)\n",
            finite_mean(r->dcomp, r->m), finite_mean(r->dsep, r->m));
  if (r->codes)
    fprintf(stderr, "seacells: mean purity of %s: %.4f (random groups of the same sizes: %.4f)\n",
            r->labels, sm->purity, sm->rpurity);
}

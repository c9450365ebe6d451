/* `ringrt seacells`: SEACells metacells of single-cell PCA coordinates.
 * Every rank reads its own block of rows; errors are agreed on all ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "io/csv_matrix.h"
#include "io/h5ad.h"
#include "io/npy.h"

static const char usage[] = "usage: ringrt seacells INPUT (.h5ad | .npy | .csv) [options]\n"
                            "  --obsm KEY            h5ad matrix (default X_pca)\n"
                            "  --labels COLUMN       h5ad obs categorical: purity per metacell\n"
                            "  --n-metacells N       default n / 75\n"
                            "  --knn K               neighbours (default 15)\n"
                            "  --seed S              seed of --init maxmin\n"
                            "  --init cssp|maxmin    initial archetypes (default cssp)\n"
                            "  --archetypes-in FILE  start from these cells (one index per line)\n"
                            "  --archetypes-out FILE write the initial archetypes\n"
                            "  --max-iter N --min-iter N --eps E --fw-iter N\n"
                            "  --out FILE            CSV: cell,metacell,top-5 (metacell, weight)\n";

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

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

static void json_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.6g", v);
  else
    fputs("null", f);
}

/* Mean of the finite values (NaN marks an undefined metric). */
static double finite_mean(const double *v, int64_t m) {
  double s = 0.0;
  int64_t c = 0;
  for (int64_t j = 0; j < m; j++)
    if (isfinite(v[j])) s += v[j], c++;
  return c ? s / c : NAN;
}

/* Read this rank's rows. Returns 0 or fills err. */
static rrt_status read_input(const char *path, const char *key, rrt_ctx_t ctx, int64_t *n, int *d,
                             double **x, int64_t *first, int64_t *count, char *err, size_t len) {
  rrt_status st;
  *x = NULL;
  if (ends_with(path, ".h5ad") || ends_with(path, ".h5")) {
    int64_t rows = 0, cols = 0;
    st = rrt_h5ad_matrix_shape(path, key, &rows, &cols, err, len);
    if (st != RRT_SUCCESS) return st;
    *n = rows, *d = (int)cols;
    rrt_seacells_partition(ctx, rows, first, count);
    return rrt_h5ad_read_matrix_rows(path, key, *first, *count, x, &cols, err, len);
  }
  double *all = NULL;
  if (ends_with(path, ".npy")) {
    rrt_npy a;
    st = rrt_npy_read(path, &a, err, len);
    if (st != RRT_SUCCESS) return st;
    if (a.ndim != 2 || (strcmp(a.descr, "<f4") && strcmp(a.descr, "<f8"))) {
      snprintf(err, len, "%s: expected a 2-D float32/float64 array", path);
      rrt_npy_free(&a);
      return RRT_ERR_INVALID_ARG;
    }
    *n = a.shape[0], *d = (int)a.shape[1];
    all = malloc(a.count * sizeof(double));
    for (size_t i = 0; all && i < a.count; i++)
      all[i] = a.elsize == 4 ? ((float *)a.data)[i] : ((double *)a.data)[i];
    rrt_npy_free(&a);
  } else {
    rrt_csv_matrix m;
    st = rrt_csv_read_matrix(path, -1, &m, err, len);
    if (st != RRT_SUCCESS) return st;
    *n = m.rows, *d = (int)m.cols;
    all = m.data;
    m.data = NULL;
    rrt_csv_matrix_free(&m);
  }
  if (!all) return RRT_ERR_OUT_OF_MEMORY;
  rrt_seacells_partition(ctx, *n, first, count);
  *x = malloc((size_t)(*count * *d + 1) * sizeof(double));
  if (*x) memcpy(*x, all + *first * *d, (size_t)(*count * *d) * sizeof(double));
  free(all);
  return *x ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

int rrt_cmd_seacells(MPI_Comm comm, int argc, char **argv) {
  rrt_app_common com;
  memset(&com, 0, sizeof com);
  const char *input = NULL, *key = "X_pca", *labels = NULL, *out = NULL, *ain = NULL, *aout = NULL;
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER;
  long v;
  double dv;
  for (int i = 1; i < argc; i++) {
    int c = rrt_app_common_option(&com, argc, argv, &i);
    if (c < 0) return 2;
    if (c > 0) continue;
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                                     \
  if (!val) {                                                                                      \
    rrt_app_print0(comm, "ringrt seacells: %s needs a value\n", a);                                \
    return 2;                                                                                      \
  }                                                                                                \
  i++
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      rrt_app_print0(comm, "%s%s", usage, rrt_app_common_help);
      return 0;
    } else if (!strcmp(a, "--obsm")) {
      NEED();
      key = val;
    } else if (!strcmp(a, "--labels")) {
      NEED();
      labels = val;
    } else if (!strcmp(a, "--out")) {
      NEED();
      out = val;
    } else if (!strcmp(a, "--archetypes-in")) {
      NEED();
      ain = val;
    } else if (!strcmp(a, "--archetypes-out")) {
      NEED();
      aout = val;
    } else if (!strcmp(a, "--init")) {
      NEED();
      if (!strcmp(val, "maxmin"))
        o.init = RRT_SEACELLS_INIT_MAXMIN;
      else if (strcmp(val, "cssp")) {
        rrt_app_print0(comm, "ringrt seacells: bad --init '%s'\n", val);
        return 2;
      }
    } else if (!strcmp(a, "--n-metacells") || !strcmp(a, "--knn") || !strcmp(a, "--seed") ||
               !strcmp(a, "--max-iter") || !strcmp(a, "--min-iter") || !strcmp(a, "--fw-iter")) {
      NEED();
      if (rrt_app_parse_long(comm, "seacells", a + 2, val, 0, 1L << 40, &v)) return 2;
      if (!strcmp(a, "--n-metacells"))
        o.n_metacells = v;
      else if (!strcmp(a, "--knn"))
        o.knn = (int)v;
      else if (!strcmp(a, "--seed"))
        o.seed = (uint64_t)v;
      else if (!strcmp(a, "--max-iter"))
        o.max_iter = (int)v;
      else if (!strcmp(a, "--min-iter"))
        o.min_iter = (int)v;
      else
        o.fw_iter = (int)v;
    } else if (!strcmp(a, "--eps")) {
      NEED();
      if (rrt_app_parse_double(comm, "seacells", "eps", val, &dv)) return 2;
      o.eps = dv;
    } else if (a[0] != '-' && !input) {
      input = a;
    } else {
      rrt_app_print0(comm, "ringrt seacells: unknown option '%s'\n%s", a, usage);
      return 2;
    }
  }
  if (!input) {
    rrt_app_print0(comm, "%s", usage);
    return 2;
  }
  rrt_ctx_t ctx = NULL;
  if (rrt_app_ctx_create(comm, &com, &ctx) != RRT_SUCCESS) return 1;
  int rank = rrt_ctx_rank(ctx), rc = 1;
  o.verbose = !com.quiet;
  char err[1024] = "";
  int64_t n = 0, first = 0, count = 0, *arch_in = NULL, na = 0;
  int d = 0;
  double *x = NULL;
  rrt_strings names = {0, NULL}, cats = {0, NULL};
  int32_t *codes = NULL;
  int64_t ncodes = 0;
  rrt_seacells_t s = NULL;
  rrt_status st = read_input(input, key, ctx, &n, &d, &x, &first, &count, err, sizeof err);
  if (st == RRT_SUCCESS && labels) {
    st = rrt_h5ad_read_categorical(input, labels, &codes, &ncodes, &cats, err, sizeof err);
    if (st == RRT_SUCCESS && ncodes != n) {
      snprintf(err, sizeof err, "%s: obs/%s has %lld rows, the matrix %lld", input, labels,
               (long long)ncodes, (long long)n);
      st = RRT_ERR_INVALID_ARG;
    }
  }
  if (st == RRT_SUCCESS && (ends_with(input, ".h5ad")))
    if (rrt_h5ad_read_obs_names(input, &names, err, sizeof err) != RRT_SUCCESS) err[0] = 0;
  if (st == RRT_SUCCESS && ain) {
    FILE *f = fopen(ain, "r");
    long long a;
    if (!f) {
      snprintf(err, sizeof err, "%s: cannot open", ain);
      st = RRT_ERR_IO;
    } else {
      arch_in = malloc(sizeof(int64_t) * 1024 * 1024);
      while (arch_in && na < 1024 * 1024 && fscanf(f, "%lld", &a) == 1)
        arch_in[na++] = a;
      fclose(f);
      o.init = RRT_SEACELLS_INIT_GIVEN;
      o.archetypes = arch_in;
      o.n_metacells = na;
    }
  }
  st = rrt_agree(ctx, st);
  if (st != RRT_SUCCESS) {
    fprintf(stderr, "ringrt seacells: rank %d: %s\n", rank, err[0] ? err : rrt_ctx_last_error(ctx));
    goto done;
  }
  st = rrt_seacells_run(ctx, n, d, x, &o, &s);
  if (st != RRT_SUCCESS) {
    /* every rank reports: the run agreed on the failure, so all of them exit */
    fprintf(stderr, "ringrt seacells: %s\n", rrt_ctx_last_error(ctx)); /* names the rank */
    goto done;
  }
  int64_t m = rrt_seacells_n_metacells(s);
  double *comp = malloc((size_t)m * sizeof(double)), *sep = malloc((size_t)m * sizeof(double));
  if (!comp || !sep || rrt_seacells_metrics(ctx, s, x, comp, sep) != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt seacells: metrics: %s\n", rrt_ctx_last_error(ctx));
    free(comp), free(sep);
    goto done;
  }
  int64_t *assign = malloc((size_t)(count + 1) * sizeof(int64_t)),
          *all = malloc((size_t)n * sizeof(int64_t));
  int64_t *ti = malloc((size_t)(count * 5 + 1) * sizeof(int64_t)),
          *tia = malloc((size_t)n * 5 * sizeof(int64_t));
  double *tw = malloc((size_t)(count * 5 + 1) * sizeof(double)),
         *twa = malloc((size_t)n * 5 * sizeof(double));
  rrt_seacells_local_assignments(s, 5, assign, ti, tw);
  int P = rrt_ctx_size(ctx), *cnt = malloc(P * sizeof(int)), *dis = malloc(P * sizeof(int)),
      c = (int)count;
  MPI_Allgather(&c, 1, MPI_INT, cnt, 1, MPI_INT, comm);
  for (int r = 0, off = 0; r < P; r++)
    dis[r] = off, off += cnt[r];
  MPI_Gatherv(assign, c, MPI_INT64_T, all, cnt, dis, MPI_INT64_T, 0, comm);
  for (int r = 0; r < P; r++)
    cnt[r] *= 5, dis[r] *= 5;
  MPI_Gatherv(ti, c * 5, MPI_INT64_T, tia, cnt, dis, MPI_INT64_T, 0, comm);
  MPI_Gatherv(tw, c * 5, MPI_DOUBLE, twa, cnt, dis, MPI_DOUBLE, 0, comm);
  if (rank == 0) {
    int64_t *size = calloc((size_t)m, sizeof(int64_t));
    for (int64_t i = 0; i < n; i++)
      if (all[i] >= 0) size[all[i]]++;
    double purity = 0.0, rpurity = 0.0;
    if (codes) {
      purity = mean_purity(all, codes, n, m, cats.count);
      rpurity = random_purity(all, codes, n, m, cats.count, o.seed, 20);
    }
    double mcomp = finite_mean(comp, m), msep = finite_mean(sep, m);
    if (out) {
      FILE *f = fopen(out, "w");
      if (!f) {
        fprintf(stderr, "ringrt seacells: cannot write %s\n", out);
      } else {
        fprintf(f, "cell,metacell,mc1,w1,mc2,w2,mc3,w3,mc4,w4,mc5,w5\n");
        for (int64_t i = 0; i < n; i++) {
          if (names.count == n)
            fprintf(f, "%s,%lld", names.items[i], (long long)all[i]);
          else
            fprintf(f, "%lld,%lld", (long long)i, (long long)all[i]);
          for (int t = 0; t < 5; t++)
            fprintf(f, ",%lld,%.6g", (long long)tia[i * 5 + t], twa[i * 5 + t]);
          fputc('\n', f);
        }
        fclose(f);
      }
    }
    if (aout) {
      FILE *f = fopen(aout, "w");
      const int64_t *ar = rrt_seacells_archetypes(s);
      for (int64_t j = 0; f && j < m; j++)
        fprintf(f, "%lld\n", (long long)ar[j]);
      if (f) fclose(f);
    }
    FILE *js = rrt_app_json_open(&com, rank);
    if (js) {
      int nr = 0;
      const double *rss = rrt_seacells_rss(s, &nr);
      fprintf(js,
              "{\"command\": \"seacells\", \"input\": \"%s\", \"cells\": %lld, \"dims\": %d, "
              "\"metacells\": %lld, \"ranks\": %d, \"backend\": \"%s\", \"iterations\": %d, "
              "\"converged\": %s, \"rss\": [",
              input, (long long)n, d, (long long)m, P, rrt_backend_name(rrt_ctx_backend(ctx)),
              rrt_seacells_iterations(s), rrt_seacells_converged(s) ? "true" : "false");
      for (int t = 0; t < nr; t++)
        fprintf(js, "%s%.10g", t ? ", " : "", rss[t]);
      fprintf(js, "], \"sizes\": [");
      for (int64_t j = 0; j < m; j++)
        fprintf(js, "%s%lld", j ? ", " : "", (long long)size[j]);
      fprintf(js, "]");
      if (codes)
        fprintf(js,
                ", \"labels\": \"%s\", \"mean_purity\": %.6f, \"random_purity\": %.6f, "
                "\"random_purity_seed\": %llu, \"random_purity_reps\": 20",
                labels, purity, rpurity, (unsigned long long)o.seed);
      fprintf(js, ", \"mean_compactness\": ");
      json_num(js, mcomp);
      fprintf(js, ", \"mean_separation\": ");
      json_num(js, msep);
      fprintf(js, ", \"compactness\": [");
      for (int64_t j = 0; j < m; j++)
        fprintf(js, "%s", j ? ", " : ""), json_num(js, comp[j]);
      fprintf(js, "], \"separation\": [");
      for (int64_t j = 0; j < m; j++)
        fprintf(js, "%s", j ? ", " : ""), json_num(js, sep[j]);
      fprintf(js, "]");
      fprintf(js, ", \"seconds\": {");
      const char *ph[] = {"knn", "kernel", "init", "update_a", "update_b", "rss"};
      for (int p = 0; p < 6; p++)
        fprintf(js, "%s\"%s\": %.6f", p ? ", " : "", ph[p], rrt_seacells_seconds(s, ph[p]));
      fprintf(js, "}}\n");
      rrt_app_json_close(js);
    }
    if (!com.quiet) {
      fprintf(stderr, "seacells: %lld metacells, %d iterations%s, RSS %.6g -> %.6g\n", (long long)m,
              rrt_seacells_iterations(s), rrt_seacells_converged(s) ? "" : " (not converged)",
              rrt_seacells_rss(s, NULL)[0], rrt_seacells_rss(s, NULL)[rrt_seacells_iterations(s)]);
      fprintf(stderr, "seacells: mean compactness %.4g, mean separation %.4g (input coordinates)\n",
              mcomp, msep);
      if (codes)
        fprintf(stderr,
                "seacells: mean purity of %s: %.4f (random groups of the same sizes: %.4f)\n",
                labels, purity, rpurity);
    }
    free(size);
  }
  free(assign), free(all), free(ti), free(tia), free(tw), free(twa), free(cnt), free(dis);
  free(comp), free(sep);
  rc = 0;
done:
  rrt_seacells_destroy(s);
  free(x), free(codes), free(arch_in);
  rrt_strings_free(&names);
  rrt_strings_free(&cats);
  rrt_app_ctx_finish(ctx, &com);
  return rc;
}

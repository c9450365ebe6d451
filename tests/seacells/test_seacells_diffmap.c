/* Diffusion components (palantir's run_diffusion_maps + multiscale space),
 * the waypoint initialisation and the diffusion-component metrics.
 *   blobs: 300 cells in 5-D; against a dense naive implementation written
 *     here from palantir's definitions (brute-force kNN with 29 other
 *     cells, width = 10th, W + W^T, S = D^-1/2 K D^-1/2 diagonalised by
 *     dense Jacobi, eigenvectors D^-1/2 u at unit norm): eigenvalues to
 *     1e-10 (the solver stops at residual 1e-9: eigenvalue errors are of
 *     its square over the gap), multiscale components to 1e-6 after the
 *     documented sign rule; compactness and separation of fixed groups on
 *     the naive components to 1e-6 relative; then each rank alone (a
 *     one-rank context on MPI_COMM_SELF) must give the same bits as the
 *     distributed run, components and waypoints.
 *   pbmc H5AD PREFIX: pbmc68k_reduced at 36 metacells against the
 *     reference (bench/seacells-ref-diffusion.py): palantir's eigenvalues
 *     to 1e-10 (ARPACK at tol 1e-4 there; eigenvalue errors go with the
 *     square of the residual; measured 1.4e-14), the waypoints in order
 *     and the whole archetype set exactly, and SEACells.evaluate's
 *     compactness and separation of the same hard assignments to 1e-4
 *     relative (ARPACK's eigenvectors at tol 1e-4, float32 kNN distances
 *     there; measured 8.3e-7 and 3.7e-6). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/npy.h"
#include "seacells/internal.h"
#include "ringrt/ringrt.h"
#include "sc_ref.h"
#include "sc_fixture.h"
#include "test_util.h"

static double sqd(const double *a, const double *b, int d) {
  double acc = 0;
  for (int c = 0; c < d; c++)
    acc += (a[c] - b[c]) * (a[c] - b[c]);
  return acc;
}

/* A run state over ctx for n cells of x (whole), m metacells. */
static void state(rrt_sc_run *s, rrt_ctx_t ctx, const double *x, int64_t n, int d, int m) {
  memset(s, 0, sizeof *s);
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER;
  o.n_metacells = m;
  s->ctx = ctx, s->opt = o, s->rank = rrt_ctx_rank(ctx), s->size = rrt_ctx_size(ctx);
  s->n = n, s->d = d, s->m = m, s->capa = m;
  rrt_sc_graph_convention(n, o.knn, &s->knn, &s->kbw);
  s->kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx));
  CHECK_OK(rrt_cell_blocks_create(n, s->size, 0, &s->plan));
  s->c0 = s->plan.cell_start[s->rank];
  s->nl = s->plan.cell_start[s->rank + 1] - s->c0;
  s->x = x + s->c0 * d;
  CHECK_OK(rrt_sc_alloc_state(s));
  CHECK_OK(rrt_sc_build_graph(s)); /* M, for the greedy part of the waypoint init */
}

/* Dense symmetric eigenproblem by cyclic Jacobi: a (n x n) destroyed, its
 * eigenvalues in w (decreasing), eigenvectors in the columns of v. */
static void dense_eigs(int n, double *a, double *w, double *v) {
  for (int i = 0; i < n * n; i++)
    v[i] = i % (n + 1) == 0;
  for (int sweep = 0; sweep < 60; sweep++) {
    double off = 0;
    for (int p = 0; p < n; p++)
      for (int q = p + 1; q < n; q++)
        off += a[p * n + q] * a[p * n + q];
    if (off < 1e-30) break;
    for (int p = 0; p < n; p++)
      for (int q = p + 1; q < n; q++) {
        if (a[p * n + q] == 0) continue;
        double th = 0.5 * atan2(2 * a[p * n + q], a[q * n + q] - a[p * n + p]);
        double c = cos(th), sn = sin(th);
        for (int k = 0; k < n; k++) {
          double x = a[k * n + p], y = a[k * n + q];
          a[k * n + p] = c * x - sn * y, a[k * n + q] = sn * x + c * y;
        }
        for (int k = 0; k < n; k++) {
          double x = a[p * n + k], y = a[q * n + k];
          a[p * n + k] = c * x - sn * y, a[q * n + k] = sn * x + c * y;
        }
        for (int k = 0; k < n; k++) {
          double x = v[k * n + p], y = v[k * n + q];
          v[k * n + p] = c * x - sn * y, v[k * n + q] = sn * x + c * y;
        }
      }
  }
  for (int i = 0; i < n; i++) /* selection sort of the columns, decreasing */
    w[i] = a[i * n + i];
  for (int i = 0; i < n; i++) {
    int b = i;
    for (int j = i + 1; j < n; j++)
      if (w[j] > w[b]) b = j;
    double t = w[i];
    w[i] = w[b], w[b] = t;
    for (int k = 0; k < n; k++)
      t = v[k * n + i], v[k * n + i] = v[k * n + b], v[k * n + b] = t;
  }
}

/* palantir's multiscale components from the definitions, dense: n x 9. */
static double *naive_dc(const double *x, int n, int d, double *vals) {
  int k = 29, ak = 10;
  double *dist = malloc((size_t)n * n * sizeof(double)), *K = calloc((size_t)n * n, sizeof(double));
  double *sig = malloc(n * sizeof(double)), *deg = calloc(n, sizeof(double));
  double *w = malloc(n * sizeof(double)), *v = malloc((size_t)n * n * sizeof(double));
  double *dc = malloc((size_t)n * 9 * sizeof(double)), *row = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      dist[i * n + j] = sqrt(sqd(x + i * d, x + j * d, d));
  for (int i = 0; i < n; i++) { /* the k nearest others by (distance, index) */
    char *in = calloc(n, 1);
    in[i] = 1;
    for (int e = 0; e < k; e++) {
      int b = -1;
      for (int j = 0; j < n; j++)
        if (!in[j] && (b < 0 || dist[i * n + j] < dist[i * n + b])) b = j;
      in[b] = 1;
      row[e] = b;
      if (e == ak - 1) sig[i] = dist[i * n + b];
    }
    for (int e = 0; e < k; e++) {
      int j = (int)row[e];
      double wij = exp(-dist[i * n + j] / sig[i]);
      K[i * n + j] += wij, K[j * n + i] += wij;
    }
    free(in);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      deg[i] += K[i * n + j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      K[i * n + j] /= sqrt(deg[i] * deg[j]);
  dense_eigs(n, K, w, v);
  for (int c = 0; c < 10; c++) {
    double nrm = 0, big = 0;
    int at = 0;
    for (int i = 0; i < n; i++) {
      row[i] = v[i * n + c] / sqrt(deg[i]);
      nrm += row[i] * row[i];
      if (fabs(row[i]) > big) big = fabs(row[i]), at = i;
    }
    double f = (row[at] < 0 ? -1 : 1) / sqrt(nrm);
    vals[c] = w[c];
    for (int i = 0; c > 0 && i < n; i++)
      dc[i * 9 + c - 1] = row[i] * f * w[c] / (1 - w[c]);
  }
  free(dist), free(K), free(sig), free(deg), free(w), free(v), free(row);
  return dc;
}

/* Compactness and separation of groups g (0..m-1) on y (n x dy), naive. */
static void naive_metrics(const double *y, int n, int dy, const int64_t *g, int m, double *comp,
                          double *sep) {
  double *cen = calloc((size_t)m * dy, sizeof(double)), *cnt = calloc(m, sizeof(double));
  for (int i = 0; i < n; i++) {
    cnt[g[i]]++;
    for (int c = 0; c < dy; c++)
      cen[g[i] * dy + c] += y[i * dy + c];
  }
  for (int j = 0; j < m; j++)
    for (int c = 0; c < dy; c++)
      cen[j * dy + c] /= cnt[j];
  for (int j = 0; j < m; j++) {
    double acc = 0;
    for (int i = 0; i < n; i++)
      for (int c = 0; c < dy && g[i] == j; c++)
        acc += (y[i * dy + c] - cen[j * dy + c]) * (y[i * dy + c] - cen[j * dy + c]);
    comp[j] = acc / (cnt[j] - 1) / dy;
    sep[j] = INFINITY;
    for (int l = 0; l < m; l++)
      if (l != j) sep[j] = fmin(sep[j], sqrt(sqd(cen + j * dy, cen + l * dy, dy)));
  }
  free(cen), free(cnt);
}

static int blobs(rrt_ctx_t ctx) {
  int n = 300, d = 5, m = 20, bad = 0;
  double *x = sc_blobs(n, d, 4, 5.0, 5), vals[10], nv[10];
  double *ndc = naive_dc(x, n, d, nv), *dc = NULL, *dc1 = NULL;
  rrt_sc_run s, s1;
  state(&s, ctx, x, n, d, m);
  CHECK_OK(rrt_sc_diffusion_components(&s, 10, &dc, vals));
  for (int c = 0; c < 10; c++)
    bad += !(fabs(vals[c] - nv[c]) <= 1e-10);
  CHECK_MSG(bad == 0, "%d eigenvalues differ from the dense ones (first %.15g vs %.15g)", bad,
            vals[1], nv[1]);
  double worst = 0;
  for (int64_t i = 0; dc && i < s.nl; i++)
    for (int c = 0; c < 9; c++)
      worst = fmax(worst, fabs(dc[i * 9 + c] - ndc[(s.c0 + i) * 9 + c]));
  CHECK_MSG(worst <= 1e-6, "diffusion components differ from the dense ones by %g", worst);
  /* metrics of fixed groups (cell i in group i % m) on the components */
  int64_t *g = malloc(n * sizeof(int64_t));
  double comp[20], sep[20], ncomp[20], nsep[20];
  for (int i = 0; i < n; i++)
    g[i] = i % m;
  naive_metrics(ndc, n, 9, g, m, ncomp, nsep);
  CHECK_OK(rrt_sc_metrics_on(&s, dc, 9, g + s.c0, comp, sep));
  for (int j = 0; j < m; j++)
    bad +=
        !(fabs(comp[j] - ncomp[j]) <= 1e-6 * ncomp[j] && fabs(sep[j] - nsep[j]) <= 1e-6 * nsep[j]);
  CHECK_MSG(bad == 0, "%d metacells' compactness or separation differ from the naive ones", bad);
  /* the same bits on one rank alone */
  CHECK_OK(rrt_sc_init_waypoint(&s));
  rrt_ctx_t self = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_SELF, NULL, &self));
  state(&s1, self, x, n, d, m);
  CHECK_OK(rrt_sc_diffusion_components(&s1, 10, &dc1, NULL));
  CHECK_OK(rrt_sc_init_waypoint(&s1));
  CHECK_MSG(dc && dc1 && !memcmp(dc, dc1 + s.c0 * 9, (size_t)s.nl * 9 * sizeof(double)),
            "the components differ between %d ranks and one", s.size);
  CHECK_MSG(!memcmp(s.archetypes, s1.archetypes, (size_t)m * sizeof(int64_t)),
            "the waypoint archetypes differ between %d ranks and one", s.size);
  if (s.rank == 0)
    printf("blobs: eigenvalues %.6f %.6f %.6f ..., components within %.2g of the dense ones\n",
           vals[0], vals[1], vals[2], worst);
  rrt_sc_run_free(&s1);
  rrt_ctx_destroy(self);
  rrt_sc_run_free(&s);
  free(x), free(ndc), free(dc), free(dc1), free(g);
  return 0;
}

static int pbmc(rrt_ctx_t ctx, const char *h5ad, const char *prefix) {
  char err[512];
  int64_t n = 0, d = 0;
  double *x = NULL;
  CHECK_OK(rrt_h5ad_matrix_shape(h5ad, "X_pca", &n, &d, err, sizeof err));
  CHECK_MSG(rrt_h5ad_read_matrix_rows(h5ad, "X_pca", 0, n, &x, &d, err, sizeof err) == RRT_SUCCESS,
            "%s", err);
  rrt_npy aev, awp, aar, aas, aco, ase, amc;
  const double *ev = sc_fixture_load(prefix, "eigvals", "<f8", &aev);
  const int32_t *wp = sc_fixture_load(prefix, "waypoints", "<i4", &awp),
                *ar = sc_fixture_load(prefix, "archetypes", "<i4", &aar);
  const int32_t *as = sc_fixture_load(prefix, "assign", "<i4", &aas),
                *mc = sc_fixture_load(prefix, "metacells", "<i4", &amc);
  const double *rco = sc_fixture_load(prefix, "compactness", "<f8", &aco),
               *rse = sc_fixture_load(prefix, "separation", "<f8", &ase);
  if (!x || !ev || !wp || !ar || !as || !mc || !rco || !rse) return 1;
  int m = (int)aar.count, bad = 0;
  rrt_sc_run s;
  state(&s, ctx, x, n, (int)d, m);
  double vals[10], *dc = NULL;
  CHECK_OK(rrt_sc_diffusion_components(&s, 10, &dc, vals));
  double ew = 0;
  for (int c = 0; c < 10; c++)
    ew = fmax(ew, fabs(vals[c] - ev[c]));
  CHECK_MSG(ew <= 1e-10, "eigenvalues differ from palantir's by %g", ew);
  CHECK_OK(rrt_sc_init_waypoint(&s));
  for (size_t j = 0; j < awp.count; j++)
    bad += s.archetypes[j] != wp[j];
  CHECK_MSG(bad == 0, "%d of %zu waypoints differ from the reference's", bad, awp.count);
  bad = 0;
  for (int j = 0; j < m; j++) { /* the same set (the reference shuffles its waypoints) */
    int found = 0;
    for (int l = 0; l < m; l++)
      found |= s.archetypes[l] == ar[j];
    bad += !found;
  }
  CHECK_MSG(bad == 0, "%d of the reference's %d archetypes are not ringrt's", bad, m);
  int64_t *g = malloc((size_t)(s.nl + 1) * sizeof(int64_t));
  double *comp = malloc(m * sizeof(double)), *sep = malloc(m * sizeof(double)), cw = 0, sw = 0;
  for (int64_t i = 0; i < s.nl; i++)
    g[i] = as[s.c0 + i];
  CHECK_OK(rrt_sc_metrics_on(&s, dc, 9, g, comp, sep));
  for (size_t q = 0; q < amc.count; q++) {
    int j = mc[q];
    double rc = fabs(comp[j] - rco[q]) / rco[q], rs = fabs(sep[j] - rse[q]) / rse[q];
    cw = fmax(cw, rc), sw = fmax(sw, rs);
  }
  CHECK_MSG(cw <= 1e-4 && sw <= 1e-4,
            "compactness (%.3g) or separation (%.3g) differ from SEACells.evaluate's", cw, sw);
  if (s.rank == 0)
    printf("pbmc: eigenvalues within %.2g of palantir's, %zu waypoints and %d archetypes the "
           "reference's, compactness within %.2g, separation within %.2g (relative)\n",
           ew, awp.count, m, cw, sw);
  rrt_sc_run_free(&s);
  free(x), free(dc), free(g), free(comp), free(sep);
  rrt_npy_free(&aev), rrt_npy_free(&awp), rrt_npy_free(&aar), rrt_npy_free(&aas);
  rrt_npy_free(&aco), rrt_npy_free(&ase), rrt_npy_free(&amc);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (ctx) {
    if (argc == 4 && !strcmp(argv[1], "pbmc"))
      pbmc(ctx, argv[2], argv[3]);
    else
      blobs(ctx);
  }
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

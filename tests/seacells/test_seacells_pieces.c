/* Each SEACells piece against the dense serial reference of sc_ref.h, on
 * blobs spread over the ranks (ghost rows and ring kNN at np > 1):
 * kNN lists and bandwidths (exact), kernel rows of M and K (structure and
 * values), one A step from B0, one B step from that A, and the RSS trace
 * form against the explicit Frobenius norm |M - M B A| before and after the
 * B step. Tolerances: the pieces sum in the same order as the reference, so
 * values agree to a few ulps; 1e-12 relative leaves room for that only. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "ringrt/ringrt.h"
#include "sc_ref.h"
#include "test_util.h"

#define REL(a, b, tol) (fabs((a) - (b)) <= (tol) * (fabs(b) > 1.0 ? fabs(b) : 1.0))

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int n = 150, d = 5, m = 6, knn = 8, fw = 12;
  double *x = sc_blobs(n, d, 3, 2.5, 11);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (!ctx) return test_result();
  int rank = rrt_ctx_rank(ctx);

  /* the run state, driven piece by piece */
  rrt_sc_run s;
  memset(&s, 0, sizeof s);
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER;
  o.n_metacells = m, o.knn = knn, o.fw_iter = fw, o.max_iter = 2;
  s.ctx = ctx, s.opt = o, s.rank = rank, s.size = rrt_ctx_size(ctx);
  s.n = n, s.d = d, s.knn = knn, s.kbw = knn / 2, s.m = m, s.capa = m < fw ? m : fw;
  s.kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx));
  CHECK_MSG(s.kern != NULL, "no SEACells kernel table for this backend");
  CHECK_OK(rrt_cell_blocks_create(n, s.size, 0, &s.plan));
  s.c0 = s.plan.cell_start[rank];
  s.nl = s.plan.cell_start[rank + 1] - s.c0;
  s.x = x + s.c0 * d;
  CHECK_OK(rrt_sc_alloc_state(&s));
  CHECK_OK(rrt_sc_build_graph(&s));

  int *nbr = malloc((size_t)n * knn * sizeof(int));
  double *nd = malloc((size_t)n * knn * sizeof(double)), *sig = malloc(n * sizeof(double));
  double *M = ref_graph(x, n, d, knn, nbr, nd, sig), *K = ref_mm(M, M, n, n, n);

  /* kNN and bandwidths */
  int bad = 0;
  for (int64_t i = 0; i < s.nl; i++) {
    int64_t g = s.c0 + i;
    for (int e = 0; e < knn; e++)
      bad += s.nbr[i * knn + e] != nbr[g * knn + e] ||
             !REL(s.nbr_d2[i * knn + e], nd[g * knn + e], 1e-14);
    bad += !REL(s.sigma[i], sig[g], 1e-14);
  }
  CHECK_MSG(bad == 0, "%d kNN entries or bandwidths differ", bad);

  /* M and K rows: same nonzeros, same values */
  double kmax = 0;
  for (int i = 0; i < n * n; i++)
    kmax = K[i] > kmax ? K[i] : kmax;
  int badm = 0, badk = 0;
  /* K is implicit: its rows on demand (through the ghost rows at np > 1),
   * and its diagonal as kept for the RSS */
  double *kacc = malloc(n * sizeof(double)), *kval = malloc(n * sizeof(double));
  int32_t *kcol = malloc(n * sizeof(int32_t));
  char *kmark = calloc(n, 1);
  for (int64_t i = 0; i < s.nl; i++) {
    int64_t g = s.c0 + i, nzm = 0, nzk = 0;
    for (int c = 0; c < n; c++)
      nzm += M[g * n + c] != 0, nzk += K[g * n + c] != 0;
    badm += (s.mrow.ptr[i + 1] - s.mrow.ptr[i]) != nzm;
    for (int64_t p = s.mrow.ptr[i]; p < s.mrow.ptr[i + 1]; p++)
      badm += !REL(s.mrow.val[p], M[g * n + s.mrow.col[p]], 1e-14) || M[g * n + s.mrow.col[p]] == 0;
    int64_t klen = rrt_sc_k_row(&s, i, kacc, kmark, kcol, kval);
    badk += klen != nzk;
    for (int64_t p = 0; p < klen; p++)
      badk +=
          fabs(kval[p] - K[g * n + kcol[p]]) > 1e-12 * kmax || (p > 0 && kcol[p] <= kcol[p - 1]);
    badk += fabs(s.kdiag[i] - K[g * n + g]) > 1e-12 * kmax;
  }
  free(kacc), free(kval), free(kcol), free(kmark);
  CHECK_MSG(badm == 0, "%d kernel (M) entries differ", badm);
  CHECK_MSG(badk == 0, "%d K = M M entries differ", badk);

  /* one A step from B0 on fixed archetypes */
  double *B = calloc((size_t)n * m, sizeof(double)), *A = calloc((size_t)m * n, sizeof(double));
  for (int j = 0; j < m; j++) {
    s.archetypes[j] = (j * 37 + 5) % n;
    B[s.archetypes[j] * m + j] = 1.0;
  }
  CHECK_OK(rrt_sc_b_from_archetypes(&s));
  CHECK_OK(rrt_sc_update_t1a(&s));
  CHECK_OK(rrt_sc_update_a(&s, 1));
  ref_update_a(K, B, A, n, m, fw, 1);
  /* our A, dense and gathered (m x n), for the next steps */
  double *Aloc = calloc((size_t)(s.nl + 1) * m, sizeof(double)),
         *Aall = calloc((size_t)n * m, sizeof(double));
  for (int64_t i = 0; i < s.nl; i++)
    for (int e = 0; e < s.a_nnz[i]; e++)
      Aloc[i * m + s.a_idx[i * s.capa + e]] = s.a_w[i * s.capa + e];
  int P = s.size, *cnt = malloc(P * sizeof(int)), *dis = malloc(P * sizeof(int));
  for (int r = 0; r < P; r++)
    cnt[r] = (int)(s.plan.cell_start[r + 1] - s.plan.cell_start[r]) * m,
    dis[r] = (int)s.plan.cell_start[r] * m;
  MPI_Allgatherv(Aloc, (int)s.nl * m, MPI_DOUBLE, Aall, cnt, dis, MPI_DOUBLE, MPI_COMM_WORLD);
  int bada = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      bada += !REL(Aall[i * m + j], A[j * n + i], 1e-12);
  CHECK_MSG(bada == 0, "%d entries of A after one A step differ", bada);
  for (int i = 0; i < n; i++) /* continue from our A (cells x m -> m x n) */
    for (int j = 0; j < m; j++)
      A[j * n + i] = Aall[i * m + j];

  /* RSS by the trace form vs the explicit norm, with B0 */
  double rss = 0, want = ref_rss(M, B, A, n, m);
  CHECK_OK(rrt_sc_compute_rss(&s, &rss));
  CHECK_MSG(REL(rss, want, 1e-10), "RSS (B0) %.15g vs explicit %.15g", rss, want);

  /* one B step from that A */
  CHECK_OK(rrt_sc_update_b(&s));
  ref_update_b(K, B, A, n, m, fw);
  double *Bour = calloc((size_t)n * m, sizeof(double));
  for (int j = 0; j < m; j++)
    for (int e = 0; e < s.b.nnz[j]; e++)
      Bour[s.b.cell[j * s.b.cap + e] * m + j] = s.b.w[j * s.b.cap + e];
  int badb = 0;
  for (int i = 0; i < n * m; i++)
    badb += !REL(Bour[i], B[i], 1e-12);
  CHECK_MSG(badb == 0, "%d entries of B after one B step differ", badb);
  int support = 0;
  for (int j = 0; j < m; j++)
    support += s.b.nnz[j];
  CHECK_MSG(support > m, "the B step should spread B beyond the archetypes (support %d)", support);

  /* RSS by the trace form vs the explicit norm, with the new B */
  CHECK_OK(rrt_sc_update_t1a(&s));
  want = ref_rss(M, Bour, A, n, m);
  CHECK_OK(rrt_sc_compute_rss(&s, &rss));
  CHECK_MSG(REL(rss, want, 1e-10), "RSS (B1) %.15g vs explicit %.15g", rss, want);
  if (rank == 0)
    printf("pieces on %d ranks: kNN, bandwidths, M, K, A step, B step (support %d), RSS %.10g\n", P,
           support, rss);

  /* options the run must refuse by name, on every rank (no iteration runs) */
  rrt_seacells_options bad_o = o;
  bad_o.min_iter = 5, bad_o.max_iter = 3;
  rrt_seacells_t none = NULL;
  CHECK(rrt_seacells_run(ctx, n, d, x + s.c0 * d, &bad_o, &none) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "min_iter = 5, max_iter = 3") != NULL, "message: %s",
            rrt_ctx_last_error(ctx));
  rrt_seacells_destroy(none);

  rrt_sc_run_free(&s);
  free(nbr), free(nd), free(sig), free(M), free(K), free(B), free(A), free(Aloc), free(Aall);
  free(Bour), free(cnt), free(dis), free(x);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}

/* cuSPARSE ILU(0) reference for bench/gpu-ilu.sh: csrilu02 (analysis, first
 * factorisation, median refactorisation) and one apply with cusparseSpSV
 * (L unit lower, then U upper), on the same matrices ringrt factors: the
 * generated stencils (same definition as src/io/sparse_gen.c) or a Matrix
 * Market file. Prints one JSON line. Natural ordering, level-scheduled
 * policy (CUSPARSE_SOLVE_POLICY_USE_LEVEL), no boost: a zero pivot is
 * reported as an error, as ringrt does.
 *
 *   nvcc -O2 -o cusparse_ilu bench/cusparse_ilu.c -lcusparse
 *   cusparse_ilu (--generate laplace2d:N | laplace3d:N | --matrix A.mtx) [--repeat R]
 *
 * csrilu02 is deprecated in CUDA 12/13 but still the library's ILU(0). */
#define DISABLE_CUSPARSE_DEPRECATED 1
#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "cusparse_ilu: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                     \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CS(x)                                                                                      \
  do {                                                                                             \
    cusparseStatus_t s_ = (x);                                                                     \
    if (s_ != CUSPARSE_STATUS_SUCCESS) {                                                           \
      fprintf(stderr, "cusparse_ilu: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,                     \
              cusparseGetErrorString(s_));                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef struct csr {
  int n;
  int64_t nnz;
  int *rowptr, *col;
  double *val;
} csr;

/* Stencils exactly as src/io/sparse_gen.c (columns ascending). */
static int gen(const char *spec, csr *a) {
  long long N = 0;
  int three;
  char tail;
  if (sscanf(spec, "laplace2d:%lld%c", &N, &tail) == 1)
    three = 0;
  else if (sscanf(spec, "laplace3d:%lld%c", &N, &tail) == 1)
    three = 1;
  else
    return -1;
  long long n = three ? N * N * N : N * N;
  if (N < 1 || n > 2000000000LL) return -1;
  a->n = (int)n;
  a->rowptr = malloc(((size_t)n + 1) * sizeof(int));
  a->col = malloc((size_t)n * 7 * sizeof(int));
  a->val = malloc((size_t)n * 7 * sizeof(double));
  if (!a->rowptr || !a->col || !a->val) return -1;
  int64_t k = 0;
  a->rowptr[0] = 0;
  for (long long g = 0; g < n; g++) {
    long long x = g % N, y = (g / N) % N, z = three ? g / (N * N) : 0;
    if (three && z > 0) a->col[k] = (int)(g - N * N), a->val[k++] = -1.0;
    if (y > 0) a->col[k] = (int)(g - N), a->val[k++] = -1.0;
    if (x > 0) a->col[k] = (int)(g - 1), a->val[k++] = -1.0;
    a->col[k] = (int)g, a->val[k++] = three ? 6.0 : 4.0;
    if (x < N - 1) a->col[k] = (int)(g + 1), a->val[k++] = -1.0;
    if (y < N - 1) a->col[k] = (int)(g + N), a->val[k++] = -1.0;
    if (three && z < N - 1) a->col[k] = (int)(g + N * N), a->val[k++] = -1.0;
    a->rowptr[g + 1] = (int)k;
  }
  a->nnz = k;
  return 0;
}

typedef struct trip {
  int r, c;
  double v;
} trip;

static int cmp_trip(const void *x, const void *y) {
  const trip *a = x, *b = y;
  if (a->r != b->r) return a->r < b->r ? -1 : 1;
  return (a->c > b->c) - (a->c < b->c);
}

/* Coordinate real/integer general or symmetric Matrix Market (what
 * `ringrt ilu --matrix-out` writes, and the test matrices); duplicates summed. */
static int read_mtx(const char *path, csr *a) {
  FILE *f = fopen(path, "r");
  if (!f) return fprintf(stderr, "cusparse_ilu: cannot open %s\n", path), -1;
  char line[1024];
  if (!fgets(line, sizeof line, f) || strncmp(line, "%%MatrixMarket matrix coordinate", 32)) {
    fprintf(stderr, "cusparse_ilu: %s: not a coordinate Matrix Market file\n", path);
    fclose(f);
    return -1;
  }
  int sym = strstr(line, "symmetric") != NULL, pattern = strstr(line, "pattern") != NULL;
  long long nr = 0, nc = 0, ne = 0;
  while (fgets(line, sizeof line, f))
    if (line[0] != '%') {
      if (sscanf(line, "%lld %lld %lld", &nr, &nc, &ne) != 3) nr = -1;
      break;
    }
  if (nr <= 0 || nr != nc || ne < 0) {
    fprintf(stderr, "cusparse_ilu: %s: bad size line (square matrix needed)\n", path);
    fclose(f);
    return -1;
  }
  trip *t = malloc(((size_t)ne * (sym ? 2 : 1) + 1) * sizeof(trip));
  long long m = 0;
  for (long long e = 0; e < ne; e++) {
    long long i, j;
    double v = 1.0;
    if (!t || fscanf(f, "%lld %lld", &i, &j) != 2 || (!pattern && fscanf(f, "%lf", &v) != 1) ||
        i < 1 || j < 1 || i > nr || j > nr) {
      fprintf(stderr, "cusparse_ilu: %s: bad or missing entry %lld\n", path, e + 1);
      fclose(f);
      free(t);
      return -1;
    }
    t[m].r = (int)(i - 1), t[m].c = (int)(j - 1), t[m++].v = v;
    if (sym && i != j) t[m].r = (int)(j - 1), t[m].c = (int)(i - 1), t[m++].v = v;
  }
  fclose(f);
  qsort(t, (size_t)m, sizeof(trip), cmp_trip);
  a->n = (int)nr;
  a->rowptr = calloc((size_t)nr + 1, sizeof(int));
  a->col = malloc(((size_t)m + 1) * sizeof(int));
  a->val = malloc(((size_t)m + 1) * sizeof(double));
  int64_t k = 0;
  for (long long e = 0; e < m; e++) {
    if (k > 0 && a->col[k - 1] == t[e].c && e > 0 && t[e - 1].r == t[e].r) {
      a->val[k - 1] += t[e].v;
      continue;
    }
    a->col[k] = t[e].c, a->val[k++] = t[e].v;
    a->rowptr[t[e].r + 1] = (int)k;
  }
  for (int i = 0; i < a->n; i++)
    if (a->rowptr[i + 1] < a->rowptr[i]) a->rowptr[i + 1] = a->rowptr[i];
  a->nnz = k;
  free(t);
  return 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.0f;
  CK(cudaEventSynchronize(b));
  CK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

int main(int argc, char **argv) {
  const char *spec = NULL, *path = NULL;
  int reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--generate"))
      spec = argv[i + 1];
    else if (!strcmp(argv[i], "--matrix"))
      path = argv[i + 1];
    else if (!strcmp(argv[i], "--repeat"))
      reps = atoi(argv[i + 1]);
  }
  if (!spec == !path || reps < 1 || (argc % 2) == 0) {
    fprintf(stderr, "usage: cusparse_ilu (--generate laplace2d:N|laplace3d:N | --matrix A.mtx) "
                    "[--repeat R]\n");
    return 2;
  }
  csr a = {0};
  if (spec ? gen(spec, &a) : read_mtx(path, &a)) {
    if (spec) fprintf(stderr, "cusparse_ilu: bad problem '%s'\n", spec);
    return 1;
  }
  int n = a.n, nnz = (int)a.nnz;
  int *d_rp, *d_col;
  double *d_a, *d_f, *d_r, *d_y, *d_z;
  CK(cudaMalloc((void **)&d_rp, ((size_t)n + 1) * sizeof(int)));
  CK(cudaMalloc((void **)&d_col, (size_t)nnz * sizeof(int)));
  CK(cudaMalloc((void **)&d_a, (size_t)nnz * sizeof(double)));
  CK(cudaMalloc((void **)&d_f, (size_t)nnz * sizeof(double)));
  CK(cudaMalloc((void **)&d_r, (size_t)n * sizeof(double)));
  CK(cudaMalloc((void **)&d_y, (size_t)n * sizeof(double)));
  CK(cudaMalloc((void **)&d_z, (size_t)n * sizeof(double)));
  CK(cudaMemcpy(d_rp, a.rowptr, ((size_t)n + 1) * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_col, a.col, (size_t)nnz * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_a, a.val, (size_t)nnz * sizeof(double), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_f, d_a, (size_t)nnz * sizeof(double), cudaMemcpyDeviceToDevice));
  double *ones = malloc((size_t)n * sizeof(double));
  for (int i = 0; i < n; i++)
    ones[i] = 1.0;
  CK(cudaMemcpy(d_r, ones, (size_t)n * sizeof(double), cudaMemcpyHostToDevice));

  cusparseHandle_t h;
  CS(cusparseCreate(&h));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cusparseMatDescr_t descr;
  CS(cusparseCreateMatDescr(&descr));
  CS(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));
  CS(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
  csrilu02Info_t info;
  CS(cusparseCreateCsrilu02Info(&info));
  const cusparseSolvePolicy_t pol = CUSPARSE_SOLVE_POLICY_USE_LEVEL;

  /* analysis: buffer + csrilu02_analysis */
  CK(cudaEventRecord(e0, 0));
  int bytes = 0;
  CS(cusparseDcsrilu02_bufferSize(h, n, nnz, descr, d_f, d_rp, d_col, info, &bytes));
  void *buf;
  CK(cudaMalloc(&buf, (size_t)bytes + 8));
  CS(cusparseDcsrilu02_analysis(h, n, nnz, descr, d_f, d_rp, d_col, info, pol, buf));
  CK(cudaEventRecord(e1, 0));
  double t_analysis = elapsed(e0, e1) * 1e-3;
  int zp = -1;
  if (cusparseXcsrilu02_zeroPivot(h, info, &zp) == CUSPARSE_STATUS_ZERO_PIVOT) {
    printf("{\"tool\": \"cusparse\", \"problem\": \"%s\", \"error\": \"structural zero pivot at "
           "row %d\"}\n",
           spec ? spec : path, zp);
    return 1;
  }
  /* first factorisation, then refactorisations from A's values */
  CK(cudaEventRecord(e0, 0));
  CS(cusparseDcsrilu02(h, n, nnz, descr, d_f, d_rp, d_col, info, pol, buf));
  CK(cudaEventRecord(e1, 0));
  double t_factor = elapsed(e0, e1) * 1e-3;
  if (cusparseXcsrilu02_zeroPivot(h, info, &zp) == CUSPARSE_STATUS_ZERO_PIVOT) {
    printf("{\"tool\": \"cusparse\", \"problem\": \"%s\", \"error\": \"zero pivot at row %d\"}\n",
           spec ? spec : path, zp);
    return 1;
  }
  double *tk = malloc((size_t)reps * sizeof(double));
  for (int k = 0; k < reps; k++) {
    CK(cudaMemcpy(d_f, d_a, (size_t)nnz * sizeof(double), cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0, 0));
    CS(cusparseDcsrilu02(h, n, nnz, descr, d_f, d_rp, d_col, info, pol, buf));
    CK(cudaEventRecord(e1, 0));
    tk[k] = elapsed(e0, e1) * 1e-3;
  }
  qsort(tk, (size_t)reps, sizeof(double), cmp_double);
  double t_refactor = tk[reps / 2];

  /* triangular solves on the factor arrays: L unit lower, U non-unit upper */
  cusparseSpMatDescr_t L, U;
  cusparseDnVecDescr_t vr, vy, vz;
  CS(cusparseCreateCsr(&L, n, n, nnz, d_rp, d_col, d_f, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  CS(cusparseCreateCsr(&U, n, n, nnz, d_rp, d_col, d_f, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  cusparseFillMode_t lower = CUSPARSE_FILL_MODE_LOWER, upper = CUSPARSE_FILL_MODE_UPPER;
  cusparseDiagType_t unit = CUSPARSE_DIAG_TYPE_UNIT, nonunit = CUSPARSE_DIAG_TYPE_NON_UNIT;
  CS(cusparseSpMatSetAttribute(L, CUSPARSE_SPMAT_FILL_MODE, &lower, sizeof(lower)));
  CS(cusparseSpMatSetAttribute(L, CUSPARSE_SPMAT_DIAG_TYPE, &unit, sizeof(unit)));
  CS(cusparseSpMatSetAttribute(U, CUSPARSE_SPMAT_FILL_MODE, &upper, sizeof(upper)));
  CS(cusparseSpMatSetAttribute(U, CUSPARSE_SPMAT_DIAG_TYPE, &nonunit, sizeof(nonunit)));
  CS(cusparseCreateDnVec(&vr, n, d_r, CUDA_R_64F));
  CS(cusparseCreateDnVec(&vy, n, d_y, CUDA_R_64F));
  CS(cusparseCreateDnVec(&vz, n, d_z, CUDA_R_64F));
  cusparseSpSVDescr_t sl, su;
  CS(cusparseSpSV_createDescr(&sl));
  CS(cusparseSpSV_createDescr(&su));
  const double one = 1.0;
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t bl = 0, bu = 0;
  void *bufl, *bufu;
  CK(cudaEventRecord(e0, 0));
  CS(cusparseSpSV_bufferSize(h, op, &one, L, vr, vy, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, sl,
                             &bl));
  CS(cusparseSpSV_bufferSize(h, op, &one, U, vy, vz, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, su,
                             &bu));
  CK(cudaMalloc(&bufl, bl + 8));
  CK(cudaMalloc(&bufu, bu + 8));
  CS(cusparseSpSV_analysis(h, op, &one, L, vr, vy, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, sl,
                           bufl));
  CS(cusparseSpSV_analysis(h, op, &one, U, vy, vz, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, su,
                           bufu));
  CK(cudaEventRecord(e1, 0));
  double t_spsv_analysis = elapsed(e0, e1) * 1e-3;
  for (int k = -1; k < reps; k++) { /* k = -1: warm-up */
    CK(cudaEventRecord(e0, 0));
    CS(cusparseSpSV_solve(h, op, &one, L, vr, vy, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, sl));
    CS(cusparseSpSV_solve(h, op, &one, U, vy, vz, CUDA_R_64F, CUSPARSE_SPSV_ALG_DEFAULT, su));
    CK(cudaEventRecord(e1, 0));
    double t = elapsed(e0, e1) * 1e-3;
    if (k >= 0) tk[k] = t;
  }
  qsort(tk, (size_t)reps, sizeof(double), cmp_double);
  double t_solve = tk[reps / 2];
  /* a check value: sum of z = (LU)^-1 ones, to compare loosely with ringrt */
  CK(cudaMemcpy(ones, d_z, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost));
  double zsum = 0.0;
  for (int i = 0; i < n; i++)
    zsum += ones[i];
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("{\"tool\": \"cusparse\", \"problem\": \"%s\", \"n\": %d, \"nnz\": %d, \"gpu\": \"%s\", "
         "\"analysis_s\": %.6g, \"factor_s\": %.6g, \"refactor_s\": %.6g, "
         "\"spsv_analysis_s\": %.6g, \"trisolve_s\": %.6g, \"z_sum\": %.17g}\n",
         spec ? spec : path, n, nnz, prop.name, t_analysis, t_factor, t_refactor, t_spsv_analysis,
         t_solve, zsum);
  cusparseSpSV_destroyDescr(sl), cusparseSpSV_destroyDescr(su);
  cusparseDestroySpMat(L), cusparseDestroySpMat(U);
  cusparseDestroyDnVec(vr), cusparseDestroyDnVec(vy), cusparseDestroyDnVec(vz);
  cusparseDestroyCsrilu02Info(info), cusparseDestroyMatDescr(descr), cusparseDestroy(h);
  cudaFree(buf), cudaFree(bufl), cudaFree(bufu), cudaFree(d_rp), cudaFree(d_col), cudaFree(d_a);
  cudaFree(d_f), cudaFree(d_r), cudaFree(d_y), cudaFree(d_z);
  free(a.rowptr), free(a.col), free(a.val), free(ones), free(tk);
  return 0;
}

/* Body of the CPU attention backward kernel, instantiated once per
 * instruction set by kernels/cpu/attn_bwd.c (AVX-512, AVX2+FMA, baseline).
 * Not a normal header: it is included several times with these macros set:
 *   T_SFX     name suffix (avx512, avx2, base)
 *   T_ATTR    function attributes of the instance (target ISA, fp contraction)
 *   T_W       floats per vector register
 *   T_RQK     rows of an A B^T register tile (S, dP), 2 vectors of keys wide
 *   T_RTN     key rows of an A^T B register tile (dK, dV)
 *   T_RNN     query rows of an A B register tile (dQ)
 *   T_CV      vectors of head_dim per dK/dV/dQ register tile
 * and #undefs them at its end. Register tiles are sized so accumulators +
 * operands fit the register file (32 zmm for AVX-512, 16 ymm/xmm otherwise).
 *
 * The five products of a (query block, key block) tile, each straight from
 * the layouts the driver packed (so nothing is repacked per product):
 *   S  = Qp kt          dP = dOp vt          (qk: rows x keys, sum over D)
 *   dV += P^T dOp       dK += dS^T Qp        (tn: keys x D, sum over rows)
 *   dQ += dS kp                              (nn: rows x D, sum over keys)
 * with Qp, dOp [rows][dp] and kp [keys][dp] padded to dp columns (zeros),
 * kt and vt [D][BK] transposed. */

#define T_CAT2(a, b) a##_##b
#define T_CAT(a, b) T_CAT2(a, b)
#define T_FN(name) T_CAT(name, T_SFX)
#define T_VF T_FN(bvf)

/* aligned(4): loads and stores may be unaligned */
typedef float T_VF __attribute__((vector_size(T_W * 4), aligned(4)));

#define T_LD(p) (*(const T_VF *)(const void *)(p))
#define T_ST(p, x) (*(T_VF *)(void *)(p) = (x))

/* c[i][j..j+cv*W) = sum_d a[i][d] bt[d][j..] for rows [0, nrows), a multiple
 * of T_RQK. */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(bqk_cols)(const float *a, int lda, int nrows, int D, const float *bt, int ldb, int j, float *c,
               int ldc, const int cv) {
  for (int i = 0; i < nrows; i += T_RQK) {
    T_VF acc[T_RQK][2];
#pragma GCC unroll 16
    for (int r = 0; r < T_RQK; r++)
      for (int v = 0; v < cv; v++)
        acc[r][v] = (T_VF){0};
    const float *ar = a + (size_t)i * lda;
    const float *b = bt + j;
    for (int d = 0; d < D; d++, b += ldb) {
      T_VF b0 = T_LD(b), b1 = cv > 1 ? T_LD(b + T_W) : b0;
#pragma GCC unroll 16
      for (int r = 0; r < T_RQK; r++) {
        float x = ar[r * lda + d];
        acc[r][0] += x * b0;
        if (cv > 1) acc[r][1] += x * b1;
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < T_RQK; r++)
      for (int v = 0; v < cv; v++)
        T_ST(c + (size_t)(i + r) * ldc + j + v * T_W, acc[r][v]);
  }
}

/* c [nrows][ncols] = a [nrows][D] bt [D][ncols]; ncols a multiple of T_W. */
T_ATTR static void T_FN(bqk)(const float *a, int lda, int nrows, int D, const float *bt, int ldb,
                             int ncols, float *c, int ldc) {
  int j = 0;
  for (; j + 2 * T_W <= ncols; j += 2 * T_W)
    T_FN(bqk_cols)(a, lda, nrows, D, bt, ldb, j, c, ldc, 2);
  for (; j < ncols; j += T_W)
    T_FN(bqk_cols)(a, lda, nrows, D, bt, ldb, j, c, ldc, 1);
}

/* c[k][col..col+cv*W) += sum_{i in [i0, i1)} a[i][k] b[i][col..] for keys
 * [0, nk), a multiple of T_RTN. */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(btn_cols)(const float *a, int lda, int i0, int i1, int nk, const float *b, int ldb, float *c,
               int ldc, int col, const int cv) {
  for (int k = 0; k < nk; k += T_RTN) {
    T_VF acc[T_RTN][T_CV];
#pragma GCC unroll 16
    for (int r = 0; r < T_RTN; r++)
      for (int v = 0; v < cv; v++)
        acc[r][v] = T_LD(c + (size_t)(k + r) * ldc + col + v * T_W);
    for (int i = i0; i < i1; i++) {
      const float *ar = a + (size_t)i * lda + k, *br = b + (size_t)i * ldb + col;
      T_VF x[T_CV];
#pragma GCC unroll 16
      for (int v = 0; v < cv; v++)
        x[v] = T_LD(br + v * T_W);
#pragma GCC unroll 16
      for (int r = 0; r < T_RTN; r++) {
        float w = ar[r];
        for (int v = 0; v < cv; v++)
          acc[r][v] += w * x[v];
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < T_RTN; r++)
      for (int v = 0; v < cv; v++)
        T_ST(c + (size_t)(k + r) * ldc + col + v * T_W, acc[r][v]);
  }
}

/* c [nk][dp] += a^T b over the rows [i0, i1) of a [.][lda] and b [.][dp]. */
T_ATTR static void T_FN(btn)(const float *a, int lda, int i0, int i1, int nk, const float *b,
                             float *c, int dp) {
  int col = 0;
  for (; col + T_CV * T_W <= dp; col += T_CV * T_W)
    T_FN(btn_cols)(a, lda, i0, i1, nk, b, dp, c, dp, col, T_CV);
  for (; col + 2 * T_W <= dp && T_CV > 2; col += 2 * T_W)
    T_FN(btn_cols)(a, lda, i0, i1, nk, b, dp, c, dp, col, 2);
  for (; col < dp; col += T_W)
    T_FN(btn_cols)(a, lda, i0, i1, nk, b, dp, c, dp, col, 1);
}

/* c[i][col..col+cv*W) += sum_{k in [k0, k1)} a[i][k] b[k][col..] for rows
 * [0, nrows), a multiple of T_RNN. */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(bnn_cols)(const float *a, int lda, int nrows, int k0, int k1, const float *b, int ldb,
               float *c, int ldc, int col, const int cv) {
  for (int i = 0; i < nrows; i += T_RNN) {
    T_VF acc[T_RNN][T_CV];
#pragma GCC unroll 16
    for (int r = 0; r < T_RNN; r++)
      for (int v = 0; v < cv; v++)
        acc[r][v] = T_LD(c + (size_t)(i + r) * ldc + col + v * T_W);
    const float *ar = a + (size_t)i * lda;
    for (int k = k0; k < k1; k++) {
      const float *br = b + (size_t)k * ldb + col;
      T_VF x[T_CV];
#pragma GCC unroll 16
      for (int v = 0; v < cv; v++)
        x[v] = T_LD(br + v * T_W);
#pragma GCC unroll 16
      for (int r = 0; r < T_RNN; r++) {
        float w = ar[(size_t)r * lda + k];
        for (int v = 0; v < cv; v++)
          acc[r][v] += w * x[v];
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < T_RNN; r++)
      for (int v = 0; v < cv; v++)
        T_ST(c + (size_t)(i + r) * ldc + col + v * T_W, acc[r][v]);
  }
}

/* c [nrows][dp] += a b over the keys [k0, k1) of a [nrows][lda], b [.][dp]. */
T_ATTR static void T_FN(bnn)(const float *a, int lda, int nrows, int k0, int k1, const float *b,
                             float *c, int dp) {
  int col = 0;
  for (; col + T_CV * T_W <= dp; col += T_CV * T_W)
    T_FN(bnn_cols)(a, lda, nrows, k0, k1, b, dp, c, dp, col, T_CV);
  for (; col + 2 * T_W <= dp && T_CV > 2; col += 2 * T_W)
    T_FN(bnn_cols)(a, lda, nrows, k0, k1, b, dp, c, dp, col, 2);
  for (; col < dp; col += T_W)
    T_FN(bnn_cols)(a, lda, nrows, k0, k1, b, dp, c, dp, col, 1);
}

/* One row of a tile: s (raw Q.K) becomes P = 2^(s * c2 - lse2) and dp
 * becomes dS = P * (dP - delta) on the visible columns [cb, ce); both are
 * exactly 0 on the others of [0, n), whatever they held (a masked key's
 * NaN must not reach the gradients). With the soft-cap (cap2 > 0, log2
 * units) P = 2^(cap(s * c2) - lse2) and dS is times cap's derivative. */
T_ATTR static void T_FN(bds_row)(float *s, float *dp, int n, int cb, int ce, float c2, float lse2,
                                 float delta, float cap2) {
  if (cap2 > 0.0f) {
    for (int j = 0; j < n; j++) {
      const int in = j >= cb && j < ce;
      float g;
      const float x = rrt_attn_softcap_bwd(s[j] * c2, cap2, &g);
      const float p = rrt_attn_exp2f(x - lse2);
      const float ds = p * (dp[j] - delta) * g;
      s[j] = in ? p : 0.0f;
      dp[j] = in ? ds : 0.0f;
    }
    return;
  }
#pragma omp simd
  for (int j = 0; j < n; j++) {
    const int in = j >= cb && j < ce;
    const float p = rrt_attn_exp2f(s[j] * c2 - lse2);
    const float ds = p * (dp[j] - delta);
    s[j] = in ? p : 0.0f;
    dp[j] = in ? ds : 0.0f;
  }
}

/* One (query block, key block) tile of one head: S and dP, then P and dS
 * per row, then the three accumulations (the order of attn_bwd.c). */
T_ATTR static void T_FN(bwd_tile)(const bwd_ctx *c, bwd_scratch *w, const float *qp,
                                  const float *dop, int64_t i0, int nk, const float *lse,
                                  const float *delta, float *dql) {
  const int D = c->D, dp = c->dp;
  const int nq = (int)(c->q_len - i0 < BQ ? c->q_len - i0 : BQ);
  const int nrows = (nq + ROWS_ALIGN - 1) / ROWS_ALIGN * ROWS_ALIGN;
  const int ncols = (nk + 15) / 16 * 16, nkr = (nk + KEYS_ALIGN - 1) / KEYS_ALIGN * KEYS_ALIGN;
  T_FN(bqk)(qp + i0 * dp, dp, nrows, D, w->kt, BK, ncols, w->s, BK);
  T_FN(bqk)(dop + i0 * dp, dp, nrows, D, w->vt, BK, ncols, w->dp, BK);
  int r0 = nq, r1 = 0, k0 = nk, k1 = 0; /* rows and keys any row of the tile sees */
  for (int r = 0; r < nrows; r++) {
    int cb = 0, ce = 0; /* padding rows, and rows that saw no key (lse = -inf), see none */
    const float l = r < nq ? lse[i0 + r] : rrt_am_neg_inf();
    if (l != rrt_am_neg_inf()) bwd_cols(c, w, i0 + r, nk, &cb, &ce);
    T_FN(bds_row)
    (w->s + (size_t)r * BK, w->dp + (size_t)r * BK, nkr, cb, ce, c->c2,
     cb < ce ? l * 1.44269504088896341f : 0.0f, r < nq ? delta[i0 + r] : 0.0f, c->cap2);
    if (cb < ce) {
      r0 = r < r0 ? r : r0;
      r1 = r + 1;
      k0 = cb < k0 ? cb : k0;
      k1 = ce > k1 ? ce : k1;
    }
  }
  if (r0 >= r1) return;
  T_FN(btn)(w->s, BK, r0, r1, nkr, dop + i0 * dp, w->dva, dp);
  T_FN(btn)(w->dp, BK, r0, r1, nkr, qp + i0 * dp, w->dka, dp);
  T_FN(bnn)(w->dp, BK, nrows, k0, k1, w->kp, dql + i0 * dp, dp);
}

#undef T_LD
#undef T_ST
#undef T_VF
#undef T_FN
#undef T_CAT
#undef T_CAT2
/* the instance's parameters, so the next instance can define its own */
#undef T_SFX
#undef T_ATTR
#undef T_W
#undef T_RQK
#undef T_RTN
#undef T_RNN
#undef T_CV

/* Body of the CPU attention kernel, instantiated once per instruction set by
 * kernels/cpu/attn_fwd.c (AVX-512, AVX2+FMA, baseline). Not a normal header: it is
 * included several times with these macros set:
 *   T_SFX     name suffix (avx512, avx2, base)
 *   T_ATTR    function attributes of the instance (target ISA, fp contraction)
 *   T_W       floats per vector register
 *   T_RQK     query rows of a Q K^T register tile (2 vectors of keys wide)
 *   T_RPV     query rows of a P V register tile
 *   T_CV      vectors of head_dim per P V register tile
 * and #undefs them at its end.
 * The register tiles are sized so accumulators + operands fit the register
 * file (32 zmm for AVX-512, 16 ymm/xmm otherwise).
 *
 * Why not sgemm per block: at these sizes (about 100 x 256 x 64) OpenBLAS
 * repacks both operands on every call, and P (written just before) is packed
 * once more; that costs more than the multiply-adds. Here K is transposed
 * and V padded once per call (shared by every query block), scores are
 * computed straight from those layouts, and P V reads P where the softmax
 * left it. Scores come out in log2 units (Q is pre-scaled by scale * log2 e),
 * so the softmax uses exp2. */

#define T_CAT2(a, b) a##_##b
#define T_CAT(a, b) T_CAT2(a, b)
#define T_FN(name) T_CAT(name, T_SFX)
#define T_VF T_FN(vf)

/* aligned(4): loads and stores may be unaligned (columns start anywhere) */
typedef float T_VF __attribute__((vector_size(T_W * 4), aligned(4)));

#define T_LD(p) (*(const T_VF *)(const void *)(p))
#define T_ST(p, x) (*(T_VF *)(void *)(p) = (x))

/* S[i][j] = sum_d qs[i][d] kt[d][j] for nrows (multiple of T_RQK) rows and
 * ncols (multiple of T_W) columns; cv = 2 or 1 vectors of columns per tile.
 * Row i needs the columns [vb[i], ve[i]) (both ends nondecreasing): a
 * register tile is skipped when its last row's end is at or before its
 * columns, or its first row's start after them. */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(qk_cols)(const float *qs, int nrows, int D, const float *kt, int64_t ldkt, int j, float *s,
              int lds, const int *vb, const int *ve, const int cv) {
  int i = 0;
  while (i < nrows && ve[i + T_RQK - 1] <= j)
    i += T_RQK;
  for (; i < nrows && vb[i] < j + cv * T_W; i += T_RQK) {
    T_VF a[T_RQK][2];
#pragma GCC unroll 16
    for (int r = 0; r < T_RQK; r++)
      for (int c = 0; c < cv; c++)
        a[r][c] = (T_VF){0};
    const float *q = qs + (size_t)i * D;
    const float *k = kt + j;
    for (int d = 0; d < D; d++, k += ldkt) {
      T_VF k0 = T_LD(k), k1 = cv > 1 ? T_LD(k + T_W) : k0;
#pragma GCC unroll 16
      for (int r = 0; r < T_RQK; r++) {
        float x = q[r * D + d];
        a[r][0] += x * k0;
        if (cv > 1) a[r][1] += x * k1;
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < T_RQK; r++)
      for (int c = 0; c < cv; c++)
        T_ST(s + (size_t)(i + r) * lds + j + c * T_W, a[r][c]);
  }
}

T_ATTR static void T_FN(qk_tile)(const float *qs, int nrows, int D, const float *kt, int64_t ldkt,
                                 int ncols, float *s, int lds, const int *vb, const int *ve) {
  int j = 0;
  for (; j + 2 * T_W <= ncols; j += 2 * T_W)
    T_FN(qk_cols)(qs, nrows, D, kt, ldkt, j, s, lds, vb, ve, 2);
  for (; j < ncols; j += T_W)
    T_FN(qk_cols)(qs, nrows, D, kt, ldkt, j, s, lds, vb, ve, 1);
}

/* acc[i][c..c+cv*W) = alpha[i] * acc[i][..] + sum_j p[i][j] vp[j][..], the
 * sum over the columns from the register tile's first row's start to its
 * last row's end (p is 0 outside a row's own [vb, ve)). */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(pv_cols)(const float *p, int lds, int nrows, const int *vb, const int *ve, const float *vp,
              int64_t ldv, float *acc, int lda, const float *alpha, int c, const int cv) {
  for (int i = 0; i < nrows; i += T_RPV) {
    const int jb = vb[i], je = ve[i + T_RPV - 1];
    T_VF a[T_RPV][T_CV];
#pragma GCC unroll 16
    for (int r = 0; r < T_RPV; r++)
      for (int v = 0; v < cv; v++)
        a[r][v] = T_LD(acc + (size_t)(i + r) * lda + c + v * T_W) * alpha[i + r];
    const float *pr = p + (size_t)i * lds;
    const float *vr = vp + c + (int64_t)jb * ldv;
    for (int j = jb; j < je; j++, vr += ldv) {
      T_VF x[T_CV];
#pragma GCC unroll 16
      for (int v = 0; v < cv; v++)
        x[v] = T_LD(vr + v * T_W);
#pragma GCC unroll 16
      for (int r = 0; r < T_RPV; r++) {
        float w = pr[(size_t)r * lds + j];
        for (int v = 0; v < cv; v++)
          a[r][v] += w * x[v];
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < T_RPV; r++)
      for (int v = 0; v < cv; v++)
        T_ST(acc + (size_t)(i + r) * lda + c + v * T_W, a[r][v]);
  }
}

/* acc [nrows][lda] (lda a multiple of T_W), V rows ldv apart. */
T_ATTR static void T_FN(pv_tile)(const float *p, int lds, int nrows, const int *vb, const int *ve,
                                 const float *vp, int64_t ldv, float *acc, int lda,
                                 const float *alpha) {
  int c = 0;
  for (; c + T_CV * T_W <= lda; c += T_CV * T_W)
    T_FN(pv_cols)(p, lds, nrows, vb, ve, vp, ldv, acc, lda, alpha, c, T_CV);
  for (; c + 2 * T_W <= lda && T_CV > 2; c += 2 * T_W)
    T_FN(pv_cols)(p, lds, nrows, vb, ve, vp, ldv, acc, lda, alpha, c, 2);
  for (; c < lda; c += T_W)
    T_FN(pv_cols)(p, lds, nrows, vb, ve, vp, ldv, acc, lda, alpha, c, 1);
}

/* Largest of s[0..n) (-inf when n = 0). It skips NaN: m stays a number and
 * the NaN travels in the row sum (rrt_attn_exp2_row, attn_exp2.h). */
T_ATTR static float T_FN(row_max)(const float *s, int n) {
  float mx = rrt_am_neg_inf();
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < n; j++)
    mx = s[j] > mx ? s[j] : mx;
  return mx;
}

/* One (batch, head, query block) of one item, see kernels/cpu/attn_fwd.c. */
T_ATTR static void T_FN(attn_block)(const rrt_attn_cpu_args *a, const packed_kv *pk,
                                    const rrt_attn_item *it, int64_t b, int h, int64_t qb,
                                    scratch *w) {
  const int D = a->head_dim, Hq = a->heads_q, Hkv = a->heads_kv, Dp = pk->dp;
  const int hk = h / (Hq / Hkv);
  const int64_t i0 = qb * BQ; /* first row, relative to the item */
  const int nq = (int)(it->q_len - i0 < BQ ? it->q_len - i0 : BQ);
  const int nrows = (nq + ROWS_ALIGN - 1) / ROWS_ALIGN * ROWS_ALIGN;
  const int64_t ldq = (int64_t)Hq * D;
  const float *q = a->q + ((b * a->q_rows + it->q_begin + i0) * Hq + h) * (int64_t)D;
  const float *kt = pk->kt + ((b * Hkv + hk) * D) * pk->ldkt + it->k_begin;
  const float *vp = pk->vp ? pk->vp + ((b * Hkv + hk) * a->kv_rows + it->k_begin) * (int64_t)Dp
                           : a->v + ((b * a->kv_rows + it->k_begin) * Hkv + hk) * (int64_t)D;
  const float qscale = a->scale * 1.44269504088896341f; /* scores in log2 units */
  const float cap2 = a->softcap * 1.44269504088896341f; /* the cap in those units */

  for (int i = 0; i < nq; i++)
    for (int d = 0; d < D; d++)
      w->qs[(size_t)i * D + d] = q[i * ldq + d] * qscale;
  memset(w->qs + (size_t)nq * D, 0, sizeof(float) * (size_t)(nrows - nq) * (size_t)D);
  for (int i = 0; i < nrows; i++) {
    w->m[i] = rrt_am_neg_inf();
    w->l[i] = 0.0f;
    w->alpha[i] = 1.0f;
    /* visible keys of each row (item-relative); padding rows copy the last real row */
    rrt_attn_item_keys(it, a->mask, i0 + (i < nq ? i : nq - 1), &w->jb[i], &w->je[i]);
  }
  memset(w->acc, 0, sizeof(float) * (size_t)nrows * (size_t)Dp);

  /* only the tiles between the first row's first key and the last row's last */
  const int64_t kend = w->je[nrows - 1];
  for (int64_t j0 = w->jb[0]; j0 < kend; j0 += BK) {
    const int nk_tile = (int)(kend - j0 < BK ? kend - j0 : BK);
    for (int i = 0; i < nrows; i++)
      rrt_attn_tile_span(w->jb[i], w->je[i], j0, nk_tile, &w->vb[i], &w->ve[i]);
    const int nk = w->ve[nrows - 1];              /* keys any row of the block sees */
    const int ncols = (nk + T_W - 1) / T_W * T_W; /* columns past nk are computed, not used */

    T_FN(qk_tile)(w->qs, nrows, D, kt + j0, pk->ldkt, ncols, w->s, BK, w->vb, w->ve);
    for (int i = 0; i < nq; i++) {
      float *s = w->s + (size_t)i * BK;
      const int vb = w->vb[i], ve = w->ve[i];
      if (cap2 > 0.0f) rrt_attn_softcap_row(s + vb, ve - vb, cap2);
      float alpha = rescale2(&w->m[i], T_FN(row_max)(s + vb, ve - vb));
      float sum = rrt_attn_exp2_row(s + vb, ve - vb, w->m[i]);
      /* masked keys: probability 0, whatever their score */
      for (int j = 0; j < vb; j++)
        s[j] = 0.0f;
      for (int j = ve; j < nk; j++)
        s[j] = 0.0f;
      w->l[i] = w->l[i] * alpha + sum;
      w->alpha[i] = alpha;
    }
    /* padding rows (nq..nrows) keep alpha 1 and raw scores of zero rows of
     * Q wherever P V reads them: unused */
    T_FN(pv_tile)
    (w->s, BK, nrows, w->vb, w->ve, vp + j0 * pk->ldv, pk->ldv, w->acc, Dp, w->alpha);
  }

  /* finish and merge into the running state */
  for (int i = 0; i < nq; i++) {
    int64_t row = it->q_begin + i0 + i;
    float inv_l;
    float m = w->m[i] == rrt_am_neg_inf() ? w->m[i] : w->m[i] * 0.693147180559945309f;
    float blse = rrt_attn_finish(m, w->l[i], &inv_l);
    float *lse = a->lse + (b * Hq + h) * a->q_rows + row;
    float *o = a->o + ((b * a->q_rows + row) * Hq + h) * (int64_t)D;
    const float *acc = w->acc + (size_t)i * Dp;
    float ca, cb;
    *lse = rrt_attn_merge_coef(*lse, blse, &ca, &cb);
    cb *= inv_l;
    for (int d = 0; d < D; d++)
      o[d] = o[d] * ca + acc[d] * cb;
  }
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
#undef T_RPV
#undef T_CV

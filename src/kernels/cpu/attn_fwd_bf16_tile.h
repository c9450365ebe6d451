/* Body of the bf16 CPU attention kernel, instantiated by
 * kernels/cpu/attn_fwd_bf16.c once with vdpbf16ps (AVX512-BF16) and once with
 * that instruction emulated exactly in portable C. Not a normal header: it
 * is included with these macros set, and #undefs them at its end:
 *   T_SFX        name suffix (avx512bf16, emul)
 *   T_ATTR       function attributes of the instance (target ISA, fp contraction)
 *   T_VF         16 f32 lanes;  T_VP  32 bf16 (16 pairs)
 *   T_ZERO()     a T_VF of zeros
 *   T_LDF(p), T_STF(p, x)  unaligned T_VF load / store of floats
 *   T_LDP(p)     unaligned T_VP load of 32 uint16
 *   T_ANDP(x, m)  x with each 32-bit lane ANDed with m
 *   T_DP(acc, x, pair)  vdpbf16ps: lane i of acc += x[2i+1] * hi(pair) +
 *                x[2i] * lo(pair), pair a uint32 holding two bf16
 *
 * Layouts (attn_fwd_bf16.c): K as [D/2][key][2] (each vector: 16 keys x a
 * pair of head_dim), V as [key/2][Dp][2] (16 columns x a pair of keys), Q
 * rows [BQ][D2] and P rows [BQ][BK] in bf16 so a (d, d+1) or (j, j+1)
 * pair is one 32-bit broadcast. Key indices are absolute in the block
 * (k_begin added) and tiles start at even keys, so P pairs meet V pairs. */

#define T_CAT2(a, b) a##_##b
#define T_CAT(a, b) T_CAT2(a, b)
#define T_FN(name) T_CAT(name, T_SFX)

static inline uint32_t T_FN(pair)(const uint16_t *p) {
  uint32_t u;
  memcpy(&u, p, sizeof u);
  return u;
}

/* Raw scores s[r][c] = q_r . k_(t0+c) of rows [i, i + RQK) for columns
 * [c0, c1) (multiples of 16), cv = 2 or 1 vectors of keys at a time. */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(qk_cols)(const uint16_t *qs, int d2, const uint16_t *kp, int64_t ldk, int64_t col, float *s,
              int lds, const int cv) {
  T_VF a[RQK][2];
#pragma GCC unroll 16
  for (int r = 0; r < RQK; r++)
    for (int c = 0; c < cv; c++)
      a[r][c] = T_ZERO();
  const uint16_t *k = kp + col * 2;
  for (int p = 0; p < d2 / 2; p++, k += 2 * ldk) {
    T_VP k0 = T_LDP(k), k1 = cv > 1 ? T_LDP(k + 32) : k0;
#pragma GCC unroll 16
    for (int r = 0; r < RQK; r++) {
      uint32_t x = T_FN(pair)(qs + (size_t)r * d2 + 2 * p);
      a[r][0] = T_DP(a[r][0], k0, x);
      if (cv > 1) a[r][1] = T_DP(a[r][1], k1, x);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < RQK; r++)
    for (int c = 0; c < cv; c++)
      T_STF(s + (size_t)r * lds + c * 16, a[r][c]);
}

/* Scores of a key tile [t0, t1) for nrows rows (multiple of RQK): each
 * register tile computes only the 16-key vectors some of its rows see
 * (row intervals [lo, hi) are nondecreasing at both ends). */
T_ATTR static void T_FN(qk_tile)(const uint16_t *qs, int nrows, int d2, const uint16_t *kp,
                                 int64_t ldk, int64_t t0, int64_t t1, const int64_t *lo,
                                 const int64_t *hi, float *s, int lds) {
  for (int i = 0; i < nrows; i += RQK) {
    int cb, ce;
    rrt_attn_tile_span(lo[i], hi[i + RQK - 1], t0, (int)(t1 - t0), &cb, &ce);
    if (ce == cb) continue;
    int c = cb / 16 * 16;
    const int c1 = (ce + 15) / 16 * 16;
    const uint16_t *q = qs + (size_t)i * d2;
    float *si = s + (size_t)i * lds;
    for (; c + 32 <= c1; c += 32)
      T_FN(qk_cols)(q, d2, kp, ldk, t0 + c, si + c, lds, 2);
    for (; c < c1; c += 16)
      T_FN(qk_cols)(q, d2, kp, ldk, t0 + c, si + c, lds, 1);
  }
}

/* acc[r][c..c+16cv) = alpha[r] * acc + sum over key pairs [pb, pe) of
 * P[r][pair] . V[pair][c..], rows [i, i + RPV). keep_first / keep_last mask
 * the V halves of the first / last pair whose key no row of the tile sees
 * (its P is 0, but 0 * a NaN or inf in V, e.g. a shard's padding, is NaN). */
T_ATTR static inline __attribute__((always_inline)) void
T_FN(pv_cols)(const uint16_t *p, int ldp, int pb, int pe, uint32_t keep_first, uint32_t keep_last,
              const uint16_t *vp, int dp, float *acc, const float *alpha, int c, const int cv) {
  T_VF a[RPV][CV];
#pragma GCC unroll 16
  for (int r = 0; r < RPV; r++)
    for (int v = 0; v < cv; v++)
      a[r][v] = T_LDF(acc + (size_t)r * dp + c + v * 16) * alpha[r];
  const uint16_t *vr = vp + ((size_t)pb * dp + c) * 2;
  for (int j = pb; j < pe; j++, vr += 2 * dp) {
    T_VP x[CV];
#pragma GCC unroll 16
    for (int v = 0; v < cv; v++)
      x[v] = T_LDP(vr + v * 32);
    const uint32_t keep = j == pb ? keep_first : j == pe - 1 ? keep_last : ~0u;
    if (keep != ~0u)
      for (int v = 0; v < cv; v++)
        x[v] = T_ANDP(x[v], keep);
#pragma GCC unroll 16
    for (int r = 0; r < RPV; r++) {
      uint32_t w = T_FN(pair)(p + (size_t)r * ldp + 2 * j);
      for (int v = 0; v < cv; v++)
        a[r][v] = T_DP(a[r][v], x[v], w);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < RPV; r++)
    for (int v = 0; v < cv; v++)
      T_STF(acc + (size_t)r * dp + c + v * 16, a[r][v]);
}

/* P V of a key tile [t0, t1) for nrows rows (multiple of RPV); vp points
 * at the pair of key t0. Every row's acc is rescaled by its alpha, also
 * where the register tile sees no key of this tile. */
T_ATTR static void T_FN(pv_tile)(const uint16_t *p, int ldp, int nrows, int64_t t0, int64_t t1,
                                 const int64_t *lo, const int64_t *hi, const uint16_t *vp, int dp,
                                 float *acc, const float *alpha) {
  for (int i = 0; i < nrows; i += RPV) {
    int cb, ce;
    rrt_attn_tile_span(lo[i], hi[i + RPV - 1], t0, (int)(t1 - t0), &cb, &ce);
    int pb = cb / 2, pe = ce > cb ? (ce + 1) / 2 : pb;
    /* an odd start leaves the first pair's even key unseen, an odd end the
     * last pair's odd key (lanes hold the even key in the low half) */
    const uint32_t kf = cb & 1 ? 0xffff0000u : ~0u, kl = ce & 1 ? 0x0000ffffu : ~0u;
    const uint16_t *pi = p + (size_t)i * ldp;
    float *ai = acc + (size_t)i * dp;
    int c = 0;
    for (; c + CV * 16 <= dp; c += CV * 16)
      T_FN(pv_cols)(pi, ldp, pb, pe, kf, kl, vp, dp, ai, alpha + i, c, CV);
    for (; c + 32 <= dp; c += 32)
      T_FN(pv_cols)(pi, ldp, pb, pe, kf, kl, vp, dp, ai, alpha + i, c, 2);
    for (; c < dp; c += 16)
      T_FN(pv_cols)(pi, ldp, pb, pe, kf, kl, vp, dp, ai, alpha + i, c, 1);
  }
}

/* s[j] *= scale over a row, then the soft-cap cap2 (log2 units) when > 0;
 * returns the largest, *nan set when any is NaN. */
T_ATTR static float T_FN(scale_max)(float *s, int n, float scale, float cap2, int *nan) {
  if (cap2 > 0.0f) {
    for (int j = 0; j < n; j++)
      s[j] = rrt_attn_softcap(s[j] * scale, cap2);
    scale = 1.0f;
  }
  float mx = rrt_am_neg_inf();
  int bad = 0;
#pragma omp simd reduction(max : mx) reduction(| : bad)
  for (int j = 0; j < n; j++) {
    float x = s[j] * scale;
    s[j] = x;
    mx = x > mx ? x : mx;
    bad |= x != x;
  }
  *nan = bad;
  return mx;
}

/* P row in bf16 (round to nearest even; the values are finite and >= 0):
 * s[c] for c in [vb, ve), 0 elsewhere in [0, n). */
T_ATTR static void T_FN(p_row)(uint16_t *p, const float *s, int n, int vb, int ve) {
#pragma omp simd
  for (int c = 0; c < n; c++) {
    float x = c >= vb && c < ve ? s[c] : 0.0f;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    p[c] = (uint16_t)(u >> 16);
  }
}

/* One (batch, head, query block) of one item, see kernels/cpu/attn_fwd_bf16.c. */
T_ATTR static void T_FN(attn_block)(const rrt_attn_cpu_args *a, const bf16_in *in,
                                    const bf16_kv *pk, const rrt_attn_item *it, int64_t b, int h,
                                    int64_t qb, bf16_scratch *w) {
  const int D = a->head_dim, Hq = a->heads_q, Hkv = a->heads_kv, dp = pk->dp, d2 = pk->d2;
  const int hk = h / (Hq / Hkv);
  const int64_t i0 = qb * BQ;
  const int nq = (int)(it->q_len - i0 < BQ ? it->q_len - i0 : BQ);
  const int nrows = (nq + ROWS_ALIGN - 1) / ROWS_ALIGN * ROWS_ALIGN;
  const int64_t ldq = (int64_t)Hq * D;
  const uint16_t *q = in->q + ((b * a->q_rows + it->q_begin + i0) * Hq + h) * (int64_t)D;
  const int64_t bh = b * Hkv + hk;
  const uint16_t *kp = pk->kp + bh * (d2 / 2) * pk->ldk * 2;
  const uint16_t *vp = pk->vp + bh * pk->kpairs * dp * 2;
  const float qscale = a->scale * 1.44269504088896341f; /* scores in log2 units */
  const float cap2 = a->softcap * 1.44269504088896341f; /* the cap in those units */

  for (int i = 0; i < nrows; i++) {
    uint16_t *qr = w->qs + (size_t)i * d2;
    for (int d = 0; d < d2; d++)
      qr[d] = i < nq && d < D ? q[i * ldq + d] : 0;
    int64_t jb, je; /* padding rows copy the last real row: both ends stay nondecreasing */
    rrt_attn_item_keys(it, a->mask, i0 + (i < nq ? i : nq - 1), &jb, &je);
    w->lo[i] = it->k_begin + jb;
    w->hi[i] = it->k_begin + je;
    w->m[i] = rrt_am_neg_inf();
    w->l[i] = 0.0f;
    w->alpha[i] = 1.0f;
    w->bad[i] = 0;
  }
  memset(w->acc, 0, sizeof(float) * (size_t)nrows * (size_t)dp);
  memset(w->p, 0, sizeof(uint16_t) * (size_t)nrows * BK); /* padding rows stay 0 */

  const int64_t khi = w->hi[nrows - 1];
  for (int64_t t0 = w->lo[0] / 2 * 2; t0 < khi; t0 += BK) {
    const int64_t t1 = t0 + BK < khi ? t0 + BK : khi;
    const int np2 = (int)((t1 - t0 + 1) / 2 * 2); /* P columns P V reads */
    T_FN(qk_tile)(w->qs, nrows, d2, kp, pk->ldk, t0, t1, w->lo, w->hi, w->s, BK);
    for (int i = 0; i < nq; i++) {
      float *s = w->s + (size_t)i * BK;
      int vb, ve;
      rrt_attn_tile_span(w->lo[i], w->hi[i], t0, (int)(t1 - t0), &vb, &ve);
      w->alpha[i] = 1.0f;
      if (w->bad[i] || ve == vb) {
        T_FN(p_row)(w->p + (size_t)i * BK, s, np2, 0, 0);
        continue;
      }
      int nan;
      float mx = T_FN(scale_max)(s + vb, ve - vb, qscale, cap2, &nan);
      if (nan || mx == -rrt_am_neg_inf()) { /* NaN or +inf score: the row is NaN */
        w->bad[i] = 1;
        T_FN(p_row)(w->p + (size_t)i * BK, s, np2, 0, 0);
        continue;
      }
      float alpha = rescale2(&w->m[i], mx);
      float sum = rrt_attn_exp2_row(s + vb, ve - vb, w->m[i]);
      w->l[i] = w->l[i] * alpha + sum;
      w->alpha[i] = alpha;
      T_FN(p_row)(w->p + (size_t)i * BK, s, np2, vb, ve);
    }
    T_FN(pv_tile)(w->p, BK, nrows, t0, t1, w->lo, w->hi, vp + t0 * dp, dp, w->acc, w->alpha);
  }

  for (int i = 0; i < nq; i++) {
    int64_t row = it->q_begin + i0 + i;
    float inv_l;
    float m = w->m[i] == rrt_am_neg_inf() ? w->m[i] : w->m[i] * 0.693147180559945309f;
    float blse = rrt_attn_finish(m, w->l[i], &inv_l);
    if (w->bad[i]) blse = inv_l = rrt_am_nan(); /* the merge makes the row's O and LSE NaN */
    float *lse = a->lse + (b * Hq + h) * a->q_rows + row;
    float *o = a->o + ((b * a->q_rows + row) * Hq + h) * (int64_t)D;
    const float *acc = w->acc + (size_t)i * dp;
    float ca, cb;
    *lse = rrt_attn_merge_coef(*lse, blse, &ca, &cb);
    cb *= inv_l;
    for (int d = 0; d < D; d++)
      o[d] = o[d] * ca + acc[d] * cb;
  }
}

#undef T_FN
#undef T_CAT
#undef T_CAT2
#undef T_SFX
#undef T_ATTR
#undef T_VF
#undef T_VP
#undef T_ZERO
#undef T_LDF
#undef T_STF
#undef T_LDP
#undef T_DP
#undef T_ANDP

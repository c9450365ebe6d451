/* CPU local attention on bf16 storage with vdpbf16ps (AVX512-BF16).
 *
 * The f32 kernel (attn_fwd.c) needs Q, K and V converted to f32 first: a
 * pass over memory that doubles the bytes every product reads. Here the
 * products read bf16 directly: vdpbf16ps multiplies pairs of bf16 and adds
 * both products to an f32 lane, 32 multiply-adds per instruction against
 * 16 for an f32 FMA. The structure is the f32 kernel's: once per call
 * (ring step) K is packed to [b, kv head, D/2, key, 2] and V to [b, kv head,
 * key/2, Dp, 2] (zero padded); then per (batch, head, block of BQ query
 * rows) the keys each row sees (the item's row mask, rrt_attn_item_keys)
 * are walked in tiles of BK: raw scores S = Q K^T in f32, scaled to log2
 * units, online softmax (exp2) in f32, P rounded to bf16 (round to nearest
 * even; the row sum l uses P unrounded), acc = alpha * acc + P V in f32.
 * Rounding P costs at most 2^-9 relative per probability, so |dO| <= 2^-9
 * max|V| (flash-attn makes the same trade on GPUs); scores and LSE are as
 * exact as the f32 kernel's, since bf16 x bf16 products are exact in f32.
 *
 * NaN / +inf scores make their row NaN (O and LSE), as attn.h states; a
 * row whose visible scores are all -inf is left empty here and made NaN at
 * the end of the run (rrt_attn_cpu_final_rows), as for the f32 kernel.
 *
 * Two instances of attn_fwd_bf16_tile.h: the real one, and one with the
 * instruction emulated in C (same lanes, same order of the two products)
 * so RINGRT_CPU_ISA=avx512bf16 runs and tests this kernel on any CPU. The
 * emulation matches the instruction except for subnormals, which
 * vdpbf16ps flushes to zero. */
#include "kernels/cpu/attn_fwd_bf16.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "comm/env.h"
#include "kernels/attn_math.h"
#include "kernels/cpu/attn_exp2.h"

/* Block sizes as in the f32 kernel; ROWS_ALIGN is a common multiple of the
 * register-tile heights RQK and RPV; CV vectors of 16 columns per P V tile. */
enum { BQ = 96, BK = 256, ROWS_ALIGN = 24, RQK = 8, RPV = 6, CV = 4 };

typedef struct bf16_in {
  const uint16_t *q, *k, *v;
} bf16_in;

typedef struct bf16_kv {
  uint16_t *kp;   /* [batch, heads_kv, D2/2, ldk, 2]: keys past kv_rows zero */
  uint16_t *vp;   /* [batch, heads_kv, kpairs, dp, 2]: columns past D, the odd last key zero */
  int64_t ldk;    /* keys per pair row of kp: room for a vector past the last key */
  int64_t kpairs; /* ceil(kv_rows / 2) */
  int d2, dp;     /* head_dim rounded up to 2 and to 16 */
} bf16_kv;

typedef struct bf16_scratch {
  uint16_t *qs; /* [BQ][d2] query rows, rows past nq zero */
  float *s;     /* [BQ][BK] scores, then probabilities */
  uint16_t *p;  /* [BQ][BK] probabilities in bf16 */
  float *acc;   /* [BQ][dp] unnormalised output */
  float m[BQ], l[BQ], alpha[BQ];
  int64_t lo[BQ], hi[BQ]; /* visible keys [lo, hi) of each row, absolute in the block */
  unsigned char bad[BQ];  /* the row met a NaN or +inf score */
} bf16_scratch;

/* exp2(m_old - m_new) for a running max in log2 units, 0 while the row has
 * seen only -inf (the f32 kernel's rescale2). */
static inline float rescale2(float *m, float tile_max) {
  float m_old = *m;
  if (tile_max <= m_old && m_old != rrt_am_neg_inf()) return 1.0f;
  float m_new = m_old > tile_max ? m_old : tile_max;
  *m = m_new;
  if (m_new == rrt_am_neg_inf()) return 0.0f;
  return exp2f(m_old - m_new);
}

#if defined(__clang__)
#pragma clang fp contract(fast)
#define T_OPT unused
#else
#define T_OPT optimize("fp-contract=fast", "no-trapping-math")
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define RRT_BF16_X86 1
#define T_SFX avx512bf16
#define T_ATTR                                                                                     \
  __attribute__((target("avx512bf16,avx512f,avx512vl,avx512bw,avx512dq,avx2,fma"), T_OPT))
#define T_VF __m512
#define T_VP __m512i
#define T_ZERO() _mm512_setzero_ps()
#define T_LDF(p) _mm512_loadu_ps(p)
#define T_STF(p, x) _mm512_storeu_ps(p, x)
#define T_LDP(p) _mm512_loadu_si512((const void *)(p))
#define T_ANDP(x, m) _mm512_and_si512(x, _mm512_set1_epi32((int)(m)))
#define T_DP(acc, x, pr)                                                                           \
  _mm512_dpbf16_ps(acc, (__m512bh)(x), (__m512bh)_mm512_set1_epi32((int)(pr)))
#include "kernels/cpu/attn_fwd_bf16_tile.h"
#endif

/* The emulated instruction: 16 lanes of pairs as uint32, widened to f32
 * (a bf16 is the top half of an f32); the odd product first, as the
 * instruction's definition orders it. The products are exact in f32, so
 * contraction into FMAs changes nothing. */
typedef float emul_vf __attribute__((vector_size(64), aligned(4)));
typedef uint32_t emul_vu __attribute__((vector_size(64), aligned(4), may_alias));
/* macros, not functions: a 64-byte vector argument without AVX-512 would
 * change the ABI (-Wpsabi) */
#define EMUL_LO(x) ((emul_vf)((x) << 16))
#define EMUL_HI(x) ((emul_vf)((x)&0xffff0000u))

#define T_SFX emul
#define T_ATTR __attribute__((T_OPT))
#define T_VF emul_vf
#define T_VP emul_vu
#define T_ZERO() ((emul_vf){0})
#define T_LDF(p) (*(const emul_vf *)(const void *)(p))
#define T_STF(p, x) (*(emul_vf *)(void *)(p) = (x))
#define T_LDP(p) (*(const emul_vu *)(const void *)(p))
#define T_ANDP(x, m) ((x) & (m))
#define T_DP(acc, x, pr)                                                                           \
  ((acc) + EMUL_HI(x) * rrt_am_u2f((pr)&0xffff0000u) + EMUL_LO(x) * rrt_am_u2f((pr) << 16))
#include "kernels/cpu/attn_fwd_bf16_tile.h"

int rrt_attn_cpu_bf16_native(void) {
#if RRT_BF16_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq");
#else
  return 0;
#endif
}

int rrt_attn_cpu_bf16_selected(int isa) {
  return isa == RRT_CPU_ISA_AVX512BF16 || (isa == RRT_CPU_ISA_AUTO && rrt_attn_cpu_bf16_native());
}

typedef void (*bf16_block_fn)(const rrt_attn_cpu_args *, const bf16_in *, const bf16_kv *,
                              const rrt_attn_item *, int64_t, int, int64_t, bf16_scratch *);

static bf16_block_fn pick_block(void) {
#if RRT_BF16_X86
  if (rrt_attn_cpu_bf16_native()) return attn_block_avx512bf16;
#endif
  return attn_block_emul;
}

static void *alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* Pack K and V of (batch, kv head, chunk of 64 keys) t; chunks start at
 * even keys, so no key pair straddles two chunks. */
static void pack_chunk(const rrt_attn_cpu_args *a, const bf16_in *in, const bf16_kv *pk, int64_t t,
                       int64_t nchunk) {
  const int D = a->head_dim, Hkv = a->heads_kv, d2 = pk->d2, dp = pk->dp;
  const int64_t bh = t / nchunk, j0 = t % nchunk * 64, b = bh / Hkv, hk = bh % Hkv;
  const int64_t j1 = j0 + 64 < a->kv_rows ? j0 + 64 : a->kv_rows;
  const int64_t ld = (int64_t)Hkv * D, ldk = pk->ldk;
  const uint16_t *k = in->k + (b * a->kv_rows * Hkv + hk) * (int64_t)D;
  const uint16_t *v = in->v + (b * a->kv_rows * Hkv + hk) * (int64_t)D;
  uint16_t *kp = pk->kp + bh * (d2 / 2) * ldk * 2;
  uint16_t *vp = pk->vp + bh * pk->kpairs * dp * 2;
  const int64_t kend = j1 == a->kv_rows ? ldk : j1; /* the last chunk zeroes the padding keys */
  for (int d = 0; d < d2; d++)
    for (int64_t j = j0; j < kend; j++)
      kp[((d / 2) * ldk + j) * 2 + (d & 1)] = j < j1 && d < D ? k[j * ld + d] : 0;
  const int64_t vend = j1 == a->kv_rows ? 2 * pk->kpairs : j1;
  for (int64_t j = j0; j < vend; j++)
    for (int c = 0; c < dp; c++)
      vp[((j / 2) * dp + c) * 2 + (j & 1)] = j < j1 && c < D ? v[j * ld + c] : 0;
}

static int scratch_make(bf16_scratch *w, const bf16_kv *pk) {
  w->qs = alloc64(sizeof(uint16_t) * BQ * (size_t)pk->d2);
  w->s = alloc64(sizeof(float) * BQ * BK);
  w->p = alloc64(sizeof(uint16_t) * BQ * BK);
  w->acc = alloc64(sizeof(float) * BQ * (size_t)pk->dp);
  return w->qs && w->s && w->p && w->acc;
}

static void scratch_free(bf16_scratch *w) {
  free(w->qs);
  free(w->s);
  free(w->p);
  free(w->acc);
}

rrt_status rrt_attn_fwd_cpu_bf16(const rrt_attn_cpu_args *a, const uint16_t *q, const uint16_t *k,
                                 const uint16_t *v, const rrt_attn_item *items, int nitems) {
  if (nitems <= 0) return RRT_SUCCESS;
  const bf16_in in = {q, k, v};
  bf16_kv pk;
  pk.d2 = (a->head_dim + 1) / 2 * 2;
  pk.dp = (a->head_dim + 15) / 16 * 16;
  pk.ldk = (a->kv_rows + 15) / 16 * 16 + 16; /* + 16: a vector read past the last key */
  pk.kpairs = (a->kv_rows + 1) / 2;
  const int64_t nbh = a->batch * a->heads_kv, nchunk = (a->kv_rows + 63) / 64;
  pk.kp = alloc64(sizeof(uint16_t) * (size_t)(nbh * pk.d2 * pk.ldk));
  pk.vp = alloc64(sizeof(uint16_t) * (size_t)(nbh * pk.kpairs * 2 * pk.dp));
  const bf16_block_fn block = pick_block();
  const int pk_ok = pk.kp && pk.vp;
  int fail = !pk_ok;

#pragma omp parallel if (pk_ok)
  {
    bf16_scratch w = {0};
    const int ok = pk_ok && scratch_make(&w, &pk);
    if (!ok) {
#pragma omp atomic write
      fail = 1;
    }
    /* every thread meets every worksharing loop; failures only skip bodies */
#pragma omp for schedule(static)
    for (int64_t t = 0; t < nbh * nchunk; t++)
      if (pk_ok) pack_chunk(a, &in, &pk, t, nchunk);
    for (int n = 0; n < nitems; n++) {
      const rrt_attn_item *it = &items[n];
      const int64_t nqb = (it->q_len + BQ - 1) / BQ;
      const int64_t ntask = a->batch * a->heads_q * nqb;
      /* masked blocks differ in cost: dynamic, the last query blocks first */
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < ntask; t++) {
        if (!ok) continue;
        int64_t qb = nqb - 1 - t % nqb;
        int h = (int)((t / nqb) % a->heads_q);
        int64_t b = t / (nqb * a->heads_q);
        block(a, &in, &pk, it, b, h, qb, &w);
        if (a->progress && omp_get_thread_num() == 0) a->progress(a->progress_arg);
      }
    }
    scratch_free(&w);
  }
  free(pk.kp);
  free(pk.vp);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

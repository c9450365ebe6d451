/* Memory passes of the CPU attention backend: storage <-> f32 conversion
 * and the start of a run, each with all OpenMP threads (single-threaded,
 * these passes cost a visible share of a short, e.g. causal, run). */
#include <string.h>

#include "kernels/attn_math.h"
#include "kernels/cpu/attn_fwd.h"

void rrt_attn_cpu_to_f32(float *dst, const void *src, size_t n, int dtype) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    dst[i] = rrt_am_load(src, (int64_t)i, dtype);
}

void rrt_attn_cpu_from_f32(void *dst, const float *src, size_t n, int dtype) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    rrt_am_store(dst, (int64_t)i, dtype, src[i]);
}

void rrt_attn_cpu_final_rows(float *o, float *lse, const float *sinks, int64_t batch, int heads_q,
                             int64_t q_rows, int head_dim) {
  const int64_t n = batch * heads_q * q_rows;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < n; t++) {
    const int64_t i = t % q_rows, bh = t / q_rows, h = bh % heads_q, b = bh / heads_q;
    const float c = rrt_attn_end_row(&lse[t], sinks, (int)h);
    if (c == 1.0f) continue;
    float *row = o + ((b * q_rows + i) * heads_q + h) * (int64_t)head_dim;
    for (int d = 0; d < head_dim; d++)
      row[d] *= c;
  }
}

void rrt_attn_cpu_start(float *o, size_t n_o, float *lse, size_t n_lse, void *kvbuf, const void *k,
                        const void *v, size_t half) {
  const size_t chunk = (size_t)1 << 16;
  const size_t nchunks = kvbuf ? (half + chunk - 1) / chunk : 0; /* NULL: no copy */
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < n_o; i++)
      o[i] = 0.0f;
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < n_lse; i++)
      lse[i] = rrt_am_neg_inf();
#pragma omp for schedule(static)
    for (size_t c = 0; c < 2 * nchunks; c++) {
      size_t off = (c % nchunks) * chunk, n = half - off < chunk ? half - off : chunk;
      const char *src = (const char *)(c < nchunks ? k : v) + off;
      memcpy((char *)kvbuf + (c < nchunks ? 0 : half) + off, src, n);
    }
  }
}

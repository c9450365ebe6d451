/* `ringrt attn`: ring attention forward over the ranks.
 *
 * Inputs: random tensors of a given shape (every rank generates its own
 * shard from --seed, see src/io/attn_gen.h) or global BSHD .npy files in
 * natural order. Outputs (--out, --lse) are written in natural order
 * whatever the layout. --check compares with a double-precision naive
 * reference on rank 0. Reports time (max over ranks, median over --iters),
 * FLOP/s (causal counts only unmasked pairs), bytes sent per rank and the
 * share of communication hidden behind compute. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/attn_gen.h"
#include "app.h"
#include "io/npy.h"
#include "kernels/attn_math.h"
#include "ringrt/attn.h"

typedef struct attn_opts {
  long batch, seq, heads, kv_heads, dim, iters, warmup, seed;
  double scale;
  int causal, check;
  rrt_attn_layout layout;
  rrt_dtype dtype;
  const char *qf, *kf, *vf, *out, *lse;
} attn_opts;

static void usage(void) {
  printf("usage: ringrt attn [options]\n\n"
         "Ring attention forward: the sequence is split over the ranks, K/V travel around\n"
         "the ring, every rank folds each block into its output with an LSE merge.\n\n"
         "  --batch N        batch size (1)\n"
         "  --seq N          GLOBAL sequence length (1024)\n"
         "  --heads N        query heads (8)\n"
         "  --kv-heads N     key/value heads, divides --heads (= --heads; 1 is MQA)\n"
         "  --dim N          head dimension, 1..256 (64)\n"
         "  --scale X        softmax scale (1/sqrt(dim))\n"
         "  --causal         causal mask (key position <= query position)\n"
         "  --layout L       contiguous | zigzag | stripe (zigzag)\n"
         "  --dtype T        f32 | bf16 | f16 storage (f32); accumulation is always f32\n"
         "  --seed N         seed of the random inputs (1)\n"
         "  --q/--k/--v F    global inputs as .npy [batch, seq, heads, dim] in natural order\n"
         "                   (<f4 for f32, <f2 for f16, <u2 holding bf16 bits); the shape\n"
         "                   options are then taken from the files\n"
         "  --out F          write O [batch, seq, heads, dim] (.npy, --dtype storage)\n"
         "  --lse F          write LSE [batch, heads, seq] (.npy, f32)\n"
         "  --check          compare with a double-precision naive reference (rank 0)\n"
         "  --iters N        timed runs (5); --warmup N untimed runs first (1)\n\n%s",
         rrt_app_common_help);
}

static const char *descr_of(rrt_dtype dt) {
  return dt == RRT_DTYPE_F32 ? "<f4" : dt == RRT_DTYPE_F16 ? "<f2" : "<u2";
}

static int parse(MPI_Comm comm, int argc, char **argv, attn_opts *o, rrt_app_common *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      if (rank == 0) usage();
      return 1;
    }
    int r = rrt_app_common_option(c, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (strcmp(a, "--causal") == 0) {
      o->causal = 1;
      continue;
    }
    if (strcmp(a, "--check") == 0) {
      o->check = 1;
      continue;
    }
    if (!next || strncmp(a, "--", 2) != 0) {
      rrt_app_print0(comm, "ringrt attn: unknown option or missing value: '%s'\n", a);
      return 2;
    }
    static const struct {
      const char *name;
      size_t off;
      long lo, hi;
    } longs[] = {
        {"--batch", offsetof(attn_opts, batch), 1, 1L << 20},
        {"--seq", offsetof(attn_opts, seq), 1, 1L << 40},
        {"--heads", offsetof(attn_opts, heads), 1, 1 << 16},
        {"--kv-heads", offsetof(attn_opts, kv_heads), 1, 1 << 16},
        {"--dim", offsetof(attn_opts, dim), 1, RRT_ATTN_MAX_HEAD_DIM},
        {"--iters", offsetof(attn_opts, iters), 1, 1 << 20},
        {"--warmup", offsetof(attn_opts, warmup), 0, 1 << 20},
        {"--seed", offsetof(attn_opts, seed), 0, (long)(~0UL >> 1)},
    };
    int done = 0;
    for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
      if (strcmp(a, longs[k].name) == 0) {
        if (rrt_app_parse_long(comm, "attn", a, next, longs[k].lo, longs[k].hi,
                               (long *)((char *)o + longs[k].off)) != 0)
          return 2;
        done = 1;
      }
    if (done) {
      i++;
      continue;
    }
    i++;
    if (strcmp(a, "--scale") == 0) {
      if (rrt_app_parse_double(comm, "attn", a, next, &o->scale) != 0) return 2;
    } else if (strcmp(a, "--layout") == 0) {
      if (rrt_attn_layout_parse(next, &o->layout) != RRT_SUCCESS) {
        rrt_app_print0(comm, "ringrt attn: --layout '%s' is not contiguous, zigzag or stripe\n",
                       next);
        return 2;
      }
    } else if (strcmp(a, "--dtype") == 0) {
      if (strcmp(next, "f32") == 0)
        o->dtype = RRT_DTYPE_F32;
      else if (strcmp(next, "bf16") == 0)
        o->dtype = RRT_DTYPE_BF16;
      else if (strcmp(next, "f16") == 0)
        o->dtype = RRT_DTYPE_F16;
      else {
        rrt_app_print0(comm, "ringrt attn: --dtype '%s' is not f32, bf16 or f16\n", next);
        return 2;
      }
    } else if (strcmp(a, "--q") == 0)
      o->qf = next;
    else if (strcmp(a, "--k") == 0)
      o->kf = next;
    else if (strcmp(a, "--v") == 0)
      o->vf = next;
    else if (strcmp(a, "--out") == 0)
      o->out = next;
    else if (strcmp(a, "--lse") == 0)
      o->lse = next;
    else {
      rrt_app_print0(comm, "ringrt attn: unknown option '%s'\n", a);
      return 2;
    }
  }
  if ((o->qf || o->kf || o->vf) && !(o->qf && o->kf && o->vf)) {
    rrt_app_print0(comm, "ringrt attn: --q, --k and --v go together\n");
    return 2;
  }
  return 0;
}

/* Global inputs from .npy files: shapes checked against each other and the
 * dtype; fills the shape options. Returns 0 or prints (rank 0) and returns 1. */
static int load_inputs(attn_opts *o, rrt_npy in[3], int rank) {
  const char *files[3] = {o->qf, o->kf, o->vf};
  char err[600];
  for (int t = 0; t < 3; t++) {
    if (rrt_npy_read(files[t], &in[t], err, sizeof err) != RRT_SUCCESS) {
      if (rank == 0) fprintf(stderr, "ringrt attn: %s\n", err);
      return 1;
    }
    if (strcmp(in[t].descr, descr_of(o->dtype)) != 0) {
      if (rank == 0)
        fprintf(stderr, "ringrt attn: %s: dtype %s does not match --dtype %s (expects %s)\n",
                files[t], in[t].descr, rrt_dtype_name(o->dtype), descr_of(o->dtype));
      return 1;
    }
    if (in[t].ndim != 4) {
      if (rank == 0)
        fprintf(stderr, "ringrt attn: %s: %d dimensions, expected 4 [batch, seq, heads, dim]\n",
                files[t], in[t].ndim);
      return 1;
    }
  }
  const int64_t *qs = in[0].shape, *ks = in[1].shape;
  for (int t = 1; t < 3; t++) {
    const int64_t *s = in[t].shape;
    if (s[0] != qs[0] || s[1] != qs[1] || s[3] != qs[3] || s[2] != ks[2]) {
      if (rank == 0)
        fprintf(stderr,
                "ringrt attn: %s: shape [%lld, %lld, %lld, %lld] does not match %s [%lld, %lld, "
                "%lld, %lld] (batch, seq and dim must agree; K and V have the same heads)\n",
                files[t], (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3],
                files[0], (long long)qs[0], (long long)qs[1], (long long)qs[2], (long long)qs[3]);
      return 1;
    }
  }
  o->batch = (long)qs[0];
  o->seq = (long)qs[1];
  o->heads = (long)qs[2];
  o->dim = (long)qs[3];
  o->kv_heads = (long)ks[2];
  return 0;
}

/* This rank's shard of a global tensor (from a file, or generated). */
static void *make_shard(const attn_opts *o, const rrt_attn_desc *d, int P, int r, int t, int heads,
                        const rrt_npy *file) {
  const int64_t L = d->seq / P, D = d->head_dim;
  const size_t es = rrt_dtype_size(d->dtype);
  char *x = malloc((size_t)(d->batch * L * heads * D) * es + 1);
  if (!x) return NULL;
  for (int64_t b = 0; b < d->batch; b++)
    for (int64_t l = 0; l < L; l++) {
      int64_t pos = rrt_attn_global_pos(d->layout, d->seq, P, r, l);
      for (int64_t h = 0; h < heads; h++) {
        int64_t g = ((b * d->seq + pos) * heads + h) * D, li = ((b * L + l) * heads + h) * D;
        if (file) {
          memcpy(x + (size_t)li * es, (const char *)file->data + (size_t)g * es, (size_t)D * es);
        } else {
          for (int64_t e = 0; e < D; e++)
            rrt_am_store(x, li + e, (int)d->dtype,
                         rrt_attn_data_value((uint64_t)o->seed, t, (uint64_t)(g + e)));
        }
      }
    }
  return x;
}

/* Gather shards on rank 0 and reorder to natural order: O ([B, S, H, D])
 * or, with is_lse, LSE ([B, H, S]). Returns a malloc'd global array on
 * rank 0, NULL elsewhere; *fail when the shards are too large for one
 * MPI_Gather. */
static void *gather_natural(MPI_Comm comm, const rrt_attn_desc *d, const void *shard,
                            size_t shard_bytes, size_t es, int is_lse, int *fail) {
  int P, r;
  MPI_Comm_size(comm, &P);
  MPI_Comm_rank(comm, &r);
  *fail = shard_bytes * (size_t)P > (size_t)INT32_MAX;
  if (*fail) return NULL;
  char *all = r == 0 ? malloc(shard_bytes * (size_t)P + 1) : NULL;
  MPI_Gather(shard, (int)shard_bytes, MPI_BYTE, all, (int)shard_bytes, MPI_BYTE, 0, comm);
  if (r != 0) return NULL;
  char *nat = malloc(shard_bytes * (size_t)P + 1);
  const int64_t L = d->seq / P;
  const int64_t H = d->heads_q, D = d->head_dim;
  for (int src = 0; src < P; src++)
    for (int64_t b = 0; b < d->batch; b++)
      for (int64_t l = 0; l < L; l++) {
        int64_t pos = rrt_attn_global_pos(d->layout, d->seq, P, src, l);
        const char *part = all + (size_t)src * shard_bytes;
        if (!is_lse) {
          memcpy(nat + (size_t)((b * d->seq + pos) * H * D) * es,
                 part + (size_t)((b * L + l) * H * D) * es, (size_t)(H * D) * es);
        } else {
          for (int64_t h = 0; h < H; h++)
            memcpy(nat + (size_t)((b * H + h) * d->seq + pos) * es,
                   part + (size_t)((b * H + h) * L + l) * es, es);
        }
      }
  free(all);
  return nat;
}

typedef struct check_result {
  double max_abs, max_rel, lse_abs, ref_max;
  int pass;
} check_result;

/* Global input tensor t as stored, in double (rank 0, for --check). */
static double *input_global(const attn_opts *o, const rrt_attn_desc *d, int t, int heads,
                            const rrt_npy *file) {
  size_t n = (size_t)(d->batch * d->seq * heads * d->head_dim);
  double *g = malloc(n * sizeof(double) + 1);
  if (!g) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (file) {
      g[i] = rrt_am_load(file->data, (int64_t)i, (int)d->dtype);
    } else {
      float tmp;
      rrt_am_store(&tmp, 0, (int)d->dtype, rrt_attn_data_value((uint64_t)o->seed, t, i));
      g[i] = rrt_am_load(&tmp, 0, (int)d->dtype);
    }
  }
  return g;
}

/* Naive attention in double on the global tensors (rank 0). */
static int check_ref(const attn_opts *o, const rrt_attn_desc *d, const rrt_npy *files,
                     const void *out, const float *lse, check_result *c) {
  const int64_t S = d->seq, D = d->head_dim, Hq = d->heads_q, Hkv = d->heads_kv;
  const double scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)D);
  const int heads[3] = {(int)Hq, (int)Hkv, (int)Hkv};
  double *g[3];
  for (int t = 0; t < 3; t++)
    g[t] = input_global(o, d, t, heads[t], files ? &files[t] : NULL);
  if (!g[0] || !g[1] || !g[2]) {
    for (int t = 0; t < 3; t++)
      free(g[t]);
    return 1;
  }
  double max_abs = 0, lse_abs = 0, ref_max = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(max : max_abs, lse_abs, ref_max)
  for (int64_t t = 0; t < d->batch * Hq * S; t++) {
    const int64_t i = t % S, h = (t / S) % Hq, b = t / (S * Hq), hk = h / (Hq / Hkv);
    double *s = malloc(sizeof(double) * (size_t)S), *acc = calloc((size_t)D, sizeof(double));
    const double *qv = g[0] + ((b * S + i) * Hq + h) * D;
    const int64_t nk = d->causal ? i + 1 : S;
    double mx = -HUGE_VAL, sum = 0;
    for (int64_t j = 0; j < nk; j++) {
      const double *kr = g[1] + ((b * S + j) * Hkv + hk) * D;
      double x = 0;
      for (int64_t e = 0; e < D; e++)
        x += qv[e] * kr[e];
      s[j] = x * scale;
      mx = s[j] > mx ? s[j] : mx;
    }
    for (int64_t j = 0; j < nk; j++) {
      const double *vr = g[2] + ((b * S + j) * Hkv + hk) * D;
      double p = exp(s[j] - mx);
      sum += p;
      for (int64_t e = 0; e < D; e++)
        acc[e] += p * vr[e];
    }
    for (int64_t e = 0; e < D; e++) {
      double ref = acc[e] / sum;
      double got = rrt_am_load(out, ((b * S + i) * Hq + h) * D + e, (int)d->dtype);
      double ae = fabs(got - ref);
      if (!(ae <= max_abs)) max_abs = ae == ae ? ae : HUGE_VAL;
      if (fabs(ref) > ref_max) ref_max = fabs(ref);
    }
    double le = fabs((double)lse[(b * Hq + h) * S + i] - (mx + log(sum)));
    if (!(le <= lse_abs)) lse_abs = le == le ? le : HUGE_VAL;
    free(s);
    free(acc);
  }
  for (int t = 0; t < 3; t++)
    free(g[t]);
  c->max_abs = max_abs;
  c->max_rel = ref_max > 0 ? max_abs / ref_max : max_abs;
  c->lse_abs = lse_abs;
  c->ref_max = ref_max;
  /* Errors relative to the output scale: f32 accumulation (~1e-6, allow
   * 1e-4), plus the final rounding of O to bf16 (2^-8) or f16 (2^-11). */
  double tol = d->dtype == RRT_DTYPE_F32 ? 1e-4 : d->dtype == RRT_DTYPE_BF16 ? 8e-3 : 1.5e-3;
  double norm = ref_max > 1 ? ref_max : 1;
  c->pass = max_abs <= tol * norm && lse_abs <= 1e-4 * (1 + log((double)S));
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int rrt_cmd_attn(MPI_Comm comm, int argc, char **argv) {
  attn_opts o = {1,    1024, 8,    0,    64,  5, 1, 1, 0.0, 0, 0, RRT_ATTN_ZIGZAG, RRT_DTYPE_F32,
                 NULL, NULL, NULL, NULL, NULL};
  rrt_app_common c = {0};
  int pr = parse(comm, argc, argv, &o, &c);
  if (pr == 1) return 0;
  if (pr) return pr;
  int rank = 0, P = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &P);

  rrt_npy files[3];
  memset(files, 0, sizeof files);
  int fail = 0;
  if (o.qf) fail = load_inputs(&o, files, rank);
  MPI_Allreduce(MPI_IN_PLACE, &fail, 1, MPI_INT, MPI_MAX, comm);
  if (fail) {
    for (int t = 0; t < 3; t++)
      rrt_npy_free(&files[t]);
    return 1;
  }
  if (o.kv_heads == 0) o.kv_heads = o.heads;

  rrt_ctx_t ctx = NULL;
  if (rrt_app_ctx_create(comm, &c, &ctx) != RRT_SUCCESS) return 1;
  MPI_Comm cc = rrt_ctx_comm(ctx);
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.batch = o.batch;
  d.seq = o.seq;
  d.heads_q = (int)o.heads;
  d.heads_kv = (int)o.kv_heads;
  d.head_dim = (int)o.dim;
  d.scale = o.scale;
  d.causal = o.causal;
  d.layout = o.layout;
  d.dtype = o.dtype;
  int rc = 1;
  rrt_attn_plan_t plan = NULL;
  void *host[3] = {NULL, NULL, NULL}, *dev[3] = {NULL, NULL, NULL}, *dout = NULL, *hout = NULL;
  float *dlse = NULL, *hlse = NULL;
  double *times = NULL;
  if (rrt_attn_plan_create(ctx, &d, &plan) != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt attn: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  const int64_t L = d.seq / P;
  const size_t es = rrt_dtype_size(d.dtype);
  const size_t nq = (size_t)(d.batch * L * d.heads_q * d.head_dim);
  const size_t nkv = (size_t)(d.batch * L * d.heads_kv * d.head_dim);
  const size_t nl = (size_t)(d.batch * d.heads_q * L);
  const size_t n[3] = {nq, nkv, nkv};
  const int heads[3] = {d.heads_q, d.heads_kv, d.heads_kv};
  rrt_status st = RRT_SUCCESS;
  for (int t = 0; t < 3 && st == RRT_SUCCESS; t++) {
    host[t] = make_shard(&o, &d, P, rank, t, heads[t], o.qf ? &files[t] : NULL);
    st = host[t] ? rrt_malloc(ctx, n[t] * es, &dev[t]) : RRT_ERR_OUT_OF_MEMORY;
    if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, dev[t], host[t], n[t] * es);
  }
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, nq * es, &dout);
  if (st == RRT_SUCCESS) st = rrt_malloc(ctx, nl * sizeof(float), (void **)&dlse);
  hout = malloc(nq * es + 1);
  hlse = malloc(nl * sizeof(float) + 1);
  times = calloc((size_t)o.iters, sizeof *times);
  if (st == RRT_SUCCESS && (!hout || !hlse || !times)) st = RRT_ERR_OUT_OF_MEMORY;
  if (rrt_agree(ctx, st) != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt attn: allocating inputs: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  for (int t = 0; t < 3; t++)
    rrt_npy_free(&files[t]);

  /* timed runs: per iteration the slowest rank's time */
  double comm_s = 0, exposed_s = 0, compute_s = 0;
  rrt_attn_stats stt = {0};
  for (long it = -o.warmup; it < o.iters; it++) {
    MPI_Barrier(cc);
    if (rrt_attn_plan_run(plan, dev[0], dev[1], dev[2], dout, dlse) != RRT_SUCCESS) {
      if (rank == 0) fprintf(stderr, "ringrt attn: %s\n", rrt_ctx_last_error(ctx));
      goto done;
    }
    rrt_attn_plan_stats(plan, &stt);
    if (it >= 0) {
      times[it] = stt.total_s;
      comm_s += stt.comm_s;
      exposed_s += stt.comm_exposed_s;
      compute_s += stt.compute_s;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, times, (int)o.iters, MPI_DOUBLE, MPI_MAX, cc);
  double sums[3] = {comm_s, exposed_s, compute_s}, bytes = stt.bytes_sent;
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, cc);
  MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_DOUBLE, MPI_MAX, cc);
  qsort(times, (size_t)o.iters, sizeof *times, cmp_double);
  const double t_med =
      o.iters % 2 ? times[o.iters / 2] : 0.5 * (times[o.iters / 2 - 1] + times[o.iters / 2]);
  const double flops = rrt_attn_flops(&d);
  const double hidden = sums[0] > 0 ? 1.0 - sums[1] / sums[0] : 1.0;
  const double per = 1.0 / ((double)o.iters * P);

  /* outputs in natural order, and the check, on rank 0 */
  if (rrt_memcpy_to_host(ctx, hout, dout, nq * es) != RRT_SUCCESS ||
      rrt_memcpy_to_host(ctx, hlse, dlse, nl * sizeof(float)) != RRT_SUCCESS) {
    if (rank == 0) fprintf(stderr, "ringrt attn: %s\n", rrt_ctx_last_error(ctx));
    goto done;
  }
  check_result chk = {0, 0, 0, 0, 1};
  int checked = 0, io_fail = 0;
  if (o.out || o.lse || o.check) {
    int f1 = 0, f2 = 0;
    void *go = gather_natural(cc, &d, hout, nq * es, es, 0, &f1);
    float *gl = gather_natural(cc, &d, hlse, nl * sizeof(float), sizeof(float), 1, &f2);
    if (f1 || f2) {
      if (rank == 0) fprintf(stderr, "ringrt attn: outputs too large to gather on one rank\n");
      io_fail = 1;
    } else if (rank == 0) {
      char err[600];
      int64_t oshape[4] = {d.batch, d.seq, d.heads_q, d.head_dim};
      int64_t lshape[3] = {d.batch, d.heads_q, d.seq};
      if (o.out && rrt_npy_write(o.out, descr_of(d.dtype), 4, oshape, go, err, sizeof err)) {
        fprintf(stderr, "ringrt attn: %s\n", err);
        io_fail = 1;
      }
      if (o.lse && rrt_npy_write(o.lse, "<f4", 3, lshape, gl, err, sizeof err)) {
        fprintf(stderr, "ringrt attn: %s\n", err);
        io_fail = 1;
      }
      double work = (double)d.batch * d.heads_q * (double)d.seq * (double)d.seq * d.head_dim;
      if (o.check && work > 1e10) {
        fprintf(stderr,
                "ringrt attn: --check skipped: the naive reference would take %.0e "
                "multiply-adds (limit 1e10)\n",
                work);
      } else if (o.check) {
        if (o.qf) { /* inputs were freed after sharding: read them again */
          for (int t = 0; t < 3 && !io_fail; t++) {
            const char *fn[3] = {o.qf, o.kf, o.vf};
            if (rrt_npy_read(fn[t], &files[t], err, sizeof err) != RRT_SUCCESS) {
              fprintf(stderr, "ringrt attn: %s\n", err);
              io_fail = 1;
            }
          }
        }
        if (!io_fail && check_ref(&o, &d, o.qf ? files : NULL, go, gl, &chk) != 0) {
          fprintf(stderr, "ringrt attn: --check: out of memory for the global inputs\n");
          io_fail = 1;
        } else if (!io_fail) {
          checked = 1;
        }
      }
    }
    free(go);
    free(gl);
  }
  MPI_Allreduce(MPI_IN_PLACE, &io_fail, 1, MPI_INT, MPI_MAX, cc);
  int check_fail = checked && !chk.pass;
  MPI_Allreduce(MPI_IN_PLACE, &check_fail, 1, MPI_INT, MPI_MAX, cc);

  if (rank == 0) {
    if (!c.quiet) {
      printf("ringrt attn: %s backend, %d rank(s), batch %lld seq %lld heads %d/%d dim %d %s "
             "%s%s\n",
             rrt_backend_name(rrt_ctx_backend(ctx)), P, (long long)d.batch, (long long)d.seq,
             d.heads_q, d.heads_kv, d.head_dim, rrt_dtype_name(d.dtype),
             rrt_attn_layout_name(d.layout), d.causal ? " causal" : "");
      printf("  time %.6f s (median of %ld, max over ranks), %.3f TFLOP/s (%.2f GFLOP/s)\n", t_med,
             o.iters, flops / t_med * 1e-12, flops / t_med * 1e-9);
      printf("  K/V sent per rank %.0f bytes; comm %.6f s, exposed %.6f s, hidden %.1f%%; compute "
             "%.6f s (means per rank and run)\n",
             bytes, sums[0] * per, sums[1] * per, 100.0 * hidden, sums[2] * per);
      if (checked)
        printf("  check vs double reference: max abs err %.3e, max rel err %.3e, LSE max abs err "
               "%.3e: %s\n",
               chk.max_abs, chk.max_rel, chk.lse_abs, chk.pass ? "PASS" : "FAIL");
    }
    FILE *jf = rrt_app_json_open(&c, rank);
    if (jf) {
      fprintf(jf,
              "{\"command\":\"attn\",\"backend\":\"%s\",\"ranks\":%d,\"batch\":%lld,\"seq\":%lld,"
              "\"heads\":%d,\"kv_heads\":%d,\"dim\":%d,\"dtype\":\"%s\",\"layout\":\"%s\","
              "\"causal\":%s,\"iters\":%ld,\"warmup\":%ld,\"time_s\":%.9g,\"time_min_s\":%.9g,"
              "\"flops\":%.6g,\"tflops\":%.6g,\"bytes_sent_per_rank\":%.0f,\"comm_s\":%.9g,"
              "\"comm_exposed_s\":%.9g,\"compute_s\":%.9g,\"hidden_share\":%.6f",
              rrt_backend_name(rrt_ctx_backend(ctx)), P, (long long)d.batch, (long long)d.seq,
              d.heads_q, d.heads_kv, d.head_dim, rrt_dtype_name(d.dtype),
              rrt_attn_layout_name(d.layout), d.causal ? "true" : "false", o.iters, o.warmup, t_med,
              times[0], flops, flops / t_med * 1e-12, bytes, sums[0] * per, sums[1] * per,
              sums[2] * per, hidden);
      if (checked)
        fprintf(jf,
                ",\"check\":{\"max_abs\":%.6g,\"max_rel\":%.6g,\"lse_max_abs\":%.6g,\"pass\":%s}",
                chk.max_abs, chk.max_rel, chk.lse_abs, chk.pass ? "true" : "false");
      fprintf(jf, "}\n");
      rrt_app_json_close(jf);
    }
  }
  rc = io_fail || check_fail ? 1 : 0;
done:
  for (int t = 0; t < 3; t++) {
    rrt_npy_free(&files[t]);
    free(host[t]);
    rrt_free(ctx, dev[t]);
  }
  rrt_free(ctx, dout);
  rrt_free(ctx, dlse);
  free(hout);
  free(hlse);
  free(times);
  rrt_attn_plan_destroy(plan);
  if (rrt_app_ctx_finish(ctx, &c) != RRT_SUCCESS) rc = 1;
  return rc;
}

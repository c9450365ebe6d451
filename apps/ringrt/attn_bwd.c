/* `ringrt attn --backward`: every iteration runs the forward, then the
 * backward on the forward's O and LSE with the upstream gradient dO (a
 * .npy file, --dout, or generated from --seed like Q, K and V: tensor 3).
 * The gradients are written in natural order (--dq-out, --dk-out,
 * --dv-out) and, with --check, compared with a float64 reference on rank 0
 * (attn_check.c). The report adds the backward's time (median over the
 * iterations of the slowest rank), its FLOP/s (rrt_attn_flops_bwd: 2.5x the
 * forward's count) and the dK/dV hand-off's comm time. */
#include "attn_bwd.h"
#include "attn_shards.h"

#include <stdlib.h>
#include <string.h>

#include "comm/host_coll.h"

const char rrt_app_attn_bwd_help[] =
    "  --backward       run the backward pass after every forward (dQ, dK, dV); the report\n"
    "                   adds its time and FLOP/s (2.5x the forward's FLOPs)\n"
    "  --dout F         upstream gradient dO as .npy, Q's shape and dtype (else generated)\n"
    "  --dq-out F       write dQ (.npy, Q's shape); --dk-out F, --dv-out F: dK, dV (K's)\n";

int rrt_app_attn_bwd_option(const char *a, const char *next, rrt_app_attn_bwd_opts *o) {
  const char **dst = strcmp(a, "--dout") == 0     ? &o->doutf
                     : strcmp(a, "--dq-out") == 0 ? &o->dqf
                     : strcmp(a, "--dk-out") == 0 ? &o->dkf
                     : strcmp(a, "--dv-out") == 0 ? &o->dvf
                                                  : NULL;
  if (!dst) return 0;
  *dst = next;
  return 1;
}

static const char *descr_of(rrt_dtype dt) {
  return dt == RRT_DTYPE_F32 ? "<f4" : dt == RRT_DTYPE_F16 ? "<f2" : "<u2";
}

/* --dout's dtype and shape against Q's: 0, or 1 with the reason in err. */
static int check_dout(const char *fn, const rrt_npy *f, const rrt_attn_desc *d, char *err,
                      size_t errlen) {
  const int64_t want[4] = {d->batch, d->seq, d->heads_q, d->head_dim};
  if (strcmp(f->descr, descr_of(d->dtype)) != 0) {
    snprintf(err, errlen, "--dout %s: dtype %s does not match --dtype %s (expects %s)", fn,
             f->descr, rrt_dtype_name(d->dtype), descr_of(d->dtype));
    return 1;
  }
  int same = f->ndim == 4;
  for (int i = 0; same && i < 4; i++)
    same = f->shape[i] == want[i];
  if (same) return 0;
  char got[128] = "";
  size_t at = 0;
  for (int i = 0; i < f->ndim && at < sizeof got - 24; i++)
    at += (size_t)snprintf(got + at, sizeof got - at, "%s%lld", i ? ", " : "",
                           (long long)f->shape[i]);
  snprintf(err, errlen,
           "--dout %s: shape [%s] does not match Q's [%lld, %lld, %lld, %lld] (batch, seq, heads, "
           "dim)",
           fn, got, (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
  return 1;
}

/* Every rank's own failure reaches the user (rrt_app_any_rank_error). */
int rrt_app_attn_bwd_read(rrt_ctx_t ctx, rrt_app_common *c, const rrt_app_attn_bwd_opts *o,
                          const rrt_attn_desc *d, rrt_app_attn_bwd *b) {
  char err[800] = "";
  if (o->doutf && rrt_npy_read(o->doutf, &b->dfile, err, sizeof err) == RRT_SUCCESS)
    check_dout(o->doutf, &b->dfile, d, err, sizeof err);
  if (rrt_app_any_rank_error(ctx, c, err)) {
    rrt_npy_free(&b->dfile);
    return 1;
  }
  return 0;
}

int rrt_app_attn_bwd_setup(rrt_ctx_t ctx, rrt_app_common *c, const rrt_attn_desc *d, int64_t L,
                           const int64_t *pos, uint64_t seed, long iters, rrt_app_attn_bwd *b) {
  const int r = rrt_ctx_rank(ctx);
  const size_t es = rrt_dtype_size(d->dtype), rows = (size_t)d->batch * (size_t)L;
  b->n[0] = rows * (size_t)d->heads_q * (size_t)d->head_dim;
  b->n[1] = b->n[2] = rows * (size_t)d->heads_kv * (size_t)d->head_dim;
  b->host_do =
      pos ? rrt_app_attn_shard(seed, d, L, pos, 3, d->heads_q, b->dfile.data ? &b->dfile : NULL)
          : NULL;
  rrt_npy_free(&b->dfile);
  rrt_status st = b->host_do ? rrt_malloc(ctx, b->n[0] * es, &b->dev_do) : RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(ctx, b->dev_do, b->host_do, b->n[0] * es);
  for (int t = 0; t < 3 && st == RRT_SUCCESS; t++) {
    st = rrt_malloc(ctx, b->n[t] * es, &b->dev_g[t]);
    b->host_g[t] = malloc(b->n[t] * es + 1);
    if (st == RRT_SUCCESS && !b->host_g[t]) st = RRT_ERR_OUT_OF_MEMORY;
  }
  b->times = calloc((size_t)iters, sizeof *b->times);
  if (st == RRT_SUCCESS && !b->times) st = RRT_ERR_OUT_OF_MEMORY;
  if (rrt_agree(ctx, st) != RRT_SUCCESS) {
    if (r == 0) rrt_app_error(c, "allocating the backward's buffers: %s", rrt_ctx_last_error(ctx));
    return 1;
  }
  return 0;
}

int rrt_app_attn_bwd_run(rrt_ctx_t ctx, rrt_app_common *c, rrt_attn_plan_t plan,
                         void *const dev_in[3], const void *o, const float *lse, long it,
                         rrt_app_attn_bwd *b) {
  const rrt_status rs =
      b->sinks
          ? rrt_attn_plan_run_bwd_sinks(plan, dev_in[0], dev_in[1], dev_in[2], o, lse, b->dev_do,
                                        b->sinks, b->dev_g[0], b->dev_g[1], b->dev_g[2], b->dsinks)
          : rrt_attn_plan_run_bwd(plan, dev_in[0], dev_in[1], dev_in[2], o, lse, b->dev_do,
                                  b->dev_g[0], b->dev_g[1], b->dev_g[2]);
  if (rs != RRT_SUCCESS) {
    if (rrt_ctx_rank(ctx) == 0) rrt_app_error(c, "%s", rrt_ctx_last_error(ctx));
    return 1;
  }
  rrt_attn_stats st;
  rrt_attn_plan_stats(plan, &st);
  if (it < 0) return 0;
  b->times[it] = st.total_s;
  b->bytes = st.bytes_sent;
  const double add[5] = {st.comm_s, st.comm_exposed_s, st.compute_s, st.handoff_s,
                         st.handoff_exposed_s};
  for (int i = 0; i < 5; i++)
    b->sums[i] += add[i];
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void rrt_app_attn_bwd_reduce(rrt_ctx_t ctx, const rrt_attn_desc *d, long iters,
                             rrt_app_attn_bwd *b) {
  rrt_host_allreduce(ctx, b->times, b->times, (size_t)iters, RRT_DTYPE_F64, RRT_OP_MAX);
  rrt_host_allreduce(ctx, b->sums, b->sums, 5, RRT_DTYPE_F64, RRT_OP_SUM);
  rrt_host_allreduce(ctx, &b->bytes, &b->bytes, 1, RRT_DTYPE_F64, RRT_OP_MAX);
  qsort(b->times, (size_t)iters, sizeof *b->times, cmp_double);
  const double *t = b->times;
  b->t_med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
  b->flops = rrt_attn_flops_bwd(d);
}

/* Rank 0: --dq-out, --dk-out, --dv-out, then the check. 0 or 1 (printed). */
static int write_and_check(rrt_app_common *c, const rrt_app_attn_bwd_opts *o,
                           const rrt_attn_desc *d, uint64_t seed, const rrt_npy *qkv_files,
                           const void *go, int check, void *const g[3], rrt_app_attn_bwd *b) {
  const char *fn[3] = {o->dqf, o->dkf, o->dvf}, *opt[3] = {"--dq-out", "--dk-out", "--dv-out"};
  const int heads[3] = {d->heads_q, d->heads_kv, d->heads_kv};
  char err[600];
  int fail = 0;
  for (int t = 0; t < 3; t++) {
    int64_t shape[4] = {d->batch, d->seq, heads[t], d->head_dim};
    if (fn[t] && rrt_npy_write(fn[t], descr_of(d->dtype), 4, shape, g[t], err, sizeof err)) {
      rrt_app_error(c, "%s %s", opt[t], err);
      fail = 1;
    }
  }
  if (fail || !check) return fail;
  double work = 2.5 * (double)d->batch * d->heads_q * (double)d->seq * (double)d->seq * d->head_dim;
  if (work > 1e10) {
    fprintf(stderr,
            "ringrt attn: --check of the backward skipped: the naive reference would take "
            "%.0e multiply-adds (limit 1e10)\n",
            work);
    return 0;
  }
  if (qkv_files && !qkv_files[0].data) return 0; /* the forward's check did not read them */
  rrt_npy files[4];
  memset(files, 0, sizeof files);
  if (qkv_files) memcpy(files, qkv_files, 3 * sizeof *files);
  if (o->doutf && rrt_npy_read(o->doutf, &files[3], err, sizeof err) != RRT_SUCCESS) {
    rrt_app_error(c, "%s", err);
    return 1;
  }
  const void *const grads[3] = {g[0], g[1], g[2]};
  int oom =
      rrt_app_attn_check_bwd_ref(seed, d, files, b->host_sinks, b->host_dsinks, go, grads, &b->chk);
  rrt_npy_free(&files[3]);
  if (oom) {
    rrt_app_error(c, "--check: out of memory for the backward's global inputs");
    return 1;
  }
  b->checked = 1;
  return 0;
}

int rrt_app_attn_bwd_outputs(rrt_ctx_t ctx, rrt_app_common *c, const rrt_app_attn_bwd_opts *o,
                             const rrt_attn_desc *d, uint64_t seed, const rrt_npy *qkv_files,
                             const void *go, int check, rrt_app_attn_bwd *b) {
  if (!o->dqf && !o->dkf && !o->dvf && !check) return 0;
  const size_t es = rrt_dtype_size(d->dtype);
  const int heads[3] = {d->heads_q, d->heads_kv, d->heads_kv};
  int fail = 0;
  for (int t = 0; t < 3 && !fail; t++)
    fail = rrt_memcpy_to_host(ctx, b->host_g[t], b->dev_g[t], b->n[t] * es) != RRT_SUCCESS;
  if (!fail && b->sinks) {
    const size_t sb = (size_t)d->heads_q * sizeof(float);
    free(b->host_dsinks);
    b->host_dsinks = malloc(sb);
    fail = !b->host_dsinks || rrt_memcpy_to_host(ctx, b->host_dsinks, b->dsinks, sb) != RRT_SUCCESS;
  }
  if (rrt_app_any_rank(ctx, fail)) {
    if (rrt_ctx_rank(ctx) == 0) rrt_app_error(c, "%s", rrt_ctx_last_error(ctx));
    return 1;
  }
  void *g[3] = {NULL, NULL, NULL};
  int gf = 0;
  for (int t = 0; t < 3; t++) {
    int f = 0;
    g[t] = rrt_app_attn_gather(ctx, d, b->host_g[t], b->n[t] * es, es, heads[t], 0, &f);
    gf |= f;
  }
  if (gf) {
    if (rrt_ctx_rank(ctx) == 0) rrt_app_error(c, "gradients too large to gather on one rank");
    fail = 1;
  } else if (rrt_ctx_rank(ctx) == 0) {
    fail = write_and_check(c, o, d, seed, qkv_files, go, check, g, b);
  }
  for (int t = 0; t < 3; t++)
    free(g[t]);
  return rrt_app_any_rank(ctx, fail);
}

/* ", dsinks E" of the check line (a static buffer: one report at a time). */
static const char *dsinks_text(const rrt_app_attn_bwd *b) {
  static char t[48];
  snprintf(t, sizeof t, ", dsinks %.3e", b->chk.dsinks_rel);
  return t;
}

void rrt_app_attn_bwd_text(FILE *out, const rrt_app_attn_bwd *b, long iters, int P) {
  const double per = 1.0 / ((double)iters * P);
  const double hidden = b->sums[0] > 0 ? 1.0 - b->sums[1] / b->sums[0] : 1.0;
  fprintf(out,
          "  backward time %.6f s (median of %ld, max over ranks), %.3f TFLOP/s (%.2f GFLOP/s)\n",
          b->t_med, iters, b->flops / b->t_med * 1e-12, b->flops / b->t_med * 1e-9);
  fprintf(out,
          "  backward sent per rank %.0f bytes (K/V and dK/dV); comm %.6f s, exposed %.6f s, "
          "hidden %.1f%%; dK/dV hand-off %.6f s, exposed %.6f s; compute %.6f s\n",
          b->bytes, b->sums[0] * per, b->sums[1] * per, 100.0 * hidden, b->sums[3] * per,
          b->sums[4] * per, b->sums[2] * per);
  if (b->checked)
    fprintf(out,
            "  backward check vs double reference: max rel err dQ %.3e, dK %.3e, dV %.3e%s: "
            "%s\n",
            b->chk.rel[0], b->chk.rel[1], b->chk.rel[2], b->sinks ? dsinks_text(b) : "",
            b->chk.pass ? "PASS" : "FAIL");
}

void rrt_app_attn_bwd_json(FILE *jf, const rrt_app_attn_bwd *b, long iters, int P) {
  const double per = 1.0 / ((double)iters * P);
  fprintf(jf, ",\"backward\":{\"time_s\":");
  rrt_app_json_number(jf, b->t_med);
  rrt_app_json_field(jf, "time_min_s", b->times[0]);
  rrt_app_json_field(jf, "flops", b->flops);
  rrt_app_json_field(jf, "tflops", b->flops / b->t_med * 1e-12);
  rrt_app_json_field(jf, "bytes_sent_per_rank", b->bytes);
  rrt_app_json_field(jf, "comm_s", b->sums[0] * per);
  rrt_app_json_field(jf, "comm_exposed_s", b->sums[1] * per);
  rrt_app_json_field(jf, "compute_s", b->sums[2] * per);
  rrt_app_json_field(jf, "handoff_s", b->sums[3] * per);
  rrt_app_json_field(jf, "handoff_exposed_s", b->sums[4] * per);
  rrt_app_json_field(jf, "hidden_share", b->sums[0] > 0 ? 1.0 - b->sums[1] / b->sums[0] : 1.0);
  if (b->checked) {
    fprintf(jf, ",\"check\":{\"dq_max_rel\":");
    rrt_app_json_number(jf, b->chk.rel[0]);
    rrt_app_json_field(jf, "dk_max_rel", b->chk.rel[1]);
    rrt_app_json_field(jf, "dv_max_rel", b->chk.rel[2]);
    fprintf(jf, ",\"pass\":%s}", b->chk.pass ? "true" : "false");
  }
  fputc('}', jf);
}

void rrt_app_attn_bwd_free(rrt_ctx_t ctx, rrt_app_attn_bwd *b) {
  rrt_npy_free(&b->dfile);
  free(b->host_do);
  free(b->host_dsinks);
  rrt_free(ctx, b->dev_do);
  for (int t = 0; t < 3; t++) {
    rrt_free(ctx, b->dev_g[t]);
    free(b->host_g[t]);
  }
  free(b->times);
}

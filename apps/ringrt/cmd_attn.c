/* `ringrt attn`: ring attention forward over the ranks.
 *
 * Inputs: random tensors of a given shape (every rank generates its own
 * shard from --seed, see src/io/attn_gen.h) or global BSHD .npy files in
 * natural order. Outputs (--out, --lse) are written in natural order
 * whatever the layout. --check compares with a double-precision naive
 * reference on rank 0 (attn_check.c). Reports time (max over ranks, median
 * over --iters), FLOP/s (causal counts only unmasked pairs), bytes sent per
 * rank and the share of communication hidden behind compute.
 *
 * Phases of rrt_cmd_attn: parse options, read the input files, create the
 * plan and the shards, time the runs, gather/write/check the outputs,
 * report (text and JSON). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "attn_bwd.h"
#include "attn_check.h"
#include "attn_mask.h"
#include "attn_shards.h"
#include "comm/host_coll.h"
#include "io/npy.h"
#include "ringrt/attn.h"

typedef struct attn_opts {
  long batch, seq, heads, kv_heads, dim, iters, warmup, seed, cp_inner;
  double scale;
  int causal, check, explain;
  rrt_cp_comm cp; /* --cp */
  rrt_attn_layout layout;
  rrt_dtype dtype;
  const char *qf, *kf, *vf, *out, *lse;
  /* the mask options (attn_mask.c): --window, --cu-seqlens as a list or a
   * file (read in read_inputs) */
  int win_left, win_right, seq_set;
  const char *docs_file;
  rrt_int_list docs;
  rrt_app_attn_bwd_opts bwd; /* --backward and its files (attn_bwd.c) */
  double softcap;            /* --softcap (0 off) */
  const char *sinks_file;    /* --sinks: f32 [heads] .npy */
  rrt_npy sinks;             /* its contents, read on every rank */
} attn_opts;

/* What one run holds once the plan exists: the context, the shards on the
 * host and in backend memory, the outputs, the per-iteration times. */
typedef struct attn_run {
  rrt_app_common *com; /* the common options; keeps the first error */
  rrt_ctx_t ctx;
  MPI_Comm comm; /* the context's communicator */
  int rank, P;
  rrt_attn_desc d;
  rrt_attn_plan_t plan;
  size_t es;    /* bytes per stored element */
  size_t n[3];  /* elements of this rank's Q, K, V shards (O has n[0]) */
  size_t nl;    /* LSE entries of this rank */
  int64_t L;    /* this rank's shard length */
  int64_t *pos; /* global positions of its rows (rrt_attn_shard_positions) */
  void *host[3], *dev[3], *dout, *hout;
  float *dlse, *hlse;
  float *dsinks;        /* --sinks in backend memory (NULL without) */
  double *times;        /* per timed iteration, the slowest rank's */
  rrt_app_attn_bwd bwd; /* --backward (attn_bwd.c) */
} attn_run;

/* The timed runs, reduced over the ranks. */
typedef struct attn_timing {
  double t_med, flops, hidden, bytes;
  double per;     /* 1 / (iterations * ranks): sums to means per rank and run */
  double sums[3]; /* comm, exposed comm, compute: summed over ranks and runs */
} attn_timing;

static void usage(void) {
  printf("usage: ringrt attn [options]\n\n"
         "Ring attention forward: the sequence is split over the ranks, K/V travel around\n"
         "the ring, every rank folds each block into its output with an LSE merge.\n\n"
         "  --batch N        batch size (1)\n"
         "  --seq N          GLOBAL sequence length (1024)\n"
         "  --heads N        query heads (8)\n"
         "  --kv-heads N     key/value heads, divides --heads (= --heads; 1 is MQA)\n"
         "  --dim N          head dimension, 1..256 (64)\n"
         "  --scale X        softmax scale, finite and > 0 (default 1/sqrt(dim))\n"
         "  --causal         causal mask (key position <= query position)\n"
         "  --window L,R     sliding window: query i sees keys [i-L, i+R], -1 = unlimited\n"
         "                   on that side; with --causal R is 0 (-1,-1)\n"
         "  --cu-seqlens X   packed documents: offsets 0,...,seq as a comma list or a file\n"
         "                   (one a line); attention stays inside each document; batch 1;\n"
         "                   --seq defaults to the last offset\n"
         "  --layout L       contiguous | zigzag | stripe (zigzag)\n"
         "  --dtype T        f32 | bf16 | f16 storage (f32); accumulation is always f32\n"
         "  --cp M           context-parallel mode: ring | a2a | allgather | a2a+ring | auto\n"
         "                   (ring); --cp-inner U: a2a+ring's group size (0: the node's)\n"
         "  --explain        print the mode that runs and the cost model's numbers of every\n"
         "                   mode (rank 0)\n"
         "  --seed N         seed of the random inputs (1)\n"
         "  --q/--k/--v F    global inputs as .npy [batch, seq, heads, dim] in natural order\n"
         "                   (<f4 for f32, <f2 for f16, <u2 holding bf16 bits); the shape\n"
         "                   options are then taken from the files\n"
         "  --out F          write O [batch, seq, heads, dim] (.npy, --dtype storage)\n"
         "  --lse F          write LSE [batch, heads, seq] (.npy, f32)\n"
         "  --softcap X      logit soft-capping: scores become X*tanh(s/X), X >= 0 (0: off)\n"
         "  --sinks F        attention sinks: .npy f32 [heads], one logit per query head\n"
         "                   in every row's softmax denominator (--backward: and dsinks)\n"
         "  --check          compare with a double-precision naive reference (rank 0)\n"
         "  --iters N        timed runs (5); --warmup N untimed runs first (1)\n"
         "%s\n%s%s",
         rrt_app_attn_bwd_help, rrt_app_common_help, rrt_app_exit_help);
}

static const char *descr_of(rrt_dtype dt) {
  return dt == RRT_DTYPE_F32 ? "<f4" : dt == RRT_DTYPE_F16 ? "<f2" : "<u2";
}

/* ------------------------------------------------------------ options --- */

/* An integer option of the table: 1 if `a` is one (parsed into o, 2 on a
 * bad value), 0 if not. */
static int parse_long_option(rrt_app_common *c, const char *a, const char *next, attn_opts *o) {
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
      {"--cp-inner", offsetof(attn_opts, cp_inner), 0, 1 << 20},
  };
  int done = 0;
  for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
    if (strcmp(a, longs[k].name) == 0) {
      if (rrt_app_parse_long(c, a, next, longs[k].lo, longs[k].hi,
                             (long *)((char *)o + longs[k].off)) != 0)
        return 2;
      done = 1;
    }
  return done;
}

/* Any other option with a value: 0 parsed, 2 on a usage error. */
static int parse_value_option(rrt_app_common *c, const char *a, const char *next, attn_opts *o) {
  if (strcmp(a, "--scale") == 0) {
    if (rrt_app_parse_double(c, a, next, &o->scale) != 0) return 2;
    if (!(o->scale > 0 && o->scale <= DBL_MAX)) { /* as rrt_attn_desc_check, but 0 too */
      rrt_app_usage_error(c, "--scale '%s' is not a finite number > 0 (the default is 1/sqrt(dim))",
                          next);
      return 2;
    }
  } else if (strcmp(a, "--softcap") == 0) {
    if (rrt_app_parse_double(c, a, next, &o->softcap) != 0) return 2;
    if (!(o->softcap >= 0 && o->softcap <= DBL_MAX)) { /* as rrt_attn_desc_check */
      rrt_app_usage_error(c, "--softcap '%s' is not a finite number >= 0 (0: off)", next);
      return 2;
    }
  } else if (strcmp(a, "--sinks") == 0) {
    o->sinks_file = next;
  } else if (strcmp(a, "--window") == 0) {
    if (rrt_app_attn_parse_window(c, next, &o->win_left, &o->win_right) != 0) return 2;
  } else if (strcmp(a, "--cu-seqlens") == 0) {
    rrt_int_list_free(&o->docs);
    o->docs_file = NULL;
    int r = rrt_app_attn_parse_docs(c, next, &o->docs);
    if (r == 2) return 2;
    if (r == 1) o->docs_file = next;
  } else if (strcmp(a, "--cp") == 0) {
    if (rrt_cp_comm_parse(next, &o->cp) != RRT_SUCCESS) {
      rrt_app_usage_error(c, "--cp '%s' is not ring, a2a, allgather, a2a+ring or auto", next);
      return 2;
    }
  } else if (strcmp(a, "--layout") == 0) {
    if (rrt_attn_layout_parse(next, &o->layout) != RRT_SUCCESS) {
      rrt_app_usage_error(c, "--layout '%s' is not contiguous, zigzag or stripe", next);
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
      rrt_app_usage_error(c, "--dtype '%s' is not f32, bf16 or f16", next);
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
  else if (rrt_app_attn_bwd_option(a, next, &o->bwd))
    ;
  else {
    rrt_app_usage_error(c, "unknown option '%s'", a);
    return 2;
  }
  return 0;
}

/* 0: run; 1: --help was printed; 2: usage error (printed on rank 0). */
static int parse(int argc, char **argv, attn_opts *o, rrt_app_common *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (c->rank == 0) usage();
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
    if (strcmp(a, "--explain") == 0) {
      o->explain = 1;
      continue;
    }
    if (strcmp(a, "--backward") == 0) {
      o->bwd.on = 1;
      continue;
    }
    if (!next || strncmp(a, "--", 2) != 0) {
      rrt_app_usage_error(c, "unknown option or missing value: '%s'", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--seq") == 0) o->seq_set = 1;
    r = parse_long_option(c, a, next, o);
    if (r == 0) r = parse_value_option(c, a, next, o);
    if (r == 2) return 2;
  }
  if ((o->qf || o->kf || o->vf) && !(o->qf && o->kf && o->vf)) {
    rrt_app_usage_error(c, "--q, --k and --v go together");
    return 2;
  }
  if (!o->bwd.on && (o->bwd.doutf || o->bwd.dqf || o->bwd.dkf || o->bwd.dvf)) {
    rrt_app_usage_error(c, "--dout, --dq-out, --dk-out and --dv-out need --backward");
    return 2;
  }
  return 0;
}

/* ------------------------------------------------------------- inputs --- */

/* Global inputs from .npy files: shapes checked against each other and the
 * dtype; fills the shape options. Returns 0, or 1 with the reason in err. */
static int load_inputs(attn_opts *o, rrt_npy in[3], char *err, size_t errlen) {
  const char *files[3] = {o->qf, o->kf, o->vf};
  for (int t = 0; t < 3; t++) {
    if (rrt_npy_read(files[t], &in[t], err, errlen) != RRT_SUCCESS) return 1;
    if (strcmp(in[t].descr, descr_of(o->dtype)) != 0) {
      snprintf(err, errlen, "%s: dtype %s does not match --dtype %s (expects %s)", files[t],
               in[t].descr, rrt_dtype_name(o->dtype), descr_of(o->dtype));
      return 1;
    }
    if (in[t].ndim != 4) {
      snprintf(err, errlen, "%s: %d dimensions, expected 4 [batch, seq, heads, dim]", files[t],
               in[t].ndim);
      return 1;
    }
  }
  const int64_t *qs = in[0].shape, *ks = in[1].shape;
  for (int t = 1; t < 3; t++) {
    const int64_t *s = in[t].shape;
    if (s[0] != qs[0] || s[1] != qs[1] || s[3] != qs[3] || s[2] != ks[2]) {
      snprintf(err, errlen,
               "%s: shape [%lld, %lld, %lld, %lld] does not match %s [%lld, %lld, %lld, %lld] "
               "(batch, seq and dim must agree; K and V have the same heads)",
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

/* --sinks: f32 [heads] (the query heads, known once the inputs are read).
 * Returns "" or the reason in err. */
static const char *load_sinks(attn_opts *o, char *err, size_t errlen) {
  err[0] = 0;
  if (rrt_npy_read(o->sinks_file, &o->sinks, err, errlen) != RRT_SUCCESS) return err;
  if (strcmp(o->sinks.descr, "<f4") != 0 || o->sinks.ndim != 1 || o->sinks.shape[0] != o->heads)
    snprintf(err, errlen,
             "--sinks %s: %s of %d dimension(s) [%lld], expected <f4 [%ld] (one per "
             "query head)",
             o->sinks_file, o->sinks.descr, o->sinks.ndim,
             (long long)(o->sinks.ndim > 0 ? o->sinks.shape[0] : 0), o->heads);
  return err;
}

/* The input files, if any, read on every rank; a failure anywhere fails all
 * ranks, and rank 0 prints every failing rank's reason (a file that only
 * one rank cannot read is not silent; agreed with the timeout). Fills the
 * default --kv-heads. Returns 0 or 1. */
static int read_inputs(rrt_ctx_t ctx, attn_opts *o, rrt_npy files[3], rrt_app_common *c) {
  char err[800] = "";
  if (o->qf && load_inputs(o, files, err, sizeof err) && !err[0])
    snprintf(err, sizeof err, "reading the inputs failed");
  int fail = rrt_app_any_rank_error(ctx, c, err);
  if (!fail && o->docs_file)
    fail =
        rrt_app_any_rank(ctx, rrt_app_attn_read_docs(c, o->docs_file, rrt_ctx_rank(ctx), &o->docs));
  if (!fail && o->sinks_file) fail = rrt_app_any_rank_error(ctx, c, load_sinks(o, err, sizeof err));
  if (fail) {
    for (int t = 0; t < 3; t++)
      rrt_npy_free(&files[t]);
    return 1;
  }
  if (o->kv_heads == 0) o->kv_heads = o->heads;
  return 0;
}

static rrt_attn_desc desc_of(const attn_opts *o) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.batch = o->batch;
  d.seq = o->seq;
  d.heads_q = (int)o->heads;
  d.heads_kv = (int)o->kv_heads;
  d.head_dim = (int)o->dim;
  d.scale = o->scale;
  d.causal = o->causal;
  d.layout = o->layout;
  d.dtype = o->dtype;
  d.window_left = o->win_left;
  d.window_right = o->win_right;
  d.softcap = o->softcap;
  d.sinks = o->sinks.data != NULL;
  d.cp_comm = o->cp;
  d.cp_inner = (int)o->cp_inner;
  if (o->docs.count > 0) {
    d.cu_seqlens = o->docs.values;
    d.num_docs = o->docs.count - 1;
    /* the offsets give the length unless --seq or the files did */
    if (!o->seq_set && !o->qf) d.seq = o->docs.values[o->docs.count - 1];
  }
  return d;
}

/* The plan, this rank's shards in backend memory, the output buffers.
 * Returns 0, or 1 after a message on rank 0 (every rank fails). */
static int setup(attn_run *run, const attn_opts *o, rrt_npy files[3]) {
  if (rrt_attn_plan_create(run->ctx, &run->d, &run->plan) != RRT_SUCCESS) {
    if (run->rank == 0) rrt_app_error(run->com, "%s", rrt_ctx_last_error(run->ctx));
    return 1;
  }
  const rrt_attn_desc *d = &run->d;
  rrt_attn_shard_len(d, run->P, run->rank, &run->L);
  const int64_t L = run->L;
  run->pos = malloc((size_t)(L + 1) * sizeof *run->pos);
  if (run->pos) rrt_attn_shard_positions(d, run->P, run->rank, run->pos);
  run->es = rrt_dtype_size(d->dtype);
  run->n[0] = (size_t)(d->batch * L * d->heads_q * d->head_dim);
  run->n[1] = run->n[2] = (size_t)(d->batch * L * d->heads_kv * d->head_dim);
  run->nl = (size_t)(d->batch * d->heads_q * L);
  const int heads[3] = {d->heads_q, d->heads_kv, d->heads_kv};
  rrt_status st = RRT_SUCCESS;
  for (int t = 0; t < 3 && st == RRT_SUCCESS; t++) {
    run->host[t] = run->pos ? rrt_app_attn_shard((uint64_t)o->seed, d, L, run->pos, t, heads[t],
                                                 o->qf ? &files[t] : NULL)
                            : NULL;
    st = run->host[t] ? rrt_malloc(run->ctx, run->n[t] * run->es, &run->dev[t])
                      : RRT_ERR_OUT_OF_MEMORY;
    if (st == RRT_SUCCESS)
      st = rrt_memcpy_to_backend(run->ctx, run->dev[t], run->host[t], run->n[t] * run->es);
  }
  if (st == RRT_SUCCESS) st = rrt_malloc(run->ctx, run->n[0] * run->es, &run->dout);
  if (st == RRT_SUCCESS) st = rrt_malloc(run->ctx, run->nl * sizeof(float), (void **)&run->dlse);
  const size_t sb = (size_t)d->heads_q * sizeof(float); /* --sinks, then dsinks after them */
  if (st == RRT_SUCCESS && d->sinks) st = rrt_malloc(run->ctx, 2 * sb, (void **)&run->dsinks);
  if (st == RRT_SUCCESS && d->sinks)
    st = rrt_memcpy_to_backend(run->ctx, run->dsinks, o->sinks.data, sb);
  run->hout = malloc(run->n[0] * run->es + 1);
  run->hlse = malloc(run->nl * sizeof(float) + 1);
  run->times = calloc((size_t)o->iters, sizeof *run->times);
  if (st == RRT_SUCCESS && (!run->hout || !run->hlse || !run->times)) st = RRT_ERR_OUT_OF_MEMORY;
  if (rrt_agree(run->ctx, st) != RRT_SUCCESS) {
    if (run->rank == 0)
      rrt_app_error(run->com, "allocating inputs: %s", rrt_ctx_last_error(run->ctx));
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- run --- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Where the last progress line left off. */
typedef struct attn_progress {
  double t;  /* when (rrt_time_now) */
  long runs; /* runs done then, warm-up included */
} attn_progress;

/* Rank 0, after run `it` (negative: warm-up): a line on stderr at most once
 * a second, so a long run shows it is alive (short runs print none; the
 * last run none either, the report follows). The time per run is rank 0's
 * wall time since the last line, barrier included. */
static void progress(attn_progress *pg, long it, const attn_opts *o) {
  double now = rrt_time_now();
  long runs = it + o->warmup + 1;
  if (now - pg->t < 1.0 || runs == o->warmup + o->iters) return;
  double ms = 1e3 * (now - pg->t) / (double)(runs - pg->runs);
  if (it < 0)
    fprintf(stderr, "attn: warmup %ld/%ld, %.1f ms/iter\n", runs, o->warmup, ms);
  else
    fprintf(stderr, "attn: iter %ld/%ld, %.1f ms/iter\n", it + 1, o->iters, ms);
  pg->t = now, pg->runs = runs;
}

/* Warm-up and timed runs: per iteration the slowest rank's time; the median
 * and the comm/compute means over ranks and runs. Returns 0 or 1. */
static int time_runs(attn_run *run, const attn_opts *o, attn_timing *tm) {
  double comm_s = 0, exposed_s = 0, compute_s = 0;
  rrt_attn_stats stt = {0};
  attn_progress pg = {rrt_time_now(), 0};
  int show = run->rank == 0 && !run->com->quiet;
  for (long it = -o->warmup; it < o->iters; it++) {
    rrt_barrier(run->ctx);
    if ((run->dsinks ? rrt_attn_plan_run_sinks(run->plan, run->dev[0], run->dev[1], run->dev[2],
                                               run->dsinks, run->dout, run->dlse)
                     : rrt_attn_plan_run(run->plan, run->dev[0], run->dev[1], run->dev[2],
                                         run->dout, run->dlse)) != RRT_SUCCESS) {
      if (run->rank == 0) rrt_app_error(run->com, "%s", rrt_ctx_last_error(run->ctx));
      return 1;
    }
    rrt_attn_plan_stats(run->plan, &stt);
    if (o->bwd.on && rrt_app_attn_bwd_run(run->ctx, run->com, run->plan, run->dev, run->dout,
                                          run->dlse, it, &run->bwd) != 0)
      return 1;
    if (it >= 0) {
      run->times[it] = stt.total_s;
      comm_s += stt.comm_s;
      exposed_s += stt.comm_exposed_s;
      compute_s += stt.compute_s;
    }
    if (show) progress(&pg, it, o);
  }
  rrt_host_allreduce(run->ctx, run->times, run->times, (size_t)o->iters, RRT_DTYPE_F64, RRT_OP_MAX);
  tm->sums[0] = comm_s, tm->sums[1] = exposed_s, tm->sums[2] = compute_s;
  tm->bytes = stt.bytes_sent;
  rrt_host_allreduce(run->ctx, tm->sums, tm->sums, 3, RRT_DTYPE_F64, RRT_OP_SUM);
  rrt_host_allreduce(run->ctx, &tm->bytes, &tm->bytes, 1, RRT_DTYPE_F64, RRT_OP_MAX);
  qsort(run->times, (size_t)o->iters, sizeof *run->times, cmp_double);
  const double *t = run->times;
  tm->t_med = o->iters % 2 ? t[o->iters / 2] : 0.5 * (t[o->iters / 2 - 1] + t[o->iters / 2]);
  tm->flops = rrt_attn_flops(&run->d);
  tm->hidden = tm->sums[0] > 0 ? 1.0 - tm->sums[1] / tm->sums[0] : 1.0;
  tm->per = 1.0 / ((double)o->iters * run->P);
  if (o->bwd.on) rrt_app_attn_bwd_reduce(run->ctx, &run->d, o->iters, &run->bwd);
  return 0;
}

/* ------------------------------------------------------------ outputs --- */

/* --out and --lse on rank 0 (global arrays in natural order). Returns 1 on
 * a write failure (message printed). */
static int write_outputs(rrt_app_common *c, const attn_opts *o, const rrt_attn_desc *d,
                         const void *go, const float *gl) {
  char err[600];
  int io_fail = 0;
  int64_t oshape[4] = {d->batch, d->seq, d->heads_q, d->head_dim};
  int64_t lshape[3] = {d->batch, d->heads_q, d->seq};
  if (o->out && rrt_npy_write(o->out, descr_of(d->dtype), 4, oshape, go, err, sizeof err)) {
    rrt_app_error(c, "--out %s", err);
    io_fail = 1;
  }
  if (o->lse && rrt_npy_write(o->lse, "<f4", 3, lshape, gl, err, sizeof err)) {
    rrt_app_error(c, "--lse %s", err);
    io_fail = 1;
  }
  return io_fail;
}

/* --check on rank 0: the inputs again (files were freed after sharding),
 * then the reference; nothing after a failed write but the size note. Sets
 * *checked when a verdict exists; returns 1 on an I/O or memory failure
 * (message printed). */
static int check_outputs(rrt_app_common *c, const attn_opts *o, const rrt_attn_desc *d,
                         rrt_npy files[3], const void *go, const float *gl, int write_failed,
                         rrt_app_attn_check *chk, int *checked) {
  char err[600];
  double work = (double)d->batch * d->heads_q * (double)d->seq * (double)d->seq * d->head_dim;
  if (work > 1e10) {
    fprintf(stderr,
            "ringrt attn: --check skipped: the naive reference would take %.0e "
            "multiply-adds (limit 1e10)\n",
            work);
    return 0;
  }
  if (write_failed) return 0;
  if (o->qf) {
    const char *fn[3] = {o->qf, o->kf, o->vf};
    for (int t = 0; t < 3; t++)
      if (rrt_npy_read(fn[t], &files[t], err, sizeof err) != RRT_SUCCESS) {
        rrt_app_error(c, "%s", err);
        return 1;
      }
  }
  if (rrt_app_attn_check_ref((uint64_t)o->seed, d, o->qf ? files : NULL, o->sinks.data, go, gl,
                             chk) != 0) {
    rrt_app_error(c, "--check: out of memory for the global inputs");
    return 1;
  }
  *checked = 1;
  return 0;
}

/* Outputs to the host; with --out, --lse or --check, gathered in natural
 * order on rank 0, written and checked there. Returns -1 when the copy back
 * failed (nothing to report), else 1 on an I/O failure on any rank, else 0. */
static int finish_outputs(attn_run *run, const attn_opts *o, rrt_npy files[3],
                          rrt_app_attn_check *chk, int *checked) {
  const size_t qbytes = run->n[0] * run->es;
  if (rrt_memcpy_to_host(run->ctx, run->hout, run->dout, qbytes) != RRT_SUCCESS ||
      rrt_memcpy_to_host(run->ctx, run->hlse, run->dlse, run->nl * sizeof(float)) != RRT_SUCCESS) {
    if (run->rank == 0) rrt_app_error(run->com, "%s", rrt_ctx_last_error(run->ctx));
    return -1;
  }
  int io_fail = 0;
  void *go = NULL;
  float *gl = NULL;
  if (o->out || o->lse || o->check) {
    int f1 = 0, f2 = 0;
    go = rrt_app_attn_gather(run->ctx, &run->d, run->hout, qbytes, run->es, run->d.heads_q, 0, &f1);
    gl = rrt_app_attn_gather(run->ctx, &run->d, run->hlse, run->nl * sizeof(float), sizeof(float),
                             0, 1, &f2);
    if (f1 || f2) {
      if (run->rank == 0) rrt_app_error(run->com, "outputs too large to gather on one rank");
      io_fail = 1;
    } else if (run->rank == 0) {
      io_fail = write_outputs(run->com, o, &run->d, go, gl);
      if (o->check)
        io_fail |= check_outputs(run->com, o, &run->d, files, go, gl, io_fail, chk, checked);
    }
  }
  io_fail = rrt_app_any_rank(run->ctx, io_fail);
  /* the backward's check needs the forward's global O */
  if (!io_fail && o->bwd.on)
    io_fail = rrt_app_attn_bwd_outputs(run->ctx, run->com, &o->bwd, &run->d, (uint64_t)o->seed,
                                       o->qf ? files : NULL, go, o->check, &run->bwd);
  free(go);
  free(gl);
  return io_fail;
}

/* ------------------------------------------------------------- report --- */

/* A window limits something (causal's right side is 0 anyway). */
static int has_window(const rrt_attn_desc *d) {
  return d->window_left >= 0 || (!d->causal && d->window_right >= 0);
}

/* " window (L, R)" and " documents N" when set, for the report line. */
static const char *mask_text(const rrt_attn_desc *d, char *buf, size_t len) {
  int n = 0;
  buf[0] = '\0';
  if (has_window(d))
    n = snprintf(buf, len, " window (%d, %d)", d->window_left, d->causal ? 0 : d->window_right);
  if (d->num_docs > 0 && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " documents %lld", (long long)d->num_docs);
  return buf;
}

/* The mask fields of the JSON report (when set). */
static void mask_json(FILE *jf, const rrt_attn_desc *d) {
  if (has_window(d))
    fprintf(jf, ",\"window\":[%d,%d]", d->window_left, d->causal ? 0 : d->window_right);
  if (d->num_docs > 0) fprintf(jf, ",\"num_docs\":%lld", (long long)d->num_docs);
}

static void report_text(FILE *out, const attn_run *run, const attn_opts *o, const attn_timing *tm,
                        const rrt_app_attn_check *chk, int checked) {
  const rrt_attn_desc *d = &run->d;
  char mask[80];
  fprintf(out,
          "ringrt attn: %s backend, %d rank(s), batch %lld seq %lld heads %d/%d dim %d %s "
          "%s%s%s\n",
          rrt_backend_name(rrt_ctx_backend(run->ctx)), run->P, (long long)d->batch,
          (long long)d->seq, d->heads_q, d->heads_kv, d->head_dim, rrt_dtype_name(d->dtype),
          rrt_attn_layout_name(d->layout), d->causal ? " causal" : "",
          mask_text(d, mask, sizeof mask));
  if (d->cp_comm != RRT_CP_RING || o->explain) {
    char text[2048];
    rrt_attn_plan_explain(run->plan, text, sizeof text);
    /* without --explain, the first line: the mode asked for and the one that runs */
    fprintf(out, "  %.*s", o->explain ? (int)strlen(text) : (int)strcspn(text, "\n") + 1, text);
  }
  fprintf(out, "  time %.6f s (median of %ld, max over ranks), %.3f TFLOP/s (%.2f GFLOP/s)\n",
          tm->t_med, o->iters, tm->flops / tm->t_med * 1e-12, tm->flops / tm->t_med * 1e-9);
  fprintf(out,
          "  K/V sent per rank %.0f bytes; comm %.6f s, exposed %.6f s, hidden %.1f%%; compute "
          "%.6f s (means per rank and run)\n",
          tm->bytes, tm->sums[0] * tm->per, tm->sums[1] * tm->per, 100.0 * tm->hidden,
          tm->sums[2] * tm->per);
  if (checked)
    fprintf(out,
            "  check vs double reference: max abs err %.3e, max rel err %.3e, LSE max abs err "
            "%.3e: %s\n",
            chk->max_abs, chk->max_rel, chk->lse_abs, chk->pass ? "PASS" : "FAIL");
  if (o->bwd.on) rrt_app_attn_bwd_text(out, &run->bwd, o->iters, run->P);
}

static void report_json(FILE *jf, const attn_run *run, const attn_opts *o, const attn_timing *tm,
                        const rrt_app_attn_check *chk, int checked) {
  const rrt_attn_desc *d = &run->d;
  const double per = tm->per;
  fprintf(jf,
          "{\"command\":\"attn\",\"backend\":\"%s\",\"ranks\":%d,\"batch\":%lld,\"seq\":%lld,"
          "\"heads\":%d,\"kv_heads\":%d,\"dim\":%d,\"dtype\":\"%s\",\"layout\":\"%s\","
          "\"causal\":%s,\"iters\":%ld,\"warmup\":%ld",
          rrt_backend_name(rrt_ctx_backend(run->ctx)), run->P, (long long)d->batch,
          (long long)d->seq, d->heads_q, d->heads_kv, d->head_dim, rrt_dtype_name(d->dtype),
          rrt_attn_layout_name(d->layout), d->causal ? "true" : "false", o->iters, o->warmup);
  mask_json(jf, d);
  if (d->cp_comm != RRT_CP_RING) { /* the mode asked for and the one that ran */
    char text[256];
    rrt_attn_plan_explain(run->plan, text, sizeof text);
    const char *arrow = strstr(text, "-> ");
    int n = arrow ? (int)strcspn(arrow + 3, " ") : 0;
    fprintf(jf, ",\"cp_comm\":\"%s\",\"cp_ran\":\"%.*s\"", rrt_cp_comm_name(d->cp_comm), n,
            arrow ? arrow + 3 : "");
  }
  rrt_app_json_field(jf, "time_s", tm->t_med);
  rrt_app_json_field(jf, "time_min_s", run->times[0]);
  rrt_app_json_field(jf, "flops", tm->flops);
  rrt_app_json_field(jf, "tflops", tm->flops / tm->t_med * 1e-12);
  rrt_app_json_field(jf, "bytes_sent_per_rank", tm->bytes);
  rrt_app_json_field(jf, "comm_s", tm->sums[0] * per);
  rrt_app_json_field(jf, "comm_exposed_s", tm->sums[1] * per);
  rrt_app_json_field(jf, "compute_s", tm->sums[2] * per);
  rrt_app_json_field(jf, "hidden_share", tm->hidden);
  if (checked) {
    fprintf(jf, ",\"check\":{\"max_abs\":");
    rrt_app_json_number(jf, chk->max_abs);
    rrt_app_json_field(jf, "max_rel", chk->max_rel);
    rrt_app_json_field(jf, "lse_max_abs", chk->lse_abs);
    rrt_app_json_field(jf, "lse_max_rel", chk->lse_rel);
    fprintf(jf, ", \"pass\":%s}", chk->pass ? "true" : "false");
  }
  if (o->bwd.on) rrt_app_attn_bwd_json(jf, &run->bwd, o->iters, run->P);
}

static void run_free(attn_run *run) {
  for (int t = 0; t < 3; t++) {
    free(run->host[t]);
    rrt_free(run->ctx, run->dev[t]);
  }
  rrt_free(run->ctx, run->dout);
  rrt_free(run->ctx, run->dlse);
  rrt_free(run->ctx, run->dsinks);
  free(run->hout);
  free(run->hlse);
  free(run->times);
  rrt_app_attn_bwd_free(run->ctx, &run->bwd);
  free(run->pos);
  rrt_attn_plan_destroy(run->plan);
}

/* The outputs and inputs named on the command line, for the path checks. */
static int check_paths(rrt_app_common *c, const attn_opts *o) {
  const rrt_app_path outs[] = {{"--out", o->out},
                               {"--lse", o->lse},
                               {"--dq-out", o->bwd.dqf},
                               {"--dk-out", o->bwd.dkf},
                               {"--dv-out", o->bwd.dvf}};
  const rrt_app_path ins[] = {
      {"--q", o->qf}, {"--k", o->kf}, {"--v", o->vf}, {"--dout", o->bwd.doutf}};
  return rrt_app_check_paths(c, outs, 5, ins, 4);
}

int rrt_cmd_attn(MPI_Comm comm, int argc, char **argv) {
  attn_opts o = {1,
                 1024,
                 8,
                 0,
                 64,
                 5,
                 1,
                 1,
                 0,
                 0.0,
                 0,
                 0,
                 0,
                 RRT_CP_RING,
                 RRT_ATTN_ZIGZAG,
                 RRT_DTYPE_F32,
                 NULL,
                 NULL,
                 NULL,
                 NULL,
                 NULL,
                 -1,
                 -1,
                 0,
                 NULL,
                 {0, NULL},
                 {0, NULL, NULL, NULL, NULL},
                 0.0,
                 NULL,
                 {{0}, 0, 0, {0}, 0, NULL}};
  rrt_app_common c;
  rrt_app_common_init(&c, "attn", comm, argc, argv);
  int pr = rrt_app_agree_args(comm, &c, parse(argc, argv, &o, &c));
  if (pr) rrt_int_list_free(&o.docs);
  if (pr == 1) return 0;
  if (pr) return rrt_app_finish(NULL, &c, RRT_EXIT_USAGE);
  int rc = check_paths(&c, &o);
  rrt_npy files[3];
  memset(files, 0, sizeof files);

  attn_run run = {0};
  run.com = &c;
  if (rrt_app_ctx_create(comm, &c, &run.ctx) != RRT_SUCCESS) {
    rrt_int_list_free(&o.docs);
    return rrt_app_finish(NULL, &c, RRT_EXIT_FAILURE);
  }
  run.comm = rrt_ctx_comm(run.ctx);
  run.rank = rrt_ctx_rank(run.ctx);
  run.P = rrt_ctx_size(run.ctx);
  attn_timing tm = {0};
  rrt_app_attn_check chk = {0, 0, 0, 0, 0, 1};
  int checked = 0;
  if ((rc = rrt_app_agree_code(run.ctx, &c, rc)) != 0) goto done;
  rc = RRT_EXIT_FAILURE;
  if (read_inputs(run.ctx, &o, files, &c) != 0) goto done;
  run.d = desc_of(&o);
  if (o.bwd.on && rrt_app_attn_bwd_read(run.ctx, &c, &o.bwd, &run.d, &run.bwd) != 0) goto done;
  if (setup(&run, &o, files) != 0) goto done;
  if (o.bwd.on && rrt_app_attn_bwd_setup(run.ctx, &c, &run.d, run.L, run.pos, (uint64_t)o.seed,
                                         o.iters, &run.bwd) != 0)
    goto done;
  if (run.dsinks) { /* --sinks: the backward reads them and writes dsinks after them */
    run.bwd.sinks = run.dsinks;
    run.bwd.dsinks = run.dsinks + run.d.heads_q;
    run.bwd.host_sinks = o.sinks.data;
  }
  for (int t = 0; t < 3; t++)
    rrt_npy_free(&files[t]);
  if (time_runs(&run, &o, &tm) != 0) goto done;
  int io_fail = finish_outputs(&run, &o, files, &chk, &checked);
  if (io_fail != 0) goto done;
  const int bad = (checked && !chk.pass) || (run.bwd.checked && !run.bwd.chk.pass);
  rc = rrt_app_any_rank(run.ctx, bad) ? RRT_EXIT_CHECK_FAILED : RRT_EXIT_OK;
  if (run.rank == 0) {
    if (!c.quiet) report_text(rrt_app_text_stream(&c), &run, &o, &tm, &chk, checked);
    FILE *jf = rrt_app_json_open(&c);
    if (jf) {
      report_json(jf, &run, &o, &tm, &chk, checked);
      rrt_app_json_close(&c, rc);
    }
  }
done:
  for (int t = 0; t < 3; t++)
    rrt_npy_free(&files[t]);
  rrt_int_list_free(&o.docs);
  run_free(&run);
  rrt_npy_free(&o.sinks);
  return rrt_app_finish(run.ctx, &c, rc);
}

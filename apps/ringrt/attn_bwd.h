/* `ringrt attn --backward`: the backward pass's options, inputs, runs,
 * outputs, check and report, kept apart from the forward's (cmd_attn.c). */
#ifndef RRT_APP_ATTN_BWD_H
#define RRT_APP_ATTN_BWD_H

#include <stdint.h>
#include <stdio.h>

#include "app.h"
#include "attn_check.h"
#include "io/npy.h"
#include "ringrt/attn.h"

typedef struct rrt_app_attn_bwd_opts {
  int on;                      /* --backward */
  const char *doutf;           /* --dout: dO as .npy (else generated, tensor 3) */
  const char *dqf, *dkf, *dvf; /* --dq-out, --dk-out, --dv-out */
} rrt_app_attn_bwd_opts;

/* The backward's part of one `ringrt attn` run. */
typedef struct rrt_app_attn_bwd {
  rrt_npy dfile; /* --dout, read on every rank */
  void *host_do, *dev_do;
  void *dev_g[3], *host_g[3]; /* dQ, dK, dV shards */
  size_t n[3];                /* their elements */
  double *times;              /* per timed iteration, the slowest rank's */
  double t_med, flops, bytes;
  double sums[5]; /* comm, exposed, compute, hand-off, hand-off exposed: over ranks and runs */
  rrt_app_attn_check_bwd chk;
  int checked;
  /* --sinks (set by cmd_attn.c; NULL without): backend memory, and the host copy */
  const float *sinks, *host_sinks;
  float *dsinks;      /* backend memory [heads_q], written by every backward run */
  float *host_dsinks; /* its host copy for --check (malloc'd) */
} rrt_app_attn_bwd;

extern const char rrt_app_attn_bwd_help[];

/** A value option of the backward (`a` with value `next`): 1 parsed, 0 not ours. */
int rrt_app_attn_bwd_option(const char *a, const char *next, rrt_app_attn_bwd_opts *o);
/** --dout read on every rank and checked against Q's shape and dtype; a
 *  failure anywhere fails every rank (message naming the file and the
 *  shapes). Returns 0 or 1. */
int rrt_app_attn_bwd_read(rrt_ctx_t ctx, rrt_app_common *c, const rrt_app_attn_bwd_opts *o,
                          const rrt_attn_desc *d, rrt_app_attn_bwd *b);
/** This rank's dO shard (L rows at global positions pos) and the gradient
 *  buffers. Returns 0 or 1 (agreed). */
int rrt_app_attn_bwd_setup(rrt_ctx_t ctx, rrt_app_common *c, const rrt_attn_desc *d, int64_t L,
                           const int64_t *pos, uint64_t seed, long iters, rrt_app_attn_bwd *b);
/** One backward run after the forward (o, lse its outputs); iteration `it`
 *  (< 0: warm-up) records the time. Returns 0 or 1 (message printed). */
int rrt_app_attn_bwd_run(rrt_ctx_t ctx, rrt_app_common *c, rrt_attn_plan_t plan,
                         void *const dev_in[3], const void *o, const float *lse, long it,
                         rrt_app_attn_bwd *b);
/** After the timed runs: medians and means over the ranks (collective). */
void rrt_app_attn_bwd_reduce(rrt_ctx_t ctx, const rrt_attn_desc *d, long iters,
                             rrt_app_attn_bwd *b);
/** Gradients gathered in natural order on rank 0, written (--dq-out ...)
 *  and checked (with --check, against `go`, the forward's global O).
 *  Collective; returns 1 on a failure on any rank (message printed). */
int rrt_app_attn_bwd_outputs(rrt_ctx_t ctx, rrt_app_common *c, const rrt_app_attn_bwd_opts *o,
                             const rrt_attn_desc *d, uint64_t seed, const rrt_npy *qkv_files,
                             const void *go, int check, rrt_app_attn_bwd *b);
void rrt_app_attn_bwd_text(FILE *out, const rrt_app_attn_bwd *b, long iters, int P);
void rrt_app_attn_bwd_json(FILE *jf, const rrt_app_attn_bwd *b, long iters, int P);
void rrt_app_attn_bwd_free(rrt_ctx_t ctx, rrt_app_attn_bwd *b);

#endif

/* rrt_trace_write: every rank's intervals gathered to rank 0, which writes
 * the Chrome trace (one process per rank, one thread per track).
 *
 * The gather and the closing broadcast of rank 0's outcome go through the
 * host collectives, so each wait honours RINGRT_TIMEOUT and a stalled rank
 * ends the job naming rrt_trace_write; counts are size_t (no int limit on
 * the number of intervals). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/json_out.h"
#include "comm/outfile.h"
#include "comm/test_stall.h"
#include "comm/trace_state.h"
#include "ringrt/trace.h"

static const char *const track_names[RRT_TRACK_COUNT] = {"host", "compute stream", "comm stream"};

/* Offset of rank r's block in the gathered bytes. */
static size_t offset_of(const size_t *block_bytes, int r) {
  size_t off = 0;
  for (int q = 0; q < r; q++)
    off += block_bytes[q];
  return off;
}

/* One rank's gathered block: its host name, then its intervals. */
#define HOST_LEN 64

static size_t block_count(size_t bytes) {
  return bytes > HOST_LEN ? (bytes - HOST_LEN) / sizeof(rrt_interval) : 0;
}

/* Rank 0 writes everything: blocks[r] (block_bytes[r] bytes) came from rank r. */
static void write_trace(FILE *f, int size, const char *all, const size_t *block_bytes) {
  fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  int first = 1;
  for (int r = 0; r < size; r++) {
    fprintf(f,
            "%s{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d (",
            first ? "" : ",\n", r, r);
    first = 0;
    const char *host = all + offset_of(block_bytes, r);
    for (const char *h = host; block_bytes[r] >= HOST_LEN && h < host + HOST_LEN && *h; h++)
      if (*h != '"' && *h != '\\') fputc(*h, f);
    fprintf(f, ")\"}}");
    fprintf(
        f,
        ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
        r, r);
    for (int k = 0; k < RRT_TRACK_COUNT; k++)
      fprintf(f,
              ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
              "\"%s\"}}",
              r, k, track_names[k]);
  }
  for (int r = 0; r < size; r++) {
    const char *ivs = all + offset_of(block_bytes, r) + HOST_LEN;
    for (size_t i = 0; i < block_count(block_bytes[r]); i++) {
      rrt_interval iv; /* copied out: the gathered bytes carry no alignment promise */
      memcpy(&iv, ivs + i * sizeof iv, sizeof iv);
      iv.name[sizeof iv.name - 1] = '\0';
      fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", r,
              iv.track, iv.t0 * 1e6, (iv.t1 - iv.t0) * 1e6);
      rrt_json_string(f, iv.name);
      fputc('}', f);
    }
  }
  fprintf(f, "\n]}\n");
}

/* This rank's block: host name (HOST_LEN bytes) and its intervals. */
static rrt_status pack_block(rrt_ctx_t ctx, const char *op, char **block, size_t *bytes) {
  const struct rrt_trace_state *t = ctx->trace;
  size_t n = t->nintervals;
  *block = NULL;
  if (n > (SIZE_MAX - HOST_LEN) / sizeof(rrt_interval))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%zu trace intervals overflow size_t", n);
  *bytes = HOST_LEN + n * sizeof(rrt_interval);
  *block = calloc(1, *bytes);
  if (!*block)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate %zu bytes", *bytes);
  snprintf(*block, HOST_LEN, "%s", ctx->host);
  if (n) memcpy(*block + HOST_LEN, t->intervals, n * sizeof(rrt_interval));
  return RRT_SUCCESS;
}

/* Rank 0: write the file whole or not at all; 1 on success, else 0 with
 * err filled (the file and the OS error). */
static int write_file(rrt_ctx_t ctx, const char *path, const char *all, const size_t *bytes,
                      char *err, size_t errlen) {
  rrt_outfile out;
  if (rrt_outfile_open(&out, path, err, errlen) != RRT_SUCCESS) return 0;
  write_trace(out.f, ctx->size, all, bytes);
  return rrt_outfile_commit(&out, err, errlen) == RRT_SUCCESS;
}

rrt_status rrt_trace_write(rrt_ctx_t ctx, const char *path) {
  const char *op = "rrt_trace_write";
  if (!ctx || !path) return RRT_ERR_INVALID_ARG;
  rrt_test_stall(ctx, "trace_write"); /* fault tests only (RINGRT_TEST_STALL) */
  char *block = NULL;
  void *all = NULL;
  size_t bytes = 0, *block_bytes = calloc((size_t)ctx->size, sizeof *block_bytes);
  rrt_status st = block_bytes ? pack_block(ctx, op, &block, &bytes)
                              : rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "block sizes");
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  RRT_CHECK_GOTO(rrt_host_gatherv_alloc(ctx, op, block, bytes, 0, &all, block_bytes, NULL), st,
                 out);
  char err[512] = "";
  int32_t ok = ctx->rank != 0 || write_file(ctx, path, all, block_bytes, err, sizeof err);
  if (!ok) st = rrt_error(ctx, RRT_ERR_IO, op, "%s", err);
  rrt_status bst = rrt_host_bcast_named(ctx, op, &ok, sizeof ok, 0);
  if (bst != RRT_SUCCESS)
    st = bst;
  else if (!ok && ctx->rank != 0)
    st = rrt_error(ctx, RRT_ERR_REMOTE, op, "rank 0 could not write %s", path);
out:
  free(block);
  free(all);
  free(block_bytes);
  return st;
}

/* The tool's agreements outside any workload context: on the arguments
 * (before the first other collective of a subcommand) and on the exit code
 * (after it returned).
 *
 * Ranks of one job may be started with different arguments (mpirun's MPMD
 * syntax, a wrapper script that edits one rank's line) or fail to parse
 * theirs on one rank only. Any collective after that would pair unrelated
 * calls and hang outside the reach of RINGRT_TIMEOUT, so every rank first
 * takes part in one agreement, on a communicator-only context of the
 * library (comm/boot.h) whose waits have the timeout: each rank's parse
 * result and a hash of its arguments (subcommand name included) are
 * gathered; a parse error on any rank stops every rank with exit 2 and
 * that rank's message (printed once, by rank 0); different arguments stop
 * every rank with exit 2 and a message naming the ranks whose arguments
 * differ from rank 0's and the first differing argument. The timeout is the
 * rank's own --timeout, else RINGRT_TIMEOUT, else 600 s: ranks that
 * disagree on it still end, each at its own deadline. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/boot.h"
#include "comm/host_coll.h"

/* What each rank tells the others. */
typedef struct arg_record {
  int32_t parse; /* 0 run, 1 --help, 2 usage error */
  int32_t argc;
  uint64_t hash;
} arg_record;

/* FNV-1a over the arguments, each followed by a NUL. */
static uint64_t hash_args(int argc, char **argv) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < argc; i++) {
    const unsigned char *p = (const unsigned char *)argv[i];
    do {
      h ^= *p;
      h *= 1099511628211ULL;
    } while (*p++);
  }
  return h;
}

/* The deadline of the agreements: this rank's --timeout when it parses. */
static double argv_timeout(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--timeout") == 0) {
      char *end = NULL;
      double v = strtod(argv[i + 1], &end);
      if (*end == '\0' && v > 0) return v;
    }
  return 0; /* RINGRT_TIMEOUT, else the default */
}

/* Rank `from`'s arguments on every rank: NUL-separated, malloc'd. */
static char *args_of(rrt_ctx_t ctx, int from, int argc, char **argv, size_t *len) {
  const char *op = "ringrt: agreeing on the arguments";
  uint64_t n = 0;
  for (int i = 0; i < argc; i++)
    n += strlen(argv[i]) + 1;
  if (rrt_host_bcast_named(ctx, op, &n, sizeof n, from) != RRT_SUCCESS) return NULL;
  char *buf = malloc((size_t)n + 1);
  int ok = buf != NULL;
  if (buf && rrt_ctx_rank(ctx) == from) {
    size_t off = 0;
    for (int i = 0; i < argc; i++) {
      size_t k = strlen(argv[i]) + 1;
      memcpy(buf + off, argv[i], k);
      off += k;
    }
  }
  if (rrt_agree_named(ctx, op, ok ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY) != RRT_SUCCESS ||
      rrt_host_bcast_named(ctx, op, buf, (size_t)n, from) != RRT_SUCCESS) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = (size_t)n;
  return buf;
}

/* Argument i of a NUL-separated list, or NULL past its end. */
static const char *nth(const char *list, size_t len, int i) {
  size_t off = 0;
  for (; i > 0 && off < len; i--)
    off += strlen(list + off) + 1;
  return off < len ? list + off : NULL;
}

/* "'--iters 3'": an option's name in front of its value, for context. */
static void show(char *buf, size_t n, const char *prev, const char *arg) {
  if (!arg)
    snprintf(buf, n, "nothing");
  else if (prev && strncmp(prev, "--", 2) == 0 && arg[0] != '-')
    snprintf(buf, n, "'%s %s'", prev, arg);
  else
    snprintf(buf, n, "'%s'", arg);
}

/* Rank 0: which ranks differ from it, and the first difference of the
 * lowest of them (`first`, whose arguments are `theirs`): printed, and
 * kept for the JSON report. */
static void report_mismatch(rrt_app_common *c, const arg_record *recs, int P, int first,
                            const char *theirs, size_t tlen) {
  char msg[sizeof c->error];
  size_t n = 0;
  n += (size_t)snprintf(msg, sizeof msg, "the ranks were started with different arguments:");
  int listed = 0;
  for (int r = 1; r < P; r++)
    if (recs[r].hash != recs[0].hash || recs[r].argc != recs[0].argc) {
      if (listed < 32 && n < sizeof msg)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%s rank %d", listed ? "," : "", r);
      listed++;
    }
  if (listed > 32 && n < sizeof msg)
    n += (size_t)snprintf(msg + n, sizeof msg - n, " and %d more", listed - 32);
  int argc = c->argc, i = 0;
  char **argv = c->argv;
  while (i < argc && nth(theirs, tlen, i) && strcmp(argv[i], nth(theirs, tlen, i)) == 0)
    i++;
  char mine[256], other[256];
  show(mine, sizeof mine, i > 0 ? argv[i - 1] : NULL, i < argc ? argv[i] : NULL);
  show(other, sizeof other, i > 0 ? nth(theirs, tlen, i - 1) : NULL, nth(theirs, tlen, i));
  if (n < sizeof msg)
    snprintf(msg + n, sizeof msg - n,
             " %s from rank 0; first difference at argument %d: %s on rank %d, %s on rank 0",
             listed == 1 ? "differs" : "differ", i, other, first, mine);
  /* the subcommands may differ too: the line names none */
  fprintf(stderr, "ringrt: %s\n", msg);
  snprintf(c->error, sizeof c->error, "%s", msg);
}

/* What a rank whose parse failed tells rank 0: its subcommand and message. */
typedef struct usage_note {
  char cmd[32];
  char msg[sizeof(((rrt_app_common *)0)->error)];
} usage_note;

/* Rank 0: another rank's usage message, naming it ("ringrt attn (rank 2):
 * bad value for --iters: 'x' ..."), kept as "rank 2: ..." for the report. */
static void report_remote(rrt_app_common *c, const usage_note *note, int rank) {
  const char *msg = note->msg[0] ? note->msg : "usage error";
  if (note->cmd[0])
    fprintf(stderr, "ringrt %s (rank %d): %s\n", note->cmd, rank, msg);
  else
    fprintf(stderr, "ringrt (rank %d): %s\n", rank, msg);
  snprintf(c->error, sizeof c->error, "rank %d: %.1000s", rank, msg);
}

/* The lowest rank whose parse failed, or P. */
static int lowest_failed(const arg_record *recs, int P) {
  for (int r = 0; r < P; r++)
    if (recs[r].parse == 2) return r;
  return P;
}

/* Everything after the gather: 0, 1 (help) or 2 on every rank alike. */
static int decide(rrt_ctx_t ctx, rrt_app_common *c, const arg_record *recs) {
  const char *op = "ringrt: agreeing on the arguments";
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  int failed = lowest_failed(recs, P);
  if (failed < P) {
    /* The failing rank's message; rank 0 printed its own while parsing. */
    usage_note note;
    memset(&note, 0, sizeof note);
    snprintf(note.cmd, sizeof note.cmd, "%s", c->cmd ? c->cmd : "");
    snprintf(note.msg, sizeof note.msg, "%s", c->error);
    if (rrt_host_bcast_named(ctx, op, &note, sizeof note, failed) != RRT_SUCCESS) return 2;
    note.cmd[sizeof note.cmd - 1] = note.msg[sizeof note.msg - 1] = '\0';
    if (rank == 0 && failed != 0) report_remote(c, &note, failed);
    return 2;
  }
  int first = P;
  for (int r = P - 1; r > 0; r--)
    if (recs[r].hash != recs[0].hash || recs[r].argc != recs[0].argc) first = r;
  if (first == P) return recs[rank].parse;
  size_t tlen = 0;
  char *theirs = args_of(ctx, first, c->argc, c->argv, &tlen);
  if (rank == 0 && theirs) report_mismatch(c, recs, P, first, theirs, tlen);
  free(theirs);
  return 2;
}

int rrt_app_agree_args(MPI_Comm comm, rrt_app_common *c, int parsed) {
  const char *op = "ringrt: agreeing on the arguments";
  rrt_ctx_t ctx = NULL;
  if (rrt_boot_create(comm, argv_timeout(c->argc, c->argv), op, &ctx) != RRT_SUCCESS) return 2;
  int P = rrt_ctx_size(ctx);
  arg_record mine = {parsed, c->argc, hash_args(c->argc, c->argv)};
  arg_record *recs = malloc((size_t)P * sizeof *recs);
  size_t *layout = malloc(2 * (size_t)P * sizeof *layout);
  rrt_status st = recs && layout ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  int rc = 2;
  if (rrt_agree_named(ctx, op, st) == RRT_SUCCESS) {
    for (int r = 0; r < P; r++) {
      layout[r] = sizeof mine;
      layout[P + r] = (size_t)r * sizeof mine;
    }
    if (rrt_host_allgatherv_named(ctx, op, &mine, sizeof mine, recs, layout, layout + P) ==
        RRT_SUCCESS)
      rc = decide(ctx, c, recs);
  } else if (rrt_ctx_rank(ctx) == 0) {
    rrt_app_usage_error(c, "%s", rrt_ctx_last_error(ctx));
  }
  free(recs);
  free(layout);
  rrt_ctx_destroy(ctx);
  return rc;
}

int rrt_app_agree_exit(MPI_Comm comm, int argc, char **argv, int rc) {
  const char *op = "ringrt: agreeing on the exit code";
  rrt_ctx_t ctx = NULL;
  if (rrt_boot_create(comm, argv_timeout(argc, argv), op, &ctx) != RRT_SUCCESS) return rc ? rc : 1;
  int32_t mine = rc, worst = rc;
  if (rrt_host_allreduce_named(ctx, op, &mine, &worst, 1, RRT_DTYPE_I32, RRT_OP_MAX) != RRT_SUCCESS)
    worst = rc ? rc : 1;
  rrt_ctx_destroy(ctx);
  return worst;
}

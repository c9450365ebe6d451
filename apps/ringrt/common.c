/* Options and helpers shared by every subcommand. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/host_coll.h"

const char rrt_app_common_help[] =
    "common options:\n"
    "  --backend B      auto|cpu|cuda|emu (default: RINGRT_BACKEND, else auto)\n"
    "  --timeout S      seconds any blocking wait may take, > 0 (default: RINGRT_TIMEOUT, else "
    "600)\n"
    "  --json [FILE]    machine-readable report to FILE, or stdout with '-' or no FILE\n"
    "  --trace FILE     Chrome trace JSON of the whole job (open in Perfetto)\n"
    "  --quiet          no progress lines\n"
    "  --help           this text\n";

/* The first message of this process's rrt_app_print0: the tool's one piece
 * of process state, so that the argument agreement (agree.c) can have rank
 * 0 print the parse error of another rank. */
static char usage_note[RRT_APP_NOTE_MAX];

const char *rrt_app_usage_note(void) { return usage_note; }

void rrt_app_print0(MPI_Comm comm, const char *fmt, ...) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  va_list ap;
  if (!usage_note[0]) {
    va_start(ap, fmt);
    vsnprintf(usage_note, sizeof usage_note, fmt, ap);
    va_end(ap);
  }
  if (rank != 0) return;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

int rrt_app_parse_long(MPI_Comm comm, const char *cmd, const char *opt, const char *text, long lo,
                       long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || !*text || errno || *end || v < lo || v > hi) {
    rrt_app_print0(comm, "ringrt %s: bad value for %s: '%s' (an integer in [%ld, %ld])\n", cmd, opt,
                   text ? text : "", lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int rrt_app_parse_double(MPI_Comm comm, const char *cmd, const char *opt, const char *text,
                         double *out) {
  char *end = NULL;
  errno = 0;
  double v = text ? strtod(text, &end) : 0;
  if (!text || !*text || errno || *end || v != v) {
    rrt_app_print0(comm, "ringrt %s: bad value for %s: '%s' (a number)\n", cmd, opt,
                   text ? text : "");
    return -1;
  }
  *out = v;
  return 0;
}

int rrt_app_common_option(rrt_app_common *opt, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (strcmp(a, "--quiet") == 0) {
    opt->quiet = 1;
    return 1;
  }
  if (strcmp(a, "--json") == 0) {
    /* The file name is optional: a following option is not a file. */
    if (next && next[0] != '-') {
      opt->json_path = next;
      (*i)++;
    } else if (next && strcmp(next, "-") == 0) {
      opt->json_path = "-";
      (*i)++;
    } else {
      opt->json_path = "-";
    }
    return 1;
  }
  if (strcmp(a, "--backend") == 0 || strcmp(a, "--trace") == 0 || strcmp(a, "--timeout") == 0) {
    if (!next) {
      rrt_app_print0(MPI_COMM_WORLD, "ringrt: %s needs a value\n", a);
      return -1;
    }
    (*i)++;
    if (strcmp(a, "--backend") == 0) {
      rrt_backend b;
      if (rrt_backend_parse(next, &b) != RRT_SUCCESS) {
        rrt_app_print0(MPI_COMM_WORLD, "ringrt: --backend '%s' is not auto, cpu, cuda or emu\n",
                       next);
        return -1;
      }
      opt->backend = next;
    } else if (strcmp(a, "--trace") == 0) {
      opt->trace_path = next;
    } else if (rrt_app_parse_double(MPI_COMM_WORLD, "", "--timeout", next, &opt->timeout_s) != 0) {
      return -1;
    } else if (!(opt->timeout_s > 0)) {
      /* As RINGRT_TIMEOUT: every wait has a deadline, there is no "never". */
      rrt_app_print0(MPI_COMM_WORLD, "ringrt: --timeout '%s' is not a positive number of seconds\n",
                     next);
      return -1;
    }
    return 1;
  }
  return 0;
}

rrt_status rrt_app_ctx_create(MPI_Comm comm, const rrt_app_common *opt, rrt_ctx_t *ctx) {
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  if (opt->backend) rrt_backend_parse(opt->backend, &cfg.backend);
  if (opt->timeout_s > 0) cfg.timeout_s = opt->timeout_s;
  /* rrt_ctx_create prints the reason on every rank; nothing more to say. */
  rrt_status st = rrt_ctx_create(comm, &cfg, ctx);
  if (st != RRT_SUCCESS) return st;
  if (opt->trace_path) rrt_trace_enable(*ctx, 1);
  return RRT_SUCCESS;
}

rrt_status rrt_app_ctx_finish(rrt_ctx_t ctx, const rrt_app_common *opt) {
  rrt_status st = RRT_SUCCESS;
  if (ctx && opt->trace_path) {
    st = rrt_trace_write(ctx, opt->trace_path);
    if (st != RRT_SUCCESS && rrt_ctx_rank(ctx) == 0)
      fprintf(stderr, "ringrt: %s\n", rrt_ctx_last_error(ctx));
  }
  rrt_status st2 = rrt_ctx_destroy(ctx);
  return st != RRT_SUCCESS ? st : st2;
}

FILE *rrt_app_json_open(const rrt_app_common *opt, int rank) {
  if (!opt->json_path || rank != 0) return NULL;
  if (strcmp(opt->json_path, "-") == 0) return stdout;
  FILE *f = fopen(opt->json_path, "w");
  if (!f) fprintf(stderr, "ringrt: cannot write JSON report to %s\n", opt->json_path);
  return f;
}

void rrt_app_json_close(FILE *f) {
  if (f && f != stdout)
    fclose(f);
  else if (f)
    fflush(f);
}

int rrt_app_any_rank(rrt_ctx_t ctx, int bad) {
  int32_t mine = bad != 0, any = 0;
  if (rrt_host_allreduce(ctx, &mine, &any, 1, RRT_DTYPE_I32, RRT_OP_MAX) != RRT_SUCCESS) return 1;
  return any != 0;
}

/* Options and helpers shared by every subcommand. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/json_out.h"
#include "comm/outfile.h"

_Static_assert(RRT_EXIT_ABORTED == RRT_FATAL_EXIT_CODE, "one code for an aborted job");

const char rrt_app_common_help[] =
    "common options:\n"
    "  --backend B      auto|cpu|cuda|emu (default: RINGRT_BACKEND, else auto)\n"
    "  --timeout S      seconds any blocking wait may take, > 0 (default: RINGRT_TIMEOUT, else "
    "600)\n"
    "  --json [FILE]    machine-readable report to FILE, or stdout with '-' or no FILE\n"
    "                   (then every human-readable line goes to stderr); written on\n"
    "                   failure too, as {\"status\": \"error\", \"exit_code\", \"error\"}\n"
    "  --trace FILE     Chrome trace JSON of the whole job (open in Perfetto), also\n"
    "                   after a failure\n"
    "  --quiet          no progress lines\n"
    "  --help           this text\n"
    "Output files: an existing file is replaced, atomically: the data goes to a\n"
    "temporary next to it, renamed over it only after a complete write, so a failed\n"
    "run leaves the old file as it was (a device such as /dev/null is written\n"
    "directly). Before any work every output directory must take a new file, and an\n"
    "output that is an input or another output is refused (exit 2).\n";

const char rrt_app_exit_help[] =
    "exit status (the same in every command): 0 success, 1 runtime failure (bad input\n"
    "file, I/O error, library error), 2 usage error, 3 not converged, 4 --check\n"
    "failed, 5 job aborted (a wait exceeded RINGRT_TIMEOUT); with ranks that end\n"
    "differently the highest code wins.\n";

/* Format a message, keep the first one for the JSON report (and the
 * argument agreement), and print it as "ringrt CMD: MSG" when `print`. */
static void report(rrt_app_common *c, int print, const char *fmt, va_list ap) {
  char msg[sizeof c->error];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!c->error[0]) snprintf(c->error, sizeof c->error, "%s", msg);
  if (!print) return;
  if (c->cmd && c->cmd[0])
    fprintf(stderr, "ringrt %s: %s\n", c->cmd, msg);
  else
    fprintf(stderr, "ringrt: %s\n", msg);
}

void rrt_app_usage_error(rrt_app_common *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(c, c->rank == 0, fmt, ap);
  va_end(ap);
}

int rrt_app_parse_long(rrt_app_common *c, const char *opt, const char *text, long lo, long hi,
                       long *out) {
  char *end = NULL;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || !*text || errno || *end || v < lo || v > hi) {
    rrt_app_usage_error(c, "bad value for %s: '%s' (an integer in [%ld, %ld])", opt,
                        text ? text : "", lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int rrt_app_parse_double(rrt_app_common *c, const char *opt, const char *text, double *out) {
  char *end = NULL;
  errno = 0;
  double v = text ? strtod(text, &end) : 0;
  if (!text || !*text || errno || *end || v != v) {
    rrt_app_usage_error(c, "bad value for %s: '%s' (a number)", opt, text ? text : "");
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
      rrt_app_usage_error(opt, "%s needs a value", a);
      return -1;
    }
    (*i)++;
    if (strcmp(a, "--backend") == 0) {
      rrt_backend b;
      if (rrt_backend_parse(next, &b) != RRT_SUCCESS) {
        rrt_app_usage_error(opt, "--backend '%s' is not auto, cpu, cuda or emu", next);
        return -1;
      }
      opt->backend = next;
    } else if (strcmp(a, "--trace") == 0) {
      opt->trace_path = next;
    } else if (rrt_app_parse_double(opt, "--timeout", next, &opt->timeout_s) != 0) {
      return -1;
    } else if (!(opt->timeout_s > 0)) {
      /* As RINGRT_TIMEOUT: every wait has a deadline, there is no "never". */
      rrt_app_usage_error(opt, "--timeout '%s' is not a positive number of seconds", next);
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
  /* The tool owns its process: it binds the rank unless RINGRT_BIND says
   * otherwise (the library, a guest anywhere else, binds only when asked). */
  const char *bind = getenv("RINGRT_BIND");
  cfg.bind = bind && *bind ? -1 : 1;
  /* rrt_ctx_create prints the reason on every rank; nothing more to say. */
  rrt_status st = rrt_ctx_create(comm, &cfg, ctx);
  if (st != RRT_SUCCESS) return st;
  if (opt->trace_path) rrt_trace_enable(*ctx, 1);
  return RRT_SUCCESS;
}

void rrt_app_common_init(rrt_app_common *c, const char *cmd, MPI_Comm comm, int argc, char **argv) {
  memset(c, 0, sizeof *c);
  c->cmd = cmd, c->argc = argc, c->argv = argv;
  MPI_Comm_rank(comm, &c->rank);
}

void rrt_app_error(rrt_app_common *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(c, 1, fmt, ap);
  va_end(ap);
}

/* -------------------------------------------------------- output paths --- */

/* The first entry of list (other than `skip`) naming the same file as
 * path, or -1. */
static int same_as(const char *path, const rrt_app_path *list, int n, int skip) {
  for (int j = 0; j < n; j++)
    if (j != skip && list[j].path && rrt_outfile_same(path, list[j].path)) return j;
  return -1;
}

/* An output that is an input or another output: a usage error. */
static int path_conflict(rrt_app_common *c, const rrt_app_path *outs, int nout,
                         const rrt_app_path *ins, int nin) {
  for (int k = 0; k < nout; k++) {
    const rrt_app_path *o = &outs[k];
    if (!o->path || !strcmp(o->path, "-")) continue;
    int j = same_as(o->path, ins, nin, -1);
    if (j >= 0) {
      if (c->rank == 0)
        rrt_app_error(c, "%s %s is the input %s %s: refused, the output would replace it",
                      o->option, o->path, ins[j].option, ins[j].path);
      return RRT_EXIT_USAGE;
    }
    j = same_as(o->path, outs, k, -1);
    if (j >= 0) {
      if (c->rank == 0)
        rrt_app_error(c, "%s %s and %s %s name the same file: refused", outs[j].option,
                      outs[j].path, o->option, o->path);
      return RRT_EXIT_USAGE;
    }
  }
  return 0;
}

int rrt_app_check_paths(rrt_app_common *c, const rrt_app_path *outs, int nout,
                        const rrt_app_path *ins, int nin) {
  enum { MAX_OUT = 16 };
  rrt_app_path all[MAX_OUT];
  int n = 0;
  all[n++] = (rrt_app_path){"--json", c->json_path};
  all[n++] = (rrt_app_path){"--trace", c->trace_path};
  for (int k = 0; k < nout && n < MAX_OUT; k++)
    all[n++] = outs[k];
  int code = path_conflict(c, all, n, ins, nin), json_probe_ok = 0;
  char err[1200];
  for (int k = 0; k < n && c->rank == 0; k++) {
    if (!all[k].path || !strcmp(all[k].path, "-")) continue;
    if (rrt_outfile_probe(all[k].path, err, sizeof err) == RRT_SUCCESS) {
      json_probe_ok |= k == 0;
    } else if (!code) {
      rrt_app_error(c, "%s %s", all[k].option, err);
      code = RRT_EXIT_FAILURE;
    }
  }
  /* the JSON file takes the error report unless it is an input or another output */
  c->json_file_ok = json_probe_ok && same_as(c->json_path, ins, nin, -1) < 0 &&
                    same_as(c->json_path, all, n, 0) < 0;
  return code;
}

int rrt_app_agree_code(rrt_ctx_t ctx, rrt_app_common *c, int code) {
  int32_t mine = code, worst = RRT_EXIT_FAILURE;
  if (rrt_host_allreduce(ctx, &mine, &worst, 1, RRT_DTYPE_I32, RRT_OP_MAX) != RRT_SUCCESS) {
    if (c->rank == 0) rrt_app_error(c, "%s", rrt_ctx_last_error(ctx));
    worst = worst > RRT_EXIT_FAILURE ? worst : RRT_EXIT_FAILURE;
  }
  c->outputs_ok = worst == 0;
  return worst;
}

/* -------------------------------------------------------------- report --- */

FILE *rrt_app_json_open(rrt_app_common *c) {
  if (!c->json_path || c->rank != 0) return NULL;
  if (c->json) fclose(c->json), c->json = NULL; /* a second report replaces the first */
  free(c->json_buf), c->json_buf = NULL;
  c->json = open_memstream(&c->json_buf, &c->json_len);
  return c->json;
}

static const char *status_name(int code) {
  return code == RRT_EXIT_OK              ? "ok"
         : code == RRT_EXIT_NOT_CONVERGED ? "not_converged"
         : code == RRT_EXIT_CHECK_FAILED  ? "check_failed"
                                          : "error";
}

void rrt_app_json_close(rrt_app_common *c, int code) {
  if (!c->json) return;
  fprintf(c->json, ", \"status\": \"%s\", \"exit_code\": %d}\n", status_name(code), code);
  fclose(c->json);
  c->json = NULL;
  c->report_code = code;
}

FILE *rrt_app_text_stream(const rrt_app_common *c) {
  return c->json_path && !strcmp(c->json_path, "-") ? stderr : stdout;
}

void rrt_app_json_number(FILE *f, double v) {
  if (!isfinite(v)) {
    fputs("null", f);
    return;
  }
  /* 15 digits read back exactly for most values; 17 always do */
  char buf[32];
  snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  fputs(buf, f);
}

void rrt_app_json_field(FILE *f, const char *key, double v) {
  fprintf(f, ", \"%s\": ", key);
  rrt_app_json_number(f, v);
}

/* The error report: what failed, as the user saw it on stderr. */
static void error_report(FILE *f, const rrt_app_common *c, rrt_ctx_t ctx, int rc) {
  const char *msg = c->error[0]                         ? c->error
                    : rc == RRT_EXIT_USAGE              ? "usage error (the message is on stderr)"
                    : ctx && rrt_ctx_last_error(ctx)[0] ? rrt_ctx_last_error(ctx)
                                                        : "failed (the messages are on stderr)";
  fprintf(f, "{\"command\": \"%s\", \"status\": \"%s\", \"exit_code\": %d, \"error\": ", c->cmd,
          status_name(rc), rc);
  rrt_json_string(f, msg);
  fprintf(f, "}\n");
}

/* After a usage error --json may not have been parsed yet: find it. */
static const char *json_target_of_args(const rrt_app_common *c) {
  for (int i = 1; i < c->argc; i++)
    if (!strcmp(c->argv[i], "--json")) {
      const char *next = i + 1 < c->argc ? c->argv[i + 1] : NULL;
      return next && next[0] != '-' ? next : "-";
    }
  return NULL;
}

/* Rank 0: the report to stdout or to its file (whole or not at all).
 * Returns 0, or 1 when it could not be written (message printed). */
static int emit_report(rrt_app_common *c, rrt_ctx_t ctx, int rc) {
  const char *target = c->json_path ? c->json_path : json_target_of_args(c);
  int to_stdout = target && !strcmp(target, "-");
  if (!target || (!to_stdout && !c->json_file_ok)) return 0;
  rrt_outfile out = {stdout, NULL, NULL, NULL};
  char err[1200];
  if (!to_stdout && rrt_outfile_open(&out, target, err, sizeof err) != RRT_SUCCESS) {
    rrt_app_error(c, "--json %s", err);
    return 1;
  }
  if (c->json_buf && c->report_code == rc)
    fwrite(c->json_buf, 1, c->json_len, out.f);
  else
    error_report(out.f, c, ctx, rc);
  if (to_stdout) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    rrt_app_error(c, "--json: cannot write the report to stdout: %s", strerror(errno));
    return 1;
  }
  if (rrt_outfile_commit(&out, err, sizeof err) == RRT_SUCCESS) return 0;
  rrt_app_error(c, "--json %s", err);
  return 1;
}

int rrt_app_finish(rrt_ctx_t ctx, rrt_app_common *c, int rc) {
  if (c->json) { /* a report never finished: the error report replaces it */
    fclose(c->json);
    c->json = NULL;
    c->report_code = -1;
  }
  /* an output that fails after the verdict makes the run a failure */
  int fail_code = rc == RRT_EXIT_USAGE ? rc : RRT_EXIT_FAILURE;
  if (ctx && c->trace_path && c->outputs_ok && rrt_trace_write(ctx, c->trace_path) != RRT_SUCCESS) {
    if (c->rank == 0) rrt_app_error(c, "--trace: %s", rrt_ctx_last_error(ctx));
    rc = fail_code; /* the trace writer agreed on its outcome: every rank */
  }
  int bad = c->rank == 0 && emit_report(c, ctx, rc);
  if (ctx ? rrt_app_any_rank(ctx, bad) : bad) rc = fail_code;
  if (ctx && rrt_ctx_destroy(ctx) != RRT_SUCCESS && rc == RRT_EXIT_OK) rc = RRT_EXIT_FAILURE;
  free(c->json_buf), c->json_buf = NULL;
  return rc;
}

enum { RANK_MSG = 1024 }; /* bytes of one rank's message in the gather */

/* Rank 0: print the gathered messages (RANK_MSG bytes each, "" = fine). */
static void print_rank_errors(rrt_app_common *c, const char *all, int P) {
  int nbad = 0, same = 1;
  const char *first = NULL;
  for (int r = 0; r < P; r++) {
    const char *m = all + (size_t)r * RANK_MSG;
    if (!m[0]) continue;
    nbad++;
    if (!first) first = m;
    same = same && strcmp(first, m) == 0;
  }
  if (nbad == P && same) {
    rrt_app_error(c, "%s", first);
    return;
  }
  for (int r = 0; r < P; r++)
    if (all[(size_t)r * RANK_MSG]) rrt_app_error(c, "rank %d: %s", r, all + (size_t)r * RANK_MSG);
}

int rrt_app_any_rank_error(rrt_ctx_t ctx, rrt_app_common *c, const char *msg) {
  char mine[RANK_MSG];
  snprintf(mine, sizeof mine, "%s", msg ? msg : "");
  if (!rrt_app_any_rank(ctx, mine[0] != 0)) return 0;
  void *all = NULL;
  rrt_status st = rrt_host_gatherv_alloc(ctx, "ringrt: gathering the ranks' errors", mine,
                                         sizeof mine, 0, &all, NULL, NULL);
  if (st == RRT_SUCCESS && all)
    print_rank_errors(c, all, rrt_ctx_size(ctx)); /* rank 0 */
  else if (st != RRT_SUCCESS && mine[0]) /* the messages did not travel: each says its own */
    rrt_app_error(c, "rank %d: %s", rrt_ctx_rank(ctx), mine);
  free(all);
  return 1;
}

int rrt_app_any_rank(rrt_ctx_t ctx, int bad) {
  int32_t mine = bad != 0, any = 0;
  if (rrt_host_allreduce(ctx, &mine, &any, 1, RRT_DTYPE_I32, RRT_OP_MAX) != RRT_SUCCESS) return 1;
  return any != 0;
}

int rrt_app_ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && !strcmp(s + a - b, suf);
}

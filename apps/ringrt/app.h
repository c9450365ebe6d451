/* The `ringrt` command line tool: shared pieces of every subcommand.
 *
 * main.c initialises MPI and dispatches to `int rrt_cmd_NAME(MPI_Comm comm,
 * int argc, char **argv)` (argv[0] is the subcommand name). A subcommand
 * parses its own options, passing unknown ones to rrt_app_common_option()
 * first, creates its context with rrt_app_ctx_create(), and returns the
 * process exit code (0 success, 1 failure, 2 usage error). It must not call
 * MPI_Finalize or exit: main does that. */
#ifndef RRT_APP_H
#define RRT_APP_H

#include <mpi.h>
#include <stdio.h>

#include "ringrt/ringrt.h"

/** Options every subcommand accepts. */
typedef struct rrt_app_common {
  const char *backend;    /* --backend auto|cpu|cuda|emu (overrides RINGRT_BACKEND) */
  const char *trace_path; /* --trace FILE: Chrome trace JSON of the whole job */
  const char *json_path;  /* --json [FILE]: machine-readable report ("-" = stdout) */
  double timeout_s;       /* --timeout SECONDS (overrides RINGRT_TIMEOUT) */
  int quiet;              /* --quiet: no progress lines */
} rrt_app_common;

/** Help text of the common options (for a subcommand's --help). */
extern const char rrt_app_common_help[];

/** If argv[*i] is a common option, consume it (and its value, advancing *i)
 *  and return 1; return 0 if it is not one; return -1 on a usage error
 *  (message printed on rank 0). */
int rrt_app_common_option(rrt_app_common *opt, int argc, char **argv, int *i);

/** Create the context from the common options. On failure prints the error
 *  on rank 0 (every rank fails) and returns non-zero. Enables tracing when
 *  --trace was given. */
rrt_status rrt_app_ctx_create(MPI_Comm comm, const rrt_app_common *opt, rrt_ctx_t *ctx);

/** Finish: write the trace if asked (collective), destroy the context. */
rrt_status rrt_app_ctx_finish(rrt_ctx_t ctx, const rrt_app_common *opt);
/** 1 when `bad` is non-zero on any rank of the context (a collective with
 *  the library's timeout, so a stalled rank ends the job). */
int rrt_app_any_rank(rrt_ctx_t ctx, int bad);

/** Open the JSON report stream on rank 0: stdout for "-", else the file
 *  (refuses nothing: the user named it). Returns NULL if no --json. */
FILE *rrt_app_json_open(const rrt_app_common *opt, int rank);
void rrt_app_json_close(FILE *f);

/** Agree on the arguments before the subcommand's first collective:
 *  `parsed` is this rank's parse result (0 run, 1 --help printed, 2 usage
 *  error). Returns the same on every rank: 2 when any rank failed to parse
 *  (rank 0 prints that rank's message) or got different arguments (rank 0
 *  names the ranks and the first difference), else `parsed`. Collective,
 *  with the timeout (agree.c). */
int rrt_app_agree_args(MPI_Comm comm, int argc, char **argv, int parsed);
/** The job's exit code: the highest of every rank's `rc` (a collective
 *  with the timeout, after the subcommand returned; agree.c). */
int rrt_app_agree_exit(MPI_Comm comm, int argc, char **argv, int rc);

/** Longest usage message kept for the argument agreement. */
#define RRT_APP_NOTE_MAX 1024
/** The first message rrt_app_print0 was given in this process ("" if none). */
const char *rrt_app_usage_note(void);

/** Print a message on rank 0 only (and keep the first one, on every rank,
 *  for rrt_app_agree_args). */
void rrt_app_print0(MPI_Comm comm, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Parse helpers: return 0 on success, print "ringrt NAME: bad value for
 *  --OPT: 'TEXT'" on rank 0 and return -1 otherwise. */
int rrt_app_parse_long(MPI_Comm comm, const char *cmd, const char *opt, const char *text, long lo,
                       long hi, long *out);
int rrt_app_parse_double(MPI_Comm comm, const char *cmd, const char *opt, const char *text,
                         double *out);

/* Subcommands. */
int rrt_cmd_info(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_attn(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_ilu(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_seacells(MPI_Comm comm, int argc, char **argv);

#endif

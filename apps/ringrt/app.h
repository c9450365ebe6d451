/* The `ringrt` command line tool: shared pieces of every subcommand.
 *
 * main.c initialises MPI and dispatches to `int rrt_cmd_NAME(MPI_Comm comm,
 * int argc, char **argv)` (argv[0] is the subcommand name). A subcommand
 * calls rrt_app_common_init(), parses its own options, passing unknown ones
 * to rrt_app_common_option() first (usage errors go to rrt_app_usage_error,
 * which keeps them in the rrt_app_common: the tool has no process state),
 * agrees on them (rrt_app_agree_args), checks its output paths with
 * rrt_app_check_paths(), creates its context with rrt_app_ctx_create(),
 * agrees on the checks (rrt_app_agree_code), and ends with
 * `return rrt_app_finish(ctx, &common, rc)`, which writes the trace and the
 * JSON report (the error report when rc says the run failed). The return
 * value is the process exit code (the table below). It must not call
 * MPI_Finalize or exit: main does that. */
#ifndef RRT_APP_H
#define RRT_APP_H

#include <mpi.h>
#include <stdio.h>

#include "ringrt/ringrt.h"

/** Exit codes, the same in every subcommand. Every rank ends with the same
 *  code (outcomes are agreed before anyone returns); main returns the
 *  highest code over the ranks. */
enum rrt_app_exit {
  RRT_EXIT_OK = 0,            /* success */
  RRT_EXIT_FAILURE = 1,       /* runtime failure: bad input file, I/O error, library error */
  RRT_EXIT_USAGE = 2,         /* usage error: bad option or value, conflicting output paths */
  RRT_EXIT_NOT_CONVERGED = 3, /* the iteration did not converge (ilu's Krylov solve, seacells) */
  RRT_EXIT_CHECK_FAILED = 4,  /* attn --check: the result differs from the reference */
  RRT_EXIT_ABORTED = 5        /* the job was aborted (a wait exceeded RINGRT_TIMEOUT): the
                                 RRT_FATAL_EXIT_CODE of comm/error.h, passed on by mpirun */
};

/** The exit-code table for --help texts. */
extern const char rrt_app_exit_help[];

/** Options every subcommand accepts, and what the tool keeps for its final
 *  report. */
typedef struct rrt_app_common {
  const char *backend;    /* --backend auto|cpu|cuda|emu (overrides RINGRT_BACKEND) */
  const char *trace_path; /* --trace FILE: Chrome trace JSON of the whole job */
  const char *json_path;  /* --json [FILE]: machine-readable report ("-" = stdout) */
  double timeout_s;       /* --timeout SECONDS (overrides RINGRT_TIMEOUT) */
  int quiet;              /* --quiet: no progress lines */
  /* set by rrt_app_common_init and the checks */
  const char *cmd; /* the subcommand's name */
  int argc;        /* its arguments, to find --json after a usage error */
  char **argv;
  int rank;         /* rank in the subcommand's communicator */
  int outputs_ok;   /* the output checks passed on every rank: the trace may be written */
  int json_file_ok; /* rank 0: --json FILE passed the checks (written even on failure) */
  int report_code;  /* the exit code the buffered report states */
  char error[1024]; /* the first error message of this rank (on rank 0 also the usage error
                       of another rank, from rrt_app_agree_args), for the JSON report */
  FILE *json;       /* the report, buffered until rrt_app_finish */
  char *json_buf;
  size_t json_len;
} rrt_app_common;

/** An option naming a file, for rrt_app_check_paths. */
typedef struct rrt_app_path {
  const char *option, *path; /* path NULL: not given */
} rrt_app_path;

/** Help text of the common options (for a subcommand's --help). */
extern const char rrt_app_common_help[];

/** If argv[*i] is a common option, consume it (and its value, advancing *i)
 *  and return 1; return 0 if it is not one; return -1 on a usage error
 *  (rrt_app_usage_error). */
int rrt_app_common_option(rrt_app_common *opt, int argc, char **argv, int *i);

/** Start: zero c, remember the subcommand's name, its arguments and rank. */
void rrt_app_common_init(rrt_app_common *c, const char *cmd, MPI_Comm comm, int argc, char **argv);

/** Print "ringrt CMD: MESSAGE" on stderr (on the calling rank: the caller
 *  decides which ranks speak) and keep the first message for the JSON
 *  report. */
void rrt_app_error(rrt_app_common *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Before any work, on every rank, without communication: no output may be
 *  the same file as an input or as another output (RRT_EXIT_USAGE), and on
 *  rank 0, which writes every output, each output's directory must take a
 *  new file (RRT_EXIT_FAILURE). --json FILE and --trace are checked too.
 *  Prints the reason on rank 0; returns the code (0 when all is well).
 *  Agree on it with rrt_app_agree_code once the context exists. */
int rrt_app_check_paths(rrt_app_common *c, const rrt_app_path *outs, int nout,
                        const rrt_app_path *ins, int nin);

/** The highest code over the ranks of the context (a collective with the
 *  library's timeout). Sets c->outputs_ok when it is 0. */
int rrt_app_agree_code(rrt_ctx_t ctx, rrt_app_common *c, int code);

/** Create the context from the common options. On failure prints the error
 *  on rank 0 (every rank fails) and returns non-zero. Enables tracing when
 *  --trace was given. */
rrt_status rrt_app_ctx_create(MPI_Comm comm, const rrt_app_common *opt, rrt_ctx_t *ctx);

/** The end of every subcommand: write the trace if asked and the checks
 *  passed (collective, also after a failure), destroy the context (may be
 *  NULL), then on rank 0 write the JSON report: the buffered one when it
 *  states rc, else an error report {"command", "status": "error",
 *  "exit_code", "error"}. To a file only when it passed the checks; to
 *  stdout always, even after a usage error. Returns the final exit code. */
int rrt_app_finish(rrt_ctx_t ctx, rrt_app_common *c, int rc);

/** 1 when `bad` is non-zero on any rank of the context (a collective with
 *  the library's timeout, so a stalled rank ends the job). */
int rrt_app_any_rank(rrt_ctx_t ctx, int bad);

/* Whether the file name s ends with suf (".h5ad", ".npy"). */
int rrt_app_ends_with(const char *s, const char *suf);

/** Every rank's own failure reaches the user: `msg` is this rank's error
 *  (NULL or "" when it is fine). A collective with the library's timeout;
 *  returns 1 on every rank when any rank failed. Rank 0 then prints (and
 *  keeps for the JSON report) the message once when every rank failed the
 *  same way, else "rank R: MESSAGE" for each failing rank in rank order, so
 *  a file only one rank cannot read is not silent. */
int rrt_app_any_rank_error(rrt_ctx_t ctx, rrt_app_common *c, const char *msg);

/** The JSON report stream on rank 0 (NULL elsewhere and without --json): a
 *  memory buffer that rrt_app_finish writes out. End the object with
 *  rrt_app_json_close, which adds "status" and "exit_code" (the code the
 *  report states) and the closing brace. */
FILE *rrt_app_json_open(rrt_app_common *c);
void rrt_app_json_close(rrt_app_common *c, int code);

/** A JSON number that reads back as v, or null for NaN/Inf (which JSON
 *  cannot hold). Every floating value of a report goes through it. */
void rrt_app_json_number(FILE *f, double v);
/* JSON strings (every text a user gave, a path): rrt_json_string of
 * comm/json_out.h. */
/** `, "KEY": NUMBER` (rrt_app_json_number): a field after the first. */
void rrt_app_json_field(FILE *f, const char *key, double v);

/** Where human-readable text goes: stderr when the JSON report goes to
 *  stdout (so stdout holds one JSON document), else stdout. */
FILE *rrt_app_text_stream(const rrt_app_common *c);

/** Agree on the arguments before the subcommand's first collective:
 *  `parsed` is this rank's parse result (0 run, 1 --help printed, 2 usage
 *  error), c its common options (arguments, rank, the usage message kept
 *  by rrt_app_usage_error). Returns the same on every rank: 2 when any
 *  rank failed to parse (rank 0 prints that rank's message and keeps it in
 *  c->error for the JSON report) or got different arguments (rank 0 names
 *  the ranks and the first difference, and keeps that), else `parsed`.
 *  Collective, with the timeout (agree.c). */
int rrt_app_agree_args(MPI_Comm comm, rrt_app_common *c, int parsed);
/** The job's exit code: the highest of every rank's `rc` (a collective
 *  with the timeout, after the subcommand returned; agree.c). */
int rrt_app_agree_exit(MPI_Comm comm, int argc, char **argv, int rc);

/** A usage error: print "ringrt CMD: MESSAGE" on stderr on rank 0 only
 *  (every rank parses the same arguments), and keep the first message on
 *  every rank in c->error, for the JSON report and for rrt_app_agree_args
 *  (which has rank 0 print the message of another rank that failed). */
void rrt_app_usage_error(rrt_app_common *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Parse helpers: return 0 on success; a usage error "bad value for OPT:
 *  'TEXT' (...)" (rrt_app_usage_error) and -1 otherwise. */
int rrt_app_parse_long(rrt_app_common *c, const char *opt, const char *text, long lo, long hi,
                       long *out);
int rrt_app_parse_double(rrt_app_common *c, const char *opt, const char *text, double *out);

/* Subcommands. */
int rrt_cmd_info(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_attn(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_ilu(MPI_Comm comm, int argc, char **argv);
int rrt_cmd_seacells(MPI_Comm comm, int argc, char **argv);

#endif

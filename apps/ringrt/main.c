/* `ringrt`: one tool, one subcommand per workload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

typedef struct subcommand {
  const char *name;
  int (*run)(MPI_Comm comm, int argc, char **argv);
  const char *summary;
} subcommand;

static const subcommand commands[] = {
    {"info", rrt_cmd_info, "per-rank host, backend, device, binding, transport and versions"},
    {"attn", rrt_cmd_attn, "ring attention forward over the ranks"},
    {"ilu", rrt_cmd_ilu, "distributed ILU(0) and Krylov solve of a sparse system"},
    {"seacells", rrt_cmd_seacells, "SEACells metacells of single-cell data"},
};
static const int ncommands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f) {
  fprintf(f, "usage: ringrt [--version] [--help] COMMAND [options]\n\ncommands:\n");
  for (int i = 0; i < ncommands; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f,
          "\nRun `ringrt COMMAND --help` for a command's options. Launch with mpirun or srun,\n"
          "one rank per GPU (or per share of cores on the cpu backend).\n"
          "Environment: RINGRT_BACKEND=auto|cpu|cuda|emu, RINGRT_DEVICE, RINGRT_TIMEOUT,\n"
          "RINGRT_BIND=0|1, RINGRT_NCCL=0|1, RINGRT_EMU_THREADS, RINGRT_VERBOSE=1.\n\n%s",
          rrt_app_exit_help);
}

/* Started by a launcher (mpirun, srun, hydra) as one rank of a job? */
static int under_launcher(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

/* --help, --version, no or an unknown command: 0 printed (help, version),
 * 2 usage error (message printed when `print`). */
static int answer(int argc, char **argv, int print) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    if (print) usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    if (print) printf("ringrt %s\n", rrt_version());
    return 0;
  }
  if (print) {
    fprintf(stderr, "ringrt: unknown command '%s'\n", argv[1]);
    usage(stderr);
  }
  return 2;
}

/* The same answers as one rank of a job: every rank takes part in the
 * argument agreement, so one rank's --help or typo cannot leave the others
 * waiting for it (in MPI_Init or a first collective) forever. */
static int answer_in_job(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  rrt_app_common c; /* no subcommand: its name is "" */
  rrt_app_common_init(&c, "", MPI_COMM_WORLD, argc - 1, argv + 1);
  int rc = answer(argc, argv, 0);
  if (rc == 2 && argc >= 2) { /* the message is kept for the agreement (another rank's) */
    rrt_app_usage_error(&c, "unknown command '%s'", argv[1]);
    if (c.rank == 0) usage(stderr);
  } else if (c.rank == 0) {
    answer(argc, argv, 1);
  }
  rc = rrt_app_agree_args(MPI_COMM_WORLD, &c, rc == 0 ? 1 : rc);
  /* the same collectives as a subcommand's ranks make after it returned */
  rc = rrt_app_agree_exit(MPI_COMM_WORLD, argc - 1, argv + 1, rc == 1 ? 0 : rc);
  MPI_Finalize();
  return rc;
}

int main(int argc, char **argv) {
  const subcommand *cmd = NULL;
  for (int i = 0; i < ncommands && argc >= 2; i++)
    if (strcmp(argv[1], commands[i].name) == 0) cmd = &commands[i];
  /* No MPI needed to answer the rest: they must work outside mpirun too. */
  if (!cmd) return under_launcher() ? answer_in_job(argc, argv) : answer(argc, argv, 1);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rc = cmd->run(MPI_COMM_WORLD, argc - 1, argv + 1);
  /* A failure on some ranks only must still end the whole job with rc: the
   * highest code over the ranks wins (subcommands agree on their outcome,
   * so normally every rank returns the same code; see app.h). A collective
   * with the timeout, like every wait. */
  int worst = rrt_app_agree_exit(MPI_COMM_WORLD, argc - 1, argv + 1, rc);
  MPI_Finalize();
  return worst;
}

/* `ringrt`: one tool, one subcommand per workload. */
#include <stdio.h>
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

int main(int argc, char **argv) {
  /* No MPI needed to answer these: they must work outside mpirun too. */
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("ringrt %s\n", rrt_version());
    return 0;
  }
  const subcommand *cmd = NULL;
  for (int i = 0; i < ncommands; i++)
    if (strcmp(argv[1], commands[i].name) == 0) cmd = &commands[i];
  if (!cmd) {
    fprintf(stderr, "ringrt: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rc = cmd->run(MPI_COMM_WORLD, argc - 1, argv + 1);
  /* A failure on some ranks only must still end the whole job with rc: the
   * highest code over the ranks wins (subcommands agree on their outcome,
   * so normally every rank returns the same code; see app.h). */
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

/* Internal: the binding policy of rrt_bind_rank, written once for its two
 * topology sources: hwloc (comm/bind_hwloc.c) and, in a build without hwloc,
 * what the OS gives (sched_getaffinity and /sys, comm/bind_os.c).
 *
 * cpu/emu: the node's cores are split evenly and without overlap between the
 * ranks of the node (by local rank); with more ranks than cores each rank
 * gets one core, round robin. A launcher that already bound the rank more
 * narrowly than the allowed set (Slurm --cpu-bind, mpirun --bind-to core)
 * wins: we keep its binding and only size the thread pools to it.
 * cuda: the cores near the GPU.
 *
 * Only when asked (RINGRT_BIND=1, rrt_ctx_config.bind = 1; the `ringrt`
 * tool asks unless RINGRT_BIND=0): inside someone else's program the
 * affinity and the thread counts are the program's. */
#ifndef RRT_COMM_BIND_H
#define RRT_COMM_BIND_H

#include "comm/ctx.h"

/** The cores [*first, *first + *count) of `ncores` (> 0) that local rank
 *  `local_rank` of `local_size` gets. */
void rrt_bind_even_share(int local_rank, int local_size, int ncores, int *first, int *count);

/** Asked to bind: size OpenMP and BLAS to the `cores` the rank is bound to (ranks sharing a
 *  GPU's neighbourhood share its cores unless the launcher bound them). */
void rrt_bind_set_threads(rrt_ctx_t ctx, int cores, int launcher_bound);

#endif

/* Internal: state of a SEACells run shared by the files of src/api/seacells_*.c.
 *
 * Data layout (per rank; n cells, nl local from global c0, m archetypes):
 *   M rows (local, CSR, global columns ascending, diagonal included),
 *   K = M M rows (local, CSR: the 2-hop neighbourhood), never dense;
 *   B replicated and sparse (column j: at most fw_iter cells) with a by-cell
 *   index of n entries; A local, at most min(m, fw_iter) weights per cell,
 *   replicated as CSR when the B update needs K A^T;
 *   k x k products (B^T K B, A A^T) replicated, summed on every rank in
 *   global cell order from replicated sparse rows (no cross-rank sum). */
#ifndef RRT_API_SEACELLS_INTERNAL_H
#define RRT_API_SEACELLS_INTERNAL_H

#include <stdint.h>

#include "ringrt/seacells.h"
#include "sched/cell_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sc_csr {
  int64_t rows;
  int64_t *ptr; /* rows + 1 */
  int32_t *col; /* global cell (or archetype) indices, ascending within a row */
  double *val;
} sc_csr;

void sc_csr_free(sc_csr *a);

/* Replicated sparse B: column j holds cells cell[j*cap .. + nnz[j]) ascending. */
typedef struct sc_bmat {
  int m, cap;
  int *nnz;
  int32_t *cell;
  double *w;
  /* by-cell index: entries [first[c], first[c] + cnt[c]) of ent_j/ent_w, j ascending */
  int64_t n;
  int32_t *first, *cnt; /* n each; cnt 0 for cells outside the support */
  int32_t *ent_j;
  double *ent_w;
  int32_t *touched; /* cells whose first/cnt are set (to reset cheaply) */
  int nent;
} sc_bmat;

typedef struct sc_run {
  rrt_ctx_t ctx;
  rrt_seacells_options opt;
  int rank, size;
  int64_t n, c0, nl;
  int d, m, knn, capa;
  int use_device; /* emu or cuda: heavy kernels through src/kernels/cuda */
  rrt_cell_blocks plan;
  const double *x; /* local coordinates, nl x d */
  /* graph */
  int32_t *nbr; /* nl x knn, global indices */
  double *nbr_d2;
  double *sigma; /* nl bandwidths */
  sc_csr mrow, krow;
  /* state */
  sc_bmat b;
  int32_t *a_idx; /* nl x capa */
  double *a_w;
  int *a_nnz;
  double *t1a; /* m x m: B^T K B */
  double *t1b; /* m x m: A A^T */
  int64_t *archetypes;
  double *rss;
  int iters, converged;
  double sec[6];
} sc_run;

/* The public handle (rrt_seacells_t) is the run state. */
struct rrt_seacells {
  sc_run s;
};

enum { SC_KNN = 0, SC_KERNEL, SC_INIT, SC_UPDATE_A, SC_UPDATE_B, SC_RSS };

/* Host-memory collectives for every backend (cuda: staged through device
 * buffers, since the transport there works on device memory). */
rrt_status sc_allreduce_host(sc_run *s, void *buf, size_t count, int dtype, int op);
rrt_status sc_allgatherv_host(sc_run *s, const void *send, size_t bytes, void **recv,
                              size_t *total);
rrt_status sc_bcast_host(sc_run *s, void *buf, size_t bytes, int root);
/* All-to-all of variable byte counts: sendcount[r] bytes at senddispl[r]
 * go to rank r; *recv (malloc'd) holds what every rank sent here, in rank
 * order, with recvcount[r] bytes from rank r. */
rrt_status sc_alltoallv_host(sc_run *s, const void *send, const size_t *sendcount,
                             const size_t *senddispl, void **recv, size_t *recvcount);
/* Sum over all cells of per-cell values, taken per fixed block in cell order
 * and then over blocks in order: the same bits for any rank count. */
rrt_status sc_block_sum(sc_run *s, const double *local_vals, double *sum);

/* State arrays for s->m metacells (seacells.c); sc_run_free frees
 * everything a run allocated (the tests drive the pieces one by one). */
rrt_status sc_alloc_state(sc_run *s);
void sc_run_free(sc_run *s);

/* Graph (seacells_graph.c): kNN by the ring, bandwidths, union kernel rows
 * of M, ghost rows, K rows. */
rrt_status sc_build_graph(sc_run *s);

/* Initial archetypes (seacells_init.c): fills s->archetypes. */
rrt_status sc_init_archetypes(sc_run *s);

/* Frank-Wolfe (seacells_fw.c). */
rrt_status sc_b_from_archetypes(sc_run *s);
rrt_status sc_update_t1a(sc_run *s);
rrt_status sc_update_a(sc_run *s, int first);
rrt_status sc_update_b(sc_run *s);
rrt_status sc_compute_rss(sc_run *s, double *rss);
rrt_status sc_bmat_index(sc_bmat *b);

#ifdef __cplusplus
}
#endif
#endif

/* Internal: state of a SEACells run shared by the files of src/seacells/.
 *
 * Data layout (per rank; n cells, nl local from global c0, m archetypes):
 *   M rows (local, CSR, global columns ascending, diagonal included) and the
 *   ghost rows of M (remote cells that local rows reference);
 *   K = M M is never stored (its rows, the 2-hop neighbourhoods, grow with
 *   the in-degree of hub cells, i.e. superlinearly in n): products with K
 *   are taken as M (M Y), with M Y held as a by-cell index (rrt_sc_yidx);
 *   B replicated and sparse (column j: at most fw_iter cells) with a by-cell
 *   index of n entries; A local, at most min(m, fw_iter) weights per cell,
 *   replicated as CSR when the B update needs K A^T;
 *   k x k products (B^T K B, A A^T) replicated as sparse rows (gram.c:
 *   only the archetype pairs that share a cell), each entry summed in global
 *   cell order from replicated sparse rows (no cross-rank sum); each rank
 *   forms a share of the rows and an allgatherv replicates them. */
#ifndef RRT_SEACELLS_INTERNAL_H
#define RRT_SEACELLS_INTERNAL_H

#include <stdint.h>

#include "kernels/seacells_table.h"
#include "ringrt/seacells.h"
#include "sched/cell_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_sc_csr {
  int64_t rows;
  int64_t *ptr; /* rows + 1 */
  int32_t *col; /* global cell (or archetype) indices, ascending within a row */
  double *val;
} rrt_sc_csr;

void rrt_sc_csr_free(rrt_sc_csr *a);

/* Replicated sparse B: column j holds cells cell[j*cap .. + nnz[j]) ascending. */
typedef struct rrt_sc_bmat {
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
} rrt_sc_bmat;

/* A sparse matrix with rows over global cells (M Y for Y = B or A^T), kept
 * as a by-cell index for the rows held (local and ghost cells): row c is
 * entries [first[c], first[c] + cnt[c]) of ent_j/ent_w, columns ascending. */
typedef struct rrt_sc_yidx {
  int32_t *first, *cnt; /* n each; cnt 0 for rows not held */
  int32_t *ent_j;
  double *ent_w;
  int64_t nent, cap;
  int32_t *rows; /* the rows held (local and ghost cells), also to reset cheaply */
  int64_t *src;  /* nrows: where M row rows[r] lies (rrt_sc_m_row_at), found once */
  int64_t nrows;
  int64_t *ptr; /* nrows + 1: where rows[r] starts (rrt_sc_cpu_rows' output) */
} rrt_sc_yidx;

typedef struct rrt_sc_ghosts {
  int64_t count;
  int32_t *cell; /* ascending */
  rrt_sc_csr rows;
} rrt_sc_ghosts;

typedef struct rrt_sc_run {
  rrt_ctx_t ctx;
  rrt_seacells_options opt;
  int rank, size;
  int64_t n, c0, nl;
  int d, m, knn, capa;        /* knn: neighbours searched per cell (rrt_sc_graph_convention) */
  int kbw;                    /* bandwidth: distance to the kbw-th nearest other cell */
  const rrt_sc_kernels *kern; /* the backend's kernels, chosen when the run is made */
  rrt_cell_blocks plan;
  const double *x; /* local coordinates, nl x d: x_own, or the caller's rows during a call */
  double *x_own;   /* the handle's copy: it outlives the create call (Python keeps handles) */
  int64_t *given;  /* a copy of opt.archetypes (INIT_GIVEN), for the same reason */
  /* graph */
  int32_t *nbr; /* nl x knn, global indices */
  double *nbr_d2;
  double *sigma; /* nl bandwidths */
  rrt_sc_csr mrow;
  rrt_sc_ghosts ghost;
  int32_t *order;     /* nl local rows in a locality order (locality.c); NULL: ascending */
  int32_t *row_order; /* the local and ghost cells (global) in that order, for M Y */
  double *kdiag;      /* nl: K_ii */
  rrt_sc_yidx mb;     /* M B for the current B (rrt_sc_update_t1a builds it) */
  int64_t kat_budget; /* K A^T entries per local cell kept by the B update (cpu) */
  /* state */
  rrt_sc_bmat b;
  int32_t *a_idx; /* nl x capa */
  double *a_w;
  int *a_nnz;
  rrt_sc_csr t1a; /* B^T K B, sparse rows over archetypes */
  rrt_sc_csr t1b; /* A A^T (during the B update) */
  int64_t *archetypes;
  double *rss;
  int rss_cap;     /* values rss holds (it grows with rrt_seacells_step) */
  int initialized; /* archetypes chosen and A0 formed (rrt_seacells_initialize) */
  int iters, converged;
  double sec[6];
} rrt_sc_run;

/* The public handle (rrt_seacells_t) is the run state. */
struct rrt_seacells {
  rrt_sc_run s;
};

enum {
  RRT_SC_PHASE_KNN = 0,
  RRT_SC_PHASE_KERNEL,
  RRT_SC_PHASE_INIT,
  RRT_SC_PHASE_UPDATE_A,
  RRT_SC_PHASE_UPDATE_B,
  RRT_SC_PHASE_RSS
};

/* Sum over all cells of per-cell values, taken per fixed block in cell order
 * and then over blocks in order: the same bits for any rank count
 * (cell_reduce.c). */
rrt_status rrt_sc_block_sum(rrt_sc_run *s, const double *local_vals, double *sum);
/* Global argmax of the local cells' scores, lowest cell on ties (cell_reduce.c). */
rrt_status rrt_sc_argmax(rrt_sc_run *s, const double *score, int64_t *best);

/* State arrays for s->m metacells (run.c); rrt_sc_run_free frees
 * everything a run allocated (the tests drive the pieces one by one). */
rrt_status rrt_sc_alloc_state(rrt_sc_run *s);
void rrt_sc_run_free(rrt_sc_run *s);

/* The reference's graph convention for n_neighbors (scanpy's
 * sc.pp.neighbors as SEACells calls it): *count other cells per kNN list,
 * n_neighbors - 1 below RRT_SC_DENSE_KNN_MAX cells (scanpy's exact path
 * counts the cell itself) and n_neighbors from there on (its pynndescent
 * path asks for n_neighbors + 1 and drops only the self); *kbw =
 * n_neighbors / 2 (SEACells' bandwidth neighbour, self not counted). */
#define RRT_SC_DENSE_KNN_MAX 8192
void rrt_sc_graph_convention(int64_t n, int n_neighbors, int *count, int *kbw);

/* Graph (graph.c): kNN by the ring, bandwidths, union kernel rows
 * of M, ghost rows, K rows. */
rrt_status rrt_sc_build_graph(rrt_sc_run *s);
/* What follows the local rows of M, built or given (graph.c): the ghost
 * rows, K's diagonal, the locality order. */
rrt_status rrt_sc_finish_graph(rrt_sc_run *s);
/* A given kernel's local rows (given_kernel.c): validated, copied into
 * s->mrow, finished as a built one, and checked symmetric bit for bit. */
rrt_status rrt_sc_use_kernel(rrt_sc_run *s, const rrt_seacells_matrix *m);
/* Exact kNN of the local cells (k other cells each, (d2, index) order) by
 * the ring: *nbr and *nbr_d2 are malloc'd nl x k (graph.c). */
rrt_status rrt_sc_knn(rrt_sc_run *s, int k, int32_t **nbr, double **nbr_d2);

/* Breadth-first order over the kNN graph of the local cells (s->order),
 * each ghost row placed after its first local reader (s->row_order): the
 * order in which per-cell rows are formed and stored, so that rows read
 * together lie together. Changes no value (locality.c). */
rrt_status rrt_sc_locality_order(rrt_sc_run *s);

/* Index of global cell c among the ghost cells (ascending), or -1 (mprod.c). */
int64_t rrt_sc_ghost_index(const rrt_sc_ghosts *g, int32_t c);

/* Row l (global) of M, local or ghost: l must be local or referenced by a
 * local row. rrt_sc_m_src says where it lies (its local index, or nl plus
 * its ghost index: a binary search), rrt_sc_m_row_at reads it from there. */
int64_t rrt_sc_m_src(const rrt_sc_run *s, int32_t l);
void rrt_sc_m_row_at(const rrt_sc_run *s, int64_t src, const int32_t **col, const double **val,
                     int64_t *len);
void rrt_sc_m_row(const rrt_sc_run *s, int32_t l, const int32_t **col, const double **val,
                  int64_t *len);

/* Row i (local) of K = M M, columns ascending, each entry summed over l
 * ascending; scratch: acc (n doubles), mark (n, zero), list (n); the row
 * is returned in list (columns) and vals (values, caller's n doubles). */
int64_t rrt_sc_k_row(const rrt_sc_run *s, int64_t i, double *acc, char *mark, int32_t *list,
                     double *vals);

/* out = M Y for the local and ghost rows; Y by cell (yfirst/ycnt over the n
 * cells, entries yj/yw). Row l sums over M row l in ascending column order. */
rrt_status rrt_sc_mprod(rrt_sc_run *s, const int32_t *yfirst, const int32_t *ycnt,
                        const int32_t *yj, const double *yw, rrt_sc_yidx *out);
void rrt_sc_yidx_free(rrt_sc_yidx *y);

/* The nev largest eigenpairs of a symmetric operator y = S x over the
 * local cells (sym_eigs.c): vals decreasing, vecs nev x nl (unit norm, sign
 * as the solver leaves it); residuals |S x - val x| <= tol; the same bits
 * for any rank count when mv is; *products: the products with S taken. */
typedef rrt_status (*rrt_sc_matvec_fn)(rrt_sc_run *s, void *arg, const double *x, double *y);
rrt_status rrt_sc_sym_eigs(rrt_sc_run *s, rrt_sc_matvec_fn mv, void *arg, int nev, double tol,
                           double *vals, double *vecs, int *products);

/* Diffusion components as palantir computes them for SEACells
 * (run_diffusion_maps on the input coordinates: 30 neighbours, adaptive
 * kernel, the eigenvectors of the row-normalised kernel) and its
 * multiscale space over eigenvectors 1..n_eigs-1, scaled by l / (1 - l)
 * (diffmap.c): dc is nl x (n_eigs - 1), row-major, malloc'd; eigvals
 * (n_eigs values) may be NULL. Eigenvector signs: the entry of largest
 * magnitude (lowest cell on ties) positive. */
rrt_status rrt_sc_diffusion_components(rrt_sc_run *s, int n_eigs, double **dc, double *eigvals);
/* palantir's (and so SEACells.evaluate's and the waypoints') n_eigs. */
#define RRT_SC_DM_EIGS 10

/* Compactness and separation of the hard assignments (local cells, -1:
 * none) on the local rows of x (nl x d), collective (metrics.c). */
rrt_status rrt_sc_metrics_on(rrt_sc_run *s, const double *x, int d, const int64_t *assign,
                             double *compactness, double *separation);

/* splitmix64: seeded draws from a global cell index, the same for any rank
 * count (the max-min start, the eigensolver's start vector). */
static inline uint64_t rrt_sc_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* np.random.default_rng(seed).integers(n) for n <= 2^32, bit for bit
 * (np_random.c); every rank draws the same numbers. */
typedef struct rrt_np_rng {
  uint64_t state[2], inc[2]; /* 128-bit, high word first */
  int has32;
  uint32_t buf32;
} rrt_np_rng;
void rrt_np_rng_seed(rrt_np_rng *r, uint64_t seed);
int64_t rrt_np_rng_integers(rrt_np_rng *r, int64_t n);

/* G = sum over rows c of y_c y_c^T for ncells sparse rows over the s->m
 * archetypes (cptr/col/val, columns ascending), as sparse rows, each entry
 * summed over the rows in order (gram.c). Collective: the rows must be the
 * same on every rank, each rank forms a share of G's rows and all of G is
 * gathered everywhere; every rank calls it or none does. */
rrt_status rrt_sc_gram(rrt_sc_run *s, int64_t ncells, const int64_t *cptr, const int32_t *col,
                       const double *val, rrt_sc_csr *g);
/* The archetype-by-archetype view the kernels take of such a matrix. */
static inline rrt_sc_kk rrt_sc_kk_of(const rrt_sc_run *s, const rrt_sc_csr *g) {
  return (rrt_sc_kk){s->m, g->ptr, g->col, g->val};
}

/* Initial archetypes (init.c): fills s->archetypes. */
rrt_status rrt_sc_init_archetypes(rrt_sc_run *s);
/* Greedy column subset selection on K (cssp.c): the first count columns
 * (count <= n) into out. */
rrt_status rrt_sc_cssp(rrt_sc_run *s, int count, int64_t *out);
/* The reference's default: max-min waypoints on the diffusion components,
 * then greedy CSSP for the rest (waypoint.c). */
rrt_status rrt_sc_init_waypoint(rrt_sc_run *s);

/* Frank-Wolfe (fw.c). */
rrt_status rrt_sc_b_from_archetypes(rrt_sc_run *s);
rrt_status rrt_sc_update_t1a(rrt_sc_run *s);
rrt_status rrt_sc_update_a(rrt_sc_run *s, int first);
rrt_status rrt_sc_update_b(rrt_sc_run *s);
rrt_status rrt_sc_compute_rss(rrt_sc_run *s, double *rss);
rrt_status rrt_sc_bmat_index(rrt_sc_bmat *b);

#ifdef __cplusplus
}
#endif
#endif

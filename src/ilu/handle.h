/* Internal: the distributed level-scheduled ILU(0) behind rrt_ilu0_t.
 *
 * Rows never move. An ordering only assigns every row a position in the
 * elimination order; row i depends on the columns k of its pattern with
 * pos(k) < pos(i). Within a row, entries are kept sorted by position (L part,
 * diagonal, U part), so the IKJ updates run in the serial order and the
 * factors are bitwise those of the serial ILU(0) of P A P^T.
 *
 * Files: create.c (rrt_ilu0_create in phases, destroy, queries),
 * setup.c (helpers of the phases), fill.c, fill_rows.c, fill_root.c (the
 * ILU(k) pattern), ordering.c (positions, ordering
 * names), ordering_dd.c (the domain-decomposition orderings), ordering_dist.c (RCM and multicolour
 * without a gather on every rank), analysis.c (factor storage order, ghost requests, U rows of
 * ghosts, update pairs), levels.c (level sets, schedule lists, coarse levels), plans.c (message
 * plans, halos, backend copies), factor.c (rrt_ilu0_factor), apply.c (rrt_ilu0_apply), transpose.c
 * (rrt_ilu0_apply_transpose). */
#ifndef RRT_ILU_HANDLE_H
#define RRT_ILU_HANDLE_H

#include <stdint.h>

#include "comm/halo.h"
#include "kernels/ilu0_table.h"
#include "ringrt/ilu.h"
#include "sparse/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RRT_ILU0_OP_CREATE "rrt_ilu0_create"
/* The name a collective of the analysis gives in errors and timeouts:
 * the phase, e.g. RRT_ILU0_OP_ANALYSIS("levels") = "ilu0 analysis: levels". */
#define RRT_ILU0_OP_ANALYSIS(phase) "ilu0 analysis: " phase
/* Average rows per level below which one cpu rank sweeps sequentially. */
#define RRT_ILU0_SEQ_ROWS_PER_LEVEL 8192
/* Most subdomains options.dd_blocks may ask for (sched/dd_order.h). */
#define RRT_ILU0_DD_BLOCKS_MAX (1 << 20)
/* Most levels of fill options.levels may ask for (levels are int32). */
#define RRT_ILU0_LEVELS_MAX (1 << 20)

struct rrt_ilu0 {
  /* The matrix the analysis and the factorisation run on: the user's, or
   * for levels > 0 the padded one (Afill, owned: the user's pattern plus
   * explicit zeros at the fill), whose values rrt_ilu0_factor refreshes
   * from Auser through amap (A's local entry -> Afill's). */
  rrt_sparse_t A;
  rrt_sparse_t Auser, Afill;
  int64_t *amap;
  int64_t *fill_pos; /* other orders than natural: the local rows' positions, computed on A
                      * before the fill, for the padded matrix's positions phase */
  /* Transpose apply (transpose.c): the handle of M^T = L' U' (L' = U^T
   * D^-1, U' = D L^T) on its own matrix, built at the first transpose
   * apply, its values refreshed after each factorisation (tstale). */
  struct rrt_ilu0 *T;
  rrt_sparse_t At;
  int32_t *tdest; /* per local factor entry: the rank owning its column */
  int64_t *tperm; /* per received transposed entry: its index in At's local entries */
  int tstale;
  rrt_ctx_t ctx;
  const rrt_ilu0_kernels *k; /* A's kernel table */
  rrt_ilu0_options opt;
  int64_t nloc, next, nnz, nval;
  int64_t *pos_ext;         /* position of every extended row */
  const int64_t *given_pos; /* rrt_ilu0_create_at's positions (during the analysis only) */
  /* Phases of the elimination order (dd orderings; otherwise nphase = 0):
   * phase j holds the positions phase_start[j] .. phase_start[j + 1] - 1
   * (the last to n - 1), e.g. the interiors, then the interface (or each
   * colour of it). On several cpu ranks a phase is one coarse schedule level
   * (levels.c), so ranks sweep their interiors at the same time. */
  int nphase;
  int64_t *phase_start;
  /* Factor storage (value indices): the L parts of all local rows first
   * (row i: lr[2i] .. lr[2i+1]), then the diagonal and U parts (row i:
   * diagonal at ur[2i], U from ur[2i] + 1 to ur[2i+1]), then the U rows of
   * ghost rows. Within a part, rows in elimination order and entries by
   * position. Keeping L and U apart halves the memory each triangular solve
   * streams; the elimination order keeps a level's rows (e.g. one colour)
   * together in memory. */
  rrt_ilu0_idx *lr, *ur; /* 2 nloc each: [begin, end) per row */
  int64_t nlv;           /* L entries (the L part is values 0 .. nlv) */
  int32_t *porder;       /* local rows in elimination order (U sweeps walk it backwards) */
  int32_t *fcol;         /* extended column per value index */
  int32_t *fperm;        /* value index -> A's local entry (32-bit: less to stream per factor); NULL
                          * where every row is stored as A holds it (rrt_ilu0_factor_args) */
  rrt_ilu0_idx *gofs;    /* ghost U rows in v: nnz + gofs[g] .. nnz + gofs[g + 1] */
  int32_t *pair_dst, *pair_src;
  rrt_ilu0_idx *pair_ptr;
  int nlev[2];        /* L, U: levels (reported; -1 until rrt_ilu0_count_levels) */
  int nsched[2];      /* schedule levels (coarse levels when coarse[side] > 1) */
  int coarse[2];      /* levels per schedule level (1: plain level scheduling) */
  int64_t *hist[2];   /* global rows per level */
  int64_t *levptr[2]; /* local rows per level: levptr[l-1] .. levptr[l] */
  int32_t *levrows[2];
  rrt_halo hf, hl, hu; /* factor rows, L solve, U solve */
  /* backend views of lr .. levrows (the host arrays on cpu and emu) */
  rrt_ilu0_idx *d_lr, *d_ur, *d_pair_ptr, *d_gofs;
  int32_t *d_col, *d_fperm, *d_pair_dst, *d_pair_src, *d_lev[2];
  double *d_v, *d_y, *d_z, *d_dinv; /* d_dinv: 1 / u_ii per local row */
  float *d_vf;                      /* factors_f32: fl32 of the local factors, else NULL */
  double *h_v;                      /* host staging of the first nnz values */
  /* the pivots are gathered on the backend and only they come back for the
   * zero-pivot check (not the whole factor); NULL on cpu, which reads
   * them in place */
  int32_t *d_didx; /* ur[2i] */
  double *d_diag, *h_diag;
  int32_t *seq_order; /* host-sequential kernels, one rank, small levels: rows by position */
  /* Sync-free sweeps (the table's *_chain kernels, unless RINGRT_ILU_SWEEP=
   * levels): a run of levels with no message between them is one launch.
   * d_done and d_ticket are rrt_ilu0_chain's flags and counter; chain_gen
   * the stamp of the latest sweep. */
  int chain;
  int32_t chain_gen;
  int32_t *d_done;
  unsigned long long *d_ticket;
  double fflops, aflops;
};

/* What the phases of rrt_ilu0_create hand each other (freed at its end). */
typedef struct rrt_ilu0_setup {
  int64_t nreq;      /* rows other ranks asked this rank for */
  int64_t *req;      /* nreq records (global row, side flags: bit 0 L, bit 1 U) */
  int32_t *req_src;  /* the asking rank of each request */
  int32_t *gflag;    /* per ghost: bit 0 read by L, bit 1 by U */
  int32_t *lev[2];   /* L, U: schedule level of every extended row (0 unknown) */
  int32_t *gneed[2]; /* per ghost: earliest local schedule level reading it */
  int64_t *glen;     /* per ghost: length of its U row (diagonal included) */
  int32_t *gcol_ext; /* the ghost U rows' columns as extended indices (next: absent) */
} rrt_ilu0_setup;

/* setup.c */
void rrt_ilu0_setup_free(rrt_ilu0_setup *s);

rrt_status rrt_ilu0_nomem(rrt_ctx_t ctx, const char *op);
/* Arrays from this size on are 2 MiB aligned, so that where transparent
 * huge pages are `always` they map whole: the analysis writes every array
 * it allocates once, and with 4 KiB pages the page faults were most of its
 * time (measured: 80 MB written in 70-110 ms with 4 KiB pages, 13-27 ms
 * with huge pages). No MADV_HUGEPAGE: see rrt_ilu0_alloc. */
#define RRT_ILU0_HUGE_BYTES ((size_t)4 << 20)
#define RRT_ILU0_HUGE_ALIGN ((size_t)2 << 20)
/** Uninitialised host memory for the analysis' large arrays (free()
 *  releases it); NULL when out of memory. */
void *rrt_ilu0_alloc(size_t bytes);
/** Backend copy of `bytes` of host memory (at least 8 bytes allocated). */
rrt_status rrt_ilu0_upload(rrt_ctx_t ctx, void **dst, const void *src, size_t bytes);
/** The backend's view of a host array the handle keeps: the array itself
 *  where backend memory is host memory (cpu, emu), else an upload. Release
 *  with rrt_ilu0_unshare(ctx, *dst, src). */
rrt_status rrt_ilu0_share(rrt_ctx_t ctx, void **dst, void *src, size_t bytes);
void rrt_ilu0_unshare(rrt_ctx_t ctx, void *dst, const void *src);

/* fill.c */
/** ILU(k) symbolic factorisation (opt.levels > 0): the filled pattern over
 *  the ranks, the padded matrix M->Afill; M->A becomes it (M->Auser the
 *  caller's), M->nnz and M->next follow. Collective. */
/* Agreed structural-singularity check (analysis.c): `missing` is this
 * rank's lowest global row without a diagonal entry (INT64_MAX: none);
 * every rank then names the same row, or all succeed. */
rrt_status rrt_ilu0_agree_missing(rrt_ilu0_t M, int64_t missing);

rrt_status rrt_ilu0_fill(rrt_ilu0_t M);
/* fill_root.c */
/** The filled pattern in an order other than natural (M->pos_ext computed
 *  on A): gathered, filled and scattered back by rank 0; *ptr, *col the
 *  local rows (malloc'd, global columns sorted). Collective. */
rrt_status rrt_ilu0_fill_root(rrt_ilu0_t M, int64_t **ptr, int64_t **col);

/* ordering.c */
/** Position of every extended row in the elimination order (M->pos_ext). Collective. */
rrt_status rrt_ilu0_positions(rrt_ilu0_t M);

/* ordering_dd.c */
/** Positions of the dd orderings (M->pos_ext) and their phases, from the
 *  local rows, the ghost lists and exchanged counts (the coloured interface
 *  also gathers the interface pattern). Collective. */
rrt_status rrt_ilu0_dd_positions(rrt_ilu0_t M);

/* ordering_dist.c */
/** RCM or multicolour positions of the local and ghost rows (M->pos_ext)
 *  without the whole pattern on every rank: multicolour is coloured where
 *  the rows live, RCM computed on rank 0 from the pattern gathered there.
 *  Collective. */
rrt_status rrt_ilu0_positions_dist(rrt_ilu0_t M);
/** pos_ext of the ghosts from the positions of the local rows
 *  (pos_ext[0 .. nloc)), fetched from their owners. Collective. */
rrt_status rrt_ilu0_ghost_positions(rrt_ilu0_t M, const char *op);

/* create.c */
/** rrt_ilu0_create with the positions of the local rows given (pos: nloc
 *  entries, copied; NULL: from options->ordering): the transpose apply's
 *  handle keeps the elimination order of the handle it transposes. */
rrt_status rrt_ilu0_create_at(rrt_sparse_t A, const rrt_ilu0_options *options, const int64_t *pos,
                              rrt_ilu0_t *ilu);

/* apply.c */
/** rrt_ilu0_apply without the caller's stream ordering (transpose.c). */
rrt_status rrt_ilu0_apply_host(rrt_ilu0_t M, const double *r, double *z);

/* analysis.c */
/** Factor storage order (lr, ur, fcol, fperm, porder) and the agreed
 *  structural check: a row without a diagonal entry is RRT_ERR_SINGULAR on
 *  every rank, naming the lowest such global row. Collective. */
rrt_status rrt_ilu0_factor_order(rrt_ilu0_t M);
/** Which ghosts L and U read, sent to their owners (S->gflag, S->req). Collective. */
rrt_status rrt_ilu0_ghost_requests(rrt_ilu0_t M, rrt_ilu0_setup *S);
/** The U rows of the L ghosts from their owners: lengths, columns (S->glen,
 *  S->gcol_ext, M->gofs, M->nval). Collective. */
rrt_status rrt_ilu0_ghost_urows(rrt_ilu0_t M, rrt_ilu0_setup *S);
/** Update pairs of every L entry (the IKJ schedule) and the
 *  global flop counts. Uses S->lev[0] as scratch (run it after the last
 *  reader of the levels, rrt_ilu0_halos). Collective. */
rrt_status rrt_ilu0_update_pairs(rrt_ilu0_t M, rrt_ilu0_setup *S);

/* levels.c */
/** Level sets of L and U across ranks, the schedule (coarse levels where
 *  they pay), the sequential path, and S->gneed. Collective. */
rrt_status rrt_ilu0_schedule(rrt_ilu0_t M, rrt_ilu0_setup *S);
/** The reported levels (M->nlev, M->hist) where the analysis left them
 *  uncounted (nlev -1: one rank sweeping sequentially on one thread, which
 *  needs none); a no-op once counted. Local (one rank). */
rrt_status rrt_ilu0_count_levels(rrt_ilu0_t M);
/** The last schedule level of the run that starts at `level` on `side`
 *  (0: L and the factorisation, 1: U): with sync-free sweeps the levels up
 *  to the next one that posts a message of halo h, else `level` itself. A
 *  run's receives were all posted before it, so they can be awaited before
 *  its launch. */
int rrt_ilu0_run_end(rrt_ilu0_t M, const rrt_halo *h, int side, int level);
/** Compute the rows rows[0 .. n) of one schedule level or run of levels
 *  (r: the right-hand side of a solve, NULL for the factorisation). */
typedef rrt_status (*rrt_ilu0_level_fn)(rrt_ilu0_t M, const int32_t *rows, int64_t n,
                                        const double *r, rrt_ilu0_chain c);
/** One sweep over `side`'s schedule levels (0: L or the factorisation, 1:
 *  U): each level or run of levels after the receives it needs (scattered
 *  into x), its rows computed by `run`, then its rows sent from x; at the
 *  end every exchange is complete. Collective. */
rrt_status rrt_ilu0_sweep(rrt_ilu0_t M, int side, rrt_halo *h, double *x, rrt_ilu0_level_fn run,
                          const double *r);

/* plans.c */
/** Message plans of the factorisation and both solves, as halos. Collective. */
rrt_status rrt_ilu0_halos(rrt_ilu0_t M, const rrt_ilu0_setup *S);
/** Backend copies of the factor structure, the factor and work vectors. */
rrt_status rrt_ilu0_backend_alloc(rrt_ilu0_t M);

#ifdef __cplusplus
}
#endif
#endif

/* ringrt: ring attention (context-parallel attention), forward and backward.
 *
 * The sequence is split over the P ranks of the context. Every rank passes
 * its shard of Q, K and V in BSHD order ([batch, seq_local, heads, head_dim],
 * row-major) in the context's backend memory (host for cpu/emu, device for
 * cuda); K/V travel around the ring while each rank attends its queries to
 * the block it holds and folds the result into running f32 accumulators
 * with an online-softmax (log-sum-exp) merge.
 *
 * Layouts say which global positions a rank's shard holds. Any length
 * works (uneven splits are padded and masked internally, never by the
 * caller); for S divisible by P (2P for zigzag) they are the classic ones:
 *   contiguous: rank r holds [floor(r*S/P), floor((r+1)*S/P))
 *   zigzag:     2P chunks, chunk c = [floor(c*S/2P), floor((c+1)*S/2P));
 *               rank r holds chunks r and 2P-1-r; balanced causal work
 *   stripe:     token i on rank i % P, local index i / P
 * With packed documents (cu_seqlens) contiguous and stripe apply to the
 * packed sequence; zigzag applies to every document (TransformerEngine's
 * THD convention): document d of length n is cut into 2P chunks at
 * floor(c*n/2P), rank r holds chunks r and 2P-1-r of every document, in
 * document order. Shards may differ in length by rank, and may be empty.
 * Use rrt_attn_shard_len() / rrt_attn_shard_positions() rather than
 * re-deriving them.
 *
 * Outputs: O in q's dtype and layout; LSE f32 [batch, heads_q, seq_local],
 * the natural log of the softmax denominator of the scaled scores (what the
 * backward pass needs): of the soft-capped scores with `softcap`, and
 * including the sink term with `sinks` (version 3). A fully masked row cannot occur (every query
 * sees itself); within one ring step a row may see no key, and that partial result is empty (O = 0,
 * LSE = -inf) and merges as nothing.
 *
 * NaN and Inf propagate as in a float64 softmax (and torch): a NaN score
 * makes its row's O and LSE NaN; a +Inf score makes the row NaN (inf - inf);
 * a -Inf score drops that key, and a row whose every visible score is -Inf
 * is NaN (with `softcap`, -Inf and +Inf scores are first capped to -softcap
 * and +softcap, as in the float64 reference). The result does not depend on
 * the rank count or the backend.
 * Non-finite V (and, in the backward, non-finite Q, K or dO) may reach rows
 * that share a kernel tile with the key but cannot see it (0 x NaN in the
 * tile products, as in torch's matmul-based attention): a NaN is never
 * hidden, but it can reach more entries than the float64 reference's.
 */
#ifndef RINGRT_ATTN_H
#define RINGRT_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/context.h"
#include "ringrt/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rrt_attn_layout {
  RRT_ATTN_CONTIGUOUS = 0,
  RRT_ATTN_ZIGZAG,
  RRT_ATTN_STRIPE,
  RRT_ATTN_LAYOUT_COUNT
} rrt_attn_layout;

/** How the ranks share the sequence's work (context-parallel communication,
 *  TransformerEngine's cp_comm_type); docs/attn.md "Context-parallel modes".
 *  Every mode computes the same attention (the same masks and layouts). */
typedef enum rrt_cp_comm {
  RRT_CP_RING = 0,  /**< K/V blocks travel around the ring (p2p), overlapped with compute */
  RRT_CP_A2A,       /**< Ulysses: all-to-all to head shards over the whole sequence;
                         heads_q % P == 0 */
  RRT_CP_ALLGATHER, /**< all-gather K/V, attend locally; reduce-scatter dK/dV */
  RRT_CP_A2A_RING,  /**< all-to-all inside groups of cp_inner ranks, ring across them */
  RRT_CP_AUTO,      /**< the cost model's choice (ringrt attn --explain prints it) */
  RRT_CP_COUNT
} rrt_cp_comm;

/** "ring", "a2a", "allgather", "a2a+ring", "auto". */
RRT_API const char *rrt_cp_comm_name(rrt_cp_comm cp);
/** Parse a mode name; RRT_ERR_INVALID_ARG for unknown names. */
RRT_API rrt_status rrt_cp_comm_parse(const char *name, rrt_cp_comm *cp);

/** "contiguous", "zigzag", "stripe". */
RRT_API const char *rrt_attn_layout_name(rrt_attn_layout layout);
/** Parse a layout name; RRT_ERR_INVALID_ARG for unknown names. */
RRT_API rrt_status rrt_attn_layout_parse(const char *name, rrt_attn_layout *layout);

#define RRT_ATTN_DESC_MAGIC 0x52524131u /* "RRA1" */
#define RRT_ATTN_DESC_VERSION 3
#define RRT_ATTN_MAX_HEAD_DIM 256

/** Problem description, identical on every rank. Start from
 *  RRT_ATTN_DESC_INITIALIZER and set the shape. */
typedef struct rrt_attn_desc {
  size_t size;            /**< sizeof(rrt_attn_desc), set by the initializer */
  unsigned magic;         /**< RRT_ATTN_DESC_MAGIC */
  unsigned version;       /**< RRT_ATTN_DESC_VERSION */
  int64_t batch;          /**< >= 1 */
  int64_t seq;            /**< GLOBAL sequence length */
  int heads_q;            /**< query heads */
  int heads_kv;           /**< key/value heads; heads_q % heads_kv == 0 (GQA, MQA = 1) */
  int head_dim;           /**< 1 .. RRT_ATTN_MAX_HEAD_DIM */
  double scale;           /**< softmax scale: finite and > 0, or exactly 0 for 1/sqrt(head_dim);
                               negative, NaN or infinite is an error (rrt_attn_desc_check) */
  int causal;             /**< key position <= query position (global positions) */
  rrt_attn_layout layout; /**< how the sequence is split over ranks */
  rrt_dtype dtype;        /**< storage of Q, K, V and O: F32, BF16 or F16 */
  /* ---- version 2 ---- */
  /** Sliding window (flash-attn's window_size): query at position i sees keys
   *  in [i - window_left, i + window_right]; -1 = unlimited on that side.
   *  With causal, window_right is 0 whatever is set. */
  int window_left, window_right;
  /** Packed variable-length documents (THD, flash-attn's varlen API and
   *  TransformerEngine): num_docs + 1 nondecreasing offsets into the packed
   *  sequence, cu_seqlens[0] = 0 and cu_seqlens[num_docs] = seq. Attention
   *  never crosses a document boundary (causal applies within a document).
   *  Requires batch = 1. NULL / 0: one document (dense attention). The
   *  array is read during plan creation only. */
  const int64_t *cu_seqlens;
  int64_t num_docs;
  /* ---- version 3 ---- */
  /** Logit soft-capping (Gemma 2, flash-attn's softcap): > 0 replaces every
   *  scaled score s by softcap * tanh(s / softcap) before the mask; 0 = off.
   *  Negative, NaN or infinite is an error. */
  double softcap;
  /** Attention sinks (gpt-oss, TransformerEngine's softmax_type="learnable"):
   *  1 = the runs take one f32 logit per query head that joins every row's
   *  softmax denominator (never the output), passed to
   *  rrt_attn_plan_run_sinks / rrt_attn_plan_run_bwd_sinks; 0 = none. */
  int sinks;
  /** Context-parallel communication (rrt_cp_comm); older descriptors: ring. */
  rrt_cp_comm cp_comm;
  /** a2a+ring: ranks per all-to-all group (U, dividing P); 0 = the node's
   *  ranks (the smallest local size over the nodes). Other modes ignore it. */
  int cp_inner;
} rrt_attn_desc;

#define RRT_ATTN_DESC_INITIALIZER                                                                  \
  {                                                                                                \
    sizeof(rrt_attn_desc), RRT_ATTN_DESC_MAGIC, RRT_ATTN_DESC_VERSION, 1, 0, 1, 1, 0, 0.0, 0,      \
        RRT_ATTN_CONTIGUOUS, RRT_DTYPE_F32, -1, -1, NULL, 0, 0.0, 0, RRT_CP_RING, 0                \
  }

/* ---- layout helpers (pure, no context) ---------------------------------- */

/** The shard length when every rank's is the same (dense attention, `seq`
 *  a multiple of P, 2P for zigzag); RRT_ERR_INVALID_ARG otherwise (then
 *  use rrt_attn_shard_len()). */
RRT_API rrt_status rrt_attn_seq_local(rrt_attn_layout layout, int64_t seq, int nranks,
                                      int64_t *seq_local);
/** Global position of local index `local` on `rank` (dense attention, any
 *  length). */
RRT_API int64_t rrt_attn_global_pos(rrt_attn_layout layout, int64_t seq, int nranks, int rank,
                                    int64_t local);
/** Which rank holds global position `pos`, and at which local index. */
RRT_API void rrt_attn_locate(rrt_attn_layout layout, int64_t seq, int nranks, int64_t pos,
                             int *rank, int64_t *local);

/** This rank's shard length for the full descriptor (uneven lengths and
 *  varlen documents included): the rows of Q, K, V, O this rank passes. */
RRT_API rrt_status rrt_attn_shard_len(const rrt_attn_desc *desc, int nranks, int rank,
                                      int64_t *len);
/** Global (packed) positions of this rank's shard rows, `pos` holding
 *  rrt_attn_shard_len() entries, increasing. */
RRT_API rrt_status rrt_attn_shard_positions(const rrt_attn_desc *desc, int nranks, int rank,
                                            int64_t *pos);

/** Validate a descriptor for `nranks` ranks (local, no communication).
 *  Fills `msg` (may be NULL) with what is wrong. */
RRT_API rrt_status rrt_attn_desc_check(const rrt_attn_desc *desc, int nranks, char *msg,
                                       size_t msglen);

/** Floating-point operations of the whole problem (all ranks): 4 * head_dim
 *  per (query, key, head, batch) pair that the mask keeps. */
RRT_API double rrt_attn_flops(const rrt_attn_desc *desc);
/** The backward pass's count: 2.5x the forward's (10 * head_dim per pair:
 *  S and dP recomputed, dV, dK, dQ), the convention of flash-attn. */
RRT_API double rrt_attn_flops_bwd(const rrt_attn_desc *desc);

/* ---- running it ---------------------------------------------------------- */

typedef struct rrt_attn_plan *rrt_attn_plan_t;

/** Statistics of the last run of a plan (this rank). */
typedef struct rrt_attn_stats {
  double total_s;        /**< wall time of the run */
  double compute_s;      /**< local attention + merge */
  double comm_s;         /**< K/V ring transfers, post to observed completion */
  double comm_exposed_s; /**< part of comm_s not overlapped by compute */
  double hidden_share;   /**< 1 - comm_exposed_s / comm_s (1 when there is no comm) */
  double bytes_sent;     /**< bytes this rank sent (K/V; backward: and dK/dV) */
  double flops;          /**< unmasked work of this rank (4 * head_dim per pair; backward 10) */
  int steps;             /**< ring steps that ran: ranks, or fewer when no rank has work
                              on the later ones (a window, contiguous causal, ...) */
  /* ---- issue 10: backward runs (0 after a forward run) ---- */
  int backward;             /**< 1: the last run was a backward run */
  double handoff_s;         /**< dK/dV hand-off and the final transfer home (in comm_s) */
  double handoff_exposed_s; /**< part of handoff_s not overlapped by compute (in comm_exposed_s) */
} rrt_attn_stats;

/** Create a plan (collective): validates `desc` on every rank, agrees on the
 *  result (a bad or mismatched descriptor anywhere is an error everywhere),
 *  and allocates the K/V ring buffers and accumulators. The backward's
 *  buffers (f32 dQ, delta, three dK|dV buffers) are allocated by the first
 *  backward run, so a forward-only plan never holds them. */
RRT_API rrt_status rrt_attn_plan_create(rrt_ctx_t ctx, const rrt_attn_desc *desc,
                                        rrt_attn_plan_t *plan);
/** Run the forward pass (collective). q, k, v: this rank's shards; o: output
 *  shard (q's dtype); lse: f32 [batch, heads_q, seq_local], may be NULL. */
RRT_API rrt_status rrt_attn_plan_run(rrt_attn_plan_t plan, const void *q, const void *k,
                                     const void *v, void *o, float *lse);
/** Run the backward pass (collective). q, k, v, o: this rank's shards of
 *  the forward's inputs and output (storage dtype); lse: the forward's f32
 *  LSE [batch, heads_q, seq_local] (required); dout: the gradient of the
 *  loss with respect to o. Writes dq (q's shape) and dk, dv (k's shape) in
 *  storage dtype: dK/dV are summed over every query rank and, for GQA/MQA,
 *  over the query heads of a group. Accumulation is f32 throughout and
 *  rounded once at the end. Deterministic: the same bits on every run (on
 *  this plan or a new one) for a fixed rank count, layout and backend; no
 *  atomics, and the ranks' parts of dK/dV are added in ring order. NULL
 *  tensors and failures to allocate are errors on every rank. */
RRT_API rrt_status rrt_attn_plan_run_bwd(rrt_attn_plan_t plan, const void *q, const void *k,
                                         const void *v, const void *o, const float *lse,
                                         const void *dout, void *dq, void *dk, void *dv);
/** The forward of a plan whose descriptor has `sinks` set (collective):
 *  rrt_attn_plan_run with `sinks`, f32 [heads_q] in the context's backend
 *  memory (device memory for cuda, like q), read on every run. Row i of
 *  head h gets O_i = sum_j exp(s_ij - m) v_j / (sum_j exp(s_ij - m) +
 *  exp(sinks[h] - m)); the returned lse includes the sink term (it is the
 *  log of that whole denominator), which is what the backward needs. The
 *  sink is folded in once, after the ring's last merge, so the result is
 *  as deterministic as without it. NULL sinks, or a plan without `sinks`,
 *  is an error on every rank. */
RRT_API rrt_status rrt_attn_plan_run_sinks(rrt_attn_plan_t plan, const void *q, const void *k,
                                           const void *v, const float *sinks, void *o, float *lse);
/** The backward of a plan whose descriptor has `sinks` set (collective):
 *  rrt_attn_plan_run_bwd with the forward's `sinks` (backend memory) and
 *  `dsinks`, f32 [heads_q] in backend memory, written with the gradient of
 *  the loss with respect to the sinks: dsinks[h] = -sum over every rank's
 *  rows r of head h (every batch entry) of exp(sinks[h] - lse_r) * D_r,
 *  D_r = rowsum(dO * O) as in flash-attn. Per-rank sums in f64, added in
 *  rank order: the same bits on every rank and every run. lse must be the
 *  forward's (which includes the sink). NULL sinks or dsinks is an error. */
RRT_API rrt_status rrt_attn_plan_run_bwd_sinks(rrt_attn_plan_t plan, const void *q, const void *k,
                                               const void *v, const void *o, const float *lse,
                                               const void *dout, const float *sinks, void *dq,
                                               void *dk, void *dv, float *dsinks);
/** What the plan runs and why: the context-parallel mode (cp_comm, `auto`
 *  resolved) and the cost model's numbers for every mode (bytes and
 *  messages per rank, steps, predicted time; docs/attn.md "Choosing a
 *  mode"), as text into buf (truncated to len). Local. */
RRT_API rrt_status rrt_attn_plan_explain(rrt_attn_plan_t plan, char *buf, size_t len);
/** Statistics of the last run. */
RRT_API rrt_status rrt_attn_plan_stats(rrt_attn_plan_t plan, rrt_attn_stats *stats);
/** Destroy (local). Safe on NULL. */
RRT_API rrt_status rrt_attn_plan_destroy(rrt_attn_plan_t plan);

/** One-shot forward: plan create, run, destroy (collective). */
RRT_API rrt_status rrt_attn_fwd(rrt_ctx_t ctx, const rrt_attn_desc *desc, const void *q,
                                const void *k, const void *v, void *o, float *lse);

/** One-shot backward: plan create, run_bwd, destroy (collective). */
RRT_API rrt_status rrt_attn_bwd(rrt_ctx_t ctx, const rrt_attn_desc *desc, const void *q,
                                const void *k, const void *v, const void *o, const float *lse,
                                const void *dout, void *dq, void *dk, void *dv);

#ifdef __cplusplus
}
#endif
#endif

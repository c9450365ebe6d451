/* The domain-decomposition ordering of ILU(0), pure parts without MPI:
 * which subdomain a row belongs to, which rows are interface rows (coupled
 * to another subdomain), and the greedy colouring of the interface. The
 * distributed driver is src/ilu/ordering_dd.c. */
#ifndef RRT_SCHED_DD_ORDER_H
#define RRT_SCHED_DD_ORDER_H

#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Subdomain (0 .. k-1) of a global row in the nonzero-balanced k-way split
 *  of rrt_partition_nnz: mid2 = rowptr[i] + rowptr[i + 1] of the whole
 *  matrix, nnz its nonzeros. The same part rrt_partition_nnz(n, rowptr, k)
 *  puts the row in, computed from the row alone (k <= 2^20, nnz < 2^42: no
 *  overflow). */
int32_t rrt_dd_part(int64_t mid2, int64_t nnz, int32_t k);

/** Interface flags: row i (local, 0 .. nloc-1) and every extended column e
 *  of its row (< nloc local rows, >= nloc ghosts) get iface = 1 when
 *  sub[i] != sub[e]. After this every local row coupled to another
 *  subdomain through a local row is flagged, and so are the ghosts coupled
 *  to this rank's rows of another subdomain (their owners still need to be
 *  told). iface (nloc + ghosts entries) is not cleared. */
void rrt_dd_mark_interface(int64_t nloc, const int64_t *rowptr, const int32_t *ext_col,
                           const int32_t *sub, int32_t *iface);

/** Greedy colouring in natural order of the symmetrised graph (sptr/scol
 *  from rrt_graph_symmetrize): colour[i] = the smallest colour no lower
 *  neighbour has. Returns the colour count in *ncolors. */
rrt_status rrt_dd_color_greedy(int64_t n, const int64_t *sptr, const int64_t *scol, int32_t *color,
                               int *ncolors);

#ifdef __cplusplus
}
#endif
#endif

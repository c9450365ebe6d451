/* Internal, for fault tests only: a rank that stalls at a named point.
 *
 * RINGRT_TEST_STALL=PHASE:RANK makes rank RANK stop at PHASE forever: it
 * prints one line saying so and sleeps until a signal ends it, as a rank
 * stuck in the middle of that phase would, while the other ranks go on into
 * the phase's waits. The fault tests (tests/fault) use it to pin the stall
 * to the trace gather and to the ILU analysis, points that a signal sent
 * from outside cannot hit reliably. Unset (the normal case), a stall point
 * costs one byte compare. */
#ifndef RRT_COMM_TEST_STALL_H
#define RRT_COMM_TEST_STALL_H

#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The phases that have a stall point (NULL-terminated). */
extern const char *const rrt_test_stall_phases[];

/** Never returns when RINGRT_TEST_STALL names `phase` and this rank. */
void rrt_test_stall(rrt_ctx_t ctx, const char *phase);

#ifdef __cplusplus
}
#endif
#endif

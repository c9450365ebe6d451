/* Minimal test helpers: CHECK prints file, line, rank and expression and
 * makes the test fail; tests return test_result() from main. */
#ifndef RRT_TEST_UTIL_H
#define RRT_TEST_UTIL_H

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define RRT_TEST_SKIP 77

/* Where a test writes its scratch files: $TMPDIR (CTest sets it to a
 * folder of the build tree, so a run leaves nothing in /tmp), else /tmp. */
static inline const char *rrt_test_tmpdir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

static int rrt_test_failures_ = 0;

static inline int rrt_test_rank_(void) {
  int init = 0, rank = 0;
  MPI_Initialized(&init);
  if (init) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d rank %d: %s\n", __FILE__, __LINE__, rrt_test_rank_(), #cond);    \
      rrt_test_failures_++;                                                                        \
    }                                                                                              \
  } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, rrt_test_rank_(), #cond);    \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      rrt_test_failures_++;                                                                        \
    }                                                                                              \
  } while (0)

/** Check a call returning rrt_status is RRT_SUCCESS (prints the status). */
#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    rrt_status st_ = (call);                                                                       \
    if (st_ != RRT_SUCCESS) {                                                                      \
      fprintf(stderr, "FAIL %s:%d rank %d: %s returned %s\n", __FILE__, __LINE__,                  \
              rrt_test_rank_(), #call, rrt_status_string(st_));                                    \
      rrt_test_failures_++;                                                                        \
    }                                                                                              \
  } while (0)

/** Failure count agreed over MPI_COMM_WORLD (when MPI is up): every rank
 *  exits non-zero if any rank failed. Call before MPI_Finalize. */
static inline int test_result(void) {
  int init = 0, fin = 0, total = rrt_test_failures_;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Allreduce(&rrt_test_failures_, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (total && rrt_test_rank_() == 0) fprintf(stderr, "%d check(s) failed\n", total);
  return total ? 1 : 0;
}

#endif

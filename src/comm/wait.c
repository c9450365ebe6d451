/* The one place that waits for communication.
 *
 * Every blocking transport call and rrt_request_wait() end up in
 * rrt_request_wait_keep(): it polls (MPI_Testall drives MPI progress, the
 * event query watches the comm stream) with a deadline of the context
 * timeout. On expiry the job is aborted, because a rank that stops waiting
 * would leave its peers blocked in a matching call forever; first a roll
 * call (roll_call.c) finds out which ranks did not arrive, so the message
 * names them. Between polls
 * the thread yields (for the first 2 ms) and then sleeps (up to 100 us),
 * so that oversubscribed ranks on few cores still let their peers run. A consumer of a transfer
 * that completes on the comm stream need not wait here first:
 * rrt_request_order_stream orders its stream after the transfer on the
 * device, and the host waits later, off the critical path.
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "comm/error.h"
#include "comm/request.h"
#include "ringrt/trace.h"

static double monotonic_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Completion work, run once: staged copies back to device memory, then the
 * interval on the comm track. */
static rrt_status finish(rrt_request_t req) {
  rrt_ctx_t ctx = req->ctx;
  req->finished = 1;
  if (req->ncopies > 0) {
    const rrt_device_ops *dev = ctx->dev;
    for (int i = 0; i < req->ncopies; i++) {
      const rrt_stage_copy *c = &req->copies[i];
      rrt_status st = dev->memcpy_async(c->dev, c->host, c->bytes, RRT_COPY_H2D, ctx->comm_stream);
      if (st != RRT_SUCCESS)
        return rrt_error(ctx, st, req->op, "copy of %zu received bytes to the device failed",
                         c->bytes);
    }
    rrt_status st = dev->stream_sync(ctx->comm_stream);
    if (st != RRT_SUCCESS)
      return rrt_error(ctx, st, req->op, "synchronising the comm stream after staging failed");
  }
  /* The trace is a diagnostic: a failure to record is not a failure of the
   * communication. Names drop the "rrt_" prefix ("ring_shift"). */
  const char *name = req->op;
  if (name[0] == 'r' && name[1] == 'r' && name[2] == 't' && name[3] == '_') name += 4;
  if (!req->untraced) (void)rrt_trace_add(ctx, RRT_TRACK_COMM, name, req->t0, rrt_time_now());
  return RRT_SUCCESS;
}

rrt_status rrt_request_poll(rrt_request_t req, int *done) {
  *done = 0;
  if (req->finished) {
    *done = 1;
    return RRT_SUCCESS;
  }
  rrt_ctx_t ctx = req->ctx;
  if (req->poll_error) RRT_CHECK(req->poll_error(req));
  if (req->nmpi > 0) {
    int flag = 0;
    int rc = MPI_Testall(req->nmpi, req->mpi, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, msg, &len);
      return rrt_error(ctx, RRT_ERR_MPI, req->op, "MPI_Testall failed (peer %d, step %d): %s",
                       req->peer, req->step, msg);
    }
    if (!flag) return RRT_SUCCESS;
  }
  if (req->event) {
    int ev_done = 0;
    rrt_status st = ctx->dev->event_query(req->event, &ev_done);
    if (st != RRT_SUCCESS)
      return rrt_error(ctx, st, req->op, "querying the completion event failed (peer %d, step %d)",
                       req->peer, req->step);
    if (!ev_done) return RRT_SUCCESS;
  }
  *done = 1;
  return finish(req);
}

/* Name what is still pending, for the timeout message; *peer gets the
 * peer of a pending point-to-point message (-1 for a collective). */
static void describe_pending(rrt_request_t req, char *buf, size_t len, int *pending_peer) {
  int peer = req->peer;
  const char *what = "operation with", *peer_word = "peer";
  *pending_peer = req->coll ? -1 : peer;
  for (int i = 0; i < req->nmpi; i++) {
    if (req->mpi[i] == MPI_REQUEST_NULL) continue;
    int flag = 0;
    MPI_Request_get_status(req->mpi[i], &flag, MPI_STATUS_IGNORE);
    if (flag) continue;
    if (req->mpi_dir[i] == RRT_DIR_RECV) {
      what = "receive from";
    } else if (req->mpi_dir[i] == RRT_DIR_SEND) {
      what = "send to";
    } else {
      what = "collective with";
      peer_word = "root";
    }
    peer = req->mpi_peer[i];
    *pending_peer = req->mpi_dir[i] == RRT_DIR_COLL ? -1 : peer;
    break;
  }
  if (req->nmpi == 0 && req->event)
    what = req->coll ? "device collective with" : "device-stream operation with";
  int n = 0;
  if (peer >= 0) {
    n = snprintf(buf, len, "%s %s %d", what, peer_word, peer);
  } else if (req->coll) {
    n = snprintf(buf, len, "%s", req->nmpi ? "collective" : "device collective");
  } else {
    n = snprintf(buf, len, "%s", req->nmpi ? what : "operation");
  }
  if (req->step >= 0 && n >= 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " step %d", req->step);
}

/* The timeout: what is pending, and from the roll call which ranks did not
 * arrive (a collective) or what the pending peer is doing; then abort. */
static void time_out(rrt_request_t req, double timeout) {
  char what[160], roll[512];
  int peer = -1;
  describe_pending(req, what, sizeof(what), &peer);
  rrt_roll_call(req, peer, roll, sizeof(roll));
  rrt_fatal_abort(req->ctx, RRT_ERR_TIMEOUT, req->op,
                  "timeout: %s not complete after %.0f s (RINGRT_TIMEOUT)%s%s", what, timeout,
                  roll[0] ? ": " : "", roll);
}

/* Yield between polls for this long before sleeping: a wait of the
 * solvers' size (a level's or a reduction's peer running late by tens to
 * hundreds of microseconds) then ends within a poll of its completion
 * instead of within a sleep (the first sleeps were 1 us, with the kernel's
 * 50 us timer slack, doubling to 100 us). A yield still hands the core to
 * an oversubscribed peer. */
#define RRT_WAIT_YIELD_S 2e-3

rrt_status rrt_request_wait_keep(rrt_request_t req) {
  rrt_ctx_t ctx = req->ctx;
  double timeout = ctx->timeout_s;
  double start = monotonic_now(), answered = start;
  long sleep_ns = 1000;
  for (int spin = 0;; spin++) {
    int done = 0;
    RRT_CHECK(rrt_request_poll(req, &done));
    if (done) return RRT_SUCCESS;
    double now = monotonic_now();
    if (timeout > 0 && now - start > timeout) time_out(req, timeout);
    /* A rank that timed out asks the others where they are: answer every
     * 20 ms of waiting (one MPI_Iprobe; nothing on waits shorter than that). */
    if (now - answered > 0.02) {
      rrt_roll_call_answer(req);
      answered = now;
    }
    if (spin < 64 || now - start < RRT_WAIT_YIELD_S) {
      sched_yield();
    } else {
      struct timespec ts = {0, sleep_ns};
      nanosleep(&ts, NULL);
      if (sleep_ns < 100000) sleep_ns *= 2;
      if (sleep_ns > 100000) sleep_ns = 100000;
    }
  }
}

rrt_status rrt_request_order_stream(rrt_request_t req, rrt_stream stream, int *ordered) {
  *ordered = 0;
  if (!req || req->finished || !req->event || req->nmpi > 0 || req->ncopies > 0) return RRT_SUCCESS;
  rrt_ctx_t ctx = req->ctx;
  rrt_status st = ctx->dev->stream_wait_event(stream, req->event);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, req->op, "ordering a stream after the transfer failed (step %d)",
                     req->step);
  *ordered = 1;
  return RRT_SUCCESS;
}

rrt_status rrt_request_wait_release(rrt_request_t req) {
  rrt_status st = rrt_request_wait_keep(req);
  rrt_request_release(req);
  return st;
}

rrt_status rrt_request_wait_posted(rrt_request_t req, rrt_status posted) {
  if (posted != RRT_SUCCESS) {
    rrt_request_release(req);
    return posted;
  }
  return rrt_request_wait_release(req);
}

/* ---- public API ---------------------------------------------------------- */

rrt_status rrt_request_test(rrt_request_t req, int *done) {
  if (!done)
    return rrt_error(req ? req->ctx : NULL, RRT_ERR_INVALID_ARG, "rrt_request_test",
                     "done is NULL");
  if (!req) {
    *done = 1;
    return RRT_SUCCESS;
  }
  return rrt_request_poll(req, done);
}

rrt_status rrt_request_wait(rrt_request_t req) {
  if (!req) return RRT_SUCCESS;
  return rrt_request_wait_release(req);
}

void rrt_request_free(rrt_request_t req) {
  if (!req) return;
  /* Freeing a request whose buffers MPI or NCCL still use would let the
   * caller reuse them mid-transfer: finish it first (timeout applies). */
  if (!req->finished) (void)rrt_request_wait_keep(req);
  rrt_request_release(req);
}

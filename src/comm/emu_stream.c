/* Streams and events of the emu device layer (the rules: comm/emu_stream.h).
 *
 * A stream's work is a queue of operations. Waits and events refer to the
 * queue, not the stream handle: a queue is reference counted (its stream,
 * the events last recorded on it, the waits queued for it), so a stream may
 * be destroyed while an event recorded on it or a wait for it is still
 * around, as CUDA allows. Positions count operations: an event recorded at
 * position n of a queue is complete once n operations of it have run. Every
 * wait refers to an earlier record, so forcing a queue never cycles. */
#define _POSIX_C_SOURCE 200809L
#include "comm/emu_stream.h"

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/emu_mem.h"
#include "comm/host_stream.h"

#define RRT_EMU_EVENT_MAGIC 0x45565432u

typedef enum { OP_RUN = 0, OP_RECORD, OP_WAIT } op_kind;

typedef struct emu_event emu_event;
typedef struct rrt_emu_queue emu_queue;

typedef struct emu_op {
  op_kind kind;
  rrt_status (*run)(void *arg); /* OP_RUN */
  void (*drop)(void *arg);
  void *arg;
  emu_event *event; /* OP_RECORD: the event (a reference) and which record */
  uint64_t gen;
  emu_queue *target; /* OP_WAIT: run `target` up to `seq` first (a reference) */
  uint64_t seq;
} emu_op;

struct rrt_emu_queue {
  int refs;  /* the stream, events last recorded on it, waits for it */
  int eager; /* run work when queued unless a wait holds it */
  emu_op *ops;
  size_t head, n, cap; /* ops[head, n) wait to run */
  uint64_t done;       /* operations run so far: the position reached */
  rrt_status error;    /* first failure since the last synchronisation */
};

struct emu_event {
  unsigned magic;
  int refs;         /* the handle, and records not yet run */
  emu_queue *queue; /* queue of the latest record (a reference), NULL: none */
  uint64_t seq;     /* its position there */
  uint64_t gen;     /* records made */
  uint64_t fired;   /* the latest record that ran */
  double t;         /* when it ran, CLOCK_MONOTONIC seconds */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- reference counts ------------------------------------------------------ */

static void queue_put(emu_queue *q) {
  if (q && --q->refs == 0) {
    free(q->ops);
    free(q);
  }
}

static void event_put(emu_event *e) {
  if (e && --e->refs == 0) {
    queue_put(e->queue);
    e->magic = 0;
    free(e);
  }
}

static emu_event *event_of(rrt_event event) {
  emu_event *e = event;
  return e && e->magic == RRT_EMU_EVENT_MAGIC ? e : NULL;
}

static emu_queue *queue_of(rrt_stream stream) {
  rrt_host_stream *s = rrt_host_stream_of(stream);
  return s ? s->queue : NULL;
}

/* ---- running the queue ------------------------------------------------------- */

static void force(emu_queue *q, uint64_t upto);

/* Run the first queued operation (a wait first forces what it waits for). */
static void run_first(emu_queue *q) {
  emu_op op = q->ops[q->head]; /* a copy: running may queue more and move ops */
  if (op.kind == OP_WAIT) force(op.target, op.seq); /* its failures stay its own */
  q->head++;
  q->done++;
  if (q->head == q->n) q->head = q->n = 0;
  switch (op.kind) {
  case OP_RUN: {
    rrt_status st = op.run(op.arg);
    if (st != RRT_SUCCESS && q->error == RRT_SUCCESS) q->error = st;
    if (op.drop) op.drop(op.arg);
    break;
  }
  case OP_RECORD:
    if (op.gen > op.event->fired) {
      op.event->fired = op.gen;
      op.event->t = now_s();
    }
    event_put(op.event);
    break;
  case OP_WAIT: queue_put(op.target); break;
  }
}

/* Run `q` until `upto` operations of it have run (or it is empty). */
static void force(emu_queue *q, uint64_t upto) {
  while (q->done < upto && q->head < q->n)
    run_first(q);
}

/* An eager queue: run what no pending wait holds back. */
static void advance(emu_queue *q) {
  while (q->eager && q->head < q->n) {
    const emu_op *op = &q->ops[q->head];
    if (op->kind == OP_WAIT && op->target->done < op->seq) return;
    run_first(q);
  }
}

static rrt_status push(emu_queue *q, emu_op op) {
  if (q->n == q->cap) {
    if (q->head > 0) { /* reuse the room of what ran */
      memmove(q->ops, q->ops + q->head, (q->n - q->head) * sizeof *q->ops);
      q->n -= q->head, q->head = 0;
    } else {
      size_t cap = q->cap ? 2 * q->cap : 64;
      emu_op *ops = realloc(q->ops, cap * sizeof *ops);
      if (!ops) return RRT_ERR_OUT_OF_MEMORY;
      q->ops = ops, q->cap = cap;
    }
  }
  q->ops[q->n++] = op;
  advance(q);
  return RRT_SUCCESS;
}

static rrt_status take_error(emu_queue *q) {
  rrt_status st = q->error;
  q->error = RRT_SUCCESS;
  return st;
}

/* ---- streams ------------------------------------------------------------------- */

int rrt_host_stream_queues(rrt_stream stream) { return queue_of(stream) != NULL; }

rrt_status rrt_host_stream_enqueue(rrt_stream stream, rrt_status (*run)(void *arg),
                                   void (*drop)(void *arg), void *arg) {
  emu_queue *q = queue_of(stream);
  if (!q || !run) return RRT_ERR_INVALID_ARG;
  emu_op op = {.kind = OP_RUN, .run = run, .drop = drop, .arg = arg};
  return push(q, op);
}

rrt_status rrt_emu_stream_create(rrt_stream *stream, int high_priority) {
  if (!stream) return RRT_ERR_INVALID_ARG;
  *stream = NULL;
  rrt_host_stream *s = malloc(sizeof *s);
  emu_queue *q = calloc(1, sizeof *q);
  if (!s || !q) {
    free(s), free(q);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  /* Priority means transfers here (the comm stream): they land as late as
   * the dependencies allow, the adversarial order for their consumers. */
  q->refs = 1;
  q->eager = !high_priority;
  s->magic = RRT_HOST_STREAM_MAGIC;
  s->threads = omp_get_max_threads(); /* the rank's bound cores, as host streams */
  if (s->threads < 1) s->threads = 1;
  s->queue = q;
  *stream = s;
  return RRT_SUCCESS;
}

rrt_status rrt_emu_stream_sync(rrt_stream stream) {
  if (!stream) return RRT_SUCCESS; /* the NULL stream runs everything at once */
  emu_queue *q = queue_of(stream);
  if (!q) return RRT_ERR_INVALID_ARG;
  force(q, UINT64_MAX);
  return take_error(q);
}

rrt_status rrt_emu_stream_destroy(rrt_stream stream) {
  if (!stream) return RRT_SUCCESS;
  rrt_host_stream *s = rrt_host_stream_of(stream);
  if (!s || !s->queue) return RRT_ERR_INVALID_ARG;
  /* As cudaStreamDestroy: the queued work still runs (here, now). */
  rrt_status st = rrt_emu_stream_sync(stream);
  queue_put(s->queue);
  s->magic = 0;
  free(s);
  return st;
}

rrt_status rrt_emu_stream_set_eager(rrt_stream stream, int eager) {
  emu_queue *q = queue_of(stream);
  if (!q) return RRT_ERR_INVALID_ARG;
  q->eager = eager != 0;
  advance(q);
  return RRT_SUCCESS;
}

size_t rrt_emu_stream_pending(rrt_stream stream) {
  emu_queue *q = queue_of(stream);
  return q ? q->n - q->head : 0;
}

/* ---- copies and memsets ----------------------------------------------------------- */

typedef struct copy_op {
  void *dst;
  const void *src;
  size_t bytes;
  int value;   /* memset */
  char data[]; /* a source in host memory, taken when queued */
} copy_op;

static rrt_status run_copy(void *arg) {
  copy_op *c = arg;
  if (c->dst != c->src) memmove(c->dst, c->src, c->bytes);
  return RRT_SUCCESS;
}

static rrt_status run_set(void *arg) {
  copy_op *c = arg;
  memset(c->dst, c->value, c->bytes);
  return RRT_SUCCESS;
}

static rrt_status queue_op(rrt_stream stream, rrt_status (*run)(void *), copy_op *c) {
  rrt_status st = rrt_host_stream_enqueue(stream, run, free, c);
  if (st != RRT_SUCCESS) free(c);
  return st;
}

rrt_status rrt_emu_memcpy(void *dst, const void *src, size_t bytes, rrt_copy_kind kind,
                          rrt_stream stream) {
  if (kind < RRT_COPY_H2D || kind > RRT_COPY_H2H) return RRT_ERR_INVALID_ARG;
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst || !src) return RRT_ERR_INVALID_ARG;
  if (!stream) {
    if (dst != src) memmove(dst, src, bytes);
    return RRT_SUCCESS;
  }
  if (!queue_of(stream)) return RRT_ERR_INVALID_ARG;
  /* Host memory is read now (pageable memory: the caller may reuse it as
   * soon as the call returns); device memory when the copy runs. */
  const int snapshot = !rrt_emu_mem_contains(src, bytes);
  copy_op *c = malloc(sizeof *c + (snapshot ? bytes : 0));
  if (!c) return RRT_ERR_OUT_OF_MEMORY;
  c->dst = dst, c->bytes = bytes, c->value = 0;
  c->src = src;
  if (snapshot) {
    memcpy(c->data, src, bytes);
    c->src = c->data;
  }
  return queue_op(stream, run_copy, c);
}

rrt_status rrt_emu_memset(void *dst, int value, size_t bytes, rrt_stream stream) {
  if (bytes == 0) return RRT_SUCCESS;
  if (!dst) return RRT_ERR_INVALID_ARG;
  if (!stream) {
    memset(dst, value, bytes);
    return RRT_SUCCESS;
  }
  if (!queue_of(stream)) return RRT_ERR_INVALID_ARG;
  copy_op *c = malloc(sizeof *c);
  if (!c) return RRT_ERR_OUT_OF_MEMORY;
  c->dst = dst, c->src = NULL, c->bytes = bytes, c->value = value;
  return queue_op(stream, run_set, c);
}

/* ---- events ------------------------------------------------------------------------ */

static int complete(const emu_event *e) { return e->fired == e->gen; }

rrt_status rrt_emu_event_create(rrt_event *event) {
  if (!event) return RRT_ERR_INVALID_ARG;
  emu_event *e = calloc(1, sizeof *e);
  if (!e) return RRT_ERR_OUT_OF_MEMORY;
  e->magic = RRT_EMU_EVENT_MAGIC;
  e->refs = 1;
  *event = e;
  return RRT_SUCCESS;
}

rrt_status rrt_emu_event_destroy(rrt_event event) {
  if (!event) return RRT_SUCCESS;
  emu_event *e = event_of(event);
  if (!e) return RRT_ERR_INVALID_ARG;
  event_put(e); /* a pending record keeps it until it runs */
  return RRT_SUCCESS;
}

rrt_status rrt_emu_event_record(rrt_event event, rrt_stream stream) {
  emu_event *e = event_of(event);
  if (!e) return RRT_ERR_INVALID_ARG;
  emu_queue *q = queue_of(stream);
  if (stream && !q) return RRT_ERR_INVALID_ARG;
  e->gen++;
  queue_put(e->queue);
  e->queue = NULL;
  if (!q) { /* the NULL stream: nothing is queued there */
    e->fired = e->gen;
    e->t = now_s();
    return RRT_SUCCESS;
  }
  e->queue = q, q->refs++;
  e->seq = q->done + (q->n - q->head) + 1;
  e->refs++; /* the record op's reference */
  emu_op op = {.kind = OP_RECORD, .event = e, .gen = e->gen};
  rrt_status st = push(q, op);
  if (st != RRT_SUCCESS) e->refs--, e->gen--;
  return st;
}

/* Run the work the event's latest record waits for. */
static rrt_status force_event(emu_event *e) {
  if (complete(e) || !e->queue) return RRT_SUCCESS;
  force(e->queue, e->seq);
  return take_error(e->queue);
}

rrt_status rrt_emu_event_query(rrt_event event, int *done) {
  emu_event *e = event_of(event);
  if (!e || !done) return RRT_ERR_INVALID_ARG;
  /* Nothing runs by itself here: asking is what makes the work run. */
  rrt_status st = force_event(e);
  *done = complete(e);
  return st;
}

rrt_status rrt_emu_event_sync(rrt_event event) {
  emu_event *e = event_of(event);
  if (!e) return RRT_ERR_INVALID_ARG;
  return force_event(e);
}

rrt_status rrt_emu_stream_wait_event(rrt_stream stream, rrt_event event) {
  emu_event *e = event_of(event);
  if (!e) return RRT_ERR_INVALID_ARG;
  if (complete(e)) return RRT_SUCCESS; /* nothing to wait for */
  if (!stream) return force_event(e);
  emu_queue *q = queue_of(stream);
  if (!q) return RRT_ERR_INVALID_ARG;
  /* The wait takes the latest record now: the event may be recorded again
   * at once, as with cudaStreamWaitEvent. */
  emu_op op = {.kind = OP_WAIT, .target = e->queue, .seq = e->seq};
  e->queue->refs++;
  rrt_status st = push(q, op);
  if (st != RRT_SUCCESS) queue_put(op.target);
  return st;
}

rrt_status rrt_emu_event_elapsed_ms(rrt_event start, rrt_event end, float *ms) {
  emu_event *a = event_of(start), *b = event_of(end);
  if (!a || !b || !ms) return RRT_ERR_INVALID_ARG;
  /* as CUDA: both recorded, and both records done */
  if (!a->gen || !b->gen || !complete(a) || !complete(b)) return RRT_ERR_INVALID_ARG;
  *ms = (float)((b->t - a->t) * 1e3);
  return RRT_SUCCESS;
}

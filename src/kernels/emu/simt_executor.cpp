/* The SIMT executor of the emu backend (interface and supported subset:
 * cuda_builtins.h).
 *
 * One fiber per CUDA thread (a small assembly context switch on x86-64, with
 * AddressSanitizer's fiber annotations in the sanitizer build; ucontext
 * elsewhere: swapcontext makes two system calls per switch, which dominated
 * the emu tests of real kernels). A worker (one per OS
 * thread, cached in thread-local storage so that fiber stacks are reused across launches) runs one
 * block at a time: it resumes every ready fiber in turn until each one exits or waits at a barrier
 * or warp collective, then releases the warps whose live lanes all wait at a warp collective
 * (computing shuffle results), or the whole block when every live thread waits at __syncthreads. If
 * nothing can be released, the block is deadlocked: reported, not hung. Blocks are handed out to
 * the OS threads of an OpenMP team from an atomic counter. Hazard modes (Modes:
 * RINGRT_EMU_SCHED=runahead, RINGRT_EMU_CPASYNC=eager) run each warp ahead to its block barriers
 * and land cp.async copies when issued, so missing barriers that the default schedule hides show;
 * RINGRT_EMU_DROP_BARRIER deletes one barrier for planted-fault tests.
 *
 * Also here, for the tensor-core subset (kernels/cuda/tc_prims.h, tc_emu.cpp): the warp gather
 * that mma and ldmatrix exchange fragments through, the per-thread cp.async queues, kernel faults,
 * the resume order of RINGRT_EMU_ORDER and the dynamic shared memory opt-in of
 * cudaFuncSetAttribute.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "comm/emu_arch.h"
extern "C" {
#include "comm/emu_mem.h"
}
#include "kernels/emu/cuda_builtins.h"
#include "kernels/emu/racecheck.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RRT_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RRT_EMU_ASAN 1
#endif
#if defined(__x86_64__) && defined(__linux__)
#define RRT_EMU_FAST_SWITCH 1
#endif
#if RRT_EMU_FAST_SWITCH && RRT_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if RRT_EMU_FAST_SWITCH
/* rrt_emu_switch(&save_sp, new_sp): push the callee-saved registers and the
 * SSE/x87 control words, save the stack pointer, load the other one, and
 * pop the same frame from it. Everything else is caller-saved in the SysV
 * ABI, so this is a complete switch between two C++ call stacks. */
extern "C" void rrt_emu_switch(void **save_sp, void *new_sp);
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".hidden rrt_emu_switch\n"
        ".type rrt_emu_switch,@function\n"
        "rrt_emu_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size rrt_emu_switch, .-rrt_emu_switch\n"
        ".popsection\n");
#else
#include <ucontext.h>
#endif

namespace rrt_emu {
namespace {

#if RRT_EMU_FAST_SWITCH
/* bottom/size: the stack's bounds, for AddressSanitizer's fiber annotations
 * (the scheduler's own stack learns them on its first switch into a fiber). */
struct Ctx {
  void *sp;
  const void *bottom;
  size_t size;
};
#if RRT_EMU_ASAN
/* Under AddressSanitizer the switch tells ASan which stack it moves to.
 * swapcontext's interceptor would instead clear the shadow of the whole
 * target stack on every switch, which was 60 % of the emu tests' time under
 * ASan. Fibers only switch to the scheduler and the scheduler only to the
 * fiber it resumes, so the stack ASan reports we came back from is `to`'s.
 * `exiting`: the fiber never runs again (ASan drops its fake stack). */
inline void ctx_switch(Ctx &from, Ctx &to, bool exiting = false) {
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, to.bottom, to.size);
  rrt_emu_switch(&from.sp, to.sp);
  __sanitizer_finish_switch_fiber(fake, &to.bottom, &to.size);
}
/* A fiber's first instructions: finish the switch that started it. */
inline void ctx_started(Ctx &sched) {
  __sanitizer_finish_switch_fiber(nullptr, &sched.bottom, &sched.size);
}
#else
inline void ctx_switch(Ctx &from, Ctx &to, bool exiting = false) {
  (void)exiting;
  rrt_emu_switch(&from.sp, to.sp);
}
inline void ctx_started(Ctx &) {}
#endif
/* A new stack whose first switch "returns" into entry with the stack aligned
 * as at a function entry; the frame mirrors what rrt_emu_switch pops. */
void ctx_make(Ctx &c, char *stack, size_t bytes, void (*entry)()) {
#if RRT_EMU_ASAN
  /* The stack's last fiber never returned from its frames: clear their
   * redzones once here, not on every switch. */
  __asan_unpoison_memory_region(stack, bytes);
#endif
  c.bottom = stack;
  c.size = bytes;
  uint64_t *sp = (uint64_t *)(((uintptr_t)(stack + bytes)) & ~(uintptr_t)15);
  *--sp = 0;               /* entry's return address: it never returns */
  *--sp = (uint64_t)entry; /* popped by ret */
  for (int i = 0; i < 6; i++)
    *--sp = 0; /* rbp rbx r12 r13 r14 r15 */
  uint32_t mxcsr = __builtin_ia32_stmxcsr();
  uint16_t fpucw = 0;
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  *--sp = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
  c.sp = sp;
}
#else
struct Ctx {
  ucontext_t uc;
};
inline void ctx_switch(Ctx &from, Ctx &to, bool exiting = false) {
  (void)exiting;
  swapcontext(&from.uc, &to.uc);
}
inline void ctx_started(Ctx &) {}
/* Not inlined: getcontext returns twice, which would put the caller's loop
 * variables at risk (-Wclobbered). */
__attribute__((noinline)) void ctx_make(Ctx &c, char *stack, size_t bytes, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
#endif

/* F_SLEEP: yielded by __nanosleep, ready again on the next pass (a spin
 * loop waiting for another thread or block makes progress through it). */
enum fiber_state { F_READY = 0, F_BLOCK, F_WARP, F_SLEEP, F_DONE };

/* Limits checked at launch, as CUDA does (dynamic shared memory: the opt-in
 * maximum per block of sm_90). */
constexpr unsigned kMaxBlockThreads = 1024, kMaxBlockZ = 64, kMaxGridYZ = 65535;
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr size_t kDefaultDynSmem = 48u * 1024u; /* above it a kernel must opt in */

/* One cp.async of a thread, pending until a wait covers its group. */
struct Copy {
  void *dst;
  const void *src;
  unsigned bytes;
  int group;            /* commit group number, 0 while not committed */
  uint32_t issue_epoch; /* the race checker's epoch at the issue */
  uintptr_t pc;         /* where it was issued (race reports) */
  bool landed;          /* RINGRT_EMU_CPASYNC=eager: kept only for the race checker */
};

/* The order the scheduler resumes the ready fibers of a block in
 * (RINGRT_EMU_ORDER): forward by default; reversed or shuffled afresh on every
 * pass, so code that is only right because thread i runs before thread i+1
 * (a missing __syncthreads) gives wrong results. */
enum order_kind { O_FORWARD = 0, O_REVERSE, O_SHUFFLE };
struct Order {
  int kind;
  uint64_t seed;
};

struct Slot {
  int fiber;
};

struct Fiber {
  Ctx ctx;
  uint3 tid;
  int state;
  int op;        /* pending collective (warp_op / block_op) */
  int param;     /* shuffle lane, delta or mask */
  int width;     /* shuffle width */
  unsigned mask; /* lanes taking part in the warp collective */
  uint64_t value;
  uint64_t result;
  const void *gather_src; /* W_GATHER: this lane's bytes, and where all lanes' go */
  void *gather_dst;
  const char *what; /* the instruction waiting at a W_GATHER, for messages */
  uintptr_t site;   /* its call site and shape: one per warp (.aligned) */
  int shape;
  std::vector<Copy> copies; /* cp.async not yet landed, in issue order */
  int groups;               /* cp.async groups committed so far */
};

struct Stack {
  char *map; /* the mapping: a guard page, then the stack */
  size_t len;
};

/* Scheduling modes that expose hazards a GPU may show and the default
 * schedule hides (RINGRT_EMU_SCHED, RINGRT_EMU_CPASYNC). */
struct Modes {
  /* runahead: each warp in turn runs through its warp collectives until
   * it waits at a block barrier or exits, so a read of another warp's
   * shared-memory writes without __syncthreads sees stale data (block: a
   * warp collective waits for the whole block, like a block barrier). */
  bool runahead = false;
  /* eager: a cp.async lands when issued, so a prefetch into a tile other
   * warps still read corrupts it (lazy: it lands at its wait). */
  bool eager_copies = false;
  /* RINGRT_EMU_DROP_BARRIER=FILE:LINE: the __syncthreads at that site is
   * deleted (planted-fault tests); drop_file NULL: none. */
  const char *drop_file = nullptr;
  int drop_line = 0;
  /* RINGRT_EMU_RACECHECK=1: the shared-memory race checker (racecheck.h) */
  bool racecheck = false;
};

struct Launch {
  const char *name;
  dim3 grid, block;
  size_t shmem;
  void (*fn)(void *);
  void *arg;
  Order order = {O_FORWARD, 1};
  Modes modes;
};

struct Worker {
  Ctx sched;
  std::vector<Fiber> fibers;
  std::vector<Stack> stacks;
  size_t stack_bytes = 0; /* usable size of every stack in `stacks` */
  size_t page = 4096;
  unsigned char *smem = nullptr;
  size_t smem_cap = 0;
  const Launch *launch = nullptr;
  uint3 bidx = {0, 0, 0};
  int nthreads = 0;
  int cur = -1;         /* running fiber, -1 in the scheduler */
  bool faulted = false; /* a kernel fault (rrt_emu::fault) in this launch */
  /* resume order of the current pass; a vector of an internal type, since
   * std::vector<int>'s out-of-line members would be exported from the
   * library (api.exports) */
  std::vector<Slot> schedule;
  Racecheck rc;
  bool rc_on = false; /* this launch checks races */

  Worker() {
    long p = sysconf(_SC_PAGESIZE);
    if (p > 0) page = (size_t)p;
  }
  ~Worker() {
    release_stacks();
    free(smem);
  }
  void release_stacks() {
    for (Stack &s : stacks)
      munmap(s.map, s.len);
    stacks.clear();
  }
  rrt_status prepare(const Launch &l, int n, size_t want_stack);
  rrt_status run_block(uint64_t b);
  void order_pass(uint64_t block, uint64_t pass);
  void run_pass();
  rrt_status run_warp_ahead(int lo, int hi);
  rrt_status release_warp(int lo, int hi, bool *released);
  void resolve_warp(int lo, unsigned group);
  void resolve_gather(int lo, unsigned group);
  void check_aligned(int lo, unsigned group);
  void vfault(int fiber, const char *fmt, va_list ap);
  void fault_at(int fiber, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
  rrt_status report_deadlock(const char *why, int warp_lo);
  void record(const void *p, size_t n, bool write, uintptr_t pc, uint32_t since);
  void report_race(const RcRace &r, uintptr_t pc);
};

thread_local Worker *t_current = nullptr; /* worker running a block on this OS thread */

Worker &this_worker() {
  static thread_local Worker w;
  return w;
}

Worker *running(const char *what) {
  Worker *w = t_current;
  if (!w || w->cur < 0) {
    fprintf(stderr, "ringrt emu: %s called outside a kernel launched by RRT_LAUNCH\n", what);
    abort();
  }
  return w;
}

void fiber_main() {
  Worker *w = t_current;
  ctx_started(w->sched);
  w->launch->fn(w->launch->arg);
  w = t_current;
  Fiber &f = w->fibers[(size_t)w->cur];
  f.state = F_DONE;
  ctx_switch(f.ctx, w->sched, true); /* never resumed */
  abort();
}

/* Park the running fiber until the scheduler releases it. */
uint64_t park(Worker *w, int state, int op, unsigned mask, uint64_t value, int param, int width) {
  Fiber &f = w->fibers[(size_t)w->cur];
  f.state = state;
  f.mask = mask;
  f.op = op;
  f.value = value;
  f.param = param;
  f.width = width;
  ctx_switch(f.ctx, w->sched);
  return f.result;
}

rrt_status Worker::prepare(const Launch &l, int n, size_t want_stack) {
  launch = &l;
  nthreads = n;
  want_stack = (want_stack + page - 1) / page * page;
  if (want_stack > stack_bytes) { /* bigger stacks needed: start over */
    release_stacks();
    stack_bytes = want_stack;
  }
  while ((int)stacks.size() < n) {
    size_t len = stack_bytes + page;
    /* NORESERVE: only the pages a fiber touches cost memory. */
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      fprintf(stderr, "ringrt emu: kernel %s: cannot map a %zu-byte fiber stack: %s\n", l.name, len,
              strerror(errno));
      return RRT_ERR_OUT_OF_MEMORY;
    }
    if (mprotect(p, page, PROT_NONE) != 0) { /* guard page below the stack (it grows down) */
      munmap(p, len);
      return RRT_ERR_OUT_OF_MEMORY;
    }
    stacks.push_back(Stack{(char *)p, len});
  }
  fibers.resize((size_t)n);
  faulted = false;
  size_t need = l.shmem > 0 ? l.shmem : 128;
  if (need > smem_cap) {
    free(smem);
    smem = (unsigned char *)aligned_alloc(128, (need + 127) / 128 * 128);
    smem_cap = smem ? need : 0;
    if (!smem) return RRT_ERR_OUT_OF_MEMORY;
  }
  rc_on = l.modes.racecheck;
  return rc_on ? rc.prepare(smem, l.shmem) : RRT_SUCCESS;
}

/* Complete one warp collective: `group` holds the lanes (bit i: thread lo+i)
 * that all wait at it with the same operation, width and mask. */
void Worker::resolve_warp(int lo, unsigned group) {
  const int op = fibers[(size_t)(lo + __builtin_ctz(group))].op;
  if (op == W_GATHER) {
    resolve_gather(lo, group);
    return;
  }
  const int width = fibers[(size_t)(lo + __builtin_ctz(group))].width;
  uint64_t ballot = 0;
  int all = 1;
  for (unsigned g = group; g; g &= g - 1) {
    const Fiber &f = fibers[(size_t)(lo + __builtin_ctz(g))];
    if (f.value)
      ballot |= 1ull << __builtin_ctz(g);
    else
      all = 0;
  }
  for (unsigned g = group; g; g &= g - 1) {
    Fiber &f = fibers[(size_t)(lo + __builtin_ctz(g))];
    unsigned lane = (unsigned)__builtin_ctz(g), b = (unsigned)f.param & 31u;
    /* PTX shfl segment rules: segmask selects the width-sized segment. */
    unsigned seg = (unsigned)(warpSize - width) & 31u;
    int minl = (int)(lane & seg), maxl = (int)((lane & seg) | (31u & ~seg)), j = (int)lane;
    bool ok = true;
    switch (op) {
    case W_SHFL_IDX: j = minl | (int)(b & ~seg); break;
    case W_SHFL_UP: j = (int)lane - (int)b, ok = j >= minl; break;
    case W_SHFL_DOWN: j = (int)lane + (int)b, ok = j <= maxl; break;
    case W_SHFL_XOR: j = (int)(lane ^ b), ok = j <= maxl; break;
    default: break;
    }
    switch (op) {
    case W_BALLOT: f.result = ballot; break;
    case W_ANY: f.result = ballot != 0; break;
    case W_ALL: f.result = (uint64_t)all; break;
    case W_SYNC: f.result = 0; break;
    default: {
      /* Out of segment, or a lane outside the group (exited, absent, not
       * in the mask: undefined in CUDA): own value. */
      bool in = ok && ((group >> j) & 1u);
      f.result = in ? fibers[(size_t)(lo + j)].value : f.value;
    }
    }
  }
  for (unsigned g = group; g; g &= g - 1)
    fibers[(size_t)(lo + __builtin_ctz(g))].state = F_READY;
  rc.warp_released(lo / warpSize);
}

/* Every lane of the group receives the bytes of every lane (lane j at offset
 * j * bytes; zeros for a lane outside the group). The .aligned instructions
 * built on it (mma.sync, ldmatrix) are undefined unless all 32 lanes execute
 * them: a partial warp is a kernel fault, not a silently wrong answer. */
void Worker::resolve_gather(int lo, unsigned group) {
  const Fiber &first = fibers[(size_t)(lo + __builtin_ctz(group))];
  const size_t bytes = (size_t)first.width;
  if (group != 0xffffffffu)
    fault_at(lo + __builtin_ctz(group),
             "%s needs all 32 lanes of the warp, only lanes %08x take part (exited lanes, or a "
             "block size that is not a multiple of 32)",
             first.what, group);
  check_aligned(lo, group);
  for (unsigned g = group; g; g &= g - 1) {
    Fiber &f = fibers[(size_t)(lo + __builtin_ctz(g))];
    unsigned char *dst = (unsigned char *)f.gather_dst;
    for (int j = 0; j < warpSize; j++) {
      if ((group >> j) & 1u)
        memcpy(dst + (size_t)j * bytes, fibers[(size_t)(lo + j)].gather_src, bytes);
      else
        memset(dst + (size_t)j * bytes, 0, bytes);
    }
  }
  for (unsigned g = group; g; g &= g - 1)
    fibers[(size_t)(lo + __builtin_ctz(g))].state = F_READY;
  rc.warp_released(lo / warpSize);
}

/* The lanes of one .aligned instruction (mma.sync, ldmatrix) must execute
 * the same instruction: one call site, one shape. Lanes at two call sites
 * (the instruction reached from different branches) are undefined on
 * hardware; here a kernel fault naming both sites. */
void Worker::check_aligned(int lo, unsigned group) {
  const int l0 = lo + __builtin_ctz(group);
  const Fiber &a = fibers[(size_t)l0];
  for (unsigned g = group; g; g &= g - 1) {
    const int li = lo + __builtin_ctz(g);
    const Fiber &b = fibers[(size_t)li];
    if (b.site == a.site && b.shape == a.shape && b.what == a.what) continue;
    char sa[600], sb[600];
    describe_pc(a.site, sa, sizeof sa);
    describe_pc(b.site, sb, sizeof sb);
    fault_at(li,
             "lanes of one warp at different .aligned warp instructions: lane %d at %s (%s), lane "
             "%d at %s (%s): an .aligned instruction reached from divergent branches",
             l0 - lo, a.what, sa, li - lo, b.what, sb);
    return;
  }
}

/* A kernel fault (misuse that hardware punishes with an error or undefined
 * results): the first one of the launch on this worker is printed, naming
 * the kernel, block and thread; the kernel runs on (the emulated instruction
 * still does something harmless) and the launch returns RRT_ERR_INTERNAL. */
void Worker::vfault(int fiber, const char *fmt, va_list ap) {
  if (!faulted) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const uint3 t = fibers[(size_t)fiber].tid;
    fprintf(stderr, "ringrt emu: kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s\n",
            launch->name, bidx.x, bidx.y, bidx.z, t.x, t.y, t.z, msg);
  }
  faulted = true;
}

void Worker::fault_at(int fiber, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfault(fiber, fmt, ap);
  va_end(ap);
}

rrt_status Worker::report_deadlock(const char *why, int warp_lo) {
  int nb = 0, nw = 0, nd = 0;
  for (int i = 0; i < nthreads; i++) {
    int s = fibers[(size_t)i].state;
    nb += s == F_BLOCK, nw += s == F_WARP, nd += s == F_DONE;
  }
  const Launch &l = *launch;
  fprintf(stderr,
          "ringrt emu: kernel %s, block (%u,%u,%u) of grid (%u,%u,%u), block size (%u,%u,%u): %s "
          "(warp %d; %d thread(s) at __syncthreads, %d at warp collectives, %d exited): a "
          "barrier or shuffle in divergent code?\n",
          l.name, bidx.x, bidx.y, bidx.z, l.grid.x, l.grid.y, l.grid.z, l.block.x, l.block.y,
          l.block.z, why, warp_lo / warpSize, nb, nw, nd);
  return RRT_ERR_INTERNAL;
}

/* splitmix64: a small, good mixer for the shuffled order. */
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The resume order of one scheduling pass. A shuffle depends only on the
 * seed, the block and the pass, so a failing order replays exactly, with any
 * number of emulator threads. */
void Worker::order_pass(uint64_t block, uint64_t pass) {
  const int n = nthreads;
  if (pass > 0 && launch->order.kind != O_SHUFFLE) return; /* fixed orders: built once */
  schedule.resize((size_t)n);
  for (int i = 0; i < n; i++)
    schedule[(size_t)i].fiber = launch->order.kind == O_REVERSE ? n - 1 - i : i;
  if (launch->order.kind != O_SHUFFLE) return;
  uint64_t st = mix64(launch->order.seed ^ mix64(block ^ mix64(pass)));
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    st = mix64(st);
    int j = (int)(st % (uint64_t)(i + 1));
    std::swap(schedule[(size_t)i], schedule[(size_t)j]);
  }
}

/* RRT_CHECK of comm/error.h, which the emulator cannot include (it brings
 * mpi.h into the C++ build). */
#define RRT_EMU_TRY(call)                                                                          \
  do {                                                                                             \
    const rrt_status rrt_emu_try_ = (call);                                                        \
    if (rrt_emu_try_ != RRT_SUCCESS) return rrt_emu_try_;                                          \
  } while (0)

/* Resume every ready fiber once, in the pass's order. */
void Worker::run_pass() {
  for (Slot slot : schedule) {
    const int i = slot.fiber;
    if (fibers[(size_t)i].state != F_READY) continue;
    cur = i;
    ctx_switch(sched, fibers[(size_t)i].ctx);
  }
  cur = -1;
}

/* Run-ahead (Modes): the warp of threads [lo, hi) runs, its collectives
 * released as soon as its own lanes reach them, until none of its threads
 * is ready (each waits at a block barrier, sleeps or is done). */
rrt_status Worker::run_warp_ahead(int lo, int hi) {
  for (;;) {
    for (Slot slot : schedule) {
      const int i = slot.fiber;
      if (i < lo || i >= hi || fibers[(size_t)i].state != F_READY) continue;
      cur = i;
      ctx_switch(sched, fibers[(size_t)i].ctx);
    }
    cur = -1;
    bool released = false;
    RRT_EMU_TRY(release_warp(lo, hi, &released));
    if (!released) return RRT_SUCCESS;
  }
}

/* Complete the collectives of the warp of threads [lo, hi) that every live
 * lane of their mask waits at (*released set when one is); lanes waiting at
 * different collectives are a deadlock, reported. */
rrt_status Worker::release_warp(int lo, int hi, bool *released) {
  unsigned alive = 0, waiting = 0; /* lane bit masks */
  for (int i = lo; i < hi; i++) {
    const int st = fibers[(size_t)i].state;
    if (st == F_DONE) continue;
    alive |= 1u << (i - lo);
    if (st == F_WARP) waiting |= 1u << (i - lo);
  }
  for (unsigned todo = waiting; todo;) {
    const unsigned first = todo & -todo;
    const Fiber &f = fibers[(size_t)(lo + __builtin_ctz(first))];
    const unsigned group = (f.mask & alive) | first;
    if (group & ~waiting) { /* a lane of the mask is elsewhere: not yet */
      todo &= ~first;
      continue;
    }
    for (unsigned g = group; g; g &= g - 1) {
      const Fiber &o = fibers[(size_t)(lo + __builtin_ctz(g))];
      if (o.op != f.op || o.width != f.width || ((o.mask & alive) | (g & -g)) != group)
        return report_deadlock("lanes of one warp wait at different warp collectives", lo);
    }
    resolve_warp(lo, group);
    todo &= ~group, waiting &= ~group;
    *released = true;
  }
  return RRT_SUCCESS;
}

rrt_status Worker::run_block(uint64_t b) {
  const Launch &l = *launch;
  bidx.x = (unsigned)(b % l.grid.x);
  bidx.y = (unsigned)((b / l.grid.x) % l.grid.y);
  bidx.z = (unsigned)(b / ((uint64_t)l.grid.x * l.grid.y));
  const int n = nthreads;
  for (int i = 0; i < n; i++) {
    Fiber &f = fibers[(size_t)i];
    f.state = F_READY;
    f.tid.x = (unsigned)i % l.block.x;
    f.tid.y = ((unsigned)i / l.block.x) % l.block.y;
    f.tid.z = (unsigned)i / (l.block.x * l.block.y);
    f.copies.clear(); /* a thread that exited with copies in flight: gone with its block */
    f.groups = 0;
    ctx_make(f.ctx, stacks[(size_t)i].map + page, stack_bytes, fiber_main);
  }
  rc.begin_block();
  for (uint64_t pass = 0;; pass++) {
    order_pass(b, pass);
    if (l.modes.runahead) {
      uint64_t started = 0; /* warps run this pass, in the order their first thread comes */
      for (Slot slot : schedule) {
        const int lo = slot.fiber / warpSize * warpSize;
        if ((started >> (lo / warpSize)) & 1u) continue;
        started |= 1ull << (lo / warpSize);
        RRT_EMU_TRY(run_warp_ahead(lo, lo + warpSize < n ? lo + warpSize : n));
      }
    } else {
      run_pass();
    }
    /* Every fiber now waits, sleeps or is done. Sleepers run again on the
     * next pass; when only sleepers are live they wait for other blocks (a
     * spin on a flag another block sets), so the OS thread yields its core. */
    int live = 0, at_block = 0, sleeping = 0;
    bool released = false;
    for (int i = 0; i < n; i++) {
      Fiber &f = fibers[(size_t)i];
      if (f.state == F_SLEEP) f.state = F_READY, sleeping++;
      live += f.state != F_DONE;
      at_block += f.state == F_BLOCK;
    }
    for (int lo = 0; lo < n; lo += warpSize)
      RRT_EMU_TRY(release_warp(lo, lo + warpSize < n ? lo + warpSize : n, &released));
    if (live == 0) return faulted ? RRT_ERR_INTERNAL : RRT_SUCCESS;
    if (released) continue;
    if (sleeping == live) sched_yield();
    if (sleeping) continue;
    if (at_block == live) {
      rc.barrier();
      int count = 0, all = 1;
      for (int i = 0; i < n; i++) {
        Fiber &f = fibers[(size_t)i];
        if (f.state != F_BLOCK) continue;
        count += f.value != 0;
        all &= f.value != 0;
      }
      for (int i = 0; i < n; i++) {
        Fiber &f = fibers[(size_t)i];
        if (f.state != F_BLOCK) continue;
        f.state = F_READY;
        switch (f.op) {
        case B_COUNT: f.result = (uint64_t)count; break;
        case B_AND: f.result = (uint64_t)all; break;
        case B_OR: f.result = count > 0; break;
        default: f.result = 0; break;
        }
      }
      continue;
    }
    int lo = 0; /* name the first warp that is split between both kinds of wait */
    for (int i = 0; i < n; i++)
      if (fibers[(size_t)i].state == F_WARP) {
        lo = i / warpSize * warpSize;
        break;
      }
    return report_deadlock("deadlock", lo);
  }
}

/* cudaFuncAttributeMaxDynamicSharedMemorySize of every kernel that set it.
 * Process-wide state by necessity: on a GPU the attribute belongs to the
 * kernel function, for every later launch from any thread. */
struct DynSmemAttr { /* an internal type: a std::pair's vector members would be exported */
  const void *kernel;
  size_t bytes;
};
std::mutex g_attr_mutex;
std::vector<DynSmemAttr> g_max_dyn_smem;

/* The emulated arch's opt-in limit (comm/emu_arch.h); an unknown
 * RINGRT_EMU_ARCH fails the context's creation, so here it is sm_80's. */
size_t arch_optin() {
  size_t bytes;
  (void)rrt_emu_arch_smem_optin(&bytes, nullptr, 0);
  return bytes;
}

size_t max_dyn_smem(const void *kernel) {
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  for (const auto &e : g_max_dyn_smem)
    if (e.kernel == kernel) return e.bytes;
  return kDefaultDynSmem;
}

rrt_status parse_order(const char *name, Order *o) {
  const char *e = getenv("RINGRT_EMU_ORDER");
  o->kind = O_FORWARD, o->seed = 1;
  if (!e || !*e || strcmp(e, "forward") == 0) return RRT_SUCCESS;
  if (strcmp(e, "reverse") == 0) {
    o->kind = O_REVERSE;
    return RRT_SUCCESS;
  }
  if (strncmp(e, "shuffle", 7) == 0 && (e[7] == '\0' || e[7] == ':')) {
    o->kind = O_SHUFFLE;
    if (e[7] == '\0') return RRT_SUCCESS;
    char *end = nullptr;
    errno = 0;
    o->seed = strtoull(e + 8, &end, 10);
    if (end != e + 8 && *end == '\0' && errno == 0) return RRT_SUCCESS;
  }
  fprintf(stderr,
          "ringrt emu: kernel %s: RINGRT_EMU_ORDER=%s: expected forward, reverse, shuffle or "
          "shuffle:SEED (SEED a decimal integer)\n",
          name, e);
  return RRT_ERR_INVALID_ARG;
}

/* One of two words for a mode variable; unset or empty is the first. */
rrt_status parse_choice(const char *name, const char *var, const char *off, const char *on,
                        bool *value) {
  const char *e = getenv(var);
  *value = false;
  if (!e || !*e || strcmp(e, off) == 0) return RRT_SUCCESS;
  if (strcmp(e, on) == 0) {
    *value = true;
    return RRT_SUCCESS;
  }
  fprintf(stderr, "ringrt emu: kernel %s: %s=%s: expected %s or %s\n", name, var, e, off, on);
  return RRT_ERR_INVALID_ARG;
}

/* RINGRT_EMU_DROP_BARRIER=FILE:LINE (Modes). The file part points into
 * the environment, which the process does not change while kernels run. */
rrt_status parse_drop(const char *name, Modes *m) {
  const char *e = getenv("RINGRT_EMU_DROP_BARRIER");
  if (!e || !*e) return RRT_SUCCESS;
  const char *colon = strrchr(e, ':');
  char *end = nullptr;
  const long line = colon ? strtol(colon + 1, &end, 10) : 0;
  if (!colon || colon == e || end == colon + 1 || *end != '\0' || line <= 0) {
    fprintf(stderr, "ringrt emu: kernel %s: RINGRT_EMU_DROP_BARRIER=%s: expected FILE:LINE\n", name,
            e);
    return RRT_ERR_INVALID_ARG;
  }
  m->drop_file = e, m->drop_line = (int)line;
  return RRT_SUCCESS;
}

rrt_status parse_modes(const char *name, Modes *m) {
  RRT_EMU_TRY(parse_choice(name, "RINGRT_EMU_SCHED", "block", "runahead", &m->runahead));
  RRT_EMU_TRY(parse_choice(name, "RINGRT_EMU_CPASYNC", "lazy", "eager", &m->eager_copies));
  RRT_EMU_TRY(parse_choice(name, "RINGRT_EMU_RACECHECK", "0", "1", &m->racecheck));
  static std::atomic<bool> told{false};
  if (m->racecheck && !rrt_emu_racecheck_observes_plain() && !told.exchange(true))
    fprintf(stderr, "ringrt emu: RINGRT_EMU_RACECHECK=1: this build does not instrument the "
                    "kernels (a sanitizer build, or not GCC): only ldmatrix and cp.async "
                    "accesses to shared memory are checked\n");
  return parse_drop(name, m);
}

/* Whether the barrier at file:line is the one RINGRT_EMU_DROP_BARRIER names. */
bool dropped(const Modes &m, const char *file, int line) {
  if (!m.drop_file || line != m.drop_line) return false;
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  const size_t n = strlen(base);
  return strncmp(m.drop_file, base, n) == 0 && m.drop_file[n] == ':';
}

rrt_status check_config(const char *name, const void *kernel, dim3 g, dim3 b, size_t shmem) {
  const char *why = nullptr;
  if (!g.x || !g.y || !g.z)
    why = "grid dimensions must be positive";
  else if (g.x > kMaxGridX || g.y > kMaxGridYZ || g.z > kMaxGridYZ)
    why = "grid too large (x < 2^31, y and z <= 65535)";
  else if (!b.x || !b.y || !b.z)
    why = "block dimensions must be positive";
  else if (b.x > kMaxBlockThreads || b.y > kMaxBlockThreads || b.z > kMaxBlockZ ||
           (uint64_t)b.x * b.y * b.z > kMaxBlockThreads)
    why = "block too large (at most 1024 threads, z <= 64)";
  else if (shmem > arch_optin())
    why = "dynamic shared memory above the opt-in limit of the emulated arch (RINGRT_EMU_ARCH: "
          "sm_80 163 KiB, sm_86/89 99 KiB, sm_90 227 KiB)";
  else if (shmem > kDefaultDynSmem && shmem > max_dyn_smem(kernel))
    why = "dynamic shared memory above 48 KiB (and above the kernel's "
          "cudaFuncAttributeMaxDynamicSharedMemorySize) without opting in with "
          "cudaFuncSetAttribute: on a GPU, cudaErrorInvalidValue";
  if (!why) return RRT_SUCCESS;
  rrt_launch_note(name, why);
  fprintf(stderr,
          "ringrt emu: kernel %s: invalid launch configuration grid (%u,%u,%u) block (%u,%u,%u) "
          "shared %zu: %s\n",
          name, g.x, g.y, g.z, b.x, b.y, b.z, shmem, why);
  return RRT_ERR_INVALID_ARG;
}

} // namespace

namespace {

/* Launches running with the race checker: the instrumentation hooks'
 * fast test (one relaxed load when none is). */
std::atomic<int> g_rc_launches{0};

/* Run the blocks of a checked launch over the OS threads of its stream. */
rrt_status run_grid(const Launch &l, rrt_stream stream, size_t stack_bytes) {
  const uint64_t nblocks = (uint64_t)l.grid.x * l.grid.y * l.grid.z;
  const int nthreads = (int)(l.block.x * l.block.y * l.block.z);
  int threads = rrt_host_stream_threads(stream);
  if (threads < 1) threads = 1;
  if ((uint64_t)threads > nblocks) threads = (int)nblocks;
  std::atomic<uint64_t> next{0};
  std::atomic<int> status{RRT_SUCCESS};
  auto work = [&]() {
    Worker &w = this_worker();
    rrt_status s = w.prepare(l, nthreads, stack_bytes);
    t_current = &w;
    while (s == RRT_SUCCESS && status.load() == RRT_SUCCESS) {
      uint64_t b = next.fetch_add(1);
      if (b >= nblocks) break;
      s = w.run_block(b);
    }
    t_current = nullptr;
    w.launch = nullptr;
    int ok = RRT_SUCCESS;
    if (s != RRT_SUCCESS) status.compare_exchange_strong(ok, (int)s);
  };
  if (l.modes.racecheck) g_rc_launches.fetch_add(1);
  if (threads == 1) {
    work();
  } else {
#pragma omp parallel num_threads(threads)
    work();
  }
  if (l.modes.racecheck) g_rc_launches.fetch_sub(1);
  return (rrt_status)status.load();
}

/* A launch queued on a stream, run when the stream reaches it. */
struct Queued {
  Launch l;
  rrt_stream stream;
  size_t stack_bytes;
  void (*drop)(void *);
};

rrt_status run_queued(void *p) {
  const Queued *q = static_cast<const Queued *>(p);
  return run_grid(q->l, q->stream, q->stack_bytes);
}

void drop_queued(void *p) {
  Queued *q = static_cast<Queued *>(p);
  if (q->drop) q->drop(q->l.arg);
  delete q;
}

} // namespace

rrt_status launch(const char *name, const void *kernel, dim3 grid, dim3 block, size_t shmem,
                  rrt_stream stream, size_t stack_bytes, void (*fn)(void *), void *arg,
                  void (*drop)(void *)) {
  rrt_status st = RRT_SUCCESS;
  if (t_current) {
    fprintf(stderr,
            "ringrt emu: kernel %s launched from a kernel: dynamic parallelism is not "
            "supported\n",
            name);
    st = RRT_ERR_UNSUPPORTED;
  }
  Order order = {O_FORWARD, 1};
  if (st == RRT_SUCCESS) {
    (void)rrt_launch_note_take(NULL, 0); /* the note is about the last launch only */
    st = check_config(name, kernel, grid, block, shmem);
  }
  Modes modes;
  if (st == RRT_SUCCESS) st = parse_order(name, &order);
  if (st == RRT_SUCCESS) st = parse_modes(name, &modes);
  const Launch l = {name, grid, block, shmem, fn, arg, order, modes};
  if (st == RRT_SUCCESS && rrt_host_stream_queues(stream)) {
    Queued *q = new (std::nothrow) Queued{l, stream, stack_bytes, drop};
    if (q && (st = rrt_host_stream_enqueue(stream, run_queued, drop_queued, q)) == RRT_SUCCESS)
      return RRT_SUCCESS;
    delete q;
    if (!q) st = RRT_ERR_OUT_OF_MEMORY;
  } else if (st == RRT_SUCCESS) {
    st = run_grid(l, stream, stack_bytes);
  }
  if (drop) drop(arg);
  return st;
}

uint3 thread_idx() {
  Worker *w = running("threadIdx");
  return w->fibers[(size_t)w->cur].tid;
}
uint3 block_idx() { return running("blockIdx")->bidx; }
dim3 block_dim() { return running("blockDim")->launch->block; }
dim3 grid_dim() { return running("gridDim")->launch->grid; }
void *dyn_smem() { return running("RRT_DYN_SHARED")->smem; }

int block_sync(int op, int pred) {
  return (int)park(running("__syncthreads"), F_BLOCK, op, 0, pred != 0, 0, 0);
}

void block_sync_at(const char *file, int line) {
  Worker *w = running("__syncthreads");
  if (dropped(w->launch->modes, file, line)) return;
  (void)park(w, F_BLOCK, B_SYNC, 0, 0, 0, 0);
}

void sleep_yield() { (void)park(running("__nanosleep"), F_SLEEP, 0, 0, 0, 0, 0); }

uint64_t warp_sync(int op, unsigned mask, uint64_t value, int param, int width) {
  return park(running("a warp collective"), F_WARP, op, mask, value, param, width);
}

int set_max_dyn_smem(const void *kernel, long bytes) {
  if (bytes < 0 || (size_t)bytes > arch_optin()) return 1; /* cudaErrorInvalidValue */
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  for (auto &e : g_max_dyn_smem)
    if (e.kernel == kernel) {
      e.bytes = (size_t)bytes;
      return 0;
    }
  g_max_dyn_smem.push_back(DynSmemAttr{kernel, (size_t)bytes});
  return 0;
}

void fault(const char *fmt, ...) {
  Worker *w = running("a kernel fault");
  va_list ap;
  va_start(ap, fmt);
  w->vfault(w->cur, fmt, ap);
  va_end(ap);
}

unsigned lane_id() { return (unsigned)running("the lane id")->cur % warpSize; }

void warp_gather(const char *what, const void *mine, void *all, size_t bytes, uintptr_t site,
                 int shape) {
  Worker *w = running(what);
  Fiber &f = w->fibers[(size_t)w->cur];
  f.gather_src = mine, f.gather_dst = all, f.what = what, f.site = site, f.shape = shape;
  (void)park(w, F_WARP, W_GATHER, 0xffffffffu, 0, 0, (int)bytes);
}

void check_shared(const char *what, const void *p, size_t bytes) {
  Worker *w = running(what);
  const unsigned char *c = static_cast<const unsigned char *>(p);
  if (rrt_emu_mem_contains(p, bytes))
    w->fault_at(w->cur, "%s: address %p is global (device) memory, not shared memory", what, p);
  else if (c >= w->smem && c < w->smem + w->smem_cap && c + bytes > w->smem + w->launch->shmem)
    w->fault_at(w->cur,
                "%s: %zu bytes at offset %zu of dynamic shared memory, past the launch's %zu "
                "bytes",
                what, bytes, (size_t)(c - w->smem), w->launch->shmem);
}

/* cp.async: the copy is queued on the issuing thread and lands only at the
 * wait that covers its group, reading the source then too: a kernel that
 * reads the destination before that wait sees what was there before. With
 * RINGRT_EMU_CPASYNC=eager it lands at once instead, the other end of what
 * hardware may do: a prefetch into a tile still being read corrupts it. */
void cp_async(void *dst, const void *src, unsigned bytes) {
  Worker *w = running("cp.async");
  if (((uintptr_t)dst | (uintptr_t)src) % bytes != 0)
    w->fault_at(w->cur, "cp.async of %u bytes: source %p or destination %p not %u-byte aligned",
                bytes, src, dst, bytes);
  check_shared("cp.async destination", dst, bytes);
  const unsigned char *from = static_cast<const unsigned char *>(src);
  if (from >= w->smem && from < w->smem + w->smem_cap) /* cp.async.shared.global */
    w->fault_at(w->cur, "cp.async: source %p is shared memory, not global memory", src);
  const uintptr_t pc = (uintptr_t)__builtin_return_address(0);
  const bool eager = w->launch->modes.eager_copies;
  if (eager) {
    if (w->rc_on) w->record(dst, bytes, true, pc, w->rc.epoch());
    memcpy(dst, src, bytes);
  }
  /* Eager copies stay queued for the race checker: on hardware they may
   * land as late as their wait, which it checks them at too. */
  if (!eager || w->rc_on)
    w->fibers[(size_t)w->cur].copies.push_back(Copy{dst, src, bytes, 0, w->rc.epoch(), pc, eager});
}

void cp_async_commit() {
  Worker *w = running("cp.async.commit_group");
  Fiber &f = w->fibers[(size_t)w->cur];
  f.groups++;
  for (Copy &c : f.copies)
    if (c.group == 0) c.group = f.groups;
}

void cp_async_wait(int pending) {
  Worker *w = running("cp.async.wait_group");
  Fiber &f = w->fibers[(size_t)w->cur];
  /* wait_group N: all but the N most recent committed groups are done;
   * wait_all (pending < 0): every copy, committed or not. */
  const int upto = f.groups - pending;
  size_t keep = 0;
  for (size_t i = 0; i < f.copies.size(); i++) {
    Copy &c = f.copies[i];
    if (pending < 0 || (c.group != 0 && c.group <= upto)) {
      /* a race with any access since the issue: the copy may land then */
      if (w->rc_on) w->record(c.dst, c.bytes, true, c.pc, c.issue_epoch);
      if (!c.landed) memcpy(c.dst, c.src, c.bytes);
    } else
      f.copies[keep++] = c;
  }
  f.copies.resize(keep);
}

unsigned active_mask() {
  Worker *w = running("__activemask");
  int lo = w->cur / warpSize * warpSize, hi = lo + warpSize;
  if (hi > w->nthreads) hi = w->nthreads;
  unsigned m = 0;
  for (int i = lo; i < hi; i++)
    if (w->fibers[(size_t)i].state != F_DONE) m |= 1u << (i - lo);
  return m;
}

void thread_fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

bool rc_armed() { return g_rc_launches.load(std::memory_order_relaxed) != 0; }

void rc_access(const void *p, size_t n, bool write, uintptr_t pc) {
  Worker *w = t_current;
  if (!w || w->cur < 0 || !w->rc_on) return; /* host code, or a launch without the checker */
  w->record(p, n, write, pc, w->rc.epoch());
}

void Worker::record(const void *p, size_t n, bool write, uintptr_t pc, uint32_t since) {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  if (c >= smem + launch->shmem && c < smem + smem_cap && !faulted) {
    char at[600];
    describe_pc(pc, at, sizeof at);
    fault_at(cur,
             "%s of %zu bytes at offset %zu of dynamic shared memory, past the launch's %zu "
             "bytes, at %s",
             write ? "store" : "load", n, (size_t)(c - smem), launch->shmem, at);
    return;
  }
  RcRace r;
  if (rc.access(p, n, write, cur, pc, since, &r) && !faulted) report_race(r, pc);
}

/* The first race of the launch on this worker: both threads and lines. */
void Worker::report_race(const RcRace &r, uintptr_t pc) {
  char here[600], there[600];
  describe_pc(pc, here, sizeof here);
  describe_pc(r.other_pc, there, sizeof there);
  const uint3 o = fibers[(size_t)r.other_tid].tid;
  fault_at(cur,
           "shared-memory race (%s, RINGRT_EMU_RACECHECK) at byte %zu of %s: this thread (warp "
           "%d) at %s; earlier thread (%u,%u,%u) (warp %d)%s at %s, with no __syncthreads between "
           "them%s",
           r.kind, r.offset,
           r.dynamic ? "dynamic shared memory"
                     : "the static __shared__ storage (thread-local block)",
           cur / warpSize, here, o.x, o.y, o.z, r.other_tid / warpSize,
           r.other_warps ? " (and threads of other warps)" : "", there,
           r.other_tid / warpSize == cur / warpSize ? " nor a warp collective" : "");
}

} // namespace rrt_emu

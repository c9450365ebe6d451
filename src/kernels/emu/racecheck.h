/* The emulator's shared-memory race checker (RINGRT_EMU_RACECHECK=1), the
 * emulator's counterpart of compute-sanitizer's racecheck.
 *
 * Per byte of the running block's shared memory (dynamic, and the static
 * __shared__ arrays, which are thread-local storage of the OS thread) a
 * shadow cell keeps the last write and the last read: thread, barrier
 * epoch, the warp's count of completed warp collectives, and the code
 * address. Two accesses of different threads to one byte, at least one a
 * write, are ordered when a block barrier lies between them (a later
 * epoch), or when both threads are lanes of one warp and a warp collective
 * of that warp lies between them; otherwise it is a race, reported as a
 * kernel fault naming the kernel, the offset, both threads and both source
 * lines. Epochs only grow (a new block starts a new one), so the shadow is
 * never cleared.
 *
 * What is observed: ldmatrix reads and cp.async writes (which go through
 * the emulator; a cp.async counts from its issue to its landing, so a
 * prefetch over a tile other warps still read is a race even when the
 * copy lands after their reads), and, where the build instruments the
 * emulator's kernel objects (GCC without the sanitizers: -fsanitize=thread
 * instrumentation with this file's own hooks instead of TSan's run time,
 * racecheck.cpp), every plain load and store. Atomics are never races. */
#ifndef RRT_KERNELS_EMU_RACECHECK_H
#define RRT_KERNELS_EMU_RACECHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

extern "C" {
/** 1 when this build observes plain loads and stores of shared memory
 *  (the kernel objects are instrumented), else 0: the race checker then
 *  sees ldmatrix and cp.async only. */
int rrt_emu_racecheck_observes_plain(void);
}

namespace rrt_emu {

/* The shadow of one byte of shared memory (40 bytes). */
struct RcCell {
  uint32_t w_epoch, r_epoch; /* 0: never */
  uint32_t w_wseq, r_wseq;   /* the warp's completed collectives then */
  uintptr_t w_pc, r_pc;
  uint16_t w_tid, r_tid; /* linear thread index in the block */
  uint8_t r_xwarp;       /* readers of more than one warp in r_epoch */
};

/* A race found by Racecheck::access. */
struct RcRace {
  const char *kind; /* "read after write" ... */
  bool dynamic;     /* dynamic shared memory, else a static __shared__ array */
  size_t offset;    /* byte offset in the dynamic shared memory or the static block */
  int other_tid;    /* the earlier access's thread */
  uintptr_t other_pc;
  bool other_warps; /* readers of several warps: the other may be any of them */
};

/* One OS thread's race-checker state (a member of its executor worker). */
class Racecheck {
public:
  Racecheck() = default;
  Racecheck(const Racecheck &) = delete;
  Racecheck &operator=(const Racecheck &) = delete;
  ~Racecheck();
  /** Shadow for `dyn_bytes` of dynamic shared memory at `dyn` and for this
   *  OS thread's static __shared__ storage. */
  rrt_status prepare(const unsigned char *dyn, size_t dyn_bytes);
  /** A new block (its shared memory starts without history). */
  void begin_block() { epoch_++; }
  /** A block barrier released. */
  void barrier() { epoch_++; }
  /** A warp collective of warp `warp` completed. */
  void warp_released(int warp) { wseq_[warp & 31]++; }
  uint32_t epoch() const { return epoch_; }
  /** Whether p lies in the block's dynamic shared memory or the static
   *  __shared__ storage (the shadowed bytes). */
  bool shadowed(const void *p) const;
  /** Record an access of `n` bytes at p by thread `tid`, which may have
   *  happened at any time since epoch `since` (a cp.async landing: its
   *  issue; otherwise now). Returns true and fills *race at the first
   *  unordered byte. Bytes outside the shadowed memory are ignored. */
  bool access(const void *p, size_t n, bool write, int tid, uintptr_t pc, uint32_t since,
              RcRace *race);

private:
  bool cells_for(const void *p, RcCell **cells, size_t *avail, size_t *offset, bool *dynamic);
  bool unordered(int other, uint32_t other_epoch, uint32_t other_wseq, int tid,
                 uint32_t since) const;
  const unsigned char *dyn_ = nullptr;
  size_t dyn_bytes_ = 0;
  RcCell *dyn_cells_ = nullptr;
  size_t dyn_cap_ = 0;
  const unsigned char *tls_ = nullptr; /* this thread's static __shared__ storage */
  size_t tls_bytes_ = 0;
  RcCell *tls_cells_ = nullptr;
  bool tls_known_ = false;
  uint32_t epoch_ = 0;
  uint32_t wseq_[32] = {};
};

/** The running kernel thread's access (racecheck.cpp's hooks call it;
 *  simt_executor.cpp): recorded when the launch checks races. */
void rc_access(const void *p, size_t n, bool write, uintptr_t pc);
/** A launch with the race checker is running (the hooks' fast test). */
bool rc_armed();
/** "file:line" of a code address (inlined: the innermost line, then the
 *  kernel's line it was inlined at), or the symbol and offset. */
void describe_pc(uintptr_t pc, char *out, size_t n);

} // namespace rrt_emu

#endif

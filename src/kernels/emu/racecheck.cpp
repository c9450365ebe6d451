/* The shared-memory race checker's shadow and its report helpers
 * (interface: racecheck.h).
 *
 * Where cmake/RingrtKernels.cmake compiles the emulator's copy of every
 * .cu file with GCC's -fsanitize=thread instrumentation (not under the
 * sanitizer build: ASan and TSan exclude each other), each load and store
 * that is not a register calls a __tsan_* function. TSan's run time is not
 * linked: the functions are defined in tsan_hooks.cpp, hidden in the library, and hand
 * the access to the race checker when a launch runs with it, else return
 * at once (one load of a global). Atomics are performed there, sequentially
 * consistent, as cuda_builtins.h's are. */
#include "kernels/emu/racecheck.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace rrt_emu {
namespace {

/* The TLS block of the module holding this file, for the calling thread:
 * the static __shared__ arrays of the emulator's kernels (static
 * thread_local, cuda_builtins.h) are in it, with the executor's own
 * thread-local state, which instrumented code never touches. */
struct TlsFind {
  uintptr_t probe;
  const unsigned char *data;
  size_t bytes;
};

int tls_of_module(struct dl_phdr_info *info, size_t, void *arg) {
  TlsFind *f = static_cast<TlsFind *>(arg);
  bool mine = false;
  size_t tls = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && f->probe >= lo && f->probe < lo + ph.p_memsz) mine = true;
    if (ph.p_type == PT_TLS) tls = ph.p_memsz;
  }
  if (!mine) return 0;
  f->data = static_cast<const unsigned char *>(info->dlpi_tls_data);
  f->bytes = f->data ? tls : 0;
  return 1;
}

RcCell *grow(RcCell *cells, size_t *cap, size_t want) {
  if (want <= *cap) return cells;
  free(cells);
  cells = static_cast<RcCell *>(calloc(want, sizeof *cells));
  *cap = cells ? want : 0;
  return cells;
}

} // namespace

Racecheck::~Racecheck() {
  free(dyn_cells_);
  free(tls_cells_);
}

rrt_status Racecheck::prepare(const unsigned char *dyn, size_t dyn_bytes) {
  dyn_ = dyn, dyn_bytes_ = dyn_bytes;
  dyn_cells_ = grow(dyn_cells_, &dyn_cap_, dyn_bytes);
  if (dyn_bytes && !dyn_cells_) return RRT_ERR_OUT_OF_MEMORY;
  if (!tls_known_) { /* the OS thread's block never moves */
    TlsFind f = {(uintptr_t)&tls_of_module, nullptr, 0};
    dl_iterate_phdr(tls_of_module, &f);
    size_t cap = 0;
    tls_cells_ = f.bytes ? grow(nullptr, &cap, f.bytes) : nullptr;
    if (f.bytes && !tls_cells_) return RRT_ERR_OUT_OF_MEMORY;
    tls_ = f.data, tls_bytes_ = f.bytes, tls_known_ = true;
  }
  return RRT_SUCCESS;
}

bool Racecheck::shadowed(const void *p) const {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  return (c >= dyn_ && c < dyn_ + dyn_bytes_) || (c >= tls_ && c < tls_ + tls_bytes_);
}

bool Racecheck::cells_for(const void *p, RcCell **cells, size_t *avail, size_t *offset,
                          bool *dynamic) {
  const unsigned char *c = static_cast<const unsigned char *>(p);
  if (c >= dyn_ && c < dyn_ + dyn_bytes_) {
    *offset = (size_t)(c - dyn_), *avail = dyn_bytes_ - *offset, *dynamic = true;
    *cells = dyn_cells_ + *offset;
    return true;
  }
  if (c >= tls_ && c < tls_ + tls_bytes_) {
    *offset = (size_t)(c - tls_), *avail = tls_bytes_ - *offset, *dynamic = false;
    *cells = tls_cells_ + *offset;
    return true;
  }
  return false;
}

/* Whether an earlier access by `other` may be concurrent with this one
 * (neither a barrier nor, within one warp, a warp collective between). */
bool Racecheck::unordered(int other, uint32_t other_epoch, uint32_t other_wseq, int tid,
                          uint32_t since) const {
  if (other_epoch < since || other == tid) return false;
  return (other >> 5) != (tid >> 5) || other_wseq == wseq_[(tid >> 5) & 31];
}

bool Racecheck::access(const void *p, size_t n, bool write, int tid, uintptr_t pc, uint32_t since,
                       RcRace *race) {
  RcCell *cells;
  size_t avail, offset;
  bool dynamic;
  if (!cells_for(p, &cells, &avail, &offset, &dynamic)) return false;
  if (n > avail) n = avail;
  const uint32_t ws = wseq_[(tid >> 5) & 31];
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    RcCell &c = cells[i];
    const char *kind = nullptr;
    int other = 0;
    uintptr_t opc = 0;
    bool xwarp = false;
    if (unordered(c.w_tid, c.w_epoch, c.w_wseq, tid, since)) {
      kind = write ? "write after write" : "read after write", other = c.w_tid, opc = c.w_pc;
    } else if (write && c.r_epoch >= since &&
               (c.r_xwarp || unordered(c.r_tid, c.r_epoch, c.r_wseq, tid, since))) {
      kind = "write after read", other = c.r_tid, opc = c.r_pc, xwarp = c.r_xwarp;
    }
    if (kind && !found) {
      *race = RcRace{kind, dynamic, offset + i, other, opc, xwarp};
      found = true;
    }
    if (write) {
      c.w_epoch = epoch_, c.w_wseq = ws, c.w_pc = pc, c.w_tid = (uint16_t)tid;
    } else {
      if (c.r_epoch != epoch_)
        c.r_xwarp = 0;
      else if (c.r_tid != tid && (c.r_tid >> 5) != (tid >> 5))
        c.r_xwarp = 1;
      c.r_epoch = epoch_, c.r_wseq = ws, c.r_pc = pc, c.r_tid = (uint16_t)tid;
    }
  }
  return found;
}

/* addr2line (binutils) for the source line: run only when a fault is
 * reported, never on the checking path. */
static bool addr2line(const char *module, uintptr_t addr, char *out, size_t n) {
  if (access("/usr/bin/addr2line", X_OK) != 0 && access("/bin/addr2line", X_OK) != 0) return false;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "addr2line -i -e '%s' 0x%lx 2>/dev/null", module, (unsigned long)addr);
  FILE *p = popen(cmd, "r");
  if (!p) return false;
  char line[512], first[512] = "", last[512] = "";
  int lines = 0;
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, " \n")] = '\0';
    const char *base = strrchr(line, '/');
    snprintf(lines++ ? last : first, sizeof first, "%s", base ? base + 1 : line);
  }
  pclose(p);
  if (!lines || first[0] == '?') return false;
  if (lines > 1)
    snprintf(out, n, "%s (inlined at %s)", first, last);
  else
    snprintf(out, n, "%s", first);
  return true;
}

void describe_pc(uintptr_t pc, char *out, size_t n) {
  Dl_info info;
  if (!pc || !dladdr((void *)pc, &info)) {
    snprintf(out, n, "pc %#lx", (unsigned long)pc);
    return;
  }
  const char *module = info.dli_fname && *info.dli_fname ? info.dli_fname : "/proc/self/exe";
  /* a position-independent module is addressed from its base, an
   * ET_EXEC executable by absolute addresses */
  const ElfW(Ehdr) *eh = static_cast<const ElfW(Ehdr) *>(info.dli_fbase);
  const uintptr_t addr = pc - 1 - (eh->e_type == ET_EXEC ? 0 : (uintptr_t)info.dli_fbase);
  if (addr2line(module, addr, out, n)) return;
  int st = -1;
  char *dm = info.dli_sname ? abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st) : nullptr;
  snprintf(out, n, "%s+%#lx (%s+%#lx; no line: build with -g and install addr2line)",
           st == 0 ? dm : (info.dli_sname ? info.dli_sname : "?"),
           (unsigned long)(pc - (uintptr_t)info.dli_saddr), module, (unsigned long)addr);
  free(dm);
}

} // namespace rrt_emu

extern "C" int rrt_emu_racecheck_observes_plain(void) {
#if defined(RRT_EMU_INSTRUMENTED)
  return 1;
#else
  return 0;
#endif
}

/* The register limit of a launch in the SIMT emulator (see check_registers
 * in cuda_builtins.h).
 *
 * A GPU refuses a launch whose block needs more registers than an SM has
 * (cudaErrorLaunchOutOfResources); the emulator has no registers, so it
 * learns each kernel's count from the ptxas report of the CUDA build
 * (cmake/ptxas_log.sh, cmake/emu_kernel_regs.sh: a text table of "NAME ARCH
 * REGISTERS" lines) and applies the rule of sm_80 and sm_90: registers are
 * given to warps in units of 256, and a block may hold 65,536. The table is
 * RINGRT_EMU_REGS (a path; "off": no check), else the one this build made
 * (RINGRT_EMU_REGS_FILE, defined when CUDA and c++filt are found); without
 * one there is no check. RINGRT_EMU_REGS_STRICT=1 makes a kernel missing
 * from the table an error, so a test can show that every launch it makes
 * was checked. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "comm/device.h"
#include "kernels/emu/cuda_builtins.h"

namespace rrt_emu {
namespace {

constexpr int kRegsPerBlock = 65536;
constexpr int kRegUnit = 256; /* a warp's registers come in units of this many */

/* Types of this file only (anonymous namespace), so that the containers'
 * template code stays hidden like the rest of the library (a container of
 * standard types alone would be exported: libstdc++ gives its templates
 * default visibility; tests/api/check_exports.cmake). */
struct RegEntry {
  std::string name;
  int regs; /* the most over the targets */
  bool operator<(const RegEntry &o) const { return name < o.name; }
};

struct RegTable {
  std::string path, error;    /* error: the table could not be read */
  std::vector<RegEntry> regs; /* sorted by name, one entry a kernel */
};

const RegEntry *find_regs(const RegTable &t, const std::string &name) {
  auto it = std::lower_bound(t.regs.begin(), t.regs.end(), RegEntry{name, 0});
  return it != t.regs.end() && it->name == name ? &*it : nullptr;
}

/* The table, read once per process. */
const RegTable &reg_table() {
  static RegTable t;
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = getenv("RINGRT_EMU_REGS");
#ifdef RINGRT_EMU_REGS_FILE
    const char *dflt = RINGRT_EMU_REGS_FILE;
#else
    const char *dflt = "";
#endif
    t.path = env ? env : dflt;
    if (t.path.empty() || t.path == "off") return;
    FILE *f = fopen(t.path.c_str(), "r");
    if (!f) {
      /* the build's own table may be absent (an installed library, a
       * build without CUDA): no check; one the user named must exist */
      if (env) t.error = std::string("cannot read it: ") + strerror(errno);
      return;
    }
    char line[4096], name[4096], arch[64];
    int regs, lineno = 0;
    while (fgets(line, sizeof line, f)) {
      lineno++;
      if (line[0] == '#' || line[0] == '\n') continue;
      if (sscanf(line, "%4095s %63s %d", name, arch, &regs) != 3 || regs < 0) {
        char why[64];
        snprintf(why, sizeof why, "line %d is not \"NAME ARCH REGISTERS\"", lineno);
        t.error = why;
        break;
      }
      t.regs.push_back(RegEntry{name, regs});
    }
    fclose(f);
    std::sort(t.regs.begin(), t.regs.end());
    size_t kept = 0; /* one entry a kernel, with the most registers of its targets */
    for (size_t i = 0; i < t.regs.size(); i++)
      if (kept > 0 && t.regs[kept - 1].name == t.regs[i].name)
        t.regs[kept - 1].regs = std::max(t.regs[kept - 1].regs, t.regs[i].regs);
      else
        t.regs[kept++] = t.regs[i];
    t.regs.resize(kept);
  });
  return t;
}

} // namespace

std::string signature_name(const char *signature) {
  /* "... [with auto F = k<128, true>]" (GCC) or "... [F = k<128, true>]"
   * (Clang): the text after "F = " up to the closing bracket, without
   * spaces or an anonymous namespace (the table has neither) */
  const char *p = strstr(signature, "F = ");
  std::string s;
  if (!p) return s;
  for (p += 4; *p && !(*p == ']' && p[1] == '\0'); p++)
    if (*p != ' ') s += *p;
  for (const char *anon : {"{anonymous}::", "(anonymousnamespace)::"})
    for (size_t at; (at = s.find(anon)) != std::string::npos;)
      s.erase(at, strlen(anon));
  return s;
}

rrt_status check_registers(const char *name, const char *signature, unsigned threads) {
  const RegTable &t = reg_table();
  char why[512];
  why[0] = '\0';
  std::string key = signature_name(signature);
  const RegEntry *it = find_regs(t, key);
  const char *strict = getenv("RINGRT_EMU_REGS_STRICT");
  if (!t.error.empty()) {
    snprintf(why, sizeof why, "register table %s: %s", t.path.c_str(), t.error.c_str());
  } else if (it) {
    long warps = (threads + 31) / 32;
    long per_warp = ((long)it->regs * 32 + kRegUnit - 1) / kRegUnit * kRegUnit;
    if (warps * per_warp > kRegsPerBlock)
      snprintf(why, sizeof why,
               "too many resources requested for launch: %d registers a thread x %u threads a "
               "block need %ld registers (in units of %d a warp), more than the %d of a block "
               "(on a GPU: cudaErrorLaunchOutOfResources; registers from %s)",
               it->regs, threads, warps * per_warp, kRegUnit, kRegsPerBlock, t.path.c_str());
  } else if (strict && strcmp(strict, "1") == 0) {
    snprintf(why, sizeof why, "%s is not in the register table %s (RINGRT_EMU_REGS_STRICT=1)",
             key.empty() ? "the kernel" : key.c_str(), t.path.empty() ? "(none)" : t.path.c_str());
  }
  if (!why[0]) return RRT_SUCCESS;
  rrt_launch_note(name, why);
  fprintf(stderr, "ringrt emu: kernel %s: %s\n", name, why);
  return RRT_ERR_INVALID_ARG;
}

} // namespace rrt_emu

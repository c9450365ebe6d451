#!/usr/bin/env python3
"""Static numbers of the tensor-core attention kernels from their cubin:
registers, spills and stack (ptxas -v), dynamic shared memory (the sizes of
src/kernels/cuda/attn_tc_tiles.h), CTAs an SM, and the main loop's SASS
instructions per HMMA (cuobjdump -sass). No GPU is needed; nothing is timed.

    python3 bench/tc_sass.py [--src DIR] [--arch 80,90] [--file attn_fwd_tc.cu]
                             [--steady] [--json OUT]

--src is a tree with src/ and include/ (default: this checkout; for main's
kernels: `git worktree add /tmp/main-src main` or `git archive`). The main
loop is the loop (a backward branch) whose body holds the most HMMA; its
instructions are counted statically: inner loops once, both sides of every
branch. --steady compiles with -DRRT_TC_SASS_STEADY, which kernels that
know it (attn_fwd_tc.cu) read as "every tile full": the mask and
ragged-tile code drops out, so the loop body is the path a full tile runs
(head_dim = its bound, so no head-dim break is taken). The kernels of
main's tree do not know the macro (its loop then also holds its masking,
which main runs on every tile, and its tile loader's inner loop, run
rows x chunks / 128 times a tile, counted once).

cuobjdump and nvdisasm: the pip wheels nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm (launch/python-deps.sh pins them) or the toolkit's.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# shared memory a multiprocessor, the most a block may opt in to, and the
# 1 KiB the hardware reserves a block (CUDA C++ Programming Guide, compute
# capabilities table)
SMEM_SM = {80: 167936, 86: 102400, 89: 102400, 90: 233472}
RESERVED = 1024
REGS_SM = 65536
MAX_WARPS = {80: 64, 86: 48, 89: 48, 90: 64}


def find_tool(name):
    p = shutil.which(name)
    if p:
        return p
    for c in glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia",
                                    "cu*", "bin", name)):
        return c
    sys.exit(f"tc_sass: {name} not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


def compile_cubin(src, fname, arch, steady, out):
    cmd = ["nvcc", "-c", "-cubin", f"-arch=sm_{arch}", "-O3", "-std=c++17",
           "--expt-relaxed-constexpr", "-fmad=true", "-Xptxas=-v",
           "-I", os.path.join(src, "include"), "-I", os.path.join(src, "src"),
           "-I", os.path.join(ROOT, "build", "include"),
           os.path.join(src, "src", "kernels", "cuda", fname), "-o", out]
    if steady:
        cmd.insert(1, "-DRRT_TC_SASS_STEADY")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"tc_sass: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stderr


def demangle(names):
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return r.stdout.split("\n") if r.returncode == 0 else names


def ptxas_info(log):
    info, cur = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            cur = m.group(1)
            info[cur] = {}
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m and cur:
            info[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)),
                             spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            info[cur]["regs"] = int(m.group(1))
    return info


INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def sass_functions(cubin):
    out = subprocess.run([find_tool("cuobjdump"), "-sass", cubin], capture_output=True,
                         text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = INSN.match(line)
        if m and cur:
            funcs[cur].append((int(m.group(1), 16), m.group(2)))
    return funcs


def main_loop(insns):
    """(instructions, HMMA, STL/LDL, inner loops) of the loop with the most HMMA."""
    best = None
    addr_idx = {a: i for i, (a, _) in enumerate(insns)}
    loops = []
    for i, (a, text) in enumerate(insns):
        m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if not m:
            continue
        tgt = int(m.group(1), 16)
        if tgt <= a and tgt in addr_idx:
            loops.append((addr_idx[tgt], i))
    for lo, hi in loops:
        body = [t for _, t in insns[lo:hi + 1] if not t.startswith("NOP")]
        hmma = sum(1 for t in body if re.search(r"\bHMMA\b", t))
        if hmma and (best is None or hmma > best[1] or
                     (hmma == best[1] and hi - lo > best[4])):
            inner = sum(1 for l2, h2 in loops if lo <= l2 and h2 <= hi and (l2, h2) != (lo, hi))
            spills = sum(1 for t in body if re.search(r"\b(STL|LDL)\b", t))
            best = (len(body), hmma, spills, inner, hi - lo, (lo, hi))
    return best


def tile_smem(src, fname):
    """Dynamic shared memory of each kernel kind at head_dim 64, 128, 256 (the
    launch sizes of attn_tc_tiles.h in that tree, at sm_80's opt-in)."""
    prog = r'''
#include <stdio.h>
#include "kernels/cuda/attn_tc_tiles.h"
int main(void) {
  const int hd[3] = {64, 128, 256};
  for (int i = 0; i < 3; i++) {
    const int d = hd[i];
#ifdef RRT_TC_FWD_KEYS
    printf("fwd %d 0 %zu\n", d, rrt_attn_fwd_tc_smem(d));
#else
    printf("fwd %d 0 %zu\n", d, rrt_attn_fwd_tc_smem(rrt_attn_fwd_tc_bk(d, 166912), d));
#endif
    for (int t = 16; t <= 64; t *= 2) {
      printf("dkv %d %d %zu\n", d, t, rrt_attn_dkv_tc_smem(t, d > 128 ? 2 : 1, d));
      printf("dq %d %d %zu\n", d, t, rrt_attn_dq_tc_smem(t, d));
    }
  }
  return 0;
}
'''
    with tempfile.TemporaryDirectory() as td:
        c = os.path.join(td, "t.c")
        open(c, "w").write(prog)
        exe = os.path.join(td, "t")
        subprocess.run(["cc", "-I", os.path.join(src, "src"), c, "-o", exe], check=True)
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    sm = {}
    for line in out.split("\n"):
        if line:
            k, d, tile, b = line.split()
            sm[(k, int(d), int(tile))] = int(b)
    return sm


def ctas_per_sm(arch, regs, smem, threads=128):
    by_regs = REGS_SM // (((regs + 7) // 8 * 8) * threads)
    by_smem = SMEM_SM[arch] // (smem + RESERVED) if smem else 32
    by_warps = MAX_WARPS[arch] // (threads // 32)
    return min(by_regs, by_smem, by_warps)


def kind_dim_tile(name):
    """The kernel kind, its head-dim bound and its streamed tile (dkv: bq,
    dq: bk; 0 for the forward, whose smem depends on the bound alone)."""
    m = re.search(r"rrt_attn_(fwd_tc|bwd_dkv|bwd_dq)\w*<(\d+), (\d+)", name)
    if not m:
        return None, None, 0
    kind = {"fwd_tc": "fwd", "bwd_dkv": "dkv", "bwd_dq": "dq"}[m.group(1)]
    return kind, int(m.group(2)), 0 if kind == "fwd" else int(m.group(3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=ROOT)
    ap.add_argument("--arch", default="80,90")
    ap.add_argument("--file", default="attn_fwd_tc.cu")
    ap.add_argument("--steady", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--mix", help="print the main loop's opcode counts of kernels matching this")
    a = ap.parse_args()
    smem = tile_smem(a.src, a.file)
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for arch in [int(x) for x in a.arch.split(",")]:
            cubin = os.path.join(td, f"k{arch}.cubin")
            info = ptxas_info(compile_cubin(a.src, a.file, arch, a.steady, cubin))
            funcs = sass_functions(cubin)
            names = sorted(info)
            for mangled, pretty in zip(names, demangle(names)):
                kind, dmax, tile = kind_dim_tile(pretty)
                loop = main_loop(funcs.get(mangled, []))
                if a.mix and a.mix in pretty and loop:
                    lo, hi = loop[5]
                    mix = {}
                    for _, t in funcs[mangled][lo:hi + 1]:
                        op = re.sub(r"^@!?U?P\w+\s+", "", t).split()[0]
                        mix[op] = mix.get(op, 0) + 1
                    print(pretty[:80], sorted(mix.items(), key=lambda x: -x[1]))
                sm = smem.get((kind, dmax, tile), 0)
                i = info[mangled]
                rows.append(dict(arch=arch, kernel=re.sub(r"^void ", "", pretty).replace(
                    "(anonymous namespace)::", "").split("(")[0], regs=i.get("regs"),
                    spill_st=i.get("spill_st", 0), spill_ld=i.get("spill_ld", 0),
                    stack=i.get("stack", 0), smem=sm,
                    ctas=ctas_per_sm(arch, i.get("regs", 0), sm),
                    loop_insns=loop[0] if loop else None, hmma=loop[1] if loop else None,
                    loop_spill_insns=loop[2] if loop else None,
                    inner_loops=loop[3] if loop else None))
    print(f"{'arch':>4} {'kernel':58} {'regs':>4} {'spill st/ld':>11} {'smem':>7} "
          f"{'CTA/SM':>6} {'loop':>5} {'HMMA':>4} {'/HMMA':>5} {'STL/LDL':>7} {'inner':>5}")
    for r in rows:
        ratio = f"{r['loop_insns'] / r['hmma']:.2f}" if r["hmma"] else "-"
        print(f"sm{r['arch']:<2} {r['kernel'][:58]:58} {r['regs']:>4} "
              f"{r['spill_st']:>5}/{r['spill_ld']:<5} {r['smem']:>7} {r['ctas']:>6} "
              f"{r['loop_insns'] or '-':>5} {r['hmma'] or '-':>4} {ratio:>5} "
              f"{r['loop_spill_insns'] if r['loop_spill_insns'] is not None else '-':>7} "
              f"{r['inner_loops'] if r['inner_loops'] is not None else '-':>5}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The layering rules of docs/design.md that a machine can check.

usage: check_layering.py [--apps APPS_DIR] SRC_DIR NM OBJECT...

1. No two source files depend on each other in a loop: an edge f -> g means
   an object of f uses a symbol that g's object defines (nm); every strongly
   connected component must be a single file. The objects given are the
   library's, the `ringrt` tool's and the PETSc plugin's (when built).
2. Lower layers (comm, kernels, sched, io) never include a workload's
   headers (attn, sparse, ilu, krylov, seacells).
3. No MPI outside src/comm: no MPI_ call and no <mpi.h> include elsewhere in
   src/ (every wait goes through the transport, so every wait has the timeout).
4. With --apps: the programs in APPS_DIR (the `ringrt` tool) make no MPI
   call that can block: only the calls that start and end MPI or ask local
   questions (APP_MPI_ALLOWED); every wait goes through the library, with
   the timeout.
Prints each violation and exits 1 if there is any.
"""
import collections
import os
import re
import subprocess
import sys

LOWER = ("comm", "kernels", "sched", "io")
WORKLOADS = ("attn", "sparse", "ilu", "krylov", "seacells")


def source_of(obj):
    """src/CMakeFiles/ringrt_objects.dir/ilu/factor.c.o -> ilu/factor.c; the
    objects of other targets (the tool, the PETSc plugin) keep their target's
    name: apps/CMakeFiles/ringrt_app.dir/ringrt/main.c.o -> ringrt_app:ringrt/main.c"""
    m = re.search(r"([^/]+)\.dir/(.*)$", obj)
    if not m:
        return obj
    target, rel = m.group(1), os.path.normpath(m.group(2))
    rel = rel[:-2] if rel.endswith(".o") else rel
    return rel if target == "ringrt_objects" else f"{target}:{rel}"


def symbol_graph(nm, objects):
    defined, used = {}, collections.defaultdict(set)
    for obj in objects:
        name = source_of(obj)
        out = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDRBVW":
                defined[parts[2]] = name
            elif len(parts) == 2 and parts[0] == "U":
                used[name].add(parts[1])
    graph = collections.defaultdict(set)
    for f, symbols in used.items():
        for s in symbols:
            g = defined.get(s)
            if g and g != f:
                graph[f].add(g)
    return graph


def loops(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def source_files(src):
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".cu", ".cpp")):
                path = os.path.join(root, f)
                yield os.path.relpath(path, src), path


# MPI calls a program may make itself: none of them waits for another rank.
APP_MPI_ALLOWED = {
    "MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Initialized", "MPI_Finalized",
    "MPI_Comm_rank", "MPI_Comm_size", "MPI_Query_thread", "MPI_Wtime",
}


def app_violations(apps):
    """Blocking (or any not allowed) MPI calls in the programs under apps."""
    call = re.compile(r"\b(MPI_[A-Z][a-z_]*)\s*\(")
    bad = []
    for rel, path in source_files(apps):
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                code = line.split("//")[0]
                if code.lstrip().startswith(("*", "/*")):
                    continue
                for name in call.findall(code):
                    if name not in APP_MPI_ALLOWED:
                        bad.append(f"apps/{rel}:{n}: {name} can block outside the library "
                                   f"(no timeout): {line.strip()}")
    return bad


def main():
    args = sys.argv[1:]
    apps = None
    if len(args) >= 2 and args[0] == "--apps":
        apps, args = args[1], args[2:]
    src, nm, objects = args[0], args[1], args[2:]
    bad = app_violations(apps) if apps else []
    for comp in loops(symbol_graph(nm, objects)):
        bad.append("file loop: " + " <-> ".join(comp))
    include = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
    mpi_call = re.compile(r"\bMPI_[A-Z][a-z_]*\s*\(")
    for rel, path in source_files(src):
        layer = rel.split(os.sep)[0]
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = include.match(line)
                if m and layer in LOWER and m.group(1).split("/")[0] in WORKLOADS:
                    bad.append(f"src/{rel}:{n}: lower layer '{layer}' includes {m.group(1)}")
                if layer != "comm":
                    if m and m.group(1) == "mpi.h":
                        bad.append(f"src/{rel}:{n}: includes <mpi.h> outside src/comm")
                    code = line.split("//")[0]
                    if mpi_call.search(code) and not code.lstrip().startswith(("*", "/*")):
                        bad.append(f"src/{rel}:{n}: calls MPI outside src/comm: {line.strip()}")
    for b in bad:
        print(b)
    print(f"layering: {len(objects)} objects, {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A test run leaves nothing behind (issue 32): no new path in the source tree
(`git status --porcelain --ignored`), nothing in the tests' scratch folder of
the build tree (TMPDIR of every test), and no new rrt_* / ringrt* entry in
/tmp.

usage: clean_tree.py snapshot OUT SRC        (at configure time: the state before)
       clean_tree.py check BEFORE SRC SCRATCH (the last test: compare)

Open MPI's own session folders (ompi.*, pmix*) in SCRATCH are Open MPI's to
manage and are not counted. Exit 0 when clean, 1 with every new path named.
"""
import json
import os
import subprocess
import sys

TMP_PREFIXES = ("rrt_", "rrt-", "ringrt_", "ringrt-")
MPI_SESSION_PREFIXES = ("ompi.", "pmix", "openmpi-sessions")


def git_status(src):
    """The source tree's status lines, or None where it is not a git checkout."""
    try:
        out = subprocess.run(["git", "-C", src, "status", "--porcelain", "--ignored",
                              "--untracked-files=normal"], capture_output=True, text=True,
                             timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return sorted(set(out.stdout.splitlines())) if out.returncode == 0 else None


def tmp_entries():
    try:
        return sorted(n for n in os.listdir("/tmp") if n.startswith(TMP_PREFIXES))
    except OSError:
        return []


def snapshot(out, src):
    state = {"git": git_status(src), "tmp": tmp_entries()}
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(state, fh)


def check(before_file, src, scratch):
    with open(before_file, encoding="utf-8") as fh:
        before = json.load(fh)
    bad = []
    now = git_status(src)
    if before["git"] is None or now is None:
        print(f"clean_tree: {src} is not a git checkout: its status is not compared")
    else:
        bad += [f"source tree: new path: {line}" for line in now if line not in before["git"]]
    bad += [f"/tmp: left behind: /tmp/{n}" for n in tmp_entries() if n not in before["tmp"]]
    for root, dirs, files in os.walk(scratch):
        dirs[:] = [d for d in dirs if not (root == scratch and d.startswith(MPI_SESSION_PREFIXES))]
        bad += [f"scratch: left behind: {os.path.join(root, n)}" for n in files]
        if root != scratch and not dirs and not files:
            bad.append(f"scratch: left behind: {root}/")
    for b in bad:
        print(b)
    print(f"clean_tree: {len(bad)} path(s) left behind")
    return 1 if bad else 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "snapshot":
        snapshot(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3], sys.argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`ringrt ilu` file I/O at np = 3: --rhs b.npy and --rhs b.mtx are the
right-hand side actually solved (x_true known, b = A x_true computed here
independently of the library), --x-out writes the solution as .npy (read
back here, compared with x_true), --matrix-out writes A (compared entry for
entry with the 5-point stencil built here), and a right-hand side of the
wrong length (.npy or .mtx) or of the wrong dtype fails on every rank (the
job exits non-zero, no rank hangs) with a message naming the file.

Standard library only (struct for .npy). usage: cli_ilu.py RINGRT MPIEXEC WORKDIR
"""
import os
import shutil
import struct
import subprocess
import sys

app, mpiexec, work = sys.argv[1:4]
N = 12  # laplace2d:12, n = 144
n = N * N
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def fail(msg, out=""):
    print("FAIL:", msg)
    if out:
        print(out)
    sys.exit(1)


def run(*args, np_=3):
    cmd = [mpiexec, "-n", str(np_), "--oversubscribe", "--bind-to", "none", app, "ilu",
           "--quiet"] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def write_npy(path, vals, descr="<f8"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(vals))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    fmt = "<%dd" % len(vals) if descr == "<f8" else "<%df" % len(vals)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(fmt, *vals))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        fail("%s is not .npy" % path)
    major = data[6]
    hl = struct.unpack("<H", data[8:10])[0] if major == 1 else struct.unpack("<I", data[8:12])[0]
    start = (10 if major == 1 else 12) + hl
    header = data[(10 if major == 1 else 12):start].decode()
    if "'<f8'" not in header or "(%d,)" % n not in header:
        fail("%s: unexpected header %s" % (path, header))
    return list(struct.unpack("<%dd" % n, data[start:start + 8 * n]))


def stencil(i):
    """Row i of laplace2d:N: {column: value}."""
    y, x = divmod(i, N)
    row = {i: 4.0}
    if y > 0:
        row[i - N] = -1.0
    if x > 0:
        row[i - 1] = -1.0
    if x < N - 1:
        row[i + 1] = -1.0
    if y < N - 1:
        row[i + N] = -1.0
    return row


xt = [1.0 + 0.01 * i + (i % 7) for i in range(n)]
b = [sum(v * xt[j] for j, v in stencil(i).items()) for i in range(n)]


def check_x(path, what):
    x = read_npy(path)
    err = max(abs(x[i] - xt[i]) / abs(xt[i]) for i in range(n))
    if err > 1e-8:
        fail("%s: solution differs from x_true by %g (relative)" % (what, err))


# .npy right-hand side, solution written as .npy
write_npy(os.path.join(work, "b.npy"), b)
rc, out = run("--generate", "laplace2d:%d" % N, "--rhs", os.path.join(work, "b.npy"), "--solver",
              "gmres", "--tol", "1e-13", "--x-out", os.path.join(work, "x1.npy"))
if rc != 0:
    fail("--rhs b.npy run", out)
check_x(os.path.join(work, "x1.npy"), "--rhs b.npy")

# Matrix Market right-hand side (array format), with CG and a reordering
with open(os.path.join(work, "b.mtx"), "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%% b = A x_true\n%d 1\n" % n)
    f.writelines("%.17g\n" % v for v in b)
rc, out = run("--generate", "laplace2d:%d" % N, "--rhs", os.path.join(work, "b.mtx"), "--solver",
              "cg", "--reorder", "rcm", "--tol", "1e-13", "--x-out", os.path.join(work, "x2.npy"))
if rc != 0:
    fail("--rhs b.mtx run", out)
check_x(os.path.join(work, "x2.npy"), "--rhs b.mtx")

# --matrix-out: the generated matrix, entry for entry
rc, out = run("--generate", "laplace2d:%d" % N, "--solver", "none", "--matrix-out",
              os.path.join(work, "A.mtx"))
if rc != 0:
    fail("--matrix-out run", out)
with open(os.path.join(work, "A.mtx")) as f:
    lines = [s for s in f.read().splitlines() if not s.startswith("%")]
entries = {}
for s in lines[1:]:
    i, j, v = s.split()
    entries[(int(i) - 1, int(j) - 1)] = float(v)
want = {(i, j): v for i in range(n) for j, v in stencil(i).items()}
if lines[0].split() != [str(n), str(n), str(len(want))] or entries != want:
    fail("--matrix-out: A.mtx is not laplace2d:%d" % N)

# wrong length (.npy and .mtx), wrong dtype: every rank fails, the file is named
write_npy(os.path.join(work, "short.npy"), b[:-1])
with open(os.path.join(work, "short.mtx"), "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%d 1\n" % (n + 1))
    f.writelines("%.17g\n" % v for v in b + [0.0])
write_npy(os.path.join(work, "f4.npy"), b, descr="<f4")
for name, expect in (("short.npy", "need 144 float64"), ("short.mtx", "145 values, the matrix "
                                                          "has 144 rows"),
                     ("f4.npy", "<f4")):
    rc, out = run("--generate", "laplace2d:%d" % N, "--rhs", os.path.join(work, name))
    if rc == 0:
        fail("--rhs %s accepted" % name, out)
    if name not in out or expect not in out:
        fail("--rhs %s: message does not name the file and the problem" % name, out)
print("cli_ilu: all passed")

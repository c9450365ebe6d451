"""Steps of CLI cases that are not `ringrt` runs: input generators and the
checks that cannot be an output comparison (a file read back, two runs
compared bit for bit). Each tool takes its arguments and an `emit` function
for its output lines, and returns its exit code (0 when the check holds).
Standard library only. Register a tool in TOOLS at the bottom."""
import json
import os
import re
import struct


class ToolError(Exception):
    """A tool could not run (a file that is not what it should be)."""


def base(path):
    return os.path.basename(path)


def yes(ok):
    return "yes" if ok else "no"


# ---------------------------------------------------------------- files ---
def tool_cat(argv, emit):
    """cat FILE: show a file (a JSON report goes through the JSON filter)."""
    with open(argv[0]) as f:
        for line in f.read().splitlines():
            emit(line)


def tool_cmp(argv, emit):
    """cmp A B: byte for byte equality of two files."""
    with open(argv[0], "rb") as f:
        a = f.read()
    with open(argv[1], "rb") as f:
        b = f.read()
    emit("%s and %s are %s" % (base(argv[0]), base(argv[1]), "identical" if a == b else "DIFFERENT"))
    return 0 if a == b else 1


def tool_count_lines(argv, emit):
    """count-lines REGEX FILE: how many lines match."""
    with open(argv[1]) as f:
        n = sum(1 for s in f if re.search(argv[0], s))
    emit("%d lines of %s match %r" % (n, base(argv[1]), argv[0]))


def tool_truncate(argv, emit):
    """truncate SRC BYTES OUT: the first BYTES bytes of SRC."""
    with open(argv[0], "rb") as f:
        data = f.read(int(argv[1]))
    with open(argv[2], "wb") as f:
        f.write(data)
    emit("%s: first %d bytes of %s" % (base(argv[2]), len(data), base(argv[0])))


# ------------------------------------------------------------------ npy ---
def npy_header(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ToolError("%s is not .npy" % path)
    if data[6] == 1:
        hl, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hl, start = struct.unpack("<I", data[8:12])[0], 12
    header = data[start:start + hl].decode("latin1")
    descr = re.search(r"'descr': *'([^']*)'", header).group(1)
    shape = tuple(int(s) for s in re.search(r"'shape': *\(([^)]*)\)", header).group(1).split(",")
                  if s.strip())
    return descr, shape, data[start + hl:]


def npy_bytes(descr, shape, payload):
    dims = ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def tool_npy_info(argv, emit):
    """npy-info FILE: dtype, shape, and whether the data is complete."""
    descr, shape, payload = npy_header(argv[0])
    count = 1
    for s in shape:
        count *= s
    need = count * int(descr[2:])
    emit("%s: %s %s, %d data bytes (%s)" % (base(argv[0]), descr, list(shape), len(payload),
                                            "complete" if len(payload) == need else "INCOMPLETE"))
    return 0 if len(payload) == need else 1


def tool_npy_zeros(argv, emit):
    """npy-zeros FILE DESCR D0,D1,...: an all-zero array."""
    shape = tuple(int(s) for s in argv[2].split(","))
    count = 1
    for s in shape:
        count *= s
    os.makedirs(os.path.dirname(argv[0]) or ".", exist_ok=True)
    with open(argv[0], "wb") as f:
        f.write(npy_bytes(argv[1], shape, bytes(count * int(argv[1][2:]))))
    emit("%s: zeros %s %s" % (base(argv[0]), argv[1], list(shape)))


# --------------------------------------------------- ILU: laplace2d:N ---
def stencil(N, i):
    """Row i of laplace2d:N as {column: value}."""
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


def x_true(n):
    return [1.0 + 0.01 * i + (i % 7) for i in range(n)]


def tool_laplace_rhs(argv, emit):
    """laplace-rhs N FILE [COUNT] [DESCR]: b = A x_true of laplace2d:N,
    computed here independently of the library, as .npy (DESCR <f8 or <f4)
    or a Matrix Market array; COUNT values (n by default; fewer cut b,
    more pad it with zeros)."""
    N = int(argv[0])
    n = N * N
    xt = x_true(n)
    b = [sum(v * xt[j] for j, v in stencil(N, i).items()) for i in range(n)]
    count = int(argv[2]) if len(argv) > 2 else n
    b = (b + [0.0] * count)[:count]
    descr = argv[3] if len(argv) > 3 else "<f8"
    if argv[1].endswith(".npy"):
        payload = struct.pack("<%d%s" % (count, "d" if descr == "<f8" else "f"), *b)
        with open(argv[1], "wb") as f:
            f.write(npy_bytes(descr, (count,), payload))
    else:
        with open(argv[1], "w") as f:
            f.write("%%%%MatrixMarket matrix array real general\n%% b = A x_true\n%d 1\n" % count)
            f.writelines("%.17g\n" % v for v in b)
    emit("%s: b = A x_true of laplace2d:%d, %d values" % (base(argv[1]), N, count))


def tool_laplace_x(argv, emit):
    """laplace-x N FILE TOL: the solution in FILE (.npy <f8) equals x_true
    to a relative TOL."""
    n = int(argv[0]) ** 2
    descr, shape, payload = npy_header(argv[1])
    if descr != "<f8" or shape != (n,):
        emit("%s: %s %s, expected <f8 [%d]" % (base(argv[1]), descr, list(shape), n))
        return 1
    x = struct.unpack("<%dd" % n, payload[:8 * n])
    xt = x_true(n)
    err = max(abs(x[i] - xt[i]) / abs(xt[i]) for i in range(n))
    ok = err <= float(argv[2])
    emit("%s: %d values, max relative error vs x_true <= %s: %s" % (base(argv[1]), n, argv[2],
                                                                    yes(ok)))
    return 0 if ok else 1


def tool_laplace_matrix(argv, emit):
    """laplace-matrix N FILE: FILE (Matrix Market coordinate) holds laplace2d:N
    entry for entry."""
    N = int(argv[0])
    n = N * N
    with open(argv[1]) as f:
        lines = [s for s in f.read().splitlines() if not s.startswith("%")]
    entries = {}
    for s in lines[1:]:
        i, j, v = s.split()
        entries[(int(i) - 1, int(j) - 1)] = float(v)
    want = {(i, j): v for i in range(n) for j, v in stencil(N, i).items()}
    ok = lines[0].split() == [str(n), str(n), str(len(want))] and entries == want
    emit("%s: %s, entry for entry laplace2d:%d: %s" % (base(argv[1]), lines[0], N, yes(ok)))
    return 0 if ok else 1


# ------------------------------------------------------------- SEACells ---
def tool_npy_set(argv, emit):
    """npy-set SRC OUT INDEX VALUE: the <f8 vector SRC with entry INDEX set to
    VALUE (float(): nan, inf allowed), as OUT."""
    descr, shape, payload = npy_header(argv[0])
    if descr != "<f8" or len(shape) != 1:
        raise ToolError("%s: %s %s, expected a <f8 vector" % (base(argv[0]), descr, list(shape)))
    v = list(struct.unpack("<%dd" % shape[0], payload[:8 * shape[0]]))
    v[int(argv[2])] = float(argv[3])
    with open(argv[1], "wb") as f:
        f.write(npy_bytes("<f8", shape, struct.pack("<%dd" % len(v), *v)))
    emit("%s: %s with [%s] = %s" % (base(argv[1]), base(argv[0]), argv[2], argv[3]))


def splitmix(seed):
    z = seed
    while True:
        z = (z + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        v = z
        v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        yield (v ^ (v >> 31)) / 2.0**64


def tool_blobs(argv, emit):
    """blobs FILE: 8 well-separated Gaussian-ish blobs in 10 dimensions, 480
    rows as CSV; blob of row i = i % 8, centre 20 e_(i % 8), noise the sum of
    three uniforms minus 1.5 (seeded, the same on every machine)."""
    rnd = splitmix(3)
    with open(argv[0], "w") as f:
        for i in range(480):
            c = i % 8
            vals = [(20.0 if k == c else 0.0) + next(rnd) + next(rnd) + next(rnd) - 1.5
                    for k in range(10)]
            f.write(",".join("%.6f" % v for v in vals) + "\n")
    emit("%s: 480 rows, 8 blobs in 10 dimensions" % base(argv[0]))


def tool_csv_field(argv, emit):
    """csv-field SRC OUT LINE COL VALUE: SRC with field COL (0-based; -1 the
    last) of line LINE (1-based) set to VALUE, or removed when VALUE is --drop."""
    with open(argv[0]) as f:
        lines = f.read().splitlines()
    line, col, value = int(argv[2]), int(argv[3]), argv[4]
    fields = lines[line - 1].split(",")
    if value == "--drop":
        del fields[col]
    else:
        fields[col] = value
    lines[line - 1] = ",".join(fields)
    with open(argv[1], "w") as f:
        f.write("\n".join(lines) + "\n")
    emit("%s: %s with line %d field %d %s" % (base(argv[1]), base(argv[0]), line, col,
                                               "removed" if value == "--drop" else "= " + value))


def tool_write_lines(argv, emit):
    """write-lines FILE LINE...: a text file of these lines, each ended by a newline."""
    with open(argv[0], "w") as f:
        f.write("".join(line + "\n" for line in argv[1:]))
    emit("%s: %d lines" % (base(argv[0]), len(argv) - 1))


def tool_same_names(argv, emit):
    """same-names IN OUT: the first column of OUT, read as CSV (Python's csv
    module, RFC 4180 quoting as pandas and R read it), equals the first
    column of IN's data rows, in order, and every row has 12 fields."""
    import csv
    with open(argv[0], newline="") as f:
        want = [r[0] for r in list(csv.reader(f))[1:]]
    with open(argv[1], newline="") as f:
        rows = list(csv.reader(f))[1:]
    got = [r[0] for r in rows]
    ok = got == want and all(len(r) == 12 for r in rows)
    emit("%d rows, names as in %s: %s" % (len(rows), base(argv[0]), yes(ok)))
    return 0 if ok else 1


def read_assignments(path):
    with open(path) as f:
        rows = [s.split(",") for s in f.read().splitlines()]
    return rows[0], rows[1:]


def tool_assignments(argv, emit):
    """assignments CSV: header, rows, the first cell's id, metacells used."""
    header, rows = read_assignments(argv[0])
    used = sorted({int(r[1]) for r in rows})
    emit("%s: header %s" % (base(argv[0]), ",".join(header)))
    emit("%d rows, first cell %s, %d metacells used" % (len(rows), rows[0][0] if rows else "-",
                                                         len(used)))


def tool_blobs_pure(argv, emit):
    """blobs-pure CSV: every metacell of a blobs run holds cells of one blob."""
    _, rows = read_assignments(argv[0])
    blob_of, impure = {}, 0
    for r in rows:
        b = int(r[0]) % 8
        if blob_of.setdefault(r[1], b) != b:
            impure += 1
    ok = impure == 0 and len(rows) == 480
    emit("%d cells in %d metacells, cells of another blob than their metacell's: %d" %
         (len(rows), len(blob_of), impure))
    return 0 if ok else 1


def tool_purity(argv, emit):
    """purity JSON: metacells are clearly purer than random groups of the same
    sizes (random groups of ~75 PBMCs reach ~0.35, metacells ~0.75), and the
    compactness and separation metrics are positive."""
    with open(argv[0]) as f:
        j = json.load(f)
    p, r = j["mean_purity"], j["random_purity"]
    c, s = j["mean_compactness"], j["mean_separation"]
    ok1 = p > r + 0.25 and 0.2 < r < 0.5
    ok2 = c is not None and s is not None and c > 0 and s > 0
    emit("mean purity above random groups + 0.25, random within (0.2, 0.5): %s" % yes(ok1))
    emit("mean compactness > 0 and mean separation > 0: %s" % yes(ok2))
    return 0 if ok1 and ok2 else 1


# ----------------------------------------------------------------- info ---
def tool_info_json(argv, emit):
    """info-json FILE NP: the `ringrt info --json` report of NP ranks."""
    with open(argv[0]) as f:
        info = json.load(f)
    np_ = int(argv[1])
    ranks = info["ranks"]
    emit("command %s, size %d, ranks %s" % (info["command"], info["size"],
                                             " ".join(str(r["rank"]) for r in ranks)))
    ok = info["size"] == np_ and [r["rank"] for r in ranks] == list(range(np_))
    for r in ranks:
        good = (r["backend"] in ("cpu", "cuda") and r["threads"] >= 1 and
                r["transport"] in ("mpi", "nccl", "mpi-staged"))
        emit("rank %d: backend cpu|cuda, transport mpi|nccl|mpi-staged, threads >= 1: %s" %
             (r["rank"], yes(good)))
        ok = ok and good
    by_host = {}
    for r in ranks:
        by_host.setdefault(r["host"], []).append(r["local_rank"])
    local_ok = all(sorted(v) == list(range(len(v))) for v in by_host.values())
    emit("local ranks on every host are 0..k-1: %s" % yes(local_ok))
    return 0 if ok and local_ok else 1


def tool_trace_json(argv, emit):
    """trace-json FILE NP NAME: a Chrome trace with one process per rank and a
    complete event NAME."""
    with open(argv[0]) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    pids = sorted({e["pid"] for e in events})
    has = any(e.get("ph") == "X" and e.get("name") == argv[2] for e in events)
    emit("trace pids %s, a complete event named %s: %s" % (" ".join(map(str, pids)), argv[2],
                                                          yes(has)))
    return 0 if pids == list(range(int(argv[1]))) and has else 1


def tool_json_stdout(argv, emit):
    """json-stdout FILE: FILE (a run's stdout) is exactly one JSON document
    (Python's json module parses it whole); shows command, status,
    exit_code and error."""
    with open(argv[0]) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        emit("not one JSON document: %s; stdout was:" % e)
        for line in text.splitlines()[:20]:
            emit("| " + line)
        return 1
    if not isinstance(doc, dict):
        emit("not a JSON object")
        return 1
    for key in ("command", "status", "exit_code", "error"):
        if key in doc:
            emit("%s: %s" % (key, json.dumps(doc[key])))
    return 0


def tool_exists(argv, emit):
    """exists PATH...: whether each path exists, and the files of the
    folders among them (a temporary left behind shows)."""
    for p in argv:
        if os.path.isdir(p):
            emit("%s/: %s" % (base(p), " ".join(sorted(os.listdir(p))) or "(empty)"))
        else:
            emit("%s: %s" % (base(p), "exists" if os.path.exists(p) else "missing"))
    return 0


def tool_gzip(argv, emit):
    """gzip SRC OUT: OUT is SRC gzip-compressed."""
    import gzip
    with open(argv[0], "rb") as f, gzip.open(argv[1], "wb") as g:
        g.write(f.read())
    emit("%s: %s gzip-compressed" % (base(argv[1]), base(argv[0])))


def tool_npy_f8(argv, emit):
    """npy-f8 FILE V...: a float64 .npy of the values (nan, inf allowed)."""
    vals = [float(v) for v in argv[1:]]
    with open(argv[0], "wb") as f:
        f.write(npy_bytes("<f8", (len(vals),), struct.pack("<%dd" % len(vals), *vals)))
    emit("%s: %d float64 values" % (base(argv[0]), len(vals)))


def tool_npy_of_csv(argv, emit):
    """npy-of-csv SRC OUT DESCR SCALE: the numeric CSV SRC (no header) times
    SCALE, rounded for an integer DESCR (<i8, |i1, <u2, ...), as a 2-D .npy."""
    with open(argv[0]) as f:
        rows = [[float(v) * float(argv[3]) for v in line.split(",")] for line in f if line.strip()]
    descr = argv[2]
    code = {"f8": "d", "f4": "f", "f2": "e", "i8": "q", "i4": "i", "i2": "h", "i1": "b",
            "u8": "Q", "u4": "I", "u2": "H", "u1": "B"}[descr[1:]]
    flat = [v if code in "dfe" else int(round(v)) for r in rows for v in r]
    payload = struct.pack("<%d%s" % (len(flat), code), *flat)
    with open(argv[1], "wb") as f:
        f.write(npy_bytes(descr, (len(rows), len(rows[0])), payload))
    emit("%s: %d x %d %s" % (base(argv[1]), len(rows), len(rows[0]), descr))


def tool_write(argv, emit):
    """write FILE TEXT: a file holding TEXT and a newline."""
    with open(argv[0], "w") as f:
        f.write(" ".join(argv[1:]) + "\n")
    return 0


TOOLS = {
    "cat": tool_cat,
    "cmp": tool_cmp,
    "count-lines": tool_count_lines,
    "truncate": tool_truncate,
    "npy-info": tool_npy_info,
    "npy-zeros": tool_npy_zeros,
    "laplace-rhs": tool_laplace_rhs,
    "laplace-x": tool_laplace_x,
    "laplace-matrix": tool_laplace_matrix,
    "npy-set": tool_npy_set,
    "blobs": tool_blobs,
    "csv-field": tool_csv_field,
    "write-lines": tool_write_lines,
    "assignments": tool_assignments,
    "blobs-pure": tool_blobs_pure,
    "same-names": tool_same_names,
    "purity": tool_purity,
    "info-json": tool_info_json,
    "trace-json": tool_trace_json,
    "json-stdout": tool_json_stdout,
    "exists": tool_exists,
    "write": tool_write,
    "gzip": tool_gzip,
    "npy-f8": tool_npy_f8,
    "npy-of-csv": tool_npy_of_csv,
}

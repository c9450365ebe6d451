#!/usr/bin/env python3
"""One CLI case: run `ringrt` command lines, filter what legitimately varies,
compare with a checked-in expected file (PETSc's habit). Standard library only.

  cli_case.py --ringrt APP --mpiexec MPIRUN --np N --expected FILE --work DIR
              [--data DIR] [--version X.Y.Z] [--update] -- COMMAND...

COMMAND is either the arguments of one `ringrt` run (launched under mpirun
with N ranks; N = 0 runs it directly), optionally preceded by VAR=VALUE
assignments, or `@steps FILE` naming a steps file (tests/cli/cases/) whose
lines are run in order into one output:

  ringrt [-n N] ARGS...   a ringrt run (the case's N ranks unless -n is given)
  ringrt -n N ARGS : -n M ARGS ...
                          one job whose ranks get different arguments
                          (mpirun's MPMD form; ranks in order of the parts;
                          `-n N -wdir DIR ARGS` runs that part in DIR, so
                          ranks with the same arguments see different files)
  tool NAME ARGS...       a check or input generator of cli_tools.py
  ... > FILE              (at the end of a line) stdout+stderr to @WORK@/FILE,
                          not shown; the exit code still is
  ... 1> FILE             (at the end of a ringrt line) stdout alone, as the
                          ranks wrote it (no rank tags), to @WORK@/FILE; not
                          shown (stderr neither); the exit code is
  VAR=VALUE ...           (at the start of a line) environment of that step

In every line @WORK@ is the case's scratch folder (emptied first), @DATA@ the
shared data folder, @SRC@ this folder. Each step appears in the output as
`$ COMMAND`, then its output per rank and stream (mpirun --tag-output, so the
order of lines from different ranks cannot vary), then `[exit N]`.

Filters, applied to every line, in this order (the whole list):
  1. the work, data and source folders read @WORK@, @DATA@, @SRC@; the host
     name reads @HOST@; the library version reads @VERSION@;
  2. a line holding one JSON object is printed one top-level key per line,
     and the values of measured keys (names ending in _s, gflops, tflops,
     _share, and everything under "seconds") read <measured>;
  3. a number followed by " s", " GFLOP/s", " TFLOP/s" or "%" (a time, a rate,
     a share of time) reads <measured>;
  4. a small number in exponent form (an error norm or residual, 1.072e-07)
     reads as its nearest power of ten (~1e-07);
  5. any other number with a fraction keeps 3 significant digits;
  6. mpirun's own notices (dashed blocks saying a process exited non-zero)
     are dropped: the exit code says it.

--update writes the filtered output as the expected file (for developers;
CTest never passes it). --update-all BUILD [REGEX] reruns every `cli` CTest
case of a build folder (or those matching REGEX) with --update.
"""
import argparse
import difflib
import json
import math
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cli_tools  # noqa: E402

STEP_TIMEOUT_S = 150
MEASURED_KEY = re.compile(r"(_s|gflops|tflops|_share)$")
MEASURED_UNIT = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=( s\b| GFLOP/s| TFLOP/s|%))")
SMALL_EXP = re.compile(r"(?<![\w.])-?\d\.\d+e-\d+(?![\w.])")
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?(?![\w.])")
TAG = re.compile(r"\[\d+,(\d+)\]<(stdout|stderr|stddiag)>:")
MPIRUN_NOTICE = ("Primary job", "detected that one or more processes exited with non-zero status")


# ---------------------------------------------------------------- filters ---
class Raw(str):
    """A JSON number kept as written."""


def dump_json(v):
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        return "{" + ", ".join('"%s": %s' % (k, dump_json(x)) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump_json(x) for x in v) + "]"
    return json.dumps(v)


def mask_measured(obj):
    for k, v in obj.items():
        if k == "seconds" and isinstance(v, dict):
            obj[k] = {p: Raw("<measured>") for p in v}
        elif MEASURED_KEY.search(k) and isinstance(v, Raw):
            obj[k] = Raw("<measured>")
        elif isinstance(v, dict):
            mask_measured(v)
    return obj


def json_lines(line):
    s = line.strip()
    if not (s.startswith("{") and s.endswith("}")):
        return [line]
    try:
        obj = json.loads(s, parse_float=Raw, parse_int=Raw)
    except ValueError:
        return [line]
    obj = mask_measured(obj)
    items = ['  "%s": %s' % (k, dump_json(v)) for k, v in obj.items()]
    return ["{"] + [s + "," for s in items[:-1]] + items[-1:] + ["}"]


def decade(m):
    v = abs(float(m.group(0)))
    return "~1e%+03d" % round(math.log10(v)) if v > 0 else m.group(0)


def three_digits(m):
    return "%.3g" % float(m.group(0))


class Filters:
    def __init__(self, args):
        self.subst = []
        for path, name in ((args.work, "@WORK@"), (args.data, "@DATA@"), (HERE, "@SRC@")):
            if path:
                for p in {path, os.path.abspath(path), os.path.realpath(path)}:
                    self.subst.append((p, name))
        self.subst.sort(key=lambda s: -len(s[0]))
        host = socket.gethostname()
        self.hosts = [h for h in {host, host.split(".")[0]} if h]
        self.version = args.version

    def names(self, line):
        for p, name in self.subst:
            line = line.replace(p, name)
        for h in self.hosts:
            line = re.sub(r"(?<![\w-])%s(?![\w-])" % re.escape(h), "@HOST@", line)
        if self.version:
            line = re.sub(r"(?<![\w.])%s(?![\w.])" % re.escape(self.version), "@VERSION@", line)
        return line

    def numbers(self, line):
        line = MEASURED_UNIT.sub("<measured>", line)
        line = SMALL_EXP.sub(decade, line)
        return DECIMAL.sub(three_digits, line)

    def apply(self, lines):
        """Filter a step's output; its command line (`$ ...`) gets the names only."""
        out = []
        for line in lines:
            if line.startswith("$ "):
                out.append(self.names(line))
                continue
            for piece in json_lines(self.names(line)):
                out.append(self.numbers(piece))
        return out


def drop_mpirun_notices(lines):
    """Remove dashed blocks of mpirun that only say a rank exited non-zero."""
    out, block = [], None
    for line in lines:
        if line.startswith("-----"):
            if block is None:
                block = []
                continue
            if not any(n in b for b in block for n in MPIRUN_NOTICE):
                out += ["-" * 74] + block + ["-" * 74]
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block:
        out += ["-" * 74] + block
    return out


# ------------------------------------------------------------------ steps ---
def expand(word, args):
    return word.replace("@WORK@", args.work).replace("@DATA@", args.data or "").replace("@SRC@", HERE)


def split_env(words):
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        k, v = words[0].split("=", 1)
        env[k] = v
        words = words[1:]
    return env, words


def sections(name, text):
    lines = text.splitlines()
    return ["[%s]" % name] + lines if lines else []


def split_tagged(text, ranks):
    """Sort mpirun --tag-output text into ranks[(rank, stream)] (lines);
    return mpirun's own lines. A tag starts every line of a rank and also
    every chunk it forwards, which may begin inside a line: a tag's text runs
    to the end of its line or to the next tag."""
    pieces, rest, pos = {}, [], 0
    tags = list(TAG.finditer(text))
    # Open MPI 5 (the PyPI wheel of docs/gpu-node.md) writes "tag: text",
    # Open MPI 4 "tag:text": a space after every tag is the launcher's.
    pad = 1 if tags and all(text.startswith(" ", m.end()) for m in tags) else 0
    for k, m in enumerate(tags):
        rest.append(text[pos:m.start()])
        nxt = tags[k + 1].start() if k + 1 < len(tags) else len(text)
        nl = text.find("\n", m.end(), nxt)
        pos = nl + 1 if nl >= 0 else nxt
        pieces.setdefault((int(m.group(1)), m.group(2)), []).append(text[m.end() + pad:pos])
    rest.append(text[pos:])
    for key, parts in pieces.items():
        ranks.setdefault(key, []).extend("".join(parts).splitlines())
    return "".join(rest).splitlines()


def mpmd_parts(words, np_):
    """`-n 1 ARGS : -n 2 ARGS` (mpirun's MPMD form: ranks with different
    arguments) -> [(1, None, ARGS), (2, None, ARGS)]; plain `[-n N] ARGS` ->
    one part; `-n N -wdir DIR ARGS` -> (N, DIR, ARGS)."""
    parts, cur = [], []
    for w in words + [":"]:
        if w != ":":
            cur.append(w)
            continue
        n, wdir = np_, None
        if len(cur) >= 2 and cur[0] == "-n":
            n, cur = int(cur[1]), cur[2:]
        if len(cur) >= 2 and cur[0] == "-wdir":
            wdir, cur = cur[1], cur[2:]
        parts.append((n, wdir, cur))
        cur = []
    return parts


def run_ringrt(words, env, args, tag=True):
    parts = mpmd_parts(words, args.np)
    np_ = sum(n for n, _, _ in parts)
    shown = [" ".join(shlex.quote(w) for w in ws) for _, _, ws in parts]
    if np_ > 0:
        echo = "mpirun " + " : ".join(
            "-n %d %sringrt %s" % (n, "-wdir %s " % d if d else "", t)
            for (n, d, _), t in zip(parts, shown))
        argv = ([args.mpiexec, "--oversubscribe", "--bind-to", "none"] +
                (["--tag-output"] if tag else []) + args.preflags)
        for i, (n, wdir, ws) in enumerate(parts):
            argv += ([":"] if i else []) + [args.numproc_flag, str(n)]
            argv += (["-wdir", expand(wdir, args)] if wdir else []) + [args.ringrt]
            argv += [expand(w, args) for w in ws]
    else:
        echo = "ringrt " + shown[0]
        argv = [args.ringrt] + [expand(w, args) for w in parts[0][2]]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                           timeout=STEP_TIMEOUT_S, errors="replace")
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout after %d s (a hang)" % STEP_TIMEOUT_S
        out = e.stdout.decode(errors="replace") if e.stdout else ""
        err = e.stderr.decode(errors="replace") if e.stderr else ""
    if not tag:
        return echo, rc, [], out
    if np_ == 0:
        return echo, rc, sections("stdout", out) + sections("stderr", err), out + err
    ranks, untagged = {}, {}
    for stream, text in (("stdout", out), ("stderr", err)):
        untagged[stream] = split_tagged(text, ranks)
    body = []
    for (rank, stream) in sorted(ranks, key=lambda k: (k[0], k[1] != "stdout")):
        body += ["[rank %d %s]" % (rank, stream)] + ranks[(rank, stream)]
    for stream in ("stdout", "stderr"):
        rest = drop_mpirun_notices(untagged[stream])
        body += ["[mpirun %s]" % stream] + rest if rest else []
    raw = "\n".join(l for k in sorted(ranks) for l in ranks[k]) + "\n" + "\n".join(
        untagged["stdout"] + untagged["stderr"])
    return echo, rc, body, raw


def run_tool(words, args):
    echo = "tool " + " ".join(shlex.quote(w) for w in words)
    fn = cli_tools.TOOLS.get(words[0]) if words else None
    if fn is None:
        return echo, 2, ["[stderr]", "no tool %r (see cli_tools.py)" % (words[:1] or [""])[0]], ""
    lines = []
    try:
        rc = fn([expand(w, args) for w in words[1:]], lines.append) or 0
    except Exception as e:  # a tool that cannot run is a failed step, shown in the output
        lines.append("error: %s: %s" % (type(e).__name__, e))
        rc = 1
    text = "\n".join(lines)
    return echo, rc, lines, text


def run_step(line, args, filters):
    words = shlex.split(line)
    redirect, shown = None, " > "
    if len(words) >= 2 and words[-2] in (">", "1>"):
        redirect, shown, words = words[-1], " %s " % words[-2], words[:-2]
    env_add, words = split_env(words)
    env = dict(os.environ, **env_add)
    prefix = "".join("%s=%s " % kv for kv in env_add.items())
    if words and words[0] == "ringrt":
        echo, rc, body, raw = run_ringrt(words[1:], env, args, tag=shown != " 1> ")
    elif words and words[0] == "tool":
        echo, rc, body, raw = run_tool(words[1:], args)
    else:
        echo, rc, body, raw = line, 2, ["[stderr]", "a step starts with ringrt or tool"], ""
    if redirect:
        with open(os.path.join(args.work, redirect), "w") as f:
            f.write(raw)
        echo, body = echo + shown + redirect, []
    return filters.apply(["$ " + (prefix + echo).rstrip()] + body) + ["[exit %s]" % rc]


def steps_of(command):
    if len(command) == 2 and command[0] == "@steps":
        path = command[1] if os.path.isabs(command[1]) else os.path.join(HERE, "cases", command[1])
        with open(path) as f:
            return [s.strip() for s in f if s.strip() and not s.lstrip().startswith("#")]
    env, words = split_env(list(command))
    return [" ".join(shlex.quote(w) for w in ["%s=%s" % kv for kv in env.items()] + ["ringrt"] + words)]


# ------------------------------------------------------------------- main ---
def compare(actual, expected_path, update):
    text = "\n".join(actual) + "\n"
    if update:
        with open(expected_path, "w") as f:
            f.write(text)
        print("updated %s" % expected_path)
        return 0
    try:
        with open(expected_path) as f:
            want = f.read()
    except OSError:
        print(text, end="")
        print("FAIL: no expected file %s (run with --update to create it)" % expected_path)
        return 1
    if want == text:
        print(text, end="")
        return 0
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                               expected_path, "actual output"))
    print("FAIL: output differs from %s (if the change is intended, rerun with --update)"
          % expected_path)
    return 1


def update_all(build, regex):
    """Rerun the cli cases of a CTest build folder with --update."""
    q = subprocess.run(["ctest", "--show-only=json-v1", "-L", "cli"] + (["-R", regex] if regex else []),
                       cwd=build, capture_output=True, text=True, check=True)
    rc = 0
    for t in json.loads(q.stdout)["tests"]:
        env = dict(os.environ)
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                env.update(kv.split("=", 1) for kv in p["value"])
        cmd = t["command"]
        rc |= subprocess.run(cmd[:2] + ["--update"] + cmd[2:], env=env).returncode
    return rc


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--update-all":
        return update_all(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ringrt", required=True)
    ap.add_argument("--mpiexec", default="mpirun")
    ap.add_argument("--numproc-flag", default="-n")
    ap.add_argument("--preflag", dest="preflags", action="append", default=[])
    ap.add_argument("--np", type=int, default=0)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default="")
    ap.add_argument("--version", default="")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    args.work = os.path.abspath(args.work)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    filters = Filters(args)
    out = []
    for step in steps_of(command):
        out += run_step(step, args, filters)
    return compare(out, args.expected, args.update)


if __name__ == "__main__":
    sys.exit(main())

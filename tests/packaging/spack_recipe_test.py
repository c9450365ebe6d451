"""The Spack recipe (packaging/spack/ringrt/package.py) against the CMake
project, with a stand-in for Spack's package API (spack_stub/, not Spack):

- it imports, and every variant the issue names is declared;
- each variant maps, in cmake_args, to a CMake option this build defines
  (its CMakeCache.txt: the options as CMake itself declared them), ON with
  the variant and OFF without; every other -D name appears in the CMake files;
- every library the CMake files look for (find_package, pkg_check_modules,
  find_library) is a dependency of the recipe, under its Spack name; a new
  find_* in the CMake files without a Spack name here fails this test.

usage: spack_recipe_test.py SRC BUILD
"""
import importlib.util
import os
import re
import sys

SRC, BUILD = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "spack_stub"))
from spack import package as stub  # noqa: E402

VARIANTS = ["cuda", "nccl", "cudnn", "hdf5", "blas", "hwloc", "petsc", "python"]
# What the CMake files look for -> the Spack package that provides it
# (None: comes with the compiler or the C library).
SPACK_NAME = {"MPI": "mpi", "OpenMP": None, "Threads": None, "BLAS": "openblas",
              "ZLIB": "zlib-api", "HDF5": "hdf5", "CUDAToolkit": "cuda", "NCCL": "nccl",
              "CUDNNFrontend": "cudnn", "PkgConfig": "pkgconfig", "PETSc": "petsc",
              "hwloc": "hwloc", "nccl": "nccl", "m": None, "Python": "python",
              "ringrt": None}  # ringrt: examples of consumers finding the installed one
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


spec_obj = importlib.util.spec_from_file_location(
    "ringrt_recipe", os.path.join(SRC, "packaging", "spack", "ringrt", "package.py"))
recipe = importlib.util.module_from_spec(spec_obj)
spec_obj.loader.exec_module(recipe)
Ringrt = recipe.Ringrt

declared = {args[0] for name, args, _ in stub.DIRECTIVES if name == "variant"}
deps = {re.split(r"[@~+ ]", args[0])[0] for name, args, _ in stub.DIRECTIVES
        if name in ("depends_on", "extends")}
for v in VARIANTS:
    if v not in declared:
        fail(f"variant {v} is not declared")


# ---- variants -> CMake options -------------------------------------------------
def cache_options():
    out = {}
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*):([A-Z]+)=", line)
            if m and m.group(2) != "INTERNAL":
                out[m.group(1)] = m.group(2)
    return out


def cmake_text():
    parts = []
    for root, dirs, files in os.walk(SRC):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build")) and d != "tests"]
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                with open(os.path.join(root, f)) as fh:
                    parts.append(fh.read())
    with open(os.path.join(SRC, "tests", "python", "CMakeLists.txt")) as fh:
        parts.append(fh.read())  # RINGRT_PYTHON
    return "\n".join(parts)


class Dep:
    def __init__(self, name):
        self.prefix = f"/spack/{name}"
        self.command = type("Cmd", (), {"path": f"/spack/{name}/bin/{name}"})()


class Spec:
    def __init__(self, on):
        self.on = set(on)

    def satisfies(self, cond):
        assert cond[0] in "+~", cond
        return (cond[1:] in self.on) == (cond[0] == "+")

    def __getitem__(self, name):
        return Dep(name)


def defines(args):
    return dict(re.match(r"-D([A-Za-z0-9_]+):[A-Z]+=(.*)", a).groups() for a in args)


options, text = cache_options(), cmake_text()
all_on, all_off = defines(Ringrt(Spec(VARIANTS)).cmake_args()), defines(Ringrt(Spec([])).cmake_args())
for v in VARIANTS:
    only = defines(Ringrt(Spec([v])).cmake_args())
    changed = {k for k in set(only) | set(all_off) if only.get(k) != all_off.get(k)}
    if not changed:
        fail(f"variant {v} changes nothing in cmake_args")
    mapped = [k for k in changed if k in options]
    if not mapped:
        fail(f"variant {v} sets {sorted(changed)}, none of them an option of this build's CMake")
    for k in mapped:
        print(f"variant {v:7s} -> {k}={only[k]} (off: {all_off.get(k, 'unset')})")
for k in all_on:
    if k not in options and not re.search(rf"\b{k}\b", text):
        fail(f"cmake_args sets {k}, which no CMake file reads")
if all_on.get("RINGRT_TESTS") != "OFF":
    fail("RINGRT_TESTS must follow run_tests (OFF without --test)")

# ---- every dependency named ------------------------------------------------------
found = set(re.findall(r"find_package\((\w+)", text))
found |= set(re.findall(r"pkg_check_modules\(\w+(?:\s+[A-Z_]+)*\s+(\w+)\)", text))
found |= {m[1] for m in re.findall(r"find_library\((\w+)\s+(?:NAMES\s+)?(\w+)", text)}
found.add("Python")  # RINGRT_PYTHON (tests/python), the python variant
for name in sorted(found):
    if name not in SPACK_NAME:
        fail(f"the CMake files look for {name}: give it a Spack name here and a depends_on")
    elif SPACK_NAME[name] and SPACK_NAME[name] not in deps:
        fail(f"{name} (Spack: {SPACK_NAME[name]}) is not a dependency of the recipe")
print("dependencies:", ", ".join(sorted(deps)))
print("looked for by CMake:", ", ".join(sorted(found)))
if failures:
    sys.exit(f"{len(failures)} problem(s)")
print("PASS")

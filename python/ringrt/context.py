"""The ringrt runtime context over an mpi4py communicator."""
from __future__ import annotations

import atexit
import ctypes
import itertools
import os
import weakref
from typing import Any, Callable, Dict, Optional

from . import errors
from ._lib import (CTX_CONFIG_MAGIC, CTX_CONFIG_VERSION, CtxConfig, CtxInfo, check_mpi_match, lib,
                   mpi_comm_ctype)

_BACKENDS = {"auto": 0, "cpu": 2, "cuda": 3, "emu": 4}  # "auto": RRT_BACKEND_DEFAULT
_live: "weakref.WeakSet[Context]" = weakref.WeakSet()
#: The registry of live contexts by key (Context.key -> Context), the one
#: piece of module state ringrt.torch's custom ops read: an operator takes
#: only tensors and plain scalars, so a call names its context by this int
#: (docs/python.md, "torch.compile"). Weak values: a context that is
#: collected leaves the registry; keys are never reused in a process.
_registry: "weakref.WeakValueDictionary[int, Context]" = weakref.WeakValueDictionary()
_keys = itertools.count(1)
#: Context.key's stand-in for "the default context" (default_context()).
DEFAULT_KEY = -1


def _comm_handle(comm: Any) -> Any:
    """The C MPI_Comm of an mpi4py communicator, as ctypes wants it."""
    from mpi4py import MPI
    handle = MPI._handleof(comm)
    return mpi_comm_ctype()(handle)


def _launcher_problem(env_world: Optional[str], mpi_world: int, is_world: bool) -> Optional[str]:
    """Why a context over MPI's world would be a silent one-rank job, or None.

    torchrun and torch.multiprocessing start processes without an MPI
    launcher: each MPI_Init then makes a world of one, and every process
    would run the whole problem alone (exit 0, wrong scaling, no warning).
    Their WORLD_SIZE says how many processes the user meant."""
    try:
        want = int(env_world or "")
    except ValueError:
        return None
    if want <= 1 or mpi_world != 1 or not is_world:
        return None
    return (f"ringrt.Context: WORLD_SIZE={want} (set by torchrun or torch.multiprocessing) but "
            "MPI's world has 1 process: these processes were not started by an MPI launcher, "
            f"so each would run alone. Launch the {want} ranks with an MPI launcher instead: "
            f"'mpirun -np {want} python script.py', 'srun -n {want} python script.py' or "
            f"'launch/ringrt-run -n {want} python script.py' (docs/python.md, "
            "'Launching: torchrun and mpirun'); to run one independent job per process on "
            "purpose, pass comm=MPI.COMM_SELF")


def _refuse_torchrun_world(comm: Any) -> None:
    """Raise RuntimeError (in every process: each finds it alone) when a
    context over MPI's world would be a one-rank run under torchrun."""
    from mpi4py import MPI
    problem = _launcher_problem(os.environ.get("WORLD_SIZE"), MPI.COMM_WORLD.Get_size(),
                                comm == MPI.COMM_WORLD)
    if problem:
        raise RuntimeError(problem)


class Context:
    """One ringrt runtime context per rank (collective to create and close).

    ``comm``: an mpi4py communicator (default ``MPI.COMM_WORLD``); ringrt
    duplicates it, so library traffic never mixes with yours. ``backend``:
    ``"auto"`` (``RINGRT_BACKEND`` when set, else the GPU when one is
    usable, else ``"cpu"``), ``"cpu"``, ``"cuda"`` or ``"emu"``.
    ``device``: the GPU ordinal (default ``local_rank % ngpus``);
    ``timeout``: seconds any blocking wait may take (default
    ``RINGRT_TIMEOUT``, else 600); ``bind``: let ringrt bind the rank's cores
    and set the OpenMP/BLAS thread counts (default ``RINGRT_BIND``, else no:
    inside your program ringrt leaves the affinity and thread counts alone).

    Use it as a context manager, or call :meth:`close`; contexts still open
    at interpreter exit are closed before MPI is finalised.

    Raises RuntimeError where torchrun or torch.multiprocessing started the
    process (``WORLD_SIZE`` > 1) without an MPI launcher (MPI's world has one
    process) and ``comm`` is that world: the message says how to launch.
    """

    def __init__(self, comm: Any = None, backend: str = "auto", *, device: int = -1,
                 timeout: Optional[float] = None, bind: Optional[bool] = None):
        from mpi4py import MPI
        check_mpi_match()
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {sorted(_BACKENDS)}, got {backend!r}")
        self.comm = MPI.COMM_WORLD if comm is None else comm
        _refuse_torchrun_world(self.comm)
        cfg = CtxConfig(ctypes.sizeof(CtxConfig), CTX_CONFIG_MAGIC, CTX_CONFIG_VERSION,
                        _BACKENDS[backend], int(device), float(timeout or 0.0),
                        -1 if bind is None else int(bool(bind)), -1)
        handle = ctypes.c_void_p()
        self._handle: Optional[int] = None
        self._owned_comm: Any = None  # a communicator made for this context (freed at close)
        self._children: Dict[int, Callable[[], None]] = {}
        status = lib().rrt_ctx_create(_comm_handle(self.comm), ctypes.byref(cfg),
                                      ctypes.byref(handle))
        if status != errors.SUCCESS:
            # No context to hold the message: the library printed it; name the call.
            errors.check(status, None, f"rrt_ctx_create (backend {backend!r})")
        self._handle = handle.value
        self._key = next(_keys)
        _registry[self._key] = self
        _live.add(self)

    @classmethod
    def from_process_group(cls, pg: Any = None, backend: str = "auto", **kwargs: Any
                           ) -> "Context":
        """A context over the processes of a torch.distributed process group
        (default: torch's world), ranked as in the group: ``ctx.rank`` is
        ``torch.distributed.get_rank(pg)``. Collective over the group's
        members; other arguments as :class:`Context`.

        The job must be started by an MPI launcher (mpirun, srun,
        launch/ringrt-run) with torch's RANK and WORLD_SIZE set from MPI's:
        the members check that on the group (every member raises the same
        error if not) and build the MPI communicator of the same processes.

        Raises:
            RuntimeError: torch.distributed is not initialised.
            ringrt.errors.InvalidArgument: this process is not in `pg`; the
                group's torch ranks are not MPI's (on every member).
        """
        from ._torch_dist import comm_of_group
        comm = comm_of_group(pg)
        try:
            ctx = cls(comm, backend, **kwargs)
        except BaseException:
            comm.Free()
            raise
        ctx._owned_comm = comm
        return ctx

    @classmethod
    def from_device_mesh(cls, mesh: Any, dim: Any = None, backend: str = "auto",
                         **kwargs: Any) -> "Context":
        """A context over one dimension of a torch DeviceMesh (index or
        name; optional for a 1-D mesh): this process's group along `dim`,
        as :meth:`from_process_group` (collective over that group)."""
        from ._torch_dist import group_of_mesh
        return cls.from_process_group(group_of_mesh(mesh, dim), backend, **kwargs)

    # ---- handles of objects that live on this context ----
    @property
    def key(self) -> int:
        """This context's key in the registry of live contexts (an int that
        ringrt.torch's custom ops take instead of the object; see
        :func:`context_of_key`)."""
        return self._key

    @property
    def handle(self) -> int:
        """The rrt_ctx_t as an integer (for ctypes calls); raises once closed."""
        if self._handle is None:
            raise ValueError("the ringrt Context is closed")
        return self._handle

    def _adopt(self, obj: Any, close: Callable[[], None]) -> None:
        """Run `close` (which frees `obj`'s native handle and must not hold a
        reference to `obj`) before this context goes, unless `obj` goes first."""
        key = id(obj)
        self._children[key] = close
        weakref.finalize(obj, self._children.pop, key, None)

    def check(self, status: int, op: str = "") -> None:
        """Raise the ringrt exception for a failed call on this context."""
        errors.check(status, self._handle, op)

    def agree(self, problem: Optional[str], op: str, status: int = errors.INVALID_ARG) -> None:
        """Collective: every rank passes its own local problem (None when fine);
        if any rank has one, every rank raises, naming the lowest failing rank
        and its message. Call it after validating inputs and before a
        collective call, so a bad input on one rank never hangs the others."""
        L = lib()
        local = errors.SUCCESS
        if problem:
            local = L.rrt_ctx_set_error(self.handle, status, op.encode(), problem.encode())
        self.check(L.rrt_agree(self.handle, local), op)

    # ---- what the context is ----
    @property
    def rank(self) -> int:
        return lib().rrt_ctx_rank(self.handle)

    @property
    def size(self) -> int:
        return lib().rrt_ctx_size(self.handle)

    @property
    def local_rank(self) -> int:
        return lib().rrt_ctx_local_rank(self.handle)

    @property
    def local_size(self) -> int:
        return lib().rrt_ctx_local_size(self.handle)

    @property
    def backend(self) -> str:
        """The backend in use: "cpu", "cuda" or "emu"."""
        L = lib()
        return L.rrt_backend_name(L.rrt_ctx_backend(self.handle)).decode()

    @property
    def transport(self) -> str:
        L = lib()
        return L.rrt_transport_name(L.rrt_ctx_transport(self.handle)).decode()

    def info(self) -> Dict[str, Any]:
        """Where this rank runs (as `ringrt info` prints it): host, backend,
        device, bound cores, NUMA node, threads, MPI/NCCL/CUDA versions."""
        L = lib()
        out = CtxInfo()
        self.check(L.rrt_ctx_get_info(self.handle, ctypes.byref(out)), "rrt_ctx_get_info")
        d: Dict[str, Any] = {}
        for name, _ in CtxInfo._fields_:
            value = getattr(out, name)
            d[name] = value.decode(errors="replace") if isinstance(value, bytes) else value
        d["backend"] = L.rrt_backend_name(out.backend).decode()
        d["transport"] = L.rrt_transport_name(out.transport).decode()
        return d

    def barrier(self) -> None:
        self.check(lib().rrt_barrier(self.handle), "rrt_barrier")

    # ---- lifetime ----
    def close(self) -> None:
        """Destroy the context (collective) and every plan or matrix made on it."""
        if self._handle is None:
            return
        for close in list(self._children.values())[::-1]:
            close()
        self._children.clear()
        handle, self._handle = self._handle, None
        _live.discard(self)
        try:
            errors.check(lib().rrt_ctx_destroy(handle), None, "rrt_ctx_destroy")
        finally:
            comm, self._owned_comm = self._owned_comm, None
            if comm is not None:
                comm.Free()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ringrt.Context closed>"
        return f"<ringrt.Context rank {self.rank}/{self.size} backend {self.backend}>"


_default: Optional[Context] = None


def context_of_key(key: int) -> Context:
    """The live context whose :attr:`Context.key` is `key`
    (:data:`DEFAULT_KEY`: :func:`default_context`).

    Raises ValueError when no live context has that key (it was collected)."""
    if key == DEFAULT_KEY:
        return default_context()
    ctx = _registry.get(key)
    if ctx is None:
        raise ValueError(f"no live ringrt Context has key {key} (it was closed and collected)")
    return ctx


def default_context() -> Context:
    """The context that calls without ``ctx=`` use: created on first use over
    ``MPI.COMM_WORLD`` with the default backend, closed at exit."""
    global _default
    if _default is None or _default._handle is None:
        _default = Context()
    return _default


@atexit.register
def _close_all() -> None:
    # Registered after mpi4py's import, so it runs before MPI is finalised.
    for ctx in list(_live):
        try:
            ctx.close()
        except errors.RingrtError:
            pass

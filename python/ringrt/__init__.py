"""ringrt: ring attention, distributed ILU(0) and SEACells metacells over MPI
(and NCCL on GPUs), from Python.

- :class:`ringrt.Context` -- the runtime over an mpi4py communicator;
- ``ringrt.torch`` -- :func:`ringrt.torch.ring_attention` (autograd), shard/unshard;
- :func:`ringrt.seacells` -- metacells of an AnnData object; :func:`ringrt.plot_seacells`
  and ``ringrt.seacells_plot`` -- their plots (matplotlib);
  :func:`ringrt.summarize_by_SEACell`, :func:`ringrt.summarize_by_soft_SEACell` -- their
  metacell x gene AnnData;
- ``ringrt.core``, ``ringrt.evaluate``, ``ringrt.plot`` -- the reference SEACells' modules
  (``import ringrt as SEACells``: ``SEACells.core.SEACells(ad, ...)``, its metrics and plots);
- :func:`ringrt.ilu` (ILU(k), ``ringrt.ilu(A, levels=k)``), :func:`ringrt.ilu0`,
  :func:`ringrt.krylov_solve` -- SciPy matrices;
  ``ringrt.petsc`` -- a petsc4py preconditioner.

The C library is loaded on first use (see ``ringrt._lib`` for where it is
looked for). Errors are :class:`ringrt.errors.RingrtError` subclasses.
"""
from __future__ import annotations

from . import _nccl, errors, streams
from .context import Context, default_context
from .errors import RingrtError

__version__ = "0.1.0"
_nccl.prefer_wheel_nccl()  # one NCCL with torch's, whichever is imported first


def library_version() -> str:
    """The version of the loaded libringrt."""
    from ._lib import lib
    return lib().rrt_version().decode()


# name -> the module that defines it, imported on first use so that
# `import ringrt` does not import scipy, petsc4py, anndata, pandas or torch
# (None: the name is the module itself).
_LAZY = {
    "seacells": "metacells", "SEACellsModel": "metacells", "plot_seacells": "seacells_plot",
    "summarize_by_SEACell": "summary", "summarize_by_soft_SEACell": "summary",
    "SparseMatrix": "sparse", "ILU0": "ilu", "KrylovResult": "ilu", "ilu0": "ilu", "ilu": None,
    "krylov_solve": "ilu", "petsc": None, "torch": None,
    "core": None, "evaluate": None, "plot": None,
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'ringrt' has no attribute {name!r}")
    import importlib
    module = importlib.import_module(f".{_LAZY[name] or name}", __name__)
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value
    return value


__all__ = ["Context", "default_context", "errors", "RingrtError", "library_version", "streams",
           "seacells", "SEACellsModel", "plot_seacells", "summarize_by_SEACell",
           "summarize_by_soft_SEACell", "SparseMatrix", "ILU0", "KrylovResult",
           "ilu0", "ilu", "krylov_solve", "core", "evaluate", "plot"]

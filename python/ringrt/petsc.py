"""ringrt's exact global ILU(0) as a petsc4py preconditioner.

Use it as PETSc's ``python`` PC type, from code::

    pc.setType("python")
    pc.setPythonContext(ringrt.petsc.ILU0())
    # or, the same in one call: ringrt.petsc.use_ilu0(ksp)

or from the options database: ``-pc_type python -pc_python_type
ringrt.petsc.ILU0``. It reads the preconditioning matrix (SeqAIJ or MPIAIJ)
row block by row block as PETSc distributes it (``getOwnershipRange``,
``getValuesCSR``), so rows never move, and runs on a ringrt context over the
PC's communicator. Unlike PETSc's parallel ILU (block Jacobi), the
preconditioner does not depend on the number of ranks.

Options (with the PC's prefix), read by ``setFromOptions``:

- ``-pc_ringrt_ordering natural|rcm|multicolor`` (default natural);
- ``-pc_ringrt_boost TOL[,VALUE]``: pivots with ``|u_ii| <= TOL`` become VALUE
  (default 1.0); off by default;
- ``-pc_ringrt_factor_precision double|single``: single applies the factors
  rounded to float32 (vectors and arithmetic stay double);
- ``-pc_ringrt_backend auto|cpu|cuda|emu``;
- ``-pc_ringrt_dd_blocks K``: subdomains of the dd orderings (0, the
  default: one per rank; K > 0: the same K-way split at any rank count).

Any other ``-pc_ringrt_*`` option, and every ``-pc_factor_*`` one (PETSc's
factor options: the C plugin, ``-pc_type ringrt``, honours them; this python
PC does not), is an error naming it, on every rank. The matrix may be any
AIJ type (``aijperm``, ``aijsell``, ...; read through ``getValuesCSR``);
``baij``/``sbaij`` are converted to AIJ (one more copy of the matrix per
``setUp``).

``setUp`` factors again when the operator's values changed (same pattern:
the analysis is kept) and starts over when its pattern did. A zero pivot is
:class:`ringrt.errors.Singular` naming the global row, raised through
PETSc's error path (``KSP.solve`` re-raises it in Python; a C caller gets
petsc4py's PETSc error for a failed Python callback).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional

import numpy as np
import scipy.sparse as sp

from . import errors
from .context import Context
from .ilu import ILU0 as _RingrtILU0
from .sparse import SparseMatrix

_PRECISIONS = {"double": False, "single": True}
_BLOCK_TYPES = ("seqbaij", "mpibaij", "seqsbaij", "mpisbaij")
_OPTIONS = ("pc_ringrt_ordering", "pc_ringrt_boost", "pc_ringrt_factor_precision",
            "pc_ringrt_backend", "pc_ringrt_dd_blocks")


def _raise_without_pc(method: Callable[..., None]) -> Callable[..., None]:
    """A python-PC method whose ringrt errors propagate with no frame holding
    the PC: petsc4py 3.18 would destroy a PC still alive at exit in
    PetscFinalize, after Python is gone, and crash."""
    @functools.wraps(method)
    def wrapper(self: "ILU0", pc: Any, *args: Any) -> None:
        try:
            return method(self, pc, *args)
        except errors.RingrtError as e:
            error = e.with_traceback(None)
        del pc, args
        raise error
    return wrapper


class ILU0:
    """A petsc4py python-PC context: ringrt's exact global ILU(0).

    Args:
        ordering: ``"natural"``, ``"rcm"`` or ``"multicolor"``.
        boost: None, a tolerance or ``(tol, value)`` (see :func:`ringrt.ilu0`).
        factor_precision: ``"double"`` or ``"single"``.
        backend: the ringrt backend (``"auto"``, ``"cpu"``, ``"cuda"``, ``"emu"``).
        dd_blocks: subdomains of the dd orderings (0: one per rank).

    The options database (``-pc_ringrt_*``) overrides these in ``setFromOptions``.
    """

    def __init__(self, ordering: str = "natural", boost: Any = None,
                 factor_precision: str = "double", backend: str = "auto", dd_blocks: int = 0):
        self.options: Dict[str, Any] = {"ordering": ordering, "boost": boost,
                                        "factor_precision": factor_precision,
                                        "backend": backend, "dd_blocks": dd_blocks}
        self.ctx: Optional[Context] = None
        self.matrix: Optional[SparseMatrix] = None
        self.ilu: Optional[_RingrtILU0] = None
        self.setups = 0  # analyses done (a new pattern or new options)
        self.factorizations = 0

    # ---- the python-PC protocol ----
    @_raise_without_pc
    def setFromOptions(self, pc: Any) -> None:
        """Read ``-pc_ringrt_*`` from the options database (with the PC's prefix)."""
        from petsc4py import PETSc
        prefix = pc.getOptionsPrefix() or ""
        db = PETSc.Options(prefix)
        _refuse_unknown(prefix, PETSc.Options().getAll())
        new = dict(self.options)
        new["ordering"] = db.getString("pc_ringrt_ordering", new["ordering"])
        if db.hasName("pc_ringrt_boost"):
            new["boost"] = _parse_boost(db.getString("pc_ringrt_boost"))
        new["factor_precision"] = db.getString("pc_ringrt_factor_precision",
                                               new["factor_precision"])
        new["backend"] = db.getString("pc_ringrt_backend", new["backend"])
        new["dd_blocks"] = db.getInt("pc_ringrt_dd_blocks", new["dd_blocks"])
        if new != self.options:
            if new["backend"] != self.options["backend"]:
                self._close_context()
            self._drop_factors()
            self.options = new

    @_raise_without_pc
    def setUp(self, pc: Any) -> None:
        """Factor the preconditioning matrix (collective): again with the
        kept analysis when only its values changed, from scratch otherwise.

        Raises:
            ringrt.errors.Singular: on every rank for a zero pivot, naming the global row.
        """
        self._set_up(pc)

    def _set_up(self, pc: Any) -> None:
        _, P = pc.getOperators()
        csr, row_begin = _local_rows(P)
        if self.ctx is None:
            self.ctx = Context(pc.getComm().tompi4py(), backend=self.options["backend"])
        if self.ilu is not None and self._same_pattern(csr):
            self.matrix.set_values(csr)
            self.ilu.refactor()
        else:
            self._drop_factors()
            precision = self.options["factor_precision"]
            problem = None if precision in _PRECISIONS else (
                f"-pc_ringrt_factor_precision must be double or single, got {precision!r}")
            self.ctx.agree(problem, "ringrt.petsc.ILU0")
            self.matrix = SparseMatrix(csr, self.ctx, row_begin=row_begin)
            self.ilu = _RingrtILU0(self.matrix, self.options["ordering"], self.options["boost"],
                                   _PRECISIONS[precision], self.options["dd_blocks"])
            self.setups += 1
        self.factorizations += 1

    @_raise_without_pc
    def apply(self, pc: Any, x: Any, y: Any) -> None:
        """y = M^-1 x on this rank's rows (collective)."""
        if self.ilu is None:  # new options after the last setUp: PETSc does not call it again
            self._set_up(pc)
        y.setArray(self.ilu.apply(x.getArray(readonly=True)))

    def view(self, pc: Any, viewer: Any) -> None:
        """What the preconditioner is, for ``-ksp_view`` / ``pc.view()``."""
        if viewer.getType() != "ascii":
            return
        o = self.options
        viewer.printfASCII("ringrt ILU(0): the exact global ILU(0), the same for any rank count\n")
        viewer.printfASCII(f"  ordering {o['ordering']}, factor precision "
                           f"{o['factor_precision']}, boost {o['boost'] or 'off'}\n")
        if self.ilu is not None:
            lv_l, lv_u = self.ilu.levels
            viewer.printfASCII(f"  n {self.matrix.n}, nonzeros {self.matrix.nnz}, levels L {lv_l}"
                               f" U {lv_u}, backend {self.ctx.backend} on {self.ctx.size} rank(s),"
                               f" {self.factorizations} factorization(s)\n")

    def reset(self, pc: Any) -> None:
        """Free the factors (PCReset)."""
        self._drop_factors()

    def destroy(self, pc: Any) -> None:
        """Free the factors and the context (PCDestroy)."""
        self._drop_factors()
        self._close_context()

    # ---- helpers ----
    def _same_pattern(self, csr: sp.csr_array) -> bool:
        """Whether every rank's pattern is the one analysed (collective)."""
        old = self.matrix.local_csr()
        same = bool(np.array_equal(old.indptr, csr.indptr) and
                    np.array_equal(old.indices, csr.indices))
        return all(self.ctx.comm.allgather(same))

    def _drop_factors(self) -> None:
        if self.ilu is not None:
            self.ilu.close()
            self.matrix.close()
        self.ilu = self.matrix = None

    def _close_context(self) -> None:
        if self.ctx is not None:
            self.ctx.close()
        self.ctx = None


def _refuse_unknown(prefix: str, options: Dict[str, str]) -> None:
    """Every -pc_ringrt_* / -pc_factor_* option of this prefix is one this
    PC reads, else an error naming it (the same on every rank: the options
    database is)."""
    for name in sorted(options):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):]
        if rest.startswith("pc_factor_") or (rest.startswith("pc_ringrt_")
                                               and rest not in _OPTIONS):
            raise errors.InvalidArgument(
                errors.INVALID_ARG,
                f"ringrt.petsc.ILU0: option -{name} is not supported (it reads "
                f"{', '.join('-' + o for o in _OPTIONS)}; PETSc's -pc_factor_* options are "
                f"honoured by the C plugin, -pc_type ringrt)")


def _parse_boost(text: str) -> Any:
    """``TOL`` or ``TOL,VALUE`` from the options database (checked by ilu0)."""
    parts = text.split(",")
    try:
        return tuple(float(p) for p in parts) if len(parts) == 2 else float(text)
    except ValueError:
        return text  # ilu0 names the bad value on every rank


def _local_rows(P: Any) -> "tuple[sp.csr_array, int]":
    """This rank's rows of an AIJ matrix (global columns) and the first row's index."""
    kind = P.getType()
    m, n = P.getSize()
    aij = kind.startswith("seqaij") or kind.startswith("mpiaij")
    if not (aij or kind in _BLOCK_TYPES) or m != n:
        raise errors.InvalidArgument(
            errors.INVALID_ARG,
            f"ringrt.petsc.ILU0: the preconditioning matrix must be square AIJ (seqaij, mpiaij "
            f"or a subtype) or baij/sbaij, got {kind} of size {m} x {n}")
    rstart, rend = P.getOwnershipRange()
    if not aij:  # one more copy of the matrix, freed after the read
        C = P.convert("aij")
        indptr, cols, vals = C.getValuesCSR()
        C.destroy()
    else:
        indptr, cols, vals = P.getValuesCSR()
    return sp.csr_array((vals, cols, indptr), shape=(rend - rstart, n)), rstart


def use_ilu0(ksp_or_pc: Any, **options: Any) -> ILU0:
    """Make a KSP's (or a PC's) preconditioner ringrt's ILU(0); ``options``
    as for :class:`ILU0`. Returns the python-PC context."""
    pc = ksp_or_pc.getPC() if hasattr(ksp_or_pc, "getPC") else ksp_or_pc
    context = ILU0(**options)
    pc.setType("python")
    pc.setPythonContext(context)
    return context


__all__ = ["ILU0", "use_ilu0"]

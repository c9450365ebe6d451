"""ringrt.petsc.ILU0 as a petsc4py preconditioner. In one job (np = 3) the
same GMRES runs on COMM_SELF, on a 2-rank split and on all ranks: ringrt's
iteration count must be the same at every size (its ILU(0) does not depend
on the rank count), PETSc's bjacobi+ILU(0) count is printed for contrast;
every solution must match scipy's spsolve. Also: the options database,
view, re-factoring after new values, and a zero pivot raised on every rank."""
import os
import sys
import tempfile

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from mpi4py import MPI  # noqa: E402
from petsc4py import PETSc  # noqa: E402
from scipy.sparse.linalg import spsolve  # noqa: E402

import rrt_testing  # noqa: E402
import ringrt.petsc  # noqa: E402
from ilu_problems import convdiff2d, rel  # noqa: E402
from ringrt import errors  # noqa: E402

N = 40  # 1600 unknowns: enough GMRES iterations for the block splitting to show
A_GLOBAL = convdiff2d(N)
RTOL = 1e-9


def petsc_matrix(A: sp.csr_array, comm: MPI.Comm) -> PETSc.Mat:
    """A as an AIJ matrix on comm, rows split as PETSc does by default."""
    n, size, rank = A.shape[0], comm.Get_size(), comm.Get_rank()
    nloc = n // size + (rank < n % size)
    lo = comm.exscan(nloc) or 0
    block = A[lo:lo + nloc]
    M = PETSc.Mat().createAIJ(((nloc, n), (nloc, n)), comm=PETSc.Comm(comm),
                              csr=(block.indptr.astype(PETSc.IntType),
                                   block.indices.astype(PETSc.IntType), block.data))
    M.assemble()
    return M


def make_ksp(M: PETSc.Mat, prefix: str) -> PETSc.KSP:
    ksp = PETSc.KSP().create(M.getComm())
    ksp.setOptionsPrefix(prefix)
    ksp.setOperators(M)
    ksp.setType("gmres")
    ksp.setPCSide(PETSc.PC.Side.RIGHT)  # the true residual, for either preconditioner
    ksp.setTolerances(rtol=RTOL, atol=0.0, max_it=2000)
    return ksp


def solve(ksp: PETSc.KSP, M: PETSc.Mat, b_global: np.ndarray) -> "tuple[int, np.ndarray]":
    """(iterations, the whole solution) of ksp on b."""
    b, x = M.createVecs()
    lo, hi = M.getOwnershipRange()
    b.setArray(b_global[lo:hi])
    ksp.solve(b, x)
    assert ksp.getConvergedReason() > 0, ksp.getConvergedReason()
    whole = np.concatenate(M.getComm().tompi4py().allgather(x.getArray().copy()))
    return ksp.getIterationNumber(), whole


def iterations_on(comm: MPI.Comm, b: np.ndarray, ref: np.ndarray) -> "tuple[int, int]":
    """(ringrt's, bjacobi's) GMRES iterations on comm; checks the solutions."""
    M = petsc_matrix(A_GLOBAL, comm)
    ksp = make_ksp(M, "r_")
    context = ringrt.petsc.use_ilu0(ksp)
    its, x = solve(ksp, M, b)
    # ||r|| <= 1e-9 ||b||, cond(A) ~ 300: an error below 3e-7
    assert rel(x, ref) < 1e-5, rel(x, ref)
    assert context.ctx.size == comm.Get_size()
    ksp.destroy()
    bj = make_ksp(M, "bj_")
    # PETSc's parallel ILU(0): block Jacobi, ILU(0) of each rank's diagonal block
    PETSc.Options().setValue("bj_sub_pc_type", "ilu")
    bj.getPC().setType("bjacobi")
    bj.setFromOptions()
    its_bj, x = solve(bj, M, b)
    assert rel(x, ref) < 1e-5, rel(x, ref)
    bj.destroy(), M.destroy()
    return its, its_bj


def check_rank_independence(world: MPI.Comm) -> None:
    b = A_GLOBAL @ np.linspace(1.0, 2.0, N * N)
    ref = spsolve(A_GLOBAL.tocsc(), b)
    rank = world.Get_rank()
    half = world.Split(0 if rank < 2 else 1, rank)
    counts = {}
    for comm in (MPI.COMM_SELF, half, world):
        its = iterations_on(comm, b, ref)
        counts.setdefault(comm.Get_size(), its)  # ranks of the same size solve alike
    half.Free()
    all_counts = world.allgather(counts)
    if rank == 0:
        for size in sorted(all_counts[0]):
            its, its_bj = all_counts[0][size]
            print(f"np {size}: GMRES(30) iterations to {RTOL:g}: ringrt ILU(0) {its}, "
                  f"PETSc bjacobi+ILU(0) {its_bj}")
    ringrt_counts = {c[size][0] for c in all_counts for size in c}
    assert len(ringrt_counts) == 1, all_counts  # the same at every rank count
    # on one rank both are the serial ILU(0): PETSc's own is the reference
    assert counts[1][0] == counts[1][1], counts


def check_options_view_refactor(world: MPI.Comm) -> None:
    """-pc_type python -pc_python_type ringrt.petsc.ILU0 and -pc_ringrt_*,
    view, and setUp again after the values change."""
    opts = PETSc.Options()
    for key, value in (("o_pc_type", "python"), ("o_pc_python_type", "ringrt.petsc.ILU0"),
                       ("o_pc_ringrt_ordering", "multicolor"),
                       ("o_pc_ringrt_factor_precision", "single"),
                       ("o_pc_ringrt_backend", "cpu"), ("o_pc_ringrt_boost", "1e-300,1.0")):
        opts.setValue(key, value)
    M = petsc_matrix(A_GLOBAL, world)
    ksp = make_ksp(M, "o_")
    ksp.setFromOptions()
    context = ksp.getPC().getPythonContext()
    assert isinstance(context, ringrt.petsc.ILU0), type(context)
    b = A_GLOBAL @ np.ones(N * N)
    _, x = solve(ksp, M, b)
    assert rel(x, np.ones(N * N)) < 1e-5
    assert context.options == {"ordering": "multicolor", "factor_precision": "single",
                               "backend": "cpu", "boost": (1e-300, 1.0),
                               "dd_blocks": 0}, context.options
    assert context.ilu.levels == (2, 2), context.ilu.levels  # multicolour 5-point grid
    path = os.path.join(tempfile.gettempdir(), f"ringrt_pc_view_{os.getpid()}.txt")
    viewer = PETSc.Viewer().createASCII(path, comm=PETSc.COMM_SELF)
    ksp.getPC().view(viewer)
    viewer.destroy()
    with open(path) as f:
        text = f.read()
    os.remove(path)
    assert "ringrt ILU(0)" in text and "ordering multicolor" in text and "levels L 2" in text, text
    # new values, same pattern: setUp factors again (no new analysis)
    A2 = A_GLOBAL + sp.diags(np.full(N * N, 3.0))
    lo, hi = M.getOwnershipRange()
    block = sp.csr_array(A2[lo:hi])
    M.setValuesCSR(block.indptr.astype(PETSc.IntType), block.indices.astype(PETSc.IntType),
                   block.data)
    M.assemble()
    _, x = solve(ksp, M, A2 @ np.ones(N * N))
    assert rel(x, np.ones(N * N)) < 1e-5
    assert (context.setups, context.factorizations) == (1, 2), (context.setups,
                                                                 context.factorizations)
    fresh = ringrt.ilu0(ringrt.SparseMatrix(block, context.ctx, row_begin=lo), "multicolor")
    assert np.array_equal(fresh.factors().data, context.ilu.factors().data)  # A2's ILU(0)
    fresh.close()
    # new options after a solve: the next solve uses them (PETSc calls no setUp)
    opts.setValue("o_pc_ringrt_ordering", "natural")
    opts.delValue("o_pc_python_type")  # (it would make a new python context)
    ksp.setFromOptions()
    assert ksp.getPC().getPythonContext() is context
    _, x = solve(ksp, M, A2 @ np.ones(N * N))
    assert rel(x, np.ones(N * N)) < 1e-5
    assert (context.ilu.ordering, context.setups) == ("natural", 2), context.ilu
    ksp.destroy(), M.destroy()
    for key in list(opts.getAll()):
        if key.startswith("o_"):
            opts.delValue(key)


def check_dd_blocks_types_refusals(world: MPI.Comm) -> None:
    """-pc_ringrt_dd_blocks gives the same preconditioner on every rank count
    (the factors of ringrt.ilu0 with the same dd_blocks on COMM_SELF); baij
    and aijsell read the same rows; -pc_factor_* and unknown -pc_ringrt_*
    options are errors naming them."""
    opts = PETSc.Options()
    for key, value in (("d_pc_type", "python"), ("d_pc_python_type", "ringrt.petsc.ILU0"),
                       ("d_pc_ringrt_ordering", "dd"), ("d_pc_ringrt_dd_blocks", "3")):
        opts.setValue(key, value)
    b = A_GLOBAL @ np.ones(N * N)
    its = []
    for kind in ("aij", "aijsell", "baij"):
        M = petsc_matrix(A_GLOBAL, world)
        if kind != "aij":
            M = M.convert(kind)
        ksp = make_ksp(M, "d_")
        ksp.setFromOptions()
        its.append(solve(ksp, M, b)[0])
        context = ksp.getPC().getPythonContext()
        assert context.options["dd_blocks"] == 3, context.options
        lo, _ = M.getOwnershipRange()
        local = context.matrix.local_csr()
        serial = ringrt.ilu0(A_GLOBAL, "dd", dd_blocks=3, ctx=ringrt.Context(MPI.COMM_SELF))
        want = serial.factors()[lo:lo + local.shape[0]]
        assert np.array_equal(context.ilu.factors().data, sp.csr_array(want).data), kind
        serial.close()
        ksp.destroy(), M.destroy()
    assert len(set(its)) == 1, its
    for bad in ("d_pc_factor_levels", "d_pc_ringrt_bogus"):
        opts.setValue(bad, "1")
        M = petsc_matrix(A_GLOBAL, world)
        ksp = make_ksp(M, "d_")
        try:
            ksp.setFromOptions()
            raise AssertionError(f"-{bad} was accepted")
        except ringrt.errors.InvalidArgument as e:
            assert f"option -{bad} is not supported" in str(e), e
        ksp.destroy(), M.destroy()
        opts.delValue(bad)
    for key in list(opts.getAll()):
        if key.startswith("d_"):
            opts.delValue(key)


def check_zero_pivot(world: MPI.Comm) -> None:
    """A zero pivot on the last rank's rows: every rank's KSP.solve raises Singular."""
    Z = sp.csr_array(A_GLOBAL, copy=True)
    k = N * N - 3
    Z.data[Z.indptr[k]:Z.indptr[k + 1]] = 0.0
    M = petsc_matrix(Z, world)
    ksp = make_ksp(M, "z_")
    ringrt.petsc.use_ilu0(ksp, backend="cpu")
    b, x = M.createVecs()
    b.set(1.0)
    rrt_testing.raises(errors.Singular, lambda: ksp.solve(b, x), match=f"global row {k}")
    ksp.destroy(), M.destroy()


def main() -> None:
    world = MPI.COMM_WORLD
    check_rank_independence(world)
    check_options_view_refactor(world)
    check_dd_blocks_types_refusals(world)
    check_zero_pivot(world)


rrt_testing.run(main)

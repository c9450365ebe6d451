#!/usr/bin/env python3
"""The ringrt PC plugin as a PETSc user meets it (tests/ilu/petsc.cmake).

usage: petsc_check.py CASE --mpiexec MPIEXEC --ksp EXE --ksp-linked EXE --plugin LIB
                      --data SHARED_DATA [--python PY --script FILE]

Runs tests/ilu/petsc_ksp.c under mpirun with PETSc options and checks what it
prints against PETSc's own answer on the same matrix:
  iterations  -pc_type ringrt -ksp_type gmres at np 1, 2, 3 takes exactly the
              GMRES iterations of PETSc's sequential -pc_type ilu (natural order,
              np 1: the same preconditioner), on convdiff2d and gk_nos6.mtx;
              -pc_type bjacobi -sub_pc_type ilu at np 2, 3 printed for contrast.
  zero_pivot  a zero pivot is KSP_DIVERGED_PC_FAILED / FACTOR_NUMERIC_ZEROPIVOT
              naming the row PETSc's ILU names, on every rank; a missing
              diagonal is FACTOR_STRUCT_ZEROPIVOT; -ksp_error_if_not_converged
              makes it an error on every rank.
  options     -pc_ringrt_ordering rcm at np 1 and 2, the levels and the -ksp_view
              text; the getters and PCRingrtSetOrdering after setup (multicolor);
              single precision and a refactorization on the same pattern (one
              analysis, two factorizations); boost; -pc_ringrt_backend emu; a
              bad name and -help.
  guest       a good guest: at np 2 the program's CPU affinity and OpenMP threads
              are the same after the solve as before it, by default and with
              RINGRT_BIND=0; with -pc_ringrt_bind (or RINGRT_BIND=1) ringrt binds
              the rank to what -ksp_view names; -help shows the value in force.
  petsc4py    petsc4py loads the plugin with -dll_append and solves with
              PETSc.Options()['pc_type'] = 'ringrt'.
  factor_options
              PETSc's -pc_factor_* options against PETSc's own ILU and the AIJ
              types at np 1 (petsc4py_factor_options.py).
  factor_options_c
              the NONZERO and POSITIVE_DEFINITE shifts at np 2 with PETSc's
              iterations; the refusals' messages
              on every rank; -help; -pc_ringrt_dd_blocks the same at np 1 and 2;
              mpiaijsell, mpisbaij at np 2; KSPBICG (PCApplyTranspose) and ILU(2)
              at np 1 and 2 with PETSc's iterations; the -log_view events.
Exit 0 when every check holds, 1 otherwise (each failure printed).
"""
import argparse
import os
import re
import subprocess
import sys

FAILURES = []
RESULT = r"^{tag}: np=(\d+) iterations=(\d+) reason=(\S+) pc_failed=(\S+) relres=(\S+)$"
GMRES = ["-ksp_type", "gmres", "-ksp_gmres_restart", "30"]
REF_GMRES = ["-ref_ksp_type", "gmres", "-ref_ksp_gmres_restart", "30"]  # the same for -ref


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)
    return ok


def run(args, np, opts, exe=None, expect_rc=0, env=None):
    cmd = [args.mpiexec, "-n", str(np), "--oversubscribe", "--bind-to", "none",
           exe or args.ksp] + opts
    env = {k: v for k, v in dict(os.environ, **(env or {})).items() if v is not None}
    if exe is None and args.plugin not in opts and "ASAN_OPTIONS" in env:
        # PETSc alone (the references): no ringrt code runs, and the sanitizer
        # job's leak check with slow unwinding costs seconds per PETSc process
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    out = p.stdout + p.stderr
    if expect_rc is not None and p.returncode != expect_rc:
        check(False, f"exit {p.returncode} (want {expect_rc}): {' '.join(cmd)}\n{out}")
    return out


def results(out, tag="result"):
    """The "result:" lines (the KSP under test) or the "reference:" ones (-ref)."""
    return [{"np": int(m[0]), "its": int(m[1]), "reason": m[2], "pc": m[3], "relres": float(m[4])}
            for m in re.findall(RESULT.format(tag=tag), out, re.M)]


def ringrt(args, extra=()):
    return ["-dll_append", args.plugin, "-pc_type", "ringrt"] + list(extra)


def case_iterations(args):
    N = 40
    problems = [("convdiff2d", ["-problem", "convdiff2d", "-grid", str(N), "-pe", "100"]),
                ("gk_nos6", ["-mtx", f"{args.data}/matrices/gk_nos6.mtx"])]
    for name, prob in problems:
        # one process per rank count: ringrt, then a second KSP (-ref) with
        # PETSc's sequential ILU(0) at np 1, block Jacobi + ILU(0) at np 2, 3
        ref = None
        for np in (1, 2, 3):
            other = (["-ref_pc_type", "ilu", "-ref_pc_factor_mat_ordering_type", "natural"]
                     if np == 1 else ["-ref_pc_type", "bjacobi", "-ref_sub_pc_type", "ilu"])
            out = run(args, np, prob + GMRES + ringrt(args, ["-ksp_view", "-ref"] + other)
                      + REF_GMRES)
            r, theirs = results(out), results(out, "reference")
            if np == 1:
                ref = theirs
                if not check(len(ref) == 1 and ref[0]["reason"] == "CONVERGED_RTOL",
                             f"{name}: PETSc ILU(0) np 1 converged: {ref}"):
                    break
            else:
                check(len(theirs) == 1, f"{name}: contrast, bjacobi+ilu np {np} ran: {theirs}")
            its, relres = ref[0]["its"], ref[0]["relres"]
            # the same preconditioner: the same iterations, and the true
            # residual equal up to the rounding of the Krylov dot products
            check(len(r) == 1 and r[0]["reason"] == "CONVERGED_RTOL" and r[0]["its"] == its
                  and 0.5 * relres <= r[0]["relres"] <= 2 * relres,
                  f"{name}: ringrt np {np}: {r} == PETSc ILU(0) np 1: {its} iterations, "
                  f"relres {relres}")
            # levels do not depend on np; the natural order of an N x N grid has 2N-1
            if np == 1:
                levels = [f"L {2 * N - 1}, U {2 * N - 1}"] if "-grid" in prob else \
                    view_field(out, "levels")[:1]
            check(view_field(out, "levels") == levels
                  and view_field(out, "backend") == [f"cpu, {np} rank(s), transport mpi"],
                  f"{name}: np {np}: -ksp_view levels {view_field(out, 'levels')} (want "
                  f"{levels}), {view_field(out, 'backend')}")


def case_zero_pivot(args):
    prob = ["-problem", "laplace2d", "-grid", "30"]
    # PETSc's own ILU names the rows: the independent reference
    out = run(args, 1, prob + ["-zero_row", "707", "-pc_type", "ilu",
                               "-ksp_error_if_not_converged"], expect_rc=None)
    check("Zero pivot row 707 " in out, "PETSc ILU names zero pivot row 707")
    out = run(args, 1, prob + ["-no_diagonal", "600", "-pc_type", "ilu",
                               "-ksp_error_if_not_converged"], expect_rc=None)
    check("missing diagonal entry 600" in out, "PETSc ILU names missing diagonal 600")

    # the linked program, with the plugin also through -dll_append: the
    # reasons, -ksp_converged_reason, -ksp_view and PCRingrtGetFailure per rank
    np = 3
    out = run(args, np, prob + ["-zero_row", "707", "-ksp_converged_reason", "-ksp_view"]
              + ringrt(args), exe=args.ksp_linked)
    r = results(out)
    check(len(r) == 1 and r[0]["reason"] == "DIVERGED_PC_FAILED"
          and r[0]["pc"] == "FACTOR_NUMERIC_ZEROPIVOT",
          f"zero pivot: KSP_DIVERGED_PC_FAILED, PC FACTOR_NUMERIC_ZEROPIVOT: {r}")
    check("PC failed due to FACTOR_NUMERIC_ZEROPIVOT" in out, "-ksp_converged_reason says it")
    check(re.search(r"failed: .*zero pivot at global row 707 ", out) is not None,
          "-ksp_view names global row 707")
    for rank in range(np):
        check(re.search(rf"linked failure \[{rank}\]: rank {rank}: .*zero pivot at global row "
                        r"707 ", out) is not None,
              f"PCRingrtGetFailure on rank {rank} names global row 707")
    np = 2
    out = run(args, np, prob + ["-zero_row", "707", "-ksp_error_if_not_converged"]
              + ringrt(args), expect_rc=None)
    for rank in range(np):
        check(re.search(rf"\[{rank}\]PETSC ERROR: PC ringrt: rank {rank}: .*zero pivot at "
                        r"global row 707 ", out) is not None,
              f"-ksp_error_if_not_converged: rank {rank}'s PETSc error names global row 707")
    out = run(args, 2, prob + ["-no_diagonal", "600", "-ksp_converged_reason"] + ringrt(args),
              exe=args.ksp_linked)
    r = results(out)
    check(len(r) == 1 and r[0]["reason"] == "DIVERGED_PC_FAILED"
          and r[0]["pc"] == "FACTOR_STRUCT_ZEROPIVOT",
          f"missing diagonal: FACTOR_STRUCT_ZEROPIVOT: {r}")
    check(re.search(r"linked failure \[1\]: rank 1: .*global row 600 .*no diagonal", out)
          is not None, "missing diagonal: rank 1 names global row 600")


def view_field(out, field):
    return re.findall(rf"^\s+{field}: (.*)$", out, re.M)


def case_options(args):
    N = 30
    prob = ["-problem", "laplace2d", "-grid", str(N)]
    its = set()
    for np in (1, 2):  # rcm: the same preconditioner at np 1 and 2
        out = run(args, np, prob + GMRES + ringrt(args, ["-pc_ringrt_ordering", "rcm",
                                                         "-ksp_view"]))
        r = results(out)
        check(len(r) == 1 and r[0]["reason"] == "CONVERGED_RTOL", f"rcm np {np}: converged: {r}")
        its.update(x["its"] for x in r)
        check(view_field(out, "ordering") == ["rcm"], f"rcm np {np}: -ksp_view ordering")
        # rcm numbers a grid by anti-diagonals: the natural order's 2N-1
        # levels (docs/ilu.md)
        check(view_field(out, "levels") == [f"L {2 * N - 1}, U {2 * N - 1}"],
              f"rcm np {np}: -ksp_view levels {view_field(out, 'levels')}")
        check(view_field(out, "backend") == [f"cpu, {np} rank(s), transport mpi"],
              f"rcm np {np}: -ksp_view backend {view_field(out, 'backend')}")
        check(view_field(out, "matrix") == [f"{N * N} rows, {5 * N * N - 4 * N} nonzeros"],
              f"rcm np {np}: -ksp_view matrix {view_field(out, 'matrix')}")
        # rrt_ctx_comm_stats on rank 0: messages and bytes only between ranks
        comm = [re.match(r"(\d+) messages sent \((\d+) bytes\), (\d+) received \((\d+) bytes\), "
                         r"(\d+) collectives", f) for f in view_field(out, "ringrt communication on rank 0")]
        sent = [int(x) for x in comm[0].groups()[:4]] if len(comm) == 1 and comm[0] else None
        check(sent is not None and (all(x > 0 for x in sent) if np == 2 else sent == [0] * 4),
              f"rcm np {np}: -ksp_view ringrt communication {sent}")
    check(len(its) == 1, f"rcm: the same iterations at np 1 and 2: {sorted(its)}")

    # the linked program: the getters, then PCRingrtSetOrdering after the
    # solve: the next one analyses again (a multicolored 5-point grid has 2
    # levels) and is another preconditioner
    out = run(args, 2, prob + GMRES + ringrt(args, ["-pc_ringrt_ordering", "rcm", "-ksp_view",
                                                    "-reorder_after", "multicolor"]),
              exe=args.ksp_linked)
    r = results(out)
    check(len(r) == 2 and all(x["reason"] == "CONVERGED_RTOL" for x in r)
          and r[0]["its"] in its and r[1]["its"] != r[0]["its"],
          f"rcm, then multicolor set after setup: {r}")
    check(view_field(out, "ordering") == ["rcm", "multicolor"], "-ksp_view ordering after the set")
    check(view_field(out, "levels") == [f"L {2 * N - 1}, U {2 * N - 1}", "L 2, U 2"],
          f"-ksp_view levels after the set: {view_field(out, 'levels')}")
    check(view_field(out, "analyses") == ["1, numeric factorizations: 1",
                                          "2, numeric factorizations: 2"],
          f"the set starts over: {view_field(out, 'analyses')}")
    check(f"linked: ordering=rcm levels_l={2 * N - 1} levels_u={2 * N - 1}" in out
          and "linked: ordering=multicolor levels_l=2 levels_u=2" in out,
          "getters: ordering, levels")

    # same pattern, new values: one analysis, two numeric factorizations
    out = run(args, 2, prob + GMRES + ringrt(args, ["-resolve", "-ksp_view",
                                                    "-pc_ringrt_factor_precision", "single"]))
    r = results(out)
    check(len(r) == 2 and r[0]["its"] == r[1]["its"] and r[0]["reason"] == "CONVERGED_RTOL",
          f"single precision factors, then 2 A: as many iterations: {r}")
    check(view_field(out, "analyses") == ["1, numeric factorizations: 1",
                                          "1, numeric factorizations: 2"],
          f"refactorization keeps the analysis: {view_field(out, 'analyses')}")
    check(view_field(out, "factor precision") == ["single", "single"],
          "-ksp_view factor precision")

    out = run(args, 1, prob + ["-zero_row", "707"]
              + ringrt(args, ["-pc_ringrt_boost", "1e-12,2", "-ksp_view"]))
    r = results(out)
    check(len(r) == 1 and r[0]["pc"] == "FACTOR_NOERROR", f"boost: no PC failure: {r}")
    check(view_field(out, "boost") == ["|u_ii| <= 1e-12 -> 2."], "-ksp_view boost")
    # the backend option: the emulated GPU code path, the same preconditioner
    small = ["-problem", "laplace2d", "-grid", "12"] + GMRES
    out = run(args, 1, small + ringrt(args, ["-pc_ringrt_backend", "emu", "-ksp_view", "-ref",
                                              "-ref_pc_type", "ringrt",
                                              "-ref_pc_ringrt_backend", "cpu"])
              + REF_GMRES)
    r, cpu = results(out), results(out, "reference")
    check(len(r) == 1 and len(cpu) == 1 and r[0]["its"] == cpu[0]["its"],
          f"-pc_ringrt_backend emu: as many iterations as cpu: {r} {cpu}")
    check(view_field(out, "backend") == ["emu, 1 rank(s), transport mpi"],
          f"-ksp_view backend emu: {view_field(out, 'backend')}")
    out = run(args, 1, small + ["-mat_type", "dense"] + ringrt(args), expect_rc=None)
    check(re.search(r"PC ringrt: the preconditioning matrix must be AIJ .* or baij/sbaij .*got "
                    r"seqdense", out) is not None, "a matrix type ringrt cannot read is an error "
          "naming it")
    out = run(args, 1, prob + ringrt(args, ["-pc_ringrt_ordering", "bogus", "-help"]),
              expect_rc=None)
    check(re.search(r'unknown ordering "bogus" \(ringrt has: natural, rcm, multicolor', out)
          is not None, "a bad ordering is an error listing ringrt's names")
    check(re.search(r"-pc_ringrt_ordering <now bogus.*natural, rcm, multicolor", out)
          is not None, "-help lists the orderings")


def case_factor_options(args):
    # PETSc's factor options against PETSc's ILU, matrix types, refusals (np 1, petsc4py)
    out = run(args, 1, [args.script, args.plugin], exe=args.python)
    check(re.search(r"^0 failure\(s\)$", out, re.M) is not None,
          "petsc4py_factor_options.py: every option as PETSc's own ILU\n" + out)


def case_factor_options_c(args):
    prob = ["-problem", "laplace2d", "-grid", "30"] + GMRES
    # the shifts in a PETSc program (and under the sanitizer job, which runs no
    # python): the iterations and residual of PETSc's ILU with the same shift
    zero = prob + ["-zero_row", "707"]
    for shift, np in (("nonzero", 2), ("positive_definite", 1)):
        # np 1: PETSc's ILU in the same process (-ref), np 2: its own process
        same = ["-ref", "-ref_pc_type", "ilu", "-ref_pc_factor_shift_type", shift] + REF_GMRES \
            if np == 1 else []
        out = run(args, np, zero + ringrt(args, ["-pc_factor_shift_type", shift, "-ksp_view"])
                  + same)
        r = results(out)
        ref = results(out, "reference") if np == 1 else results(
            run(args, 1, zero + ["-pc_type", "ilu", "-pc_factor_shift_type", shift]))
        check(len(r) == 1 and ref and r[0]["its"] == ref[0]["its"]
              and r[0]["reason"] == ref[0]["reason"],
              f"zero row, -pc_factor_shift_type {shift} np {np}: {r} vs PETSc ILU np 1 {ref}")
        check(re.search(rf"shift: {shift.upper()}, .*; last factorization: diagonal shift", out)
              is not None, f"-ksp_view names the {shift} shift")
    # the refusals' messages, on every rank
    for opt, want in ((["-pc_factor_fill", "2"], r"PC ringrt: option -pc_factor_fill is not supported by "
                       r"ringrt \(it honours -pc_factor_levels"),
                      (["-pc_factor_mat_ordering_type", "nd"], r"PC ringrt: -pc_factor_mat_ordering_type nd "
                       r"is not supported: ringrt has natural and rcm")):
        # every rank raises it (mpirun may end the job before a second rank prints)
        out = run(args, 2, prob + ringrt(args, opt), expect_rc=None)
        check(re.search(rf"\[\d\]PETSC ERROR: {want}", out) is not None,
              f"{' '.join(opt)}: the error says so")
    # -help: each option's form and value in force
    out = run(args, 1, prob + ringrt(args, ["-help"]))
    for want in (r"-pc_ringrt_boost <now off : formerly off>: TOL\[,VALUE\]",
                 r"-pc_ringrt_dd_blocks <now 0 : formerly 0>", r"-pc_ringrt_levels <now 0",
                 r"-pc_factor_levels <now 0", r"-pc_factor_shift_type <now NONE : formerly NONE>",
                 r"-pc_factor_shift_amount <2\.22045e-14 : 2\.22045e-14>",
                 r"-pc_factor_zeropivot <2\.22045e-14 : 2\.22045e-14>", r"-pc_factor_mat_ordering_type <now natural"):
        check(re.search(want, out) is not None, f"-help shows {want}")
    # dd_blocks: the same preconditioner at np 1 and 2 (the same iterations and residual)
    res = []
    for np in (1, 2):
        out = run(args, np, prob + ringrt(args, ["-pc_ringrt_ordering", "dd",
                                                 "-pc_ringrt_dd_blocks", "3", "-ksp_view"]))
        res += results(out)
        check(view_field(out, "ordering") == ["dd, 3 subdomains"],
              f"dd_blocks np {np}: -ksp_view {view_field(out, 'ordering')}")
    check(len(res) == 2 and res[0]["its"] == res[1]["its"] and res[0]["reason"] == "CONVERGED_RTOL",
          f"-pc_ringrt_dd_blocks 3: the same iterations at np 1 and 2: {res}")
    # AIJ subtypes and converted block types at np 2: PETSc's ILU iterations (np 1)
    ref = results(run(args, 1, prob + ["-pc_type", "ilu"]))
    for kind in ("mpisbaij",):  # np 1: every type (petsc4py_factor_options.py)
        r = results(run(args, 2, prob + ["-mat_type", kind, "-mat_ignore_lower_triangular"]
                        + ringrt(args)))
        check(len(r) == 1 and ref and r[0]["its"] == ref[0]["its"],
              f"-mat_type {kind} at np 2: {r} vs PETSc ILU np 1 {ref}")
    # KSPBICG needs PCApplyTranspose: the iterations of PETSc's ILU(0) BiCG (np 1) at
    # np 1 and 2; ILU(2) with GMRES at np 2 as PETSc's ILU(2) at np 1; -log_view of the
    # BiCG solve at np 2 (with -resolve: two factorizations)
    cd = ["-problem", "convdiff2d", "-grid", "30", "-pe", "100"]
    logged = ""
    for ksp, extra, nps in ((["-ksp_type", "bicg"], [], (1, 2)),
                            (GMRES, ["-pc_factor_levels", "2"], (2,))):
        ref = results(run(args, 1, cd + ksp + ["-pc_type", "ilu"] + extra))
        for np in nps:
            log = ["-log_view", "-resolve"] if np == 2 and not extra else []
            out = run(args, np, cd + ksp + ringrt(args, extra + log))
            logged = out if log else logged
            r = results(out)[:1]
            check(len(r) == 1 and ref and r[0]["reason"] == "CONVERGED_RTOL"
                  and r[0]["its"] == ref[0]["its"],
                  f"{' '.join(ksp + extra)} np {np}: {r} vs PETSc ILU np 1 {ref}")
    # -log_view: ringrt's events with their counts and flops
    its = sum(x["its"] for x in results(logged))
    for event, count in (("RingrtAnalysis", 1), ("RingrtFactor", 2), ("RingrtApply", None),
                         ("RingrtApplyTrans", None)):
        line = re.search(rf"^{event}\s.*$", logged, re.M)
        # Count, ratio, Time, ratio, Flop, ratio, Mess, AvgLen, Reduct, ...
        m = [None] + line.group(0).split()[1:] if line else None
        check(m is not None and (count is None or int(m[1]) == count)
              and (event == "RingrtAnalysis" or float(m[5]) > 0),
              f"-log_view: {event} (count {count or '~ iterations ' + str(its)}, flops > 0): "
              f"{line and line.group(0)}")
        if event.startswith("RingrtApply") and m:
            check(int(m[1]) >= its, f"-log_view: {event} count {m[1]} >= {its} iterations")
        if event == "RingrtAnalysis" and m:
            check(float(m[9]) > 0, f"-log_view: ringrt's reductions counted in RingrtAnalysis: "
                  f"{m[9]}")
        # ringrt's messages and bytes (rrt_ctx_comm_stats) in PETSc's columns: at np 2
        # the analysis, each factorization and each apply exchange rows
        if m:
            check(float(m[7]) > 0 and float(m[8]) > 0,
                  f"-log_view: ringrt's messages counted in {event} (Mess {m[7]}, AvgLen {m[8]})")
    # the summary's totals include them
    total = re.search(r"^MPI Msg Count:\s+(\S+)", logged, re.M)
    check(total is not None and float(total.group(1)) > 0,
          f"-log_view MPI Msg Count: {total and total.group(0)}")


GUEST = r"^guest: rank=(\d+) before=(\S*) (\d+) after=(\S*) (\d+)$"


def guest_states(out):
    return [{"rank": int(m[0]), "cpus": (m[1], m[3]), "threads": (int(m[2]), int(m[4]))}
            for m in re.findall(GUEST, out, re.M)]


def case_guest(args):
    prob = ["-problem", "laplace2d", "-grid", "30", "-guest_report"] + GMRES
    for what, extra, env in (("default", [], {"RINGRT_BIND": None}), ("RINGRT_BIND=0", [], {"RINGRT_BIND": "0"}),
                             ("-pc_ringrt_bind 0 over RINGRT_BIND=1",
                              ["-pc_ringrt_bind", "0"], {"RINGRT_BIND": "1"})):
        out = run(args, 2, prob + ringrt(args, extra + ["-ksp_view"]), env=env)
        states = guest_states(out)
        check(len(states) == 2 and all(s["cpus"][0] == s["cpus"][1] and
                                       s["threads"][0] == s["threads"][1] for s in states),
              f"{what}: affinity and threads unchanged by the solve: {states}")
        check(re.search(r"^\s*binding: none \(the program's\)", out, re.M) is not None,
              f"{what}: -ksp_view says ringrt left the binding alone")
    for what, extra, env in (("-pc_ringrt_bind", ["-pc_ringrt_bind"], {"RINGRT_BIND": None}),
                             ("RINGRT_BIND=1", [], {"RINGRT_BIND": "1"})):
        out = run(args, 2, prob + ringrt(args, extra + ["-ksp_view"]), env=env)
        states = guest_states(out)
        view = re.search(r"^\s*binding: (\S+), (\d+) OpenMP thread", out, re.M)
        r0 = [s for s in states if s["rank"] == 0]
        ncpu = len(r0[0]["cpus"][0].split(",")) if r0 else 0
        check(view is not None and r0 and int(view[2]) == r0[0]["threads"][1],
              f"{what}: -ksp_view names the binding and rank 0 has its thread count: "
              f"{view and view.group(0)} {r0}")
        if ncpu >= 2:  # two ranks share the cores: each gets its own part
            check(r0 and r0[0]["cpus"][1] != r0[0]["cpus"][0],
                  f"{what}: ringrt bound rank 0 when asked: {r0}")
    out = run(args, 1, prob + ringrt(args, ["-help"]), env={"RINGRT_BIND": "1"})
    check(re.search(r"-pc_ringrt_bind: <TRUE", out) is not None,
          "-help shows RINGRT_BIND=1 as the value in force")
    out = run(args, 1, prob + ringrt(args, ["-help"]), env={"RINGRT_BIND": None})
    check(re.search(r"-pc_ringrt_bind: <FALSE", out) is not None,
          "-help shows no binding by default")


def case_petsc4py(args):
    ref = results(run(args, 1, ["-problem", "laplace2d", "-grid", "30", "-pc_type", "ilu"]))
    out = run(args, 2, [args.script, args.plugin], exe=args.python)
    m = re.search(r"petsc4py: pc=ringrt iterations=(\d+) reason=(\S+)", out)
    check(m is not None and ref and int(m[1]) == ref[0]["its"] and m[2] == "2",
          f"petsc4py at np 2: {m and m.group(0)} vs PETSc ILU np 1 {ref}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["iterations", "zero_pivot", "options", "guest", "petsc4py",
                                     "factor_options", "factor_options_c"])
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--ksp", required=True)
    ap.add_argument("--ksp-linked", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--python")
    ap.add_argument("--script")
    args = ap.parse_args()
    globals()["case_" + args.case](args)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())

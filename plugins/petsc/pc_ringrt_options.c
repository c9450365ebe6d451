/* The ringrt PC's options: the options database (PCSetFromOptions), the
 * PCRingrtSet.../Get... functions (composed on the PC, so they do nothing on a
 * PC of another type, as PETSc's own), and PCView. */
#include <stdlib.h>
#include <string.h>

#include "pc_ringrt_impl.h"

static const char *const precisions[] = {"double", "single"};

/* ringrt's ordering names ("natural, rcm, multicolor"), asked of the API:
 * an ordering is listed while its name parses back to it, so one that
 * ringrt adds appears here without a change to the plugin. */
static PetscErrorCode ordering_names(char *buf, size_t len) {
  PetscFunctionBegin;
  buf[0] = '\0';
  for (int o = 0; o < 64; o++) {
    rrt_ilu_ordering back;
    const char *name = rrt_ilu_ordering_name((rrt_ilu_ordering)o);
    if (!name || rrt_ilu_ordering_parse(name, &back) != RRT_SUCCESS || (int)back != o) break;
    if (o) PetscCall(PetscStrlcat(buf, ", ", len));
    PetscCall(PetscStrlcat(buf, name, len));
  }
  PetscFunctionReturn(0);
}

/* An option changed after PCSetUp: the factors (and for the backend, the
 * context) no longer match it; the next PCSetUp starts over. */
static PetscErrorCode changed(PC pc, PetscBool context) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  if (d->A || d->ctx) PetscCall(PCRingrtDrop(pc, context));
  pc->setupcalled = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtSetOrdering_Ringrt(PC pc, const char name[]) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_ilu_ordering o;
  char names[256];

  PetscFunctionBegin;
  if (rrt_ilu_ordering_parse(name, &o) != RRT_SUCCESS) {
    PetscCall(ordering_names(names, sizeof(names)));
    SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_UNKNOWN_TYPE,
            "PC ringrt: unknown ordering \"%s\" (ringrt has: %s)", name, names);
  }
  if (o != d->ordering) {
    d->ordering = o;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetOrdering_Ringrt(PC pc, const char *name[]) {
  PetscFunctionBegin;
  *name = rrt_ilu_ordering_name(((PC_Ringrt *)pc->data)->ordering);
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtSetBoost_Ringrt(PC pc, PetscBool on, PetscReal tol, PetscReal value) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  PetscCheck(!on || (tol >= 0 && PetscIsNormalReal(value)), PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE,
             "PC ringrt: the boost needs tol >= 0 and a normal, nonzero value, got %g, %g",
             (double)tol, (double)value);
  if (on != d->boost || (on && (tol != d->boost_tol || value != d->boost_value))) {
    d->boost = on;
    d->boost_tol = tol;
    d->boost_value = value;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetBoost_Ringrt(PC pc, PetscBool *on, PetscReal *tol,
                                              PetscReal *value) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  if (on) *on = d->boost;
  if (tol) *tol = d->boost_tol;
  if (value) *value = d->boost_value;
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtSetFactorPrecision_Ringrt(PC pc, const char precision[]) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  PetscBool single, dbl;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(precision, precisions[1], &single));
  PetscCall(PetscStrcmp(precision, precisions[0], &dbl));
  PetscCheck(single || dbl, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_UNKNOWN_TYPE,
             "PC ringrt: factor precision must be double or single, got \"%s\"", precision);
  if (single != d->single) {
    d->single = single;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetFactorPrecision_Ringrt(PC pc, const char *precision[]) {
  PetscFunctionBegin;
  *precision = precisions[((PC_Ringrt *)pc->data)->single ? 1 : 0];
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtSetBackend_Ringrt(PC pc, const char name[]) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  rrt_backend b;

  PetscFunctionBegin;
  PetscCheck(rrt_backend_parse(name, &b) == RRT_SUCCESS, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_UNKNOWN_TYPE,
             "PC ringrt: unknown backend \"%s\" (auto, cpu, cuda or emu)", name);
  if (b != d->backend) {
    d->backend = b;
    PetscCall(changed(pc, PETSC_TRUE));
  }
  PetscFunctionReturn(0);
}

/* The backend the context runs (after PCSetUp), else the one asked for. */
static PetscErrorCode PCRingrtGetBackend_Ringrt(PC pc, const char *name[]) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  *name = rrt_backend_name(d->ctx ? rrt_ctx_backend(d->ctx) : d->backend);
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetLevels_Ringrt(PC pc, PetscInt *levels_l, PetscInt *levels_u) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  int l = 0, u = 0;

  PetscFunctionBegin;
  if (d->ilu) rrt_ilu0_levels(d->ilu, &l, &u);
  if (levels_l) *levels_l = l;
  if (levels_u) *levels_u = u;
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetFailure_Ringrt(PC pc, const char *message[]) {
  PetscFunctionBegin;
  *message = ((PC_Ringrt *)pc->data)->failure;
  PetscFunctionReturn(0);
}

/* ---- the public functions: dispatch through the composed methods ---- */

PetscErrorCode PCRingrtSetOrdering(PC pc, const char ordering[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscTryMethod(pc, "PCRingrtSetOrdering_C", (PC, const char[]), (pc, ordering));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetOrdering(PC pc, const char *ordering[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetOrdering_C", (PC, const char *[]), (pc, ordering));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtSetBoost(PC pc, PetscBool on, PetscReal tol, PetscReal value) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscTryMethod(pc, "PCRingrtSetBoost_C", (PC, PetscBool, PetscReal, PetscReal),
                 (pc, on, tol, value));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetBoost(PC pc, PetscBool *on, PetscReal *tol, PetscReal *value) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetBoost_C", (PC, PetscBool *, PetscReal *, PetscReal *),
                 (pc, on, tol, value));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtSetFactorPrecision(PC pc, const char precision[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscTryMethod(pc, "PCRingrtSetFactorPrecision_C", (PC, const char[]), (pc, precision));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetFactorPrecision(PC pc, const char *precision[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetFactorPrecision_C", (PC, const char *[]), (pc, precision));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtSetBackend(PC pc, const char backend[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscTryMethod(pc, "PCRingrtSetBackend_C", (PC, const char[]), (pc, backend));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetBackend(PC pc, const char *backend[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetBackend_C", (PC, const char *[]), (pc, backend));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetLevels(PC pc, PetscInt *levels_l, PetscInt *levels_u) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetLevels_C", (PC, PetscInt *, PetscInt *), (pc, levels_l, levels_u));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetFailure(PC pc, const char *message[]) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetFailure_C", (PC, const char *[]), (pc, message));
  PetscFunctionReturn(0);
}

#define RINGRT_METHODS(X)                                                                          \
  X(SetOrdering)                                                                                   \
  X(GetOrdering)                                                                                   \
  X(SetBoost) X(GetBoost) X(SetFactorPrecision) X(GetFactorPrecision) X(SetBackend) X(GetBackend)  \
      X(GetLevels) X(GetFailure)

PetscErrorCode PCRingrtComposeSetters(PC pc) {
  PetscFunctionBegin;
#define COMPOSE(m)                                                                                 \
  PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCRingrt" #m "_C", PCRingrt##m##_Ringrt));
  RINGRT_METHODS(COMPOSE)
#undef COMPOSE
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtClearSetters(PC pc) {
  PetscFunctionBegin;
#define CLEAR(m) PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCRingrt" #m "_C", NULL));
  RINGRT_METHODS(CLEAR)
#undef CLEAR
  PetscFunctionReturn(0);
}

/* ---- options database ---- */

/* The binding in force: -pc_ringrt_bind or PCRingrtSet..., else RINGRT_BIND
 * as ringrt reads it, else none (a library leaves the program's affinity and
 * thread counts alone unless asked). */
static PetscBool bind_in_force(const PC_Ringrt *d) {
  if (d->bind >= 0) return (PetscBool)(d->bind == 1);
  const char *env = getenv("RINGRT_BIND");
  return (PetscBool)(env && strcmp(env, "1") == 0);
}

PetscErrorCode PCSetFromOptions_Ringrt(PC pc, PetscOptionItems *PetscOptionsObject) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  char names[256], help[320], ordering[64], backend[16];
  PetscReal boost[2] = {d->boost_tol, d->boost_value};
  PetscInt nboost = 2, precision = d->single ? 1 : 0;
  PetscBool set, bind = bind_in_force(d);

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "ringrt ILU(0) options");
  PetscCall(ordering_names(names, sizeof(names)));
  PetscCall(PetscSNPrintf(help, sizeof(help), "Elimination order: %s", names));
  PetscCall(PetscStrncpy(ordering, rrt_ilu_ordering_name(d->ordering), sizeof(ordering)));
  PetscCall(PetscOptionsString("-pc_ringrt_ordering", help, "PCRingrtSetOrdering", ordering,
                               ordering, sizeof(ordering), &set));
  if (set) PetscCall(PCRingrtSetOrdering(pc, ordering));
  PetscCall(PetscOptionsRealArray("-pc_ringrt_boost",
                                  "Pivots with |u_ii| <= tol become value (default 1): tol[,value]",
                                  "PCRingrtSetBoost", boost, &nboost, &set));
  if (set) {
    PetscCheck(nboost <= 2, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG,
               "PC ringrt: -pc_ringrt_boost takes tol[,value]");
    PetscCall(
        PCRingrtSetBoost(pc, PETSC_TRUE, nboost > 0 ? boost[0] : 0.0, nboost > 1 ? boost[1] : 1.0));
  }
  PetscCall(PetscOptionsEList("-pc_ringrt_factor_precision",
                              "Precision of the factors the apply reads (the solve stays double)",
                              "PCRingrtSetFactorPrecision", precisions, 2, precisions[precision],
                              &precision, &set));
  if (set) PetscCall(PCRingrtSetFactorPrecision(pc, precisions[precision]));
  PetscCall(PetscStrncpy(backend, rrt_backend_name(d->backend), sizeof(backend)));
  PetscCall(PetscOptionsString("-pc_ringrt_backend",
                               "ringrt backend: auto, cpu, cuda, emu (default: RINGRT_BACKEND)",
                               "PCRingrtSetBackend", backend, backend, sizeof(backend), &set));
  if (set) PetscCall(PCRingrtSetBackend(pc, backend));
  PetscCall(PetscOptionsBool("-pc_ringrt_bind",
                             "Let ringrt bind the rank's cores and set the OpenMP and BLAS thread "
                             "counts (default: RINGRT_BIND, else no)",
                             "", bind, &bind, &set));
  if (set && (int)bind != d->bind) {
    d->bind = bind;
    PetscCall(changed(pc, PETSC_TRUE));
  }
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

/* ---- PCView ---- */

PetscErrorCode PCView_Ringrt(PC pc, PetscViewer viewer) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  PetscBool ascii;
  char boost[96] = "off";
  int levels_l, levels_u;
  rrt_ctx_info info;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  if (d->boost)
    PetscCall(PetscSNPrintf(boost, sizeof(boost), "|u_ii| <= %g -> %g", (double)d->boost_tol,
                            (double)d->boost_value));
  PetscCall(PetscViewerASCIIPrintf(viewer, "ringrt ILU(0): the global ILU(0), the same for any "
                                           "number of ranks (not block Jacobi)\n"));
  PetscCall(PetscViewerASCIIPrintf(viewer, "ordering: %s\n", rrt_ilu_ordering_name(d->ordering)));
  PetscCall(PetscViewerASCIIPrintf(viewer, "boost: %s\n", boost));
  PetscCall(
      PetscViewerASCIIPrintf(viewer, "factor precision: %s\n", precisions[d->single ? 1 : 0]));
  if (d->ctx && rrt_ctx_get_info(d->ctx, &info) == RRT_SUCCESS)
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "binding: %s, %d OpenMP thread(s) on rank 0\n",
        strcmp(info.cores, "unbound") == 0 ? "none (the program's)" : info.cores, info.threads));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "binding: %s\n",
                                     bind_in_force(d) ? "bind the rank's cores (not set up)"
                                                      : "none (the program's)"));
  if (!d->ctx || !d->ilu) {
    PetscCall(
        PetscViewerASCIIPrintf(viewer, "backend: %s (not set up)\n", rrt_backend_name(d->backend)));
  } else {
    rrt_ilu0_levels(d->ilu, &levels_l, &levels_u);
    PetscCall(PetscViewerASCIIPrintf(viewer, "backend: %s, %d rank(s), transport %s\n",
                                     rrt_backend_name(rrt_ctx_backend(d->ctx)),
                                     rrt_ctx_size(d->ctx),
                                     rrt_transport_name(rrt_ctx_transport(d->ctx))));
    PetscCall(PetscViewerASCIIPrintf(viewer, "levels: L %d, U %d\n", levels_l, levels_u));
    PetscCall(PetscViewerASCIIPrintf(viewer, "matrix: %" PRId64 " rows, %" PRId64 " nonzeros\n",
                                     rrt_sparse_n(d->A), rrt_sparse_global_nnz(d->A)));
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "analyses: %" PetscInt_FMT ", numeric factorizations: %" PetscInt_FMT "\n",
        d->analyses, d->factorizations));
  }
  if (d->failed) PetscCall(PetscViewerASCIIPrintf(viewer, "failed: %s\n", d->failure));
  PetscFunctionReturn(0);
}

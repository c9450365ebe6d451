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

static PetscErrorCode PCRingrtSetDDBlocks_Ringrt(PC pc, PetscInt blocks) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  PetscCheck(blocks >= 0 && blocks <= INT32_MAX, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE,
             "PC ringrt: dd_blocks must be >= 0 (0: one subdomain per rank), got %" PetscInt_FMT,
             blocks);
  if (blocks != d->dd_blocks) {
    d->dd_blocks = blocks;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCRingrtGetDDBlocks_Ringrt(PC pc, PetscInt *blocks) {
  PetscFunctionBegin;
  *blocks = ((PC_Ringrt *)pc->data)->dd_blocks;
  PetscFunctionReturn(0);
}

/* PCFactorSetLevels and -pc_factor_levels / -pc_ringrt_levels: ILU(k). */
static PetscErrorCode PCFactorSetLevels_Ringrt(PC pc, PetscInt levels) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  PetscCheck(levels >= 0 && levels <= INT32_MAX, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE, "PC ringrt: levels of fill must be >= 0, got %" PetscInt_FMT,
             levels);
  if (levels != d->levels) {
    d->levels = levels;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCFactorGetLevels_Ringrt(PC pc, PetscInt *levels) {
  PetscFunctionBegin;
  *levels = ((PC_Ringrt *)pc->data)->levels;
  PetscFunctionReturn(0);
}

/* PCFactorSetShiftType: every type PETSc's ILU has on AIJ, with PETSc's
 * meaning (pc_ringrt_shift.c; INBLOCKS inside ringrt's factor, pc_ringrt.c). */
static PetscErrorCode PCFactorSetShiftType_Ringrt(PC pc, MatFactorShiftType type) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  PetscCheck(type >= MAT_SHIFT_NONE && type <= MAT_SHIFT_INBLOCKS, PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE,
             "PC ringrt: unknown shift type %d (NONE, NONZERO, POSITIVE_DEFINITE, INBLOCKS)",
             (int)type);
  if (type != d->shift_type) {
    d->shift_type = type;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

/* PETSC_DECIDE / PETSC_DEFAULT: PETSc's default, 100 machine epsilon. */
static PetscErrorCode PCFactorSetShiftAmount_Ringrt(PC pc, PetscReal amount) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  if (amount == (PetscReal)PETSC_DECIDE || amount == (PetscReal)PETSC_DEFAULT)
    amount = 100.0 * PETSC_MACHINE_EPSILON;
  PetscCheck(amount >= 0 && !PetscIsInfOrNanReal(amount), PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE,
             "PC ringrt: the shift amount must be finite and >= 0, got %g", (double)amount);
  if (amount != d->shift_amount) {
    d->shift_amount = amount;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PCFactorSetZeroPivot_Ringrt(PC pc, PetscReal zero) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;

  PetscFunctionBegin;
  if (zero == (PetscReal)PETSC_DECIDE || zero == (PetscReal)PETSC_DEFAULT)
    zero = 100.0 * PETSC_MACHINE_EPSILON;
  PetscCheck(zero >= 0 && !PetscIsInfOrNanReal(zero), PetscObjectComm((PetscObject)pc),
             PETSC_ERR_ARG_OUTOFRANGE,
             "PC ringrt: the zero pivot tolerance must be finite and "
             ">= 0, got %g",
             (double)zero);
  if (zero != d->zeropivot) {
    d->zeropivot = zero;
    PetscCall(changed(pc, PETSC_FALSE));
  }
  PetscFunctionReturn(0);
}

/* PCFactorSetMatOrderingType: natural and rcm (PETSc's names ringrt has;
 * the permutation is ringrt's RCM, see docs/ilu.md). */
static PetscErrorCode PCFactorSetMatOrderingType_Ringrt(PC pc, MatOrderingType type) {
  PetscBool natural, rcm;
  char names[256];

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(type, MATORDERINGNATURAL, &natural));
  PetscCall(PetscStrcmp(type, MATORDERINGRCM, &rcm));
  if (!natural && !rcm) {
    PetscCall(ordering_names(names, sizeof(names)));
    SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_SUP,
            "PC ringrt: -pc_factor_mat_ordering_type %s is not supported: ringrt has natural and "
            "rcm there (and -pc_ringrt_ordering %s)",
            type, names);
  }
  PetscCall(PCRingrtSetOrdering(pc, type));
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

PetscErrorCode PCRingrtSetDDBlocks(PC pc, PetscInt blocks) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscValidLogicalCollectiveInt(pc, blocks, 2);
  PetscTryMethod(pc, "PCRingrtSetDDBlocks_C", (PC, PetscInt), (pc, blocks));
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtGetDDBlocks(PC pc, PetscInt *blocks) {
  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscUseMethod(pc, "PCRingrtGetDDBlocks_C", (PC, PetscInt *), (pc, blocks));
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
  X(SetBoost)                                                                                      \
  X(GetBoost)                                                                                      \
  X(SetFactorPrecision)                                                                            \
  X(GetFactorPrecision)                                                                            \
  X(SetBackend) X(GetBackend) X(GetLevels) X(GetFailure) X(SetDDBlocks) X(GetDDBlocks)

/* PETSc's own PCFactorSet... (PETSc dispatches them by these names). */
#define FACTOR_METHODS(X)                                                                          \
  X(SetLevels) X(GetLevels) X(SetShiftType) X(SetShiftAmount) X(SetZeroPivot) X(SetMatOrderingType)

PetscErrorCode PCRingrtComposeSetters(PC pc) {
  PetscFunctionBegin;
#define COMPOSE(m)                                                                                 \
  PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCRingrt" #m "_C", PCRingrt##m##_Ringrt));
  RINGRT_METHODS(COMPOSE)
#undef COMPOSE
#define COMPOSE(m)                                                                                 \
  PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCFactor" #m "_C", PCFactor##m##_Ringrt));
  FACTOR_METHODS(COMPOSE)
#undef COMPOSE
  PetscFunctionReturn(0);
}

PetscErrorCode PCRingrtClearSetters(PC pc) {
  PetscFunctionBegin;
#define CLEAR(m) PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCRingrt" #m "_C", NULL));
  RINGRT_METHODS(CLEAR)
#undef CLEAR
#define CLEAR(m) PetscCall(PetscObjectComposeFunction((PetscObject)pc, "PCFactor" #m "_C", NULL));
  FACTOR_METHODS(CLEAR)
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

/* "TOL" or "TOL,VALUE" (VALUE default 1). */
static PetscErrorCode parse_boost(PC pc, const char *text, PetscReal *tol, PetscReal *value) {
  char *end;

  PetscFunctionBegin;
  *tol = (PetscReal)strtod(text, &end);
  *value = 1.0;
  if (end != text && *end == ',') {
    const char *v = end + 1;
    *value = (PetscReal)strtod(v, &end);
    if (end == v) end = (char *)v - 1; /* nothing after the comma: bad */
  }
  PetscCheck(end != text && *end == '\0', PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG,
             "PC ringrt: -pc_ringrt_boost takes TOL[,VALUE] (numbers), got \"%s\"", text);
  PetscFunctionReturn(0);
}

/* ringrt's own options (-pc_ringrt_*). */
static PetscErrorCode ringrt_options(PC pc, PetscOptionItems *PetscOptionsObject) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  char names[256], help[320], ordering[64], backend[16], boost[96] = "off";
  PetscInt precision = d->single ? 1 : 0, ival;
  PetscBool set, bind = bind_in_force(d);

  PetscFunctionBegin;
  PetscCall(ordering_names(names, sizeof(names)));
  PetscCall(PetscSNPrintf(help, sizeof(help), "Elimination order: %s", names));
  PetscCall(PetscStrncpy(ordering, rrt_ilu_ordering_name(d->ordering), sizeof(ordering)));
  PetscCall(PetscOptionsString("-pc_ringrt_ordering", help, "PCRingrtSetOrdering", ordering,
                               ordering, sizeof(ordering), &set));
  if (set) PetscCall(PCRingrtSetOrdering(pc, ordering));
  PetscCall(PetscOptionsInt("-pc_ringrt_dd_blocks",
                            "Subdomains of the dd orderings: 0 = one per rank, K > 0 = the same "
                            "K-way split on any rank count",
                            "PCRingrtSetDDBlocks", d->dd_blocks, &ival, &set));
  if (set) PetscCall(PCRingrtSetDDBlocks(pc, ival));
  PetscCall(PetscOptionsInt("-pc_ringrt_levels", "Levels of fill, ILU(k) (as -pc_factor_levels)",
                            "PCFactorSetLevels", d->levels, &ival, &set));
  if (set) PetscCall(PCFactorSetLevels(pc, ival));
  if (d->boost)
    PetscCall(
        PetscSNPrintf(boost, sizeof(boost), "%g,%g", (double)d->boost_tol, (double)d->boost_value));
  PetscCall(PetscOptionsString("-pc_ringrt_boost",
                               "TOL[,VALUE]: pivots with |u_ii| <= TOL become VALUE (default 1); "
                               "off by default",
                               "PCRingrtSetBoost", boost, boost, sizeof(boost), &set));
  if (set) {
    PetscReal tol, value;
    PetscCall(parse_boost(pc, boost, &tol, &value));
    PetscCall(PCRingrtSetBoost(pc, PETSC_TRUE, tol, value));
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
  PetscFunctionReturn(0);
}

/* PETSc's factor options ringrt honours, with PETSc's meaning (-pc_factor_*). */
static PetscErrorCode factor_options(PC pc, PetscOptionItems *PetscOptionsObject) {
  PC_Ringrt *d = (PC_Ringrt *)pc->data;
  char ordering[64];
  PetscInt ival;
  PetscReal rval;
  PetscEnum shift;
  PetscBool set;

  PetscFunctionBegin;
  PetscCall(PetscOptionsInt("-pc_factor_levels", "Levels of fill, ILU(k)", "PCFactorSetLevels",
                            d->levels, &ival, &set));
  if (set) PetscCall(PCFactorSetLevels(pc, ival));
  PetscCall(PetscOptionsEnum(
      "-pc_factor_shift_type", "Shift on zero pivots (NONE, NONZERO, POSITIVE_DEFINITE, INBLOCKS)",
      "PCFactorSetShiftType", MatFactorShiftTypes, (PetscEnum)d->shift_type, &shift, &set));
  if (set) PetscCall(PCFactorSetShiftType(pc, (MatFactorShiftType)shift));
  PetscCall(PetscOptionsReal("-pc_factor_shift_amount",
                             "Shift added to the diagonal (NONZERO) or a small pivot (INBLOCKS)",
                             "PCFactorSetShiftAmount", d->shift_amount, &rval, &set));
  if (set) PetscCall(PCFactorSetShiftAmount(pc, rval));
  PetscCall(PetscOptionsReal("-pc_factor_zeropivot", "Pivot is considered zero if less than",
                             "PCFactorSetZeroPivot", d->zeropivot, &rval, &set));
  if (set) PetscCall(PCFactorSetZeroPivot(pc, rval));
  PetscCall(PetscStrncpy(ordering, rrt_ilu_ordering_name(d->ordering), sizeof(ordering)));
  PetscCall(PetscOptionsString(
      "-pc_factor_mat_ordering_type", "Reordering: natural or rcm (ringrt's RCM)",
      "PCFactorSetMatOrderingType", ordering, ordering, sizeof(ordering), &set));
  if (set) PetscCall(PCFactorSetMatOrderingType(pc, ordering));
  PetscFunctionReturn(0);
}

static const char *const honoured[] = {
    "pc_ringrt_ordering",     "pc_ringrt_dd_blocks",        "pc_ringrt_levels",
    "pc_ringrt_boost",        "pc_ringrt_factor_precision", "pc_ringrt_backend",
    "pc_ringrt_bind",         "pc_factor_levels",           "pc_factor_shift_type",
    "pc_factor_shift_amount", "pc_factor_zeropivot",        "pc_factor_mat_ordering_type"};

/* No -pc_factor_* or -pc_ringrt_* option of this PC's prefix goes
 * unnoticed: one ringrt does not honour is an error naming it. */
static PetscErrorCode refuse_unknown(PC pc) {
  const char *prefix = ((PetscObject)pc)->prefix ? ((PetscObject)pc)->prefix : "";
  size_t plen = strlen(prefix);
  PetscInt n;
  char **names, **values;

  PetscFunctionBegin;
  PetscCall(PetscOptionsLeftGet(((PetscObject)pc)->options, &n, &names, &values));
  for (PetscInt i = 0; i < n; i++) {
    const char *name = names[i][0] == '-' ? names[i] + 1 : names[i], *rest = name + plen;
    PetscBool known = PETSC_FALSE;
    if (strncmp(name, prefix, plen) != 0) continue;
    if (strncmp(rest, "pc_factor_", 10) != 0 && strncmp(rest, "pc_ringrt_", 10) != 0) continue;
    for (size_t k = 0; k < sizeof(honoured) / sizeof(honoured[0]); k++)
      if (strcmp(rest, honoured[k]) == 0) known = PETSC_TRUE;
    if (known) continue; /* set, read by another object first: harmless */
    PetscCall(PetscOptionsLeftRestore(((PetscObject)pc)->options, &n, &names, &values));
    SETERRQ(PetscObjectComm((PetscObject)pc), PETSC_ERR_SUP,
            "PC ringrt: option -%s is not supported by ringrt (it honours -pc_factor_levels, "
            "-pc_factor_shift_type, -pc_factor_shift_amount, -pc_factor_zeropivot, "
            "-pc_factor_mat_ordering_type and -pc_ringrt_*: see -help)",
            name);
  }
  PetscCall(PetscOptionsLeftRestore(((PetscObject)pc)->options, &n, &names, &values));
  PetscFunctionReturn(0);
}

PetscErrorCode PCSetFromOptions_Ringrt(PC pc, PetscOptionItems *PetscOptionsObject) {
  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "ringrt ILU options");
  PetscCall(ringrt_options(pc, PetscOptionsObject));
  PetscCall(factor_options(pc, PetscOptionsObject));
  PetscOptionsHeadEnd();
  PetscCall(refuse_unknown(pc));
  PetscFunctionReturn(0);
}

/* ---- PCView ---- */

static PetscErrorCode view_ordering(const PC_Ringrt *d, PetscViewer viewer) {
  const char *name = rrt_ilu_ordering_name(d->ordering);

  PetscFunctionBegin;
  if (d->ordering != RRT_ILU_ORDER_DD && d->ordering != RRT_ILU_ORDER_DD_COLOR)
    PetscCall(PetscViewerASCIIPrintf(viewer, "ordering: %s\n", name));
  else if (d->dd_blocks > 0)
    PetscCall(PetscViewerASCIIPrintf(viewer, "ordering: %s, %" PetscInt_FMT " subdomains\n", name,
                                     d->dd_blocks));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "ordering: %s, one subdomain per rank\n", name));
  PetscFunctionReturn(0);
}

/* PETSc's pivot rule in force and what the last factorization did. */
static PetscErrorCode view_pivots(const PC_Ringrt *d, PetscViewer viewer) {
  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "shift: %s, amount %g, zero pivot %g",
                                   MatFactorShiftTypes[d->shift_type], (double)d->shift_amount,
                                   (double)d->zeropivot));
  if (d->shift_tries > 1)
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "; last factorization: diagonal shift %g (%" PetscInt_FMT " tries)",
        (double)d->shift_used, d->shift_tries));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscFunctionReturn(0);
}

/* What ringrt's own communicator did on rank 0 (rrt_ctx_comm_stats), and
 * its time waiting in the halo exchanges. */
static PetscErrorCode view_comm(const PC_Ringrt *d, PetscViewer viewer) {
  int groups = 0;
  double t = rrt_phase_seconds(d->ctx, "p2p_group", &groups);
  rrt_comm_stats s;

  PetscFunctionBegin;
  RINGRT_CALL(d, rrt_ctx_comm_stats(d->ctx, &s));
  PetscCall(PetscViewerASCIIPrintf(
      viewer,
      "ringrt communication on rank 0: %" PRIu64 " messages sent (%" PRIu64 " bytes), %" PRIu64
      " received (%" PRIu64 " bytes), %" PRIu64
      " collectives, %.3g s waiting in %d halo exchanges\n",
      s.msgs_sent, s.bytes_sent, s.msgs_recv, s.bytes_recv, s.collectives, t, groups));
  PetscFunctionReturn(0);
}

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
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "ringrt ILU(%" PetscInt_FMT "): the global ILU(%" PetscInt_FMT
                                   "), the same for any number of ranks (not block Jacobi)\n",
                                   d->levels, d->levels));
  PetscCall(view_ordering(d, viewer));
  PetscCall(view_pivots(d, viewer));
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
    PetscCall(view_comm(d, viewer));
  }
  if (d->failed) PetscCall(PetscViewerASCIIPrintf(viewer, "failed: %s\n", d->failure));
  PetscFunctionReturn(0);
}

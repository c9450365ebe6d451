/* ringrt: C runtime for distributed GPU work over MPI and NCCL.
 * One header for the whole public API. */
#ifndef RINGRT_H
#define RINGRT_H

#include "ringrt/config.h"
#include "ringrt/export.h"
#include "ringrt/status.h"
#include "ringrt/context.h"
#include "ringrt/memory.h"
#include "ringrt/transport.h"
#include "ringrt/trace.h"
#include "ringrt/attn.h"
#include "ringrt/seacells.h"
#include "ringrt/ilu.h" /* sparse matrices, ILU(0), Krylov */

#endif

/* The names of the plan's operations in messages (plan_impl.h), in a file
 * of their own: every part of a plan names them. */
#include "attn/plan_impl.h"

const char rrt_attn_op_create[] = "rrt_attn_plan_create";
const char rrt_attn_op_run[] = "rrt_attn_plan_run";
const char rrt_attn_op_run_bwd[] = "rrt_attn_plan_run_bwd";

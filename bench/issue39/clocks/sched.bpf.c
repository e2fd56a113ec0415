/* The scheduler's own per-task CPU time (task->se.sum_exec_runtime): no clock read of ours. */
#define READ_CLOCK(task) ((task)->se.sum_exec_runtime)
#define SCALE 1
#include "common.h"

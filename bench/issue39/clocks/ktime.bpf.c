/* CLOCK_MONOTONIC, what ebq reads today. */
#define READ_CLOCK(task) (bpf_ktime_get_ns())
#define SCALE 1
#include "common.h"

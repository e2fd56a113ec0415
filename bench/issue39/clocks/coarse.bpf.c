/* CLOCK_MONOTONIC_COARSE: the last tick's time. */
#define READ_CLOCK(task) (bpf_ktime_get_coarse_ns())
#define SCALE 1
#include "common.h"

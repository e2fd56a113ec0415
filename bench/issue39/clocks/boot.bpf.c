/* CLOCK_BOOTTIME (counts suspend). */
#define READ_CLOCK(task) (bpf_ktime_get_boot_ns())
#define SCALE 1
#include "common.h"

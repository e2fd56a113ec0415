/* the tick count (CONFIG_HZ=250 here). */
#define READ_CLOCK(task) (bpf_jiffies64())
#define SCALE (1000000000ULL / 250)
#include "common.h"

/* Reference for `SELECT HIST(count) FROM syscalls.sys_enter_read`: a per-CPU
 * array of log2 buckets (the first u64 is the event count, as ebq's). */
#include "common.h"

struct hist {
	__u64 count;
	__u64 slots[65];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int hist_count(struct enter_read *ctx)
{
	__u32 zero = 0;
	struct hist *h = bpf_map_lookup_elem(&events, &zero);
	__u32 i;

	if (!h)
		return 0;
	i = log2_slot(ctx->count);
	if (i < 65)
		h->slots[i]++;
	h->count++;
	return 0;
}

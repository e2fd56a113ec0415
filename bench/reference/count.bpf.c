/* Reference for `SELECT COUNT(*) FROM syscalls.sys_enter_read`: one per-CPU counter. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int count_reads(void *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&events, &zero);

	if (n)
		(*n)++;
	return 0;
}

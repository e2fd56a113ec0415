/* Reference for `SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid`. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int count_by_pid(void *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 *n = bpf_map_lookup_elem(&events, &pid);

	if (n) {
		(*n)++;
	} else {
		__u64 one = 1;

		bpf_map_update_elem(&events, &pid, &one, BPF_NOEXIST);
	}
	return 0;
}

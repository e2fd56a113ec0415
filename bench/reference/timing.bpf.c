/* Reference for `SELECT HIST(x.time - e.time) FROM syscalls.sys_enter_read e
 * JOIN syscalls.sys_exit_read x ON e.tid = x.tid`: start times by tid in a hash,
 * a per-CPU log2 histogram of the latency at exit. */
#include "common.h"

struct hist {
	__u64 count;
	__u64 slots[65];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int read_enter(void *ctx)
{
	__u32 tid = bpf_get_current_pid_tgid();
	__u64 t = bpf_ktime_get_ns();

	bpf_map_update_elem(&start, &tid, &t, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_read")
int read_exit(void *ctx)
{
	__u32 tid = bpf_get_current_pid_tgid(), zero = 0, i;
	__u64 *t0 = bpf_map_lookup_elem(&start, &tid);
	struct hist *h;
	__u64 delta;

	if (!t0)
		return 0;
	delta = bpf_ktime_get_ns() - *t0;
	bpf_map_delete_elem(&start, &tid);
	h = bpf_map_lookup_elem(&events, &zero);
	if (!h)
		return 0;
	i = log2_slot(delta);
	if (i < 65)
		h->slots[i]++;
	h->count++;
	return 0;
}

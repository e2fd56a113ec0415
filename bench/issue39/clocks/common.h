/* Time an enter→exit pair of pread64 with one clock (issue 39 item 2).
 *
 * Each program is the pair floor of bench/issue16/pair_floor/task_storage.bpf.c
 * with its clock swapped: the entry keeps a reading in the thread's own
 * storage, the exit adds (reading − kept) × SCALE to `sum_ns` and 1 to
 * `events`. Only the workload's calls are paired (its comm is "clockwork"),
 * so the sums compare with the workload's own clock_gettime brackets.
 * A file defines READ_CLOCK(task) and SCALE, then includes this header. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps"), sum_ns SEC(".maps");

static __always_inline int workload(void)
{
	char comm[16];

	bpf_get_current_comm(comm, sizeof(comm));
	return *(__u64 *)comm == *(__u64 *)"clockwor";
}

SEC("tp_btf/sys_enter")
int BPF_PROG(enter, struct pt_regs *regs, long id)
{
	struct task_struct *task;
	__u64 *open;

	if (id != 17 || !workload())
		return 0;
	task = bpf_get_current_task_btf();
	open = bpf_task_storage_get(&pending, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (open)
		*open = READ_CLOCK(task) | 1ULL << 63; /* the top bit: a pair is open */
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(leave, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	__u64 *open, *n, *sum, start;

	if (regs->orig_ax != 17)
		return 0;
	open = bpf_task_storage_get(&pending, task, 0, 0);
	if (!open || !(*open >> 63))
		return 0;
	start = *open & ~(1ULL << 63);
	*open = 0;
	n = bpf_map_lookup_elem(&events, &zero);
	sum = bpf_map_lookup_elem(&sum_ns, &zero);
	if (n && sum) {
		*n += 1;
		*sum += (READ_CLOCK(task) - start) * SCALE;
	}
	return 0;
}

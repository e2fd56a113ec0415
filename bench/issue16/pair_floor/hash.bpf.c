/* The pair in a HASH by thread id: what ebq's JOINs did before (and do with --pairs hash). */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, struct pair);
} pending SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(enter, struct pt_regs *regs, long id)
{
	__u64 tid = (__u32)bpf_get_current_pid_tgid();
	struct pair *p;

	if (!traced(id) || !(p = build(regs)))
		return 0;
	bpf_map_update_elem(&pending, &tid, p, BPF_ANY);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(leave, struct pt_regs *regs, long ret)
{
	__u64 tid = (__u32)bpf_get_current_pid_tgid();
	struct pair *open;

	if (!traced(regs->orig_ax))
		return 0;
	open = bpf_map_lookup_elem(&pending, &tid);
	if (!open)
		return 0;
	add(open);
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}

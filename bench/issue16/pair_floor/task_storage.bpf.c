/* The pair in the thread's own storage: what ebq's per-thread pairing does. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pair);
} pending SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(enter, struct pt_regs *regs, long id)
{
	struct pair *p, *open;

	if (!traced(id) || !(p = build(regs)))
		return 0;
	open = bpf_task_storage_get(&pending, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (open)
		*open = *p;
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(leave, struct pt_regs *regs, long ret)
{
	struct pair *open;

	if (!traced(regs->orig_ax))
		return 0;
	open = bpf_task_storage_get(&pending, bpf_get_current_task_btf(), 0, 0);
	if (!open || !open->start)
		return 0;
	add(open);
	open->start = 0;
	return 0;
}

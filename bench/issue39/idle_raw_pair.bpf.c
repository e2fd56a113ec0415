/* bench/issue39/perf_hooks.sh: a raw sys_enter/sys_exit pair (tp_btf) that
 * filters by call number (io_submit 209, io_getevents 208 on x86-64) and
 * never fires for fio: what a second raw pair costs every system call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
char LICENSE[] SEC("license") = "GPL";
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } events SEC(".maps");
SEC("tp_btf/sys_enter")
int BPF_PROG(idle_enter, struct pt_regs *regs, long id)
{
	__u32 z = 0; __u64 *c;
	if (id != 209) return 0;
	c = bpf_map_lookup_elem(&events, &z); if (c) (*c)++;
	return 0;
}
SEC("tp_btf/sys_exit")
int BPF_PROG(idle_exit, struct pt_regs *regs, long ret)
{
	__u32 z = 0; __u64 *c;
	if (regs->orig_ax != 208) return 0;
	c = bpf_map_lookup_elem(&events, &z); if (c) (*c)++;
	return 0;
}

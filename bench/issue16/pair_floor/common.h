/* The floor of an enter→exit pairing of read/pread64/write/pwrite64 on the raw
 * sys_enter/sys_exit tracepoints (tp_btf), hand-written: the entry keeps the
 * start time and two arguments in a 128-byte pair (the size of `ebq report
 * io`'s), the exit adds the latency to a per-CPU counter. Only where the pair
 * waits differs between the programs (pair_floor.sh runs them under fio). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct pair {
	__u64 start, arg0, arg1, rest[13];
};

/* The pair under construction (not the 512-byte stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pair);
} slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

static __always_inline int traced(long id)
{
	return id == 0 || id == 1 || id == 17 || id == 18;
}

static __always_inline struct pair *build(struct pt_regs *regs)
{
	__u32 zero = 0;
	struct pair *p = bpf_map_lookup_elem(&slot, &zero);

	if (p) {
		p->start = bpf_ktime_get_ns();
		p->arg0 = regs->di;
		p->arg1 = regs->si;
	}
	return p;
}

static __always_inline void add(struct pair *p)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&events, &zero);

	if (n)
		*n += bpf_ktime_get_ns() - p->start;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Another tool's tracing program, for tests/missed.rs: classic (perf-event)
 * tracepoint programs on raw_syscalls:sys_enter and sys_exit that spin for a
 * while on every system call. While one of them runs, the CPU's shared guard
 * (bpf_prog_active) is held, and a block completion arriving in an interrupt
 * then is skipped by every classic tracepoint program: ebq's included.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#ifndef SPINS
#define SPINS 200
#endif

/* Work the loop must do (a map update), so the compiler cannot drop it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} spins SEC(".maps");

static long spin(__u32 i, void *unused)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&spins, &zero);

	if (n)
		*n += i;
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int hold_enter(void *ctx)
{
	bpf_loop(SPINS, spin, 0, 0);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int hold_exit(void *ctx)
{
	bpf_loop(SPINS, spin, 0, 0);
	return 0;
}

/* Shared declarations of the hand-written reference programs (ebq bench pervent).
 * These are the "practical floor": what a careful human writes in libbpf C for the
 * same question ebq answers, compiled with the same clang flags ebq uses. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* tracepoint:syscalls:sys_enter_read, from its tracefs format file. */
struct enter_read {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__u64 fd;
	__u64 buf;
	__u64 count;
};

/* tracepoint:syscalls:sys_exit_read */
struct exit_read {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__s64 ret;
};

/* log2 bucket as bpftrace's hist(): 0 -> 0, [2^k, 2^(k+1)) -> k + 1. */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0;

	if (v == 0)
		return 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r + 1;
}

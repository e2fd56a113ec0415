/* Reference for `SELECT inode, COUNT(*) FROM syscalls.sys_enter_read GROUP BY inode`. */
#include "file_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u64);
	__type(value, __u64);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int count_by_inode(struct enter_read *ctx)
{
	__u64 ino = file_of(ctx->fd)->f_inode->i_ino;
	__u64 *n = bpf_map_lookup_elem(&events, &ino);

	if (n) {
		(*n)++;
	} else {
		__u64 one = 1;

		bpf_map_update_elem(&events, &ino, &one, BPF_NOEXIST);
	}
	return 0;
}

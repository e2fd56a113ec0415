/* Reference for `SELECT fs_type, file_name, COUNT(*) FROM syscalls.sys_enter_read
 * GROUP BY fs_type, file_name`: the two strings are the key, copied with one
 * bpf_probe_read_kernel_str each (fs_type 16 bytes, file_name 64, as ebq's caps). */
#include "file_common.h"

struct fs_name_key {
	char fs_type[16];
	char file_name[64];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct fs_name_key);
	__type(value, __u64);
} events SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_read")
int count_by_fs_name(struct enter_read *ctx)
{
	struct file *file = file_of(ctx->fd);
	struct fs_name_key key = {};
	__u64 *n;

	bpf_probe_read_kernel_str(key.fs_type, sizeof(key.fs_type), file->f_inode->i_sb->s_type->name);
	bpf_probe_read_kernel_str(key.file_name, sizeof(key.file_name), file->f_path.dentry->d_name.name);
	n = bpf_map_lookup_elem(&events, &key);
	if (n) {
		(*n)++;
	} else {
		__u64 one = 1;

		bpf_map_update_elem(&events, &key, &one, BPF_NOEXIST);
	}
	return 0;
}

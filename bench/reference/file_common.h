/* Shared declarations of the file-column reference programs (ebq bench pervent):
 * the fd of sys_enter_read resolved to its struct file by typed loads, as a careful
 * human writes it for this kernel (6.2+: bpf_rdonly_cast). vmlinux.h is generated
 * from the running kernel's BTF by the bench (bpftool btf dump … format c). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

/* tracepoint:syscalls:sys_enter_read, from its tracefs format file. */
struct enter_read {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__u64 fd;
	__u64 buf;
	__u64 count;
};

/* The current task's struct file for fd: typed loads down to the fd table, one
 * probe read for the slot (a struct file ** is a number to the verifier), then a cast. */
static __always_inline struct file *file_of(__u64 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct file *file = 0;

	if (fd < fdt->max_fds)
		bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]);
	return bpf_rdonly_cast(file, bpf_core_type_id_kernel(struct file));
}

/* The hand-written floor of `ebq report io` (ebq bench report): what a kernel fold
 * of the report's system calls must do at the least. raw_syscalls sys_enter and
 * sys_exit (tp_btf) pair each call of the report's list (FILE_CALLS and
 * OPEN_CALLS in crates/ebq-report/src/query.rs) per thread, in the thread's own
 * storage; the entry resolves the fd to its file (an open's file is the fd it
 * returns, resolved at its exit), the exit adds the call, its bytes and its
 * latency to the file's per-CPU counters. No names, no per-call records, no
 * io_uring requests (fio's io_uring engine reaches it only through
 * io_uring_enter, which is not in the list). */
#include "file_common.h"
#include <bpf/bpf_tracing.h>

struct file_key {
	__u64 ino;
	__u64 dev;
};

/* Per file: calls (first: the loader's "map events total"), bytes, ns. */
struct file_sums {
	__u64 calls, bytes, ns;
};

struct pending_call {
	__u64 start;
	struct file_key key;
	__u32 id;
	__u32 open;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending_call);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct file_key);
	__type(value, struct file_sums);
} events SEC(".maps");

/* x86-64 numbers: read write close lseek pread64 pwrite64 readv writev fsync
 * fdatasync preadv pwritev preadv2 pwritev2 (FILE_CALLS), open openat creat (OPEN_CALLS). */
static __always_inline int is_file_call(long id)
{
	switch (id) {
	case 0: case 1: case 3: case 8: case 17: case 18: case 19: case 20:
	case 74: case 75: case 295: case 296: case 327: case 328:
		return 1;
	}
	return 0;
}

static __always_inline int is_open_call(long id)
{
	return id == 2 || id == 257 || id == 85;
}

static __always_inline void key_of(__u64 fd, struct file_key *k)
{
	struct file *f = file_of(fd);

	k->ino = f->f_inode->i_ino;
	k->dev = f->f_inode->i_sb->s_dev;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(enter, struct pt_regs *regs, long id)
{
	struct pending_call *p;
	int open = is_open_call(id);

	if (!open && !is_file_call(id))
		return 0;
	p = bpf_task_storage_get(&pending, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p)
		return 0;
	p->id = id;
	p->open = open;
	if (!open)
		key_of(regs->di, &p->key);
	p->start = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(leave, struct pt_regs *regs, long ret)
{
	struct pending_call *p;
	struct file_sums *s, one = {};
	__u64 ns, bytes;

	if (!is_open_call(regs->orig_ax) && !is_file_call(regs->orig_ax))
		return 0;
	p = bpf_task_storage_get(&pending, bpf_get_current_task_btf(), 0, 0);
	if (!p || !p->start)
		return 0;
	ns = bpf_ktime_get_ns() - p->start;
	p->start = 0;
	if (p->open) {
		if (ret < 0)
			return 0;
		key_of(ret, &p->key);
	}
	/* An open returns an fd and lseek an offset: only the transfers' returns are bytes. */
	bytes = ret > 0 && !p->open && p->id != 8 ? ret : 0;
	s = bpf_map_lookup_elem(&events, &p->key);
	if (s) {
		s->calls++;
		s->bytes += bytes;
		s->ns += ns;
	} else {
		one.calls = 1;
		one.bytes = bytes;
		one.ns = ns;
		bpf_map_update_elem(&events, &p->key, &one, BPF_NOEXIST);
	}
	return 0;
}

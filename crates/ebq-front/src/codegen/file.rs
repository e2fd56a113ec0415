//! File columns as C: CO-RE reads from the `struct file` behind an fd.
//!
//! Programs that use file columns include `vmlinux.h` (generated from the
//! running kernel's BTF, compiled once as a precompiled header: see
//! `runtime::btf`) instead of `<linux/bpf.h>`, so every kernel struct and field
//! offset comes from the kernel itself and libbpf relocates the reads at load
//! time. Programs without file columns keep the minimal header.
//!
//! The fd is resolved once per event, into the hidden [`FileColumn::Handle`]
//! column that every other file column depends on.

use crate::bind::ColumnSource;
use crate::catalog::file_columns::RawFile;
use crate::catalog::FileColumn;
use crate::types::DataType;

/// Includes for programs with file columns (vmlinux.h replaces <linux/bpf.h>,
/// which it conflicts with).
pub const HEADER: &str = "#include \"vmlinux.h\"\n#include <bpf/bpf_helpers.h>\n#include <bpf/bpf_core_read.h>\n";

/// Helpers for file columns, after the event struct, when the plan reads
/// files by typed loads ([`crate::plan::KernelPlan::typed_files`]).
///
/// Why typed loads: each `BPF_CORE_READ` hop is a `bpf_probe_read_kernel`
/// call (~10–20 ns with its stack copy); a load through a BTF pointer is one
/// instruction the JIT guards with an exception-table entry, so a fault (a
/// NULL or stale pointer) reads as 0 exactly as the helper's failure did.
/// `fdt->fd` is a `struct file **`, which the verifier treats as a number:
/// the fd slot's address is cast with the `bpf_rdonly_cast` kfunc (kernel
/// 6.2+) to a kernel struct whose first member is a `struct file *`
/// (`struct kiocb`'s `ki_filp`), so the slot too is a guarded load, not a
/// `bpf_probe_read_kernel` call (issue 39 item 5: ~5 ns of the ~10 a file
/// column added per event). Strings are still copied with
/// `bpf_probe_read_kernel_str`.
pub const PRELUDE_TYPED: &str = r#"/* File columns: the fd's struct file, reached with typed loads from the current task's BTF
 * pointer (offsets from the running kernel's BTF). The verifier types the fd table's array
 * (`struct file **`) as a number, so the slot's address is cast with bpf_rdonly_cast to a struct
 * whose first member is a struct file * (struct kiocb's ki_filp) and read as that member: like
 * every later hop, a load the JIT guards, with no helper call. An fd that is not open gives a
 * NULL file, and reads through NULL give 0 and "". The fd is the argument's low 32 bits, as the
 * kernel takes it: a caller may leave anything in the register's upper half. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

static __always_inline struct file *ebq_file_of(__u32 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = task->files->fdt;
	struct kiocb *slot;

	/* Out of the table: NULL, cast too, so every path holds a typed pointer the verifier lets us load through. */
	if (fd >= fdt->max_fds)
		return bpf_rdonly_cast(0, bpf_core_type_id_kernel(struct file));
	slot = bpf_rdonly_cast((void *)fdt->fd + fd * sizeof(struct file *) - bpf_core_field_offset(struct kiocb, ki_filp),
			       bpf_core_type_id_kernel(struct kiocb));
	return slot->ki_filp;
}

/* The file mapped at a user address of the current task (msync's start, a user page fault's
 * address): bpf_find_vma finds the VMA under the task's mmap lock, which it only tries to take;
 * an anonymous mapping, no mapping, or a lock held by a writer gives a NULL file. */
static long ebq_vma_file(struct task_struct *task, struct vm_area_struct *vma, void *file)
{
	*(__u64 *)file = (__u64)vma->vm_file;
	return 0;
}

static __always_inline struct file *ebq_file_at(__u64 address)
{
	__u64 file = 0;

	bpf_find_vma(bpf_get_current_task_btf(), address, ebq_vma_file, &file, 0);
	return bpf_rdonly_cast((void *)file, bpf_core_type_id_kernel(struct file));
}

/* The file offset a user address maps: the VMA maps page vm_pgoff of its file at vm_start. */
struct ebq_map_at {
	__u64 address;
	__u64 offset;
};

static long ebq_vma_offset(struct task_struct *task, struct vm_area_struct *vma, struct ebq_map_at *at)
{
	if (vma->vm_file)
		at->offset = (vma->vm_pgoff << 12) + (at->address - vma->vm_start);
	return 0;
}

static __always_inline __u64 ebq_map_offset(__u64 address)
{
	struct ebq_map_at at = { .address = address };

	bpf_find_vma(bpf_get_current_task_btf(), address, ebq_vma_offset, &at, 0);
	return at.offset;
}

/* The mount a file is on: struct mount embeds the vfsmount that f_path points to. */
static __always_inline struct mount *ebq_mount_of(struct file *file)
{
	void *vfs = file->f_path.mnt;

	return bpf_rdonly_cast(vfs - bpf_core_field_offset(struct mount, mnt), bpf_core_type_id_kernel(struct mount));
}

static __always_inline __u64 ebq_file_ino(struct file *file) { return file->f_inode->i_ino; }
static __always_inline __u32 ebq_file_dev(struct file *file) { return file->f_inode->i_sb->s_dev; }
static __always_inline __u64 ebq_file_pos(struct file *file) { return file->f_pos; }
static __always_inline __u32 ebq_file_flags(struct file *file) { return file->f_flags; }
static __always_inline __u64 ebq_file_fs_id(struct file *file) { return (__u64)file->f_inode->i_sb->s_type; }
static __always_inline __u64 ebq_file_dentry_id(struct file *file) { return (__u64)file->f_path.dentry; }
static __always_inline __u64 ebq_file_vfsmount_id(struct file *file) { return (__u64)file->f_path.mnt; }
static __always_inline __u32 ebq_file_mount_id(struct file *file) { return file ? ebq_mount_of(file)->mnt_id : 0; }
static __always_inline void ebq_file_fs_type(struct file *file, char out[16])
{
	bpf_probe_read_kernel_str(out, 16, file->f_inode->i_sb->s_type->name);
}
static __always_inline void ebq_file_name(struct file *file, char out[64])
{
	bpf_probe_read_kernel_str(out, 64, file->f_path.dentry->d_name.name);
}

/* The hops of the mount_point walk (MOUNT_POINT), as typed loads. */
static __always_inline struct dentry *ebq_mnt_root(struct mount *m) { return m->mnt.mnt_root; }
static __always_inline struct mount *ebq_mnt_parent(struct mount *m) { return m->mnt_parent; }
static __always_inline struct dentry *ebq_mnt_mountpoint(struct mount *m) { return m->mnt_mountpoint; }
static __always_inline __u32 ebq_dentry_len(struct dentry *d) { return d->d_name.len; }
static __always_inline const unsigned char *ebq_dentry_name(struct dentry *d) { return d->d_name.name; }
static __always_inline struct dentry *ebq_dentry_parent(struct dentry *d) { return d->d_parent; }
static __always_inline void ebq_task_root(struct vfsmount **mnt, struct dentry **dentry)
{
	struct task_struct *task = bpf_get_current_task_btf();

	*mnt = task->fs->root.mnt;
	*dentry = task->fs->root.dentry;
}

"#;

/// Helpers for file columns, after the event struct, on kernels without the
/// `bpf_rdonly_cast` kfunc: every hop is a CO-RE `bpf_probe_read_kernel`.
pub const PRELUDE: &str = r#"/* File columns: the fd's struct file, read with CO-RE (offsets from the running kernel's BTF).
 * An fd that is not open gives a NULL file, and reads through NULL give 0 and "". The fd is the
 * argument's low 32 bits, as the kernel takes it: a caller may leave anything in the upper half. */
static __always_inline struct file *ebq_file_of(__u32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *file = 0;

	if (fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	return file;
}

/* The mount a file is on: struct mount embeds the vfsmount that f_path points to. */
static __always_inline struct mount *ebq_mount_of(struct file *file)
{
	struct vfsmount *vfs = BPF_CORE_READ(file, f_path.mnt);

	return (struct mount *)((void *)vfs - bpf_core_field_offset(struct mount, mnt));
}

static __always_inline __u64 ebq_file_ino(struct file *file) { return BPF_CORE_READ(file, f_inode, i_ino); }
static __always_inline __u32 ebq_file_dev(struct file *file) { return BPF_CORE_READ(file, f_inode, i_sb, s_dev); }
static __always_inline __u64 ebq_file_pos(struct file *file) { return BPF_CORE_READ(file, f_pos); }
static __always_inline __u32 ebq_file_flags(struct file *file) { return BPF_CORE_READ(file, f_flags); }
static __always_inline __u64 ebq_file_fs_id(struct file *file) { return (__u64)BPF_CORE_READ(file, f_inode, i_sb, s_type); }
static __always_inline __u64 ebq_file_dentry_id(struct file *file) { return (__u64)BPF_CORE_READ(file, f_path.dentry); }
static __always_inline __u64 ebq_file_vfsmount_id(struct file *file) { return (__u64)BPF_CORE_READ(file, f_path.mnt); }
static __always_inline __u32 ebq_file_mount_id(struct file *file)
{
	return file ? BPF_CORE_READ(ebq_mount_of(file), mnt_id) : 0;
}
static __always_inline void ebq_file_fs_type(struct file *file, char out[16])
{
	bpf_probe_read_kernel_str(out, 16, BPF_CORE_READ(file, f_inode, i_sb, s_type, name));
}
static __always_inline void ebq_file_name(struct file *file, char out[64])
{
	bpf_probe_read_kernel_str(out, 64, BPF_CORE_READ(file, f_path.dentry, d_name.name));
}

/* The hops of the mount_point walk (MOUNT_POINT), as CO-RE reads. */
static __always_inline struct dentry *ebq_mnt_root(struct mount *m) { return BPF_CORE_READ(m, mnt.mnt_root); }
static __always_inline struct mount *ebq_mnt_parent(struct mount *m) { return BPF_CORE_READ(m, mnt_parent); }
static __always_inline struct dentry *ebq_mnt_mountpoint(struct mount *m) { return BPF_CORE_READ(m, mnt_mountpoint); }
static __always_inline __u32 ebq_dentry_len(struct dentry *d) { return BPF_CORE_READ(d, d_name.len); }
static __always_inline const unsigned char *ebq_dentry_name(struct dentry *d) { return BPF_CORE_READ(d, d_name.name); }
static __always_inline struct dentry *ebq_dentry_parent(struct dentry *d) { return BPF_CORE_READ(d, d_parent); }
static __always_inline void ebq_task_root(struct vfsmount **mnt, struct dentry **dentry)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	*mnt = BPF_CORE_READ(task, fs, root.mnt);
	*dentry = BPF_CORE_READ(task, fs, root.dentry);
}

"#;

/// The `mount_point` column's walk, after either prelude: one algorithm, whose
/// hops (`ebq_mnt_root`, `ebq_dentry_parent`, …) each prelude defines as typed
/// loads ([`PRELUDE_TYPED`]) or CO-RE reads ([`PRELUDE`]).
pub const MOUNT_POINT: &str = r#"/* Scratch space for building mount_point (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[256]);
} ebq_path_scratch SEC(".maps");

/* mount_point: the path of the file's mount, built backwards from the end of the
 * scratch buffer by walking up dentries and mounts as the kernel's d_path does.
 * Left "" when the walk does not reach the task's root within 32 steps and 63 bytes
 * (internal mounts of pipes and sockets, mounts outside a chroot, very deep paths). */
static __always_inline void ebq_mount_point(struct file *file, char out[64])
{
	__u32 zero = 0;
	char *buf = bpf_map_lookup_elem(&ebq_path_scratch, &zero);

	if (!buf || !file)
		return;
	struct mount *mnt = ebq_mount_of(file);
	struct dentry *d = ebq_mnt_root(mnt);
	/* Paths are relative to the task's root, as in /proc/PID/mountinfo (chroot, containers). */
	struct vfsmount *root_mnt;
	struct dentry *root_dentry;

	ebq_task_root(&root_mnt, &root_dentry);
	__u32 pos = 127;
	int reached = 0;

	buf[127] = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 32; i++) {
		if (d == root_dentry && (void *)mnt + bpf_core_field_offset(struct mount, mnt) == (void *)root_mnt) {
			reached = 1;
			break;
		}
		if (d == ebq_mnt_root(mnt)) {
			struct mount *parent = ebq_mnt_parent(mnt);

			if (parent == mnt)
				break;	/* a mount outside the task's root: pipes, sockets, … */
			d = ebq_mnt_mountpoint(mnt);
			mnt = parent;
			continue;
		}
		__u32 len = ebq_dentry_len(d);

		if (len > 62 || len + 1 > pos)
			break;	/* does not fit */
		pos = (pos - len - 1) & 127;
		bpf_probe_read_kernel(buf + pos + 1, len & 63, ebq_dentry_name(d));
		buf[pos] = '/';
		d = ebq_dentry_parent(d);
	}
	if (!reached)
		return;
	if (pos == 127) {
		out[0] = '/';
		return;
	}
	bpf_probe_read_kernel(out, 64, buf + pos);
	out[63] = 0;
}

"#;

/// `columns` with each file column's [`FileColumn::Handle`] inserted before
/// its first use (once), so the fd is resolved before anything reads the file.
pub fn with_dependencies(columns: Vec<(ColumnSource, DataType)>) -> Vec<(ColumnSource, DataType)> {
    let mut out: Vec<(ColumnSource, DataType)> = vec![];
    for (c, ty) in columns {
        if let Some(dep) = dependency(&c).filter(|d| !out.iter().any(|(x, _)| x == d)) {
            out.push((dep, DataType::U64));
        }
        if !out.iter().any(|(x, _)| *x == c) {
            out.push((c, ty));
        }
    }
    out
}

/// The column a file column is computed from (the looked-up file), if any.
pub fn dependency(c: &ColumnSource) -> Option<ColumnSource> {
    match c {
        // The request columns read the request itself, not its file.
        ColumnSource::File { column, fd }
            if !matches!(
                column,
                FileColumn::Handle
                    | FileColumn::ReqOffset
                    | FileColumn::ReqLen
                    | FileColumn::Retry
                    | FileColumn::PagesMapped
                    | FileColumn::FaultIndex
            ) =>
        {
            Some(ColumnSource::File { column: FileColumn::Handle, fd: fd.clone() })
        }
        _ => None,
    }
}

/// The file of an io_uring request (`catalog::file_columns::request_field`),
/// after the prelude of objects that read one: `req->file`, an fd's file or a
/// registered one alike. Only such objects include it, so a kernel without
/// io_uring (no `struct io_kiocb` in its BTF) still compiles every other.
pub const REQUEST_TYPED: &str = r#"/* The file of an io_uring request (an fd's or a registered file): req->file, a typed load. */
static __always_inline struct file *ebq_file_of_req(__u64 req)
{
	struct io_kiocb *r = bpf_rdonly_cast((void *)req, bpf_core_type_id_kernel(struct io_kiocb));

	return r->file;
}

/* A read or write request's struct io_rw overlays req->cmd (at the request's start), prepared from
 * the SQE before io_uring_submit_req fires: its offset (-1: the file position) and, for the
 * non-vectored ones, its length in bytes; 0 for every other opcode, whose cmd is another struct. */
static __always_inline int ebq_req_is_rw(__u64 req, int vectored_too)
{
	__u8 op = ((struct io_kiocb *)bpf_rdonly_cast((void *)req, bpf_core_type_id_kernel(struct io_kiocb)))->opcode;

	if (op == IORING_OP_READV || op == IORING_OP_WRITEV)
		return vectored_too;
	return op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED || op == IORING_OP_READ || op == IORING_OP_WRITE;
}
static __always_inline struct io_rw *ebq_req_rw(__u64 req)
{
	return bpf_rdonly_cast((void *)req, bpf_core_type_id_kernel(struct io_rw));
}
static __always_inline __s64 ebq_req_offset(__u64 req) { return ebq_req_is_rw(req, 1) ? ebq_req_rw(req)->kiocb.ki_pos : 0; }
static __always_inline __u32 ebq_req_len(__u64 req) { return ebq_req_is_rw(req, 0) ? ebq_req_rw(req)->len : 0; }

"#;

/// [`REQUEST_TYPED`] on kernels without `bpf_rdonly_cast`: one CO-RE read.
pub const REQUEST: &str = r#"/* The file of an io_uring request (an fd's or a registered file): req->file, one CO-RE read. */
static __always_inline struct file *ebq_file_of_req(__u64 req)
{
	return BPF_CORE_READ((struct io_kiocb *)req, file);
}

/* A read or write request's struct io_rw overlays req->cmd (at the request's start), prepared from
 * the SQE before io_uring_submit_req fires: its offset (-1: the file position) and, for the
 * non-vectored ones, its length in bytes; 0 for every other opcode, whose cmd is another struct. */
static __always_inline int ebq_req_is_rw(__u64 req, int vectored_too)
{
	__u8 op = BPF_CORE_READ((struct io_kiocb *)req, opcode);

	if (op == IORING_OP_READV || op == IORING_OP_WRITEV)
		return vectored_too;
	return op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED || op == IORING_OP_READ || op == IORING_OP_WRITE;
}
static __always_inline __s64 ebq_req_offset(__u64 req)
{
	return ebq_req_is_rw(req, 1) ? BPF_CORE_READ((struct io_rw *)req, kiocb.ki_pos) : 0;
}
static __always_inline __u32 ebq_req_len(__u64 req)
{
	return ebq_req_is_rw(req, 0) ? BPF_CORE_READ((struct io_rw *)req, len) : 0;
}

"#;

/// The file of a direct read or write's `struct kiocb` (raw argument 0 of
/// `catalog::file_columns::raw_file_arg` events): `iocb->ki_filp`, a typed load.
const KIOCB_TYPED: &str = r#"/* The file of a direct read or write (iomap's events get its struct kiocb as raw argument 0). */
static __always_inline struct file *ebq_file_of_kiocb(__u64 iocb)
{
	struct kiocb *k = bpf_rdonly_cast((void *)iocb, bpf_core_type_id_kernel(struct kiocb));

	return k->ki_filp;
}

"#;

/// [`KIOCB_TYPED`] on kernels without `bpf_rdonly_cast`: one CO-RE read.
const KIOCB: &str = r#"/* The file of a direct read or write (iomap's events get its struct kiocb as raw argument 0). */
static __always_inline struct file *ebq_file_of_kiocb(__u64 iocb)
{
	return BPF_CORE_READ((struct kiocb *)iocb, ki_filp);
}

"#;

/// The file of a faulting page cache (`struct address_space *mapping`, raw
/// argument 0 of filemap's fault events): the file of the VMA at the root of
/// the mapping's `i_mmap` interval tree, which holds every VMA mapping the
/// file — the faulting one among them, so the tree is not empty. Why not the
/// faulting VMA itself: the tracepoint is not given it. The root's file is
/// the same inode (so the same inode, dev, fs_type); only a file mapped
/// through two names (a hard link, a bind mount) can show the other name.
const MAPPING_TYPED: &str = r#"/* The file of a faulting page cache (filemap's fault events get its address_space as raw
 * argument 0): the file of the VMA at the root of the mapping's i_mmap tree, which holds every VMA
 * mapping it (the faulting one too); the same inode, possibly another name of it. */
static __always_inline struct file *ebq_file_of_mapping(__u64 mapping)
{
	struct address_space *m = bpf_rdonly_cast((void *)mapping, bpf_core_type_id_kernel(struct address_space));
	void *node = m->i_mmap.rb_root.rb_node;
	struct vm_area_struct *vma;

	if (!node)
		return bpf_rdonly_cast(0, bpf_core_type_id_kernel(struct file));
	vma = bpf_rdonly_cast(node - bpf_core_field_offset(struct vm_area_struct, shared.rb),
			      bpf_core_type_id_kernel(struct vm_area_struct));
	return vma->vm_file;
}

"#;

/// [`MAPPING_TYPED`] on kernels without `bpf_rdonly_cast`: CO-RE reads.
const MAPPING: &str = r#"/* The file of a faulting page cache (filemap's fault events get its address_space as raw
 * argument 0): the file of the VMA at the root of the mapping's i_mmap tree, which holds every VMA
 * mapping it (the faulting one too); the same inode, possibly another name of it. */
static __always_inline struct file *ebq_file_of_mapping(__u64 mapping)
{
	void *node = BPF_CORE_READ((struct address_space *)mapping, i_mmap.rb_root.rb_node);

	if (!node)
		return 0;
	return BPF_CORE_READ((struct vm_area_struct *)(node - bpf_core_field_offset(struct vm_area_struct, shared.rb)),
			     vm_file);
}

"#;

/// The `retry` column's state at `filemap:mm_filemap_fault`
/// (`catalog::file_columns::FAULT_EVENT`): each thread's last fault.
pub const FAULT_RETRY: &str = r#"/* A fault's retry: filemap_fault drops the mmap lock to read a page that is not cached, and the
 * fault runs again, reaching the tracepoint a second time for the same page (at most once: the
 * retry keeps the lock). One entry per thread: the page of its last fault, forgotten at the retry. */
struct ebq_fault {
	__u64 mapping;
	__u64 index;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ebq_fault);
} ebq_last_fault SEC(".maps");

static __always_inline __u32 ebq_fault_retry(__u64 mapping, __u64 index)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ebq_fault now = { mapping, index };
	struct ebq_fault *last = bpf_map_lookup_elem(&ebq_last_fault, &tid);

#ifdef EBQ_PAGES_MAPPED
	/* pages_mapped's fault-around left this page to this fault: it counts. */
	if (ebq_fault_around_discounted(mapping, index)) {
		bpf_map_delete_elem(&ebq_last_fault, &tid);
		return 0;
	}
#endif
	if (last && last->mapping == mapping && last->index == index) {
		bpf_map_delete_elem(&ebq_last_fault, &tid);
		return 1;
	}
	bpf_map_update_elem(&ebq_last_fault, &tid, &now, BPF_ANY);
	return 0;
}

"#;

/// The helper a [`RawFile`] event's file comes from, typed loads or CO-RE.
pub fn raw_file_prelude(how: RawFile, typed: bool) -> &'static str {
    match (how, typed) {
        (RawFile::Kiocb, true) => KIOCB_TYPED,
        (RawFile::Kiocb, false) => KIOCB,
        (RawFile::Mapping, true) => MAPPING_TYPED,
        (RawFile::Mapping, false) => MAPPING,
        // The mapping's (above), kept by `mapped_pages::FINISH`.
        (RawFile::Fault, _) => "",
    }
}

/// The handle column at a [`RawFile`] event (a tp_btf program: `ctx[0]` is the kiocb or mapping).
pub fn load_raw(local: &str, how: RawFile) -> String {
    let helper = match how {
        RawFile::Kiocb => "ebq_file_of_kiocb",
        RawFile::Mapping => "ebq_file_of_mapping",
        RawFile::Fault => return format!("\tstruct file *{local} = ebq_file_of_fault();\n"),
    };
    format!("\tstruct file *{local} = {helper}(ctx[0]);\n")
}

/// File column `column` at `kmem:rss_stat` (a [`RawFile::Fault`] event): the
/// finish's own columns from the counting state, the file's from the handle.
pub fn load_at_finish(column: FileColumn, local: &str, file: &str) -> String {
    match column {
        FileColumn::PagesMapped => format!("\t__u64 {local} = ebq_pages_finished();\n"),
        other => load(other, "0", local, file),
    }
}

/// The handle column at an event whose file is an io_uring request's.
pub fn load_request(local: &str, req: &str) -> String {
    format!("\tstruct file *{local} = ebq_file_of_req({req});\n")
}

/// The handle column at an event whose file is the one mapped at a user
/// address (`catalog::file_columns::address_field`): typed-loads kernels only
/// (the plan refuses the others).
pub fn load_mapped(local: &str, address: &str) -> String {
    format!("\tstruct file *{local} = ebq_file_at({address});\n")
}

/// C statements declaring and loading file column `column` into `local`;
/// `fd` is the C expression of the event's fd (a record field, or a register
/// on a raw system-call tracepoint), `file` the local of the [`FileColumn::Handle`] column.
pub fn load(column: FileColumn, fd: &str, local: &str, file: &str) -> String {
    match column {
        FileColumn::Handle => format!("\tstruct file *{local} = ebq_file_of({fd});\n"),
        FileColumn::Inode => format!("\t__u64 {local} = ebq_file_ino({file});\n"),
        FileColumn::Dev => format!("\t__u32 {local} = ebq_file_dev({file});\n"),
        FileColumn::DevMajor => format!("\t__u32 {local} = ebq_file_dev({file}) >> 20;\n"),
        FileColumn::DevMinor => format!("\t__u32 {local} = ebq_file_dev({file}) & 0xfffff;\n"),
        FileColumn::MountId => format!("\t__u32 {local} = ebq_file_mount_id({file});\n"),
        FileColumn::FilePos => format!("\t__u64 {local} = ebq_file_pos({file});\n"),
        FileColumn::Flags => format!("\t__u32 {local} = ebq_file_flags({file});\n"),
        FileColumn::FsTypeId => format!("\t__u64 {local} = ebq_file_fs_id({file});\n"),
        FileColumn::DentryId => format!("\t__u64 {local} = ebq_file_dentry_id({file});\n"),
        FileColumn::VfsMountId => format!("\t__u64 {local} = ebq_file_vfsmount_id({file});\n"),
        FileColumn::FsType => {
            format!("\tchar {local}[{}] = {{}};\n\tebq_file_fs_type({file}, {local});\n", FileColumn::FS_TYPE_CAP)
        }
        FileColumn::FileName => {
            format!("\tchar {local}[{}] = {{}};\n\tebq_file_name({file}, {local});\n", FileColumn::FILE_NAME_CAP)
        }
        FileColumn::ReqOffset => format!("\t__s64 {local} = ebq_req_offset({fd});\n"),
        FileColumn::ReqLen => format!("\t__u32 {local} = ebq_req_len({fd});\n"),
        // Only at the fault event, a tp_btf program: ctx[0] is the mapping, ctx[1] the page.
        FileColumn::Retry => format!("\t__u32 {local} = ebq_fault_retry(ctx[0], ctx[1]);\n"),
        // Only at the fault-around event; the count taken at the thread's fault is in ebq_file_pages.
        FileColumn::PagesMapped => format!("\t__u64 {local} = ebq_pages_mapped(ctx[0], ctx[1], ctx[2]);\n"),
        // Only at the finish event (`mapped_pages::FINISH`).
        FileColumn::FaultIndex => format!("\t__u64 {local} = ebq_fault_index();\n"),
        // Only at an address event, whose fd field is the address.
        FileColumn::MapOffset => format!("\t__u64 {local} = ebq_map_offset({fd});\n"),
        FileColumn::MountPoint => {
            format!("\tchar {local}[{}] = {{}};\n\tebq_mount_point({file}, {local});\n", FileColumn::MOUNT_POINT_CAP)
        }
    }
}

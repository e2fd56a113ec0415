//! Derived storage-I/O columns: what the file behind a syscall's fd is.
//!
//! At `syscalls:sys_enter_*` events with an integer `fd` argument, and at
//! `sys_exit_open`/`openat`/`openat2`/`creat` through `ret` (the new fd), the
//! kernel program resolves the fd to its `struct file` (task → files → fdt →
//! fd[fd], read with CO-RE against the running kernel's BTF) and exposes the
//! columns of [`FileColumn`]. Nothing about kernel structs is declared by hand:
//! the layouts come from `vmlinux.h` generated from `/sys/kernel/btf/vmlinux`.
//!
//! An fd that is not open (or negative, or a failed open's `ret`) gives 0 and
//! empty strings in every file column.
//!
//! At `sys_enter_msync` and `exceptions:page_fault_user` the file is the one
//! mapped at the event's user address ([`address_field`]): the program finds
//! the task's VMA with `bpf_find_vma` and takes its `vm_file`. An anonymous
//! mapping, no mapping, or a VMA the helper could not look at (the task's
//! mmap lock taken by a writer) gives 0 and empty strings, as a closed fd does.
//!
//! Calls that move data between two fds (`copy_file_range`, `sendfile64`,
//! `splice`, `tee`) have two sets, named for the end: `in_inode`, `out_file_name`,
//! … (see [`FdEnd`]). There is no unprefixed set at those events: which end
//! "the file" is depends on the question, so the query says it.

use super::TracepointFormat;
use crate::types::DataType;

/// Exit events whose `ret` is a new fd.
const OPEN_EXITS: [&str; 4] = ["sys_exit_open", "sys_exit_openat", "sys_exit_openat2", "sys_exit_creat"];

/// Which of an event's fds a file column describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FdEnd {
    /// The event's one fd (`fd`, an open's `ret`): columns without a prefix.
    Only,
    /// The source of a two-fd call (`fd_in`, `in_fd`, `fdin`): `in_` columns.
    In,
    /// The destination of a two-fd call (`fd_out`, `out_fd`, `fdout`): `out_` columns.
    Out,
}

impl FdEnd {
    /// The prefix of its columns' names.
    pub fn prefix(self) -> &'static str {
        match self {
            FdEnd::Only => "",
            FdEnd::In => "in_",
            FdEnd::Out => "out_",
        }
    }

    /// The end a record field names (`fd_in` → [`FdEnd::In`]); anything else is [`FdEnd::Only`].
    pub fn of_field(fd: &str) -> FdEnd {
        if IN_FDS.contains(&fd) {
            FdEnd::In
        } else if OUT_FDS.contains(&fd) {
            FdEnd::Out
        } else {
            FdEnd::Only
        }
    }
}

/// The source fd's field, as each two-fd system call's format names it
/// (copy_file_range and splice, sendfile64, tee).
const IN_FDS: [&str; 3] = ["fd_in", "in_fd", "fdin"];
/// The destination fd's field.
const OUT_FDS: [&str; 3] = ["fd_out", "out_fd", "fdout"];

/// A column describing the file behind an fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileColumn {
    /// Inode number (`f_inode->i_ino`), as `stat` reports it.
    Inode,
    /// The kernel's `dev_t` of the file system (`i_sb->s_dev`: major << 20 | minor).
    Dev,
    /// Major number of the file system's device.
    DevMajor,
    /// Minor number of the file system's device.
    DevMinor,
    /// File system type name (`i_sb->s_type->name`: ext4, tmpfs, …).
    FsType,
    /// Path of the mount the file is on, walked up the mount tree in the kernel.
    ///
    /// Why in the kernel rather than a mount id mapped through
    /// `/proc/self/mountinfo` in user space: the value is then an ordinary
    /// string column, so `WHERE mount_point = '/tmp'`, `LIKE '/mnt/%'`, GROUP BY
    /// and any later expression machinery (JOIN stashes) work unchanged, with no
    /// bind-time translation of literals to ids and no race with mounts that
    /// appear or vanish while the query runs. The cost is a bounded walk
    /// (≤ 32 steps, only in programs that use the column); `mount_id` is there
    /// for the cheap key.
    MountPoint,
    /// Mount id (`/proc/self/mountinfo`'s first field).
    MountId,
    /// The file's name: its dentry's last component.
    FileName,
    /// File position (`f_pos`) when the syscall starts.
    FilePos,
    /// The flags the file was opened with (`f_flags`: `O_DIRECT` is 0x4000,
    /// `O_APPEND` 0x400, … as `fcntl(F_GETFL)` shows them).
    Flags,
    /// An io_uring read or write request's offset (its `struct io_rw`'s
    /// `kiocb.ki_pos`; -1: the file position), at [`request_field`] events
    /// only. Prepared from the SQE before `io_uring_submit_req` fires.
    ReqOffset,
    /// An io_uring read or write request's length in bytes (`struct
    /// io_rw`'s `len`); 0 for the vectored ones (their length counts iovecs)
    /// and every other opcode.
    ReqLen,
    /// At `filemap:mm_filemap_fault`: 1 when the same thread's previous
    /// filemap fault was on this page — the fault run again after
    /// `filemap_fault` dropped the mmap lock to read the page (a major fault
    /// reaches the tracepoint twice), else 0. Pages a fault brought into a
    /// mapping are its rows with `retry = 0`.
    Retry,
    /// At `filemap:mm_filemap_map_pages` (fault-around): the pages this call
    /// mapped into the process, which no filemap fault reports (a cached page
    /// is mapped here and its fault ends without `filemap_fault`). At
    /// `kmem:rss_stat` ([`FINISH_EVENT`]): the pages a filemap fault's
    /// `finish_fault` mapped besides the fault's own page, which its
    /// `mm_filemap_fault` row counts — a large folio is mapped whole (Linux
    /// 6.11 on), after the last tracepoint that names the file. The kernel
    /// keeps no count of either; ebq reads the process's file-page counter
    /// (`mm->rss_stat[MM_FILEPAGES]`, summed over CPUs: exact) at each fault
    /// of the thread (`exceptions:page_fault_user`, `page_fault_kernel`) and
    /// here, and the difference is the pages mapped, less the page the
    /// fault's first filemap fault counted (`codegen::mapped_pages`). Exact
    /// unless another thread of the process maps or unmaps file pages in
    /// between: the counter is the process's, so that thread's pages land
    /// here (never below 0).
    PagesMapped,
    /// At `kmem:rss_stat` ([`FINISH_EVENT`]): the page of the filemap fault
    /// whose `finish_fault` this is (its `mm_filemap_fault` row's `index`).
    FaultIndex,
    /// At an [`address_field`] event: the file offset the address maps
    /// (`vm_pgoff` pages into the file at `vm_start`, plus the address's
    /// distance from it): where in the file an `msync` range starts.
    MapOffset,
    /// Not a user column: the identity `fs_type` is named by late (the
    /// file system type's `struct file_system_type *`), see `plan::late_names`.
    FsTypeId,
    /// The file's `struct dentry *` as a number: the identity `file_name` is
    /// named by late (`plan::late_names`), and a user column too, so a
    /// program that keeps one record per file (`io.ops`' `dentry_id`, read by
    /// `ebq report io`'s kernel fold) reads the name once per record rather
    /// than at every event.
    DentryId,
    /// Not a user column: the identity `mount_point` is named by late (the
    /// file's `struct vfsmount *`, `f_path.mnt`): one load from the file where
    /// `mount_id` takes two (the mount's `mnt_id` behind it), on every event.
    VfsMountId,
    /// Not a user column: the `struct file *` every other column is read from,
    /// looked up once per event.
    Handle,
}

impl FileColumn {
    /// The user-visible file columns, in the order `describe` lists them.
    pub const ALL: [FileColumn; 11] = [
        FileColumn::Inode,
        FileColumn::Dev,
        FileColumn::DevMajor,
        FileColumn::DevMinor,
        FileColumn::FsType,
        FileColumn::MountPoint,
        FileColumn::MountId,
        FileColumn::FileName,
        FileColumn::FilePos,
        FileColumn::Flags,
        FileColumn::DentryId,
    ];

    /// The request columns of [`request_field`] events, besides the file's.
    pub const REQUEST: [FileColumn; 2] = [FileColumn::ReqOffset, FileColumn::ReqLen];

    /// The fault columns of [`FAULT_EVENT`], besides the file's.
    pub const FAULT: [FileColumn; 1] = [FileColumn::Retry];

    /// The columns of [`MAP_PAGES_EVENT`], besides the file's.
    pub const MAP_PAGES: [FileColumn; 1] = [FileColumn::PagesMapped];

    /// The columns of [`FINISH_EVENT`], besides the file's.
    pub const FINISH: [FileColumn; 2] = [FileColumn::PagesMapped, FileColumn::FaultIndex];

    /// The columns of an [`address_field`] event, besides the file's.
    pub const MAPPED: [FileColumn; 1] = [FileColumn::MapOffset];

    /// Capacity of `mount_point` (bytes incl. NUL); longer paths keep their last bytes.
    pub const MOUNT_POINT_CAP: u16 = 64;
    /// Capacity of `file_name`; longer names are cut.
    pub const FILE_NAME_CAP: u16 = 64;
    /// Capacity of `fs_type`.
    pub const FS_TYPE_CAP: u16 = 16;

    /// The column's name in queries for the fd at `end` (`in_inode`).
    pub fn name_at(self, end: FdEnd) -> &'static str {
        /// Names in the order of the enum's variants (`Handle` last).
        const IN: [&str; 20] = [
            "in_inode",
            "in_dev",
            "in_dev_major",
            "in_dev_minor",
            "in_fs_type",
            "in_mount_point",
            "in_mount_id",
            "in_file_name",
            "in_file_pos",
            "in_file_flags",
            "in_req_offset",
            "in_req_len",
            "in_retry",
            "in_pages_mapped",
            "in_fault_index",
            "in_map_offset",
            "in_fs_type_id",
            "in_dentry_id",
            "in_vfsmount_id",
            "in_file",
        ];
        const OUT: [&str; 20] = [
            "out_inode",
            "out_dev",
            "out_dev_major",
            "out_dev_minor",
            "out_fs_type",
            "out_mount_point",
            "out_mount_id",
            "out_file_name",
            "out_file_pos",
            "out_file_flags",
            "out_req_offset",
            "out_req_len",
            "out_retry",
            "out_pages_mapped",
            "out_fault_index",
            "out_map_offset",
            "out_fs_type_id",
            "out_dentry_id",
            "out_vfsmount_id",
            "out_file",
        ];
        match end {
            FdEnd::Only => self.name(),
            FdEnd::In => IN[self as usize],
            FdEnd::Out => OUT[self as usize],
        }
    }

    /// A user-visible file column name with its end: `out_inode` → (Inode, Out).
    pub fn parse(name: &str) -> Option<(FileColumn, FdEnd)> {
        let (end, bare) = if let Some(b) = name.strip_prefix("in_") {
            (FdEnd::In, b)
        } else if let Some(b) = name.strip_prefix("out_") {
            (FdEnd::Out, b)
        } else {
            (FdEnd::Only, name)
        };
        Some((Self::from_name(bare)?, end))
    }

    /// The column's name in queries.
    pub fn name(self) -> &'static str {
        match self {
            FileColumn::Inode => "inode",
            FileColumn::Dev => "dev",
            FileColumn::DevMajor => "dev_major",
            FileColumn::DevMinor => "dev_minor",
            FileColumn::FsType => "fs_type",
            FileColumn::MountPoint => "mount_point",
            FileColumn::MountId => "mount_id",
            FileColumn::FileName => "file_name",
            FileColumn::FilePos => "file_pos",
            FileColumn::Flags => "file_flags",
            FileColumn::ReqOffset => "req_offset",
            FileColumn::ReqLen => "req_len",
            FileColumn::Retry => "retry",
            FileColumn::PagesMapped => "pages_mapped",
            FileColumn::FaultIndex => "fault_index",
            FileColumn::MapOffset => "map_offset",
            FileColumn::FsTypeId => "fs_type_id",
            FileColumn::DentryId => "dentry_id",
            FileColumn::VfsMountId => "vfsmount_id",
            FileColumn::Handle => "file",
        }
    }

    /// Looks a user-visible file column up by name.
    pub fn from_name(name: &str) -> Option<FileColumn> {
        Self::ALL
            .into_iter()
            .chain(Self::REQUEST)
            .chain(Self::FAULT)
            .chain(Self::FINISH)
            .chain(Self::MAPPED)
            .find(|c| c.name() == name)
    }

    /// The column's type.
    pub fn data_type(self) -> DataType {
        match self {
            FileColumn::Inode
            | FileColumn::FilePos
            | FileColumn::Handle
            | FileColumn::MapOffset
            | FileColumn::PagesMapped
            | FileColumn::FaultIndex
            | FileColumn::FsTypeId
            | FileColumn::DentryId
            | FileColumn::VfsMountId => DataType::U64,
            FileColumn::Dev
            | FileColumn::DevMajor
            | FileColumn::DevMinor
            | FileColumn::MountId
            | FileColumn::ReqLen
            | FileColumn::Flags
            | FileColumn::Retry => DataType::U32,
            FileColumn::ReqOffset => DataType::I64,
            FileColumn::FsType => DataType::Str { cap: Self::FS_TYPE_CAP },
            FileColumn::MountPoint => DataType::Str { cap: Self::MOUNT_POINT_CAP },
            FileColumn::FileName => DataType::Str { cap: Self::FILE_NAME_CAP },
        }
    }

    /// One line for `ebq describe`.
    pub fn description(self) -> &'static str {
        match self {
            FileColumn::Inode => "inode number of the fd's file (as stat's st_ino)",
            FileColumn::Dev => "kernel dev_t of the file's file system (major << 20 | minor)",
            FileColumn::DevMajor => "major device number of the file's file system",
            FileColumn::DevMinor => "minor device number of the file's file system",
            FileColumn::FsType => "file system type (ext4, tmpfs, …)",
            FileColumn::MountPoint => "mount point of the file's file system (/, /tmp, …)",
            FileColumn::MountId => "mount id, as in /proc/self/mountinfo",
            FileColumn::FileName => "file name (last path component)",
            FileColumn::FilePos => "file position (f_pos) when the event fires",
            FileColumn::Flags => "flags the file was opened with (f_flags: O_DIRECT 0x4000, O_APPEND 0x400, …)",
            FileColumn::ReqOffset => "a read/write request's offset (-1: the file position; 0 for other opcodes)",
            FileColumn::ReqLen => "a read/write request's bytes (0 for readv/writev and other opcodes)",
            FileColumn::Retry => {
                "1: the thread's previous filemap fault was on this page (the fault run again after the page was read)"
            }
            FileColumn::PagesMapped => {
                "pages this fault-around, or this filemap fault's finish besides its own page, mapped into the \
                 process (its file-page count here less at the fault)"
            }
            FileColumn::FaultIndex => "the page of the filemap fault whose finish this is (0: none)",
            FileColumn::MapOffset => "the file offset the address maps (0 when no file is mapped there)",
            FileColumn::FsTypeId => "the file system type's struct file_system_type (a name's identity)",
            FileColumn::DentryId => "the file's struct dentry (a name's identity)",
            FileColumn::VfsMountId => "the file's struct vfsmount (a name's identity)",
            FileColumn::Handle => "the fd's struct file",
        }
    }
}

/// Every fd of the event with file columns, by end: one ([`FdEnd::Only`], see
/// [`fd_field`]) or, at the two-fd system calls, [`FdEnd::In`] and [`FdEnd::Out`].
pub fn fd_fields(format: &TracepointFormat) -> Vec<(FdEnd, &'static str)> {
    if let Some(fd) = fd_field(format) {
        return vec![(FdEnd::Only, fd)];
    }
    if format.category != "syscalls" || !format.name.starts_with("sys_enter_") {
        return vec![];
    }
    IN_FDS
        .iter()
        .chain(OUT_FDS.iter())
        .filter(|name| aligned_int(format, name))
        .map(|name| (FdEnd::of_field(name), *name))
        .collect()
}

/// The record field of the fd at `end`, if the event has it.
pub fn fd_at(format: &TracepointFormat, end: FdEnd) -> Option<&'static str> {
    fd_fields(format).into_iter().find(|(e, _)| *e == end).map(|(_, fd)| fd)
}

/// An integer field in an aligned 8-byte slot (an fd is declared `unsigned
/// int`, read at that width): the program reads it as `ctx->NAME`.
fn aligned_int(format: &TracepointFormat, name: &str) -> bool {
    format.field(name).is_some_and(|f| {
        f.kind == super::FieldKind::Int && matches!(f.size, 4 | 8) && f.offset >= 8 && f.offset.is_multiple_of(8)
    })
}

/// Events whose file is the one mapped at a user address of the current
/// task, and that address's field: msync's range and a user page fault (the
/// mmap path: a fault on a file mapping names the file, on any file system).
const ADDRESS_EVENTS: [(&str, &str, &str); 2] =
    [("syscalls", "sys_enter_msync", "start"), ("exceptions", "page_fault_user", "address")];

/// The record field holding a user address whose mapping's file the file
/// columns describe (`codegen::file`: `bpf_find_vma`), or `None`. Such an
/// event's [`fd_field`] is that field.
pub fn address_field(format: &TracepointFormat) -> Option<&'static str> {
    ADDRESS_EVENTS
        .iter()
        .find(|(category, name, field)| {
            format.category == *category && format.name == *name && aligned_int(format, field)
        })
        .map(|(_, _, field)| *field)
}

/// The record field holding an io_uring request (`struct io_kiocb *req`),
/// whose file (`req->file`, an fd's or a registered file alike) the file
/// columns describe, or `None`. Such an event's [`fd_field`] is that field.
///
/// The file is read from the request, not from the current task's fd table:
/// a completion may run in another task (a worker, the SQPOLL thread, an
/// interrupt's task work), and a registered file is in no fd table at all.
pub fn request_field(format: &TracepointFormat) -> Option<&'static str> {
    (format.category == "io_uring" && aligned_int(format, "req")).then_some("req")
}

/// How a raw (tp_btf) argument leads to the file the file columns describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawFile {
    /// A direct read or write's `struct kiocb *iocb`: `iocb->ki_filp`.
    Kiocb,
    /// A page cache's `struct address_space *mapping` at a fault on a file
    /// mapping: the file of a VMA that maps it (the root of the mapping's
    /// `i_mmap` tree).
    Mapping,
    /// At `kmem:rss_stat` (argument 0 is the `mm`): the mapping of the
    /// thread's filemap fault, when the event is that fault's finish; the
    /// fault's `mapping` as [`RawFile::Mapping`] reads it.
    Fault,
}

/// Events whose file is reached from a raw argument 0 that no record field
/// holds: iomap's direct-I/O submission and completion (the events that see
/// an AIO `io_submit` request; the file is `iocb->ki_filp`), and filemap's
/// fault and fault-around (the mmap path: the page cache's `mapping`, whose
/// mapped VMAs hold its file), and the file-page counter's change
/// (`kmem:rss_stat`, where a filemap fault's finish maps its pages: the
/// fault's file). Reading a file column there attaches the event as tp_btf.
const RAW_FILE_EVENTS: [(&str, &str, &str, RawFile); 5] = [
    ("iomap", "iomap_dio_rw_begin", "iocb", RawFile::Kiocb),
    ("iomap", "iomap_dio_complete", "iocb", RawFile::Kiocb),
    ("filemap", "mm_filemap_fault", "mapping", RawFile::Mapping),
    ("filemap", "mm_filemap_map_pages", "mapping", RawFile::Mapping),
    ("kmem", "rss_stat", "mm", RawFile::Fault),
];

/// The raw argument whose file the file columns describe at a
/// [`RAW_FILE_EVENTS`] event (`iocb`, `mapping`) and how it leads there, or
/// `None`. Such an event's [`fd_field`] is that argument.
pub fn raw_file_arg(format: &TracepointFormat) -> Option<(&'static str, RawFile)> {
    RAW_FILE_EVENTS
        .iter()
        .find(|(category, name, arg, _)| {
            format.category == *category && format.name == *name && format.field(arg).is_none()
        })
        .map(|(_, _, arg, how)| (*arg, *how))
}

/// True when `fd` (a `bind::ColumnSource::File`'s) names a
/// [`raw_file_arg`]: the side reading it reads raw arguments.
pub fn is_raw_file_arg(fd: &str) -> bool {
    RAW_FILE_EVENTS.iter().any(|(_, _, arg, _)| *arg == fd)
}

/// The file columns of an event with file columns: every one of
/// [`FileColumn::ALL`] but `file_pos` at an [`address_field`] event (a
/// mapping has no file position), at a [`request_field`] event and a
/// [`raw_file_arg`] one (a request carries its own offset, a fault its page;
/// the file's position is some other reader's).
pub fn columns_at(format: &TracepointFormat) -> Vec<FileColumn> {
    let request = request_field(format).is_some();
    let iocb = super::expand::Expansion::named(&format.category, &format.name).is_some();
    let positionless = address_field(format).is_some() || request || raw_file_arg(format).is_some() || iocb;
    let file = FileColumn::ALL.into_iter().filter(|c| !(positionless && *c == FileColumn::FilePos));
    let fault = is_fault_event(format) && raw_file_arg(format).is_some();
    let map_pages = is_map_pages_event(format) && raw_file_arg(format).is_some();
    let finish = is_finish_event(format) && raw_file_arg(format).is_some();
    let mapped = address_field(format).is_some();
    file.chain(FileColumn::REQUEST.into_iter().filter(|_| request))
        .chain(FileColumn::FAULT.into_iter().filter(|_| fault))
        .chain(FileColumn::MAP_PAGES.into_iter().filter(|_| map_pages))
        .chain(FileColumn::FINISH.into_iter().filter(|_| finish))
        .chain(FileColumn::MAPPED.into_iter().filter(|_| mapped))
        .collect()
}

/// The event of [`FileColumn::FAULT`]'s columns: a filemap fault, whose raw
/// arguments are the page cache (`mapping`) and the page (`index`).
pub const FAULT_EVENT: (&str, &str) = ("filemap", "mm_filemap_fault");

/// The event of [`FileColumn::MAP_PAGES`]' columns: fault-around, whose raw
/// arguments are the page cache (`mapping`) and the first and last page it walked.
pub const MAP_PAGES_EVENT: (&str, &str) = ("filemap", "mm_filemap_map_pages");

/// The event of [`FileColumn::FINISH`]'s columns: a change of a process's
/// page counters, which a filemap fault's finish makes when it maps the
/// fault's pages (raw arguments: the `mm` and the counter).
pub const FINISH_EVENT: (&str, &str) = ("kmem", "rss_stat");

/// Why this kernel cannot count [`FileColumn::PagesMapped`], or `None` when
/// it can: the programs attach `tp_btf` to both fault tracepoints, sum the
/// per-CPU `struct percpu_counter` the file-page count is (Linux 6.2 on; an
/// `atomic_long_t` before), and look the CPUs' offsets up with
/// `bpf_map_lookup_percpu_elem` (Linux 5.19 on).
pub fn pages_mapped_problem(kernel: &dyn crate::host::KernelInfo) -> Option<String> {
    let Some(btf) = kernel.btf() else { return Some("the kernel has no BTF".into()) };
    for tp in ["exceptions:page_fault_user", "exceptions:page_fault_kernel", "filemap:mm_filemap_fault"] {
        if btf.tracepoint_args(tp.split_once(':').map_or(tp, |(_, name)| name)).is_none() {
            return Some(format!("no tp_btf attachment to {tp} (x86 has the exceptions)"));
        }
    }
    let percpu = btf
        .find("mm_struct", crate::btf::KindTag::Struct)
        .and_then(|mm| btf.struct_members(mm))
        .is_some_and(|m| m.iter().any(|f| f.name == "rss_stat" && f.c_type.starts_with("struct percpu_counter")));
    if !percpu {
        return Some("its file-page count is not a per-CPU counter (mm_struct.rss_stat: Linux 6.2 on)".into());
    }
    if btf.find("bpf_map_lookup_percpu_elem", crate::btf::KindTag::Func).is_none() {
        return Some("no bpf_map_lookup_percpu_elem (Linux 5.19 on)".into());
    }
    None
}

/// Why this kernel cannot count a filemap fault's finish at [`FINISH_EVENT`],
/// or `None` when it can: [`pages_mapped_problem`]'s needs, a `tp_btf`
/// attachment to `kmem:rss_stat`, `bpf_rdonly_cast` and `bpf_find_vma` (the
/// file of a fault's address), and preemptible RCU (a task's
/// `rcu_read_lock_nesting`), which tells fault-around's count (under the RCU
/// read lock; its own event counts it) from the finish's.
pub fn finish_problem(kernel: &dyn crate::host::KernelInfo) -> Option<String> {
    if let Some(why) = pages_mapped_problem(kernel) {
        return Some(why);
    }
    let btf = kernel.btf()?;
    if btf.tracepoint_args(FINISH_EVENT.1).is_none() {
        return Some(format!("no tp_btf attachment to {}:{}", FINISH_EVENT.0, FINISH_EVENT.1));
    }
    for kfunc in ["bpf_rdonly_cast", "bpf_find_vma"] {
        if btf.find(kfunc, crate::btf::KindTag::Func).is_none() {
            return Some(format!("no {kfunc} (a fault's file is read through it; Linux 6.2 on)"));
        }
    }
    let nesting = btf
        .find("task_struct", crate::btf::KindTag::Struct)
        .and_then(|t| btf.struct_members(t))
        .is_some_and(|m| m.iter().any(|f| f.name == "rcu_read_lock_nesting"));
    (!nesting).then(|| {
        "a fault's finish is told from fault-around by the task's RCU read-lock nesting, and this kernel's RCU is \
         not preemptible (no task_struct.rcu_read_lock_nesting)"
            .into()
    })
}

/// True at [`FINISH_EVENT`].
pub fn is_finish_event(format: &TracepointFormat) -> bool {
    (format.category.as_str(), format.name.as_str()) == FINISH_EVENT
}

/// True at [`MAP_PAGES_EVENT`].
pub fn is_map_pages_event(format: &TracepointFormat) -> bool {
    (format.category.as_str(), format.name.as_str()) == MAP_PAGES_EVENT
}

/// True at [`FAULT_EVENT`].
pub fn is_fault_event(format: &TracepointFormat) -> bool {
    (format.category.as_str(), format.name.as_str()) == FAULT_EVENT
}

/// The record field holding the one fd whose file the (unprefixed) file
/// columns describe, or `None` when the event has none. At an
/// [`address_field`] event it is the address.
///
/// Only syscall events qualify: their fd is an fd of the current task, which
/// is the table the kernel program looks it up in.
pub fn fd_field(format: &TracepointFormat) -> Option<&'static str> {
    let raw = || raw_file_arg(format).map(|(arg, _)| arg);
    if let Some(field) = address_field(format).or_else(|| request_field(format)).or_else(raw) {
        return Some(field);
    }
    // An iocb's fd, of the task that submits it.
    if super::expand::Expansion::named(&format.category, &format.name) == Some(super::expand::Expansion::AioSubmit) {
        return Some("fd");
    }
    // Every system call: the first argument is the fd of the fd-taking ones
    // (read, write, pread64, …), so queries filter on `id` to mean it.
    if format.category == "raw_syscalls" && format.name == "sys_enter" {
        let aligned = format.field("args").is_some_and(|f| {
            matches!(f.kind, super::FieldKind::IntArray { elem_size: 8, .. }) && f.offset.is_multiple_of(8)
        });
        return aligned.then_some("args[0]");
    }
    // Every system call's exit: `ret` is the new fd of the opening ones.
    if format.category == "raw_syscalls" && format.name == "sys_exit" {
        let aligned =
            format.field("ret").is_some_and(|f| f.kind == super::FieldKind::Int && f.size == 8 && f.offset % 8 == 0);
        return aligned.then_some("ret");
    }
    if format.category != "syscalls" {
        return None;
    }
    let int = |name: &str| aligned_int(format, name);
    if format.name.starts_with("sys_enter_") && int("fd") {
        Some("fd")
    } else if OPEN_EXITS.contains(&format.name.as_str()) && int("ret") {
        Some("ret")
    } else {
        None
    }
}

/// Which events have file columns, for error messages.
pub const WHICH_EVENTS: &str = "file columns exist at syscall events with an `fd` argument \
(syscalls:sys_enter_read, sys_enter_pwrite64, sys_enter_fsync, …) and at sys_exit_open, \
sys_exit_openat, sys_exit_openat2 and sys_exit_creat (the new fd in `ret`), and at raw_syscalls:sys_enter \
(its first argument as the fd: filter on `id` for fd-taking calls) and raw_syscalls:sys_exit (`ret` as the fd, \
for opening calls), at sys_enter_msync and exceptions:page_fault_user (the file mapped at `start` or \
`address`, on kernels with bpf_find_vma and bpf_rdonly_cast, 6.2+; no file_pos there), at io_uring events with a \
`req` (io_uring_submit_req, io_uring_complete, …: the request's file, an fd's or a registered one; no file_pos), at \
iomap:iomap_dio_rw_begin and iomap_dio_complete (the direct I/O's `iocb->ki_filp`; no file_pos) and at \
filemap:mm_filemap_fault and mm_filemap_map_pages (a file mapping the faulting page cache's `mapping`; no file_pos), \
at kmem:rss_stat (the file of the filemap fault whose finish it is; no file_pos); \
the two-fd calls (sys_enter_copy_file_range, sys_enter_sendfile64, sys_enter_splice, sys_enter_tee) \
have `in_` and `out_` columns (in_inode, out_file_name, …)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn which_events_have_file_columns() {
        let cat = Catalog::fixture();
        for (category, name, want) in [
            ("syscalls", "sys_enter_pread64", Some("fd")),
            ("syscalls", "sys_enter_write", Some("fd")),
            ("syscalls", "sys_exit_openat", Some("ret")),
            ("syscalls", "sys_exit_pread64", None),
            ("syscalls", "sys_enter_openat", None),
            ("sched", "sched_process_fork", None),
            ("raw_syscalls", "sys_enter", Some("args[0]")),
            ("syscalls", "sys_enter_msync", Some("start")),
            ("exceptions", "page_fault_user", Some("address")),
            ("io_uring", "io_uring_complete", Some("req")),
            ("io_uring", "io_uring_submit_req", Some("req")),
            ("iomap", "iomap_dio_rw_begin", Some("iocb")),
            ("filemap", "mm_filemap_fault", Some("mapping")),
            ("filemap", "mm_filemap_map_pages", Some("mapping")),
            ("kmem", "rss_stat", Some("mm")),
        ] {
            assert_eq!(fd_field(&cat.tracepoint(category, name).unwrap()), want, "{category}:{name}");
        }
    }

    #[test]
    fn names_round_trip_and_the_handle_is_hidden() {
        for c in FileColumn::ALL {
            assert_eq!(FileColumn::from_name(c.name()), Some(c));
        }
        assert_eq!(FileColumn::from_name("file"), None, "the struct file handle is not a user column");
    }
}

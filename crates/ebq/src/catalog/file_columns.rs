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

use super::TracepointFormat;
use crate::types::DataType;

/// Exit events whose `ret` is a new fd.
const OPEN_EXITS: [&str; 4] = ["sys_exit_open", "sys_exit_openat", "sys_exit_openat2", "sys_exit_creat"];

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
    /// Not a user column: the `struct file *` every other column is read from,
    /// looked up once per event.
    Handle,
}

impl FileColumn {
    /// The user-visible file columns, in the order `describe` lists them.
    pub const ALL: [FileColumn; 9] = [
        FileColumn::Inode,
        FileColumn::Dev,
        FileColumn::DevMajor,
        FileColumn::DevMinor,
        FileColumn::FsType,
        FileColumn::MountPoint,
        FileColumn::MountId,
        FileColumn::FileName,
        FileColumn::FilePos,
    ];

    /// Capacity of `mount_point` (bytes incl. NUL); longer paths keep their last bytes.
    pub const MOUNT_POINT_CAP: u16 = 64;
    /// Capacity of `file_name`; longer names are cut.
    pub const FILE_NAME_CAP: u16 = 64;
    /// Capacity of `fs_type`.
    pub const FS_TYPE_CAP: u16 = 16;

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
            FileColumn::Handle => "file",
        }
    }

    /// Looks a user-visible file column up by name.
    pub fn from_name(name: &str) -> Option<FileColumn> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The column's type.
    pub fn data_type(self) -> DataType {
        match self {
            FileColumn::Inode | FileColumn::FilePos | FileColumn::Handle => DataType::U64,
            FileColumn::Dev | FileColumn::DevMajor | FileColumn::DevMinor | FileColumn::MountId => DataType::U32,
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
            FileColumn::Handle => "the fd's struct file",
        }
    }
}

/// The record field holding the fd whose file the file columns describe, or
/// `None` when the event has no file columns.
///
/// Only syscall events qualify: their fd is an fd of the current task, which
/// is the table the kernel program looks it up in.
pub fn fd_field(format: &TracepointFormat) -> Option<&'static str> {
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
    // An aligned 8-byte integer: the program reads it as `ctx->fd` (or `ctx->ret`).
    let int = |name: &str| {
        format.field(name).is_some_and(|f| {
            f.kind == super::FieldKind::Int && f.size == 8 && f.offset >= 8 && f.offset.is_multiple_of(8)
        })
    };
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
for opening calls)";

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

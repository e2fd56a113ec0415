//! Columns every event has, produced by BPF helpers rather than read from the record.

use crate::types::DataType;

/// A column available on every event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SystemColumn {
    /// Event time in nanoseconds, CLOCK_MONOTONIC (`bpf_ktime_get_ns`).
    Time,
    /// Process id (the kernel's tgid).
    Pid,
    /// Parent process id: the real parent's tgid (bpftrace's `curtask->real_parent->tgid`).
    Ppid,
    /// Thread id (the kernel's pid).
    Tid,
    /// Real user id.
    Uid,
    /// Real group id.
    Gid,
    /// Task command name, at most 15 bytes.
    Comm,
    /// CPU the event ran on.
    Cpu,
    /// cgroup v2 id of the task.
    Cgroup,
    /// Kernel call stack (`bpf_get_stackid`), shown as symbolized frames.
    Kstack,
    /// User call stack (`BPF_F_USER_STACK`), shown as symbolized frames.
    Ustack,
}

impl SystemColumn {
    /// All system columns, in the order `describe` lists them.
    pub const ALL: [SystemColumn; 11] = [
        SystemColumn::Time,
        SystemColumn::Pid,
        SystemColumn::Ppid,
        SystemColumn::Tid,
        SystemColumn::Uid,
        SystemColumn::Gid,
        SystemColumn::Comm,
        SystemColumn::Cpu,
        SystemColumn::Cgroup,
        SystemColumn::Kstack,
        SystemColumn::Ustack,
    ];

    /// The column's name in queries.
    pub fn name(self) -> &'static str {
        match self {
            SystemColumn::Time => "time",
            SystemColumn::Pid => "pid",
            SystemColumn::Ppid => "ppid",
            SystemColumn::Tid => "tid",
            SystemColumn::Uid => "uid",
            SystemColumn::Gid => "gid",
            SystemColumn::Comm => "comm",
            SystemColumn::Cpu => "cpu",
            SystemColumn::Cgroup => "cgroup",
            SystemColumn::Kstack => "kstack",
            SystemColumn::Ustack => "ustack",
        }
    }

    /// Looks a system column up by name.
    pub fn from_name(name: &str) -> Option<SystemColumn> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The column's type.
    pub fn data_type(self) -> DataType {
        match self {
            SystemColumn::Time | SystemColumn::Cgroup => DataType::U64,
            SystemColumn::Comm => DataType::Str { cap: 16 },
            SystemColumn::Kstack => DataType::Stack { user: false },
            SystemColumn::Ustack => DataType::Stack { user: true },
            _ => DataType::U32,
        }
    }

    /// One line for `ebq describe`.
    pub fn description(self) -> &'static str {
        match self {
            SystemColumn::Time => "event time, ns since boot (CLOCK_MONOTONIC)",
            SystemColumn::Pid => "process id (tgid)",
            SystemColumn::Ppid => "parent process id (the real parent's tgid; a reparented orphan's is its reaper's)",
            SystemColumn::Tid => "thread id",
            SystemColumn::Uid => "real user id",
            SystemColumn::Gid => "real group id",
            SystemColumn::Comm => "task command name",
            SystemColumn::Cpu => "CPU number",
            SystemColumn::Cgroup => "cgroup v2 id",
            SystemColumn::Kstack => "kernel stack, innermost frame first (`func+0xOFF; …`)",
            SystemColumn::Ustack => "user stack, innermost frame first, symbolized from /proc/PID/maps",
        }
    }
}

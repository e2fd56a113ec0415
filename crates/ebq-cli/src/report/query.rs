//! The report's one ebq query and the conversion of its rows into
//! [`Operation`]s: the only place that knows the report is fed by system
//! calls. Everything after it (the Darshan fold, the trace, the HTML) sees
//! path-agnostic operations, so other I/O paths can feed the same fold.

use super::{FileKey, OpKind, Operation};
use ebq::runtime::Value;
use std::collections::HashMap;

/// The query behind the report: column order is what [`Decoder::operation`] reads.
///
/// The kernel pairs each call's entry with its exit by thread and call
/// number. Calls on an fd take their file columns from the entry (the fd
/// argument); opens from the exit (the fd they return). The offset of a
/// read or write is `f_pos` at entry, or the `pread64`/`pwrite64` argument.
/// What the exit knows as well (call number, pid) is read there: every
/// entry column is stashed until the exit, and the stash shares the entry
/// program's 512-byte stack with the file columns' strings.
pub const SQL: &str = "SELECT e.time, x.id, e.inode, e.dev, e.fs_type, e.mount_point, e.file_name, \
x.inode, x.dev, x.file_name, args[2] AS size, \
CASE WHEN e.id IN (syscall_nr('pread64'), syscall_nr('pwrite64')) THEN args[3] ELSE e.file_pos END AS offset, \
x.ret, x.time - e.time AS latency, x.pid, args[1] AS buf, x.fs_type, x.mount_point \
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id \
WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'), \
syscall_nr('open'), syscall_nr('openat'), syscall_nr('creat'), syscall_nr('close'), syscall_nr('lseek'), \
syscall_nr('fsync'), syscall_nr('fdatasync'))";

fn num(v: &Value) -> u64 {
    match v {
        Value::U(x) => *x,
        Value::I(x) => *x as u64,
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::S(s) => s.clone(),
        _ => String::new(),
    }
}

/// Turns rows into operations; system call numbers are looked up once.
pub struct Decoder {
    kinds: HashMap<i64, OpKind>,
    /// pread64 and pwrite64: calls that give their offset.
    positioned: [Option<i64>; 2],
}

impl Decoder {
    /// A decoder for the running kernel's system call numbers.
    pub fn new() -> Decoder {
        let named = [
            ("read", OpKind::Read),
            ("pread64", OpKind::Read),
            ("write", OpKind::Write),
            ("pwrite64", OpKind::Write),
            ("open", OpKind::Open),
            ("openat", OpKind::Open),
            ("creat", OpKind::Open),
            ("close", OpKind::Close),
            ("lseek", OpKind::Seek),
            ("fsync", OpKind::Fsync),
            ("fdatasync", OpKind::Fdatasync),
        ];
        let kinds = named.into_iter().filter_map(|(n, k)| Some((ebq::catalog::syscall_nr(n)?, k))).collect();
        let positioned = ["pread64", "pwrite64"].map(ebq::catalog::syscall_nr);
        Decoder { kinds, positioned }
    }

    /// One row of [`SQL`] as an operation; `None` when the call has no file
    /// (a failed open, a bad fd, an fd without an inode).
    pub fn operation(&self, r: &[Value]) -> Option<Operation> {
        let id = num(&r[1]) as i64;
        let op = *self.kinds.get(&id)?;
        // Opens name the file by the fd they return (exit side); the rest by their fd argument.
        let open = op == OpKind::Open;
        let f = if open { 7 } else { 2 };
        let inode = num(&r[f]);
        if inode == 0 {
            return None;
        }
        let dev = num(&r[f + 1]);
        let start = num(&r[0]);
        let (fs_type, mount_point) = if open { (text(&r[16]), text(&r[17])) } else { (text(&r[4]), text(&r[5])) };
        let reads_or_writes = matches!(op, OpKind::Read | OpKind::Write);
        Some(Operation {
            path: text(&r[if open { 9 } else { 6 }]),
            op,
            pid: num(&r[14]) as u32,
            rank: None,
            // The kernel's dev_t: major << 20 | minor.
            file: FileKey { dev_major: (dev >> 20) as u32, dev_minor: (dev & 0xf_ffff) as u32, inode },
            fs_type,
            mount_point,
            offset: if reads_or_writes { num(&r[11]) as i64 } else { 0 },
            positioned: self.positioned.contains(&Some(id)),
            asked: if reads_or_writes { num(&r[10]) } else { 0 },
            result: num(&r[12]) as i64,
            mem: reads_or_writes.then(|| num(&r[15])),
            start_ns: start,
            end_ns: start + num(&r[13]),
        })
    }
}

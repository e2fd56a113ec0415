//! The report's one ebq query and the conversion of its rows into
//! [`Operation`]s: the only place that knows the report is fed by system
//! calls, io_uring and AIO requests and mapped pages. Everything after it (the Darshan fold, the
//! trace, the HTML) sees operations tagged with their [`Via`] only.

use super::mounts::Mounts;
use super::{FileKey, OpKind, Operation, Via};
use ebq::host::SyscallTable;
use ebq::runtime::Value;
use std::collections::HashMap;

/// The query behind the report: column order is what [`Decoder::operation`] reads.
///
/// A union of the paths a file operation takes, one row per operation:
/// - `path` 0, system calls (read, pread64, readv, preadv, preadv2, the
///   writes alike, close, lseek, fsync, fdatasync; and
///   io_submit, whose return is the AIO requests it submitted, no file's
///   operation: [`Decoder::submitted`]): the kernel pairs each call's entry
///   with its exit by thread and call number.
///   Calls on an fd take their file columns from the entry (the fd
///   argument): the file's mount as its id (`mount_id`), named once per
///   mount in user space ([`super::mounts`]), not as two strings per call. Opens (open, openat, creat) are branches of their own, on
///   their own tracepoints, with the file columns of the fd they return
///   (the `open_*` columns): so no other call's exit reads a file (the
///   exit's file columns are those of `ret` read as an fd). The offset of a
///   read or write is `f_pos` at entry, or the offset argument of `pread64`,
///   `pwrite64` and the p…v(2) calls. What the exit knows as well (call
///   number, pid) is read there: every entry column is stashed until the
///   exit, and the stash shares the entry program's 512-byte stack with the
///   file columns' strings.
/// - `path` 2, io_uring requests: submission paired with completion on the
///   request; `id` is the operation (0 read: READ, READ_FIXED; 1 write:
///   WRITE, WRITE_FIXED; 2 fsync: FSYNC — opcodes by name, `io_uring_op`),
///   the offset and length are the prepared request's (`req_offset`,
///   `req_len`), the file is the request's (an fd's or a registered one,
///   read at completion), the pid the submitter's.
///   Reads, writes and fsyncs: io_uring's opens and closes carry no file in
///   the request (an open's is its result fd), so they are left out.
/// - `path` 3, AIO (`io_submit`) reads and writes: iomap's direct-I/O
///   submission paired with its completion on the `struct kiocb`, for kiocbs
///   flagged IOCB_AIO_RW (`print_flag(…, 'AIO_RW')`, `1 << 23` on 6.18); `id` 1 for a write (IOCB_WRITE,
///   `print_flag(…, 'WRITE')`), else 0; the file is the kiocb's, read at completion as
///   io_uring's is; offset `ki_pos`, size the iterator's count.
///   And every other AIO request (buffered ones, which run inside
///   `io_submit`, and FSYNC/FDSYNC): the iocb as `io_submit` was given it
///   (`aio.submit`: opcode, fd's file, offset, length) paired with the
///   `io_event` `io_getevents` returned for it (`aio.complete`: the result);
///   `id` 0 PREAD/PREADV, 1 PWRITE/PWRITEV, 2 FSYNC/FDSYNC; a vectored
///   request's size is its result. The latency runs to the reap, the only
///   completion a buffered request has that a program sees. O_DIRECT files'
///   reads and writes are left to iomap's events (0x4000: O_DIRECT).
/// - `path` 4, the pages faults bring into file mappings, io.ops' `mmap`
///   path: a filemap fault's page (`retry` 0), the pages a fault-around
///   mapped and those a fault's finish or a PMD fault-around mapped whole
///   (`pages_mapped`); `id` 0, the file the fault's page cache's, offset the
///   first page's, size and `ret` the bytes, latency 0. Darshan sees none of
///   them (no call): they count in `EBQ_MMAP_*` only.
pub fn sql(syscalls: &SyscallTable) -> String {
    let mut sql = file_calls_and_requests();
    for call in OPEN_CALLS.iter().filter(|c| syscalls.nr(c).is_some()) {
        sql.push_str(&open_branch(call));
    }
    sql.push_str(") u");
    sql
}

/// The system calls that open a file (those this machine has get a branch each).
pub const OPEN_CALLS: [&str; 3] = ["open", "openat", "creat"];

/// An open's branch: its entry paired with its exit on the thread; the file
/// is the fd it returned (the exit's file columns), which only an open's
/// exit reads.
fn open_branch(call: &str) -> String {
    format!(
        " UNION ALL SELECT e.time AS time, {path} AS path, syscall_nr('{call}') AS id, 0 AS inode, 0 AS dev, '' AS fs_type, \
'' AS mount_point, '' AS file_name, x.inode AS open_inode, x.dev AS open_dev, x.file_name AS open_file_name, \
0 AS size, 0 AS offset, x.ret AS ret, x.time - e.time AS latency, x.pid AS pid, 0 AS buf, \
x.fs_type AS open_fs_type, x.mount_point AS open_mount_point, 0 AS mount_id, x.tid AS tid \
FROM syscalls.sys_enter_{call} e JOIN syscalls.sys_exit_{call} x ON e.tid = x.tid",
        path = Via::Syscall.code()
    )
}

/// Every branch but the opens' ([`sql`] appends them and closes the union):
/// paths are [`Via::code`]s, a request's `id` its kind's index in [`REQUEST_KINDS`].
fn file_calls_and_requests() -> String {
    format!(
        "SELECT time, path, id, inode, dev, fs_type, mount_point, file_name, \
open_inode, open_dev, open_file_name, size, offset, ret, latency, pid, buf, open_fs_type, open_mount_point, \
mount_id, tid FROM ( \
SELECT e.time AS time, {syscall} AS path, x.id AS id, e.inode AS inode, e.dev AS dev, '' AS fs_type, \
'' AS mount_point, e.file_name AS file_name, 0 AS open_inode, 0 AS open_dev, \
'' AS open_file_name, args[2] AS size, \
CASE WHEN e.id IN (syscall_nr('pread64'), syscall_nr('pwrite64'), syscall_nr('preadv'), syscall_nr('pwritev'), \
syscall_nr('preadv2'), syscall_nr('pwritev2')) THEN args[3] ELSE e.file_pos END AS offset, \
x.ret AS ret, x.time - e.time AS latency, x.pid AS pid, args[1] AS buf, '' AS open_fs_type, \
'' AS open_mount_point, e.mount_id AS mount_id, x.tid AS tid \
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id \
WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'), \
syscall_nr('readv'), syscall_nr('writev'), syscall_nr('preadv'), syscall_nr('pwritev'), syscall_nr('preadv2'), \
syscall_nr('pwritev2'), syscall_nr('close'), syscall_nr('lseek'), \
syscall_nr('fsync'), syscall_nr('fdatasync'), syscall_nr('io_submit')) \
UNION ALL \
SELECT s.time AS time, {io_uring} AS path, \
CASE WHEN s.opcode IN (io_uring_op('WRITE'), io_uring_op('WRITE_FIXED')) THEN {write} \
WHEN s.opcode = io_uring_op('FSYNC') THEN {fsync} ELSE {read} END AS id, c.inode AS inode, c.dev AS dev, c.fs_type AS fs_type, \
c.mount_point AS mount_point, c.file_name AS file_name, 0 AS open_inode, 0 AS open_dev, \
c.file_name AS open_file_name, s.req_len AS size, s.req_offset AS offset, c.res AS ret, c.time - s.time AS latency, \
s.pid AS pid, 0 AS buf, c.fs_type AS open_fs_type, c.mount_point AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req \
WHERE s.opcode IN (io_uring_op('FSYNC'), io_uring_op('READ_FIXED'), io_uring_op('WRITE_FIXED'), \
io_uring_op('READ'), io_uring_op('WRITE')) \
UNION ALL \
SELECT b.time AS time, {aio} AS path, CASE WHEN b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'WRITE') != 0 THEN {write} ELSE {read} END AS id, \
c.inode AS inode, c.dev AS dev, c.fs_type AS fs_type, c.mount_point AS mount_point, c.file_name AS file_name, \
0 AS open_inode, 0 AS open_dev, c.file_name AS open_file_name, b.iter.count AS size, b.iocb.ki_pos AS offset, \
c.ret AS ret, c.time - b.time AS latency, b.pid AS pid, 0 AS buf, c.fs_type AS open_fs_type, \
c.mount_point AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM iomap.iomap_dio_rw_begin b JOIN iomap.iomap_dio_complete c ON b.iocb = c.iocb \
WHERE b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO_RW') != 0 \
UNION ALL \
SELECT s.time AS time, {aio} AS path, CASE WHEN s.opcode IN (1, 8) THEN {write} WHEN s.opcode IN (2, 3) THEN {fsync} ELSE {read} END AS id, \
s.inode AS inode, s.dev AS dev, s.fs_type AS fs_type, s.mount_point AS mount_point, s.file_name AS file_name, \
0 AS open_inode, 0 AS open_dev, s.file_name AS open_file_name, \
CASE WHEN s.opcode IN (0, 1) THEN s.nbytes WHEN s.opcode IN (7, 8) THEN c.res ELSE 0 END AS size, \
s.offset AS offset, c.res AS ret, c.time - s.time AS latency, s.pid AS pid, 0 AS buf, s.fs_type AS open_fs_type, \
s.mount_point AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM aio.submit s JOIN aio.complete c ON s.pid = c.pid AND s.iocb = c.iocb \
WHERE s.opcode IN (2, 3) OR (s.opcode IN (0, 1, 7, 8) AND s.file_flags & 16384 = 0) \
UNION ALL \
SELECT f.time AS time, {mmap} AS path, {read} AS id, f.inode AS inode, f.dev AS dev, f.fs_type AS fs_type, \
f.mount_point AS mount_point, f.file_name AS file_name, 0 AS open_inode, 0 AS open_dev, '' AS open_file_name, \
4096 AS size, f.index * 4096 AS offset, 4096 AS ret, 0 AS latency, f.pid AS pid, 0 AS buf, '' AS open_fs_type, \
'' AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM filemap.mm_filemap_fault f WHERE f.retry = 0 \
UNION ALL \
SELECT m.time AS time, {mmap} AS path, {read} AS id, m.inode AS inode, m.dev AS dev, m.fs_type AS fs_type, \
m.mount_point AS mount_point, m.file_name AS file_name, 0 AS open_inode, 0 AS open_dev, '' AS open_file_name, \
m.pages_mapped * 4096 AS size, m.index * 4096 AS offset, m.pages_mapped * 4096 AS ret, 0 AS latency, m.pid AS pid, \
0 AS buf, '' AS open_fs_type, '' AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM filemap.mm_filemap_map_pages m WHERE m.pages_mapped > 0 \
UNION ALL \
SELECT r.time AS time, {mmap} AS path, {read} AS id, r.inode AS inode, r.dev AS dev, r.fs_type AS fs_type, \
r.mount_point AS mount_point, r.file_name AS file_name, 0 AS open_inode, 0 AS open_dev, '' AS open_file_name, \
r.pages_mapped * 4096 AS size, r.fault_index * 4096 AS offset, r.pages_mapped * 4096 AS ret, 0 AS latency, \
r.pid AS pid, 0 AS buf, '' AS open_fs_type, '' AS open_mount_point, 0 AS mount_id, 0 AS tid \
FROM kmem.rss_stat r WHERE r.pages_mapped > 0",
        syscall = Via::Syscall.code(),
        io_uring = Via::IoUring.code(),
        aio = Via::Aio.code(),
        mmap = Via::Mmap.code(),
        read = request_id(OpKind::Read),
        write = request_id(OpKind::Write),
        fsync = request_id(OpKind::Fsync),
    )
}

/// What an io_uring or AIO row's `id` says: the SQL folds opcodes and kiocb
/// flags into their index here (0 read, 1 write, 2 fsync), and the kernel
/// fold's C compares the same (`EBQ_FOLD_REQUEST_*`, [`super::fold_c`]).
pub const REQUEST_KINDS: [OpKind; 3] = [OpKind::Read, OpKind::Write, OpKind::Fsync];

/// The `id` of a request row doing `kind` (one of [`REQUEST_KINDS`]).
fn request_id(kind: OpKind) -> usize {
    REQUEST_KINDS.iter().position(|k| *k == kind).expect("a request kind")
}

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
    /// pread64, pwrite64 and the p…v(2) calls: calls that give their offset.
    positioned: [Option<i64>; 6],
    /// The …v calls: their size is in user memory (iovecs), not an argument.
    vectored: [Option<i64>; 6],
    /// `io_submit`: its rows count AIO requests, they are no file's operations.
    io_submit: Option<i64>,
    /// The system-call rows' mounts, by id.
    mounts: Mounts,
}

impl Decoder {
    /// A decoder for the traced kernel's system call numbers.
    pub fn new(syscalls: &SyscallTable) -> Decoder {
        let named = [
            ("read", OpKind::Read),
            ("pread64", OpKind::Read),
            ("readv", OpKind::Read),
            ("preadv", OpKind::Read),
            ("preadv2", OpKind::Read),
            ("write", OpKind::Write),
            ("pwrite64", OpKind::Write),
            ("writev", OpKind::Write),
            ("pwritev", OpKind::Write),
            ("pwritev2", OpKind::Write),
            ("open", OpKind::Open),
            ("openat", OpKind::Open),
            ("creat", OpKind::Open),
            ("close", OpKind::Close),
            ("lseek", OpKind::Seek),
            ("fsync", OpKind::Fsync),
            ("fdatasync", OpKind::Fdatasync),
        ];
        let kinds = named.into_iter().filter_map(|(n, k)| Some((syscalls.nr(n)?, k))).collect();
        let positioned = ["pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2"].map(|n| syscalls.nr(n));
        let vectored = ["readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"].map(|n| syscalls.nr(n));
        Decoder { kinds, positioned, vectored, io_submit: syscalls.nr("io_submit"), mounts: Mounts::read() }
    }

    /// The mount table system-call rows are named from (read when the
    /// decoder was made, re-read on an unknown id): the kernel fold's records
    /// are named from it too.
    pub fn mounts(&mut self) -> &mut Mounts {
        &mut self.mounts
    }

    /// The AIO requests an `io_submit` row submitted (its return value), or
    /// `None` for every other row. The report compares them with the AIO
    /// requests it saw run (`aio` rows): an O_DIRECT request on a file system
    /// without iomap's direct I/O reaches no event the report reads, and that
    /// must not pass unsaid.
    pub fn submitted(&self, r: &[Value]) -> Option<u64> {
        (num(&r[1]) == Via::Syscall.code() && Some(num(&r[2]) as i64) == self.io_submit)
            .then(|| (num(&r[13]) as i64).max(0) as u64)
    }

    /// One row of [`sql`] as an operation; `None` when the call has no file
    /// (a failed open, a bad fd, an fd without an inode).
    pub fn operation(&mut self, r: &[Value]) -> Option<Operation> {
        let (path, id) = (num(&r[1]), num(&r[2]) as i64);
        let via = Via::of_code(path)?;
        let op = match via {
            Via::Syscall => *self.kinds.get(&id)?,
            Via::IoUring | Via::Aio => *REQUEST_KINDS.get(id as usize)?,
            Via::Mmap => OpKind::Map,
        };
        // Opens name the file by the fd they return (exit side); the rest by their fd argument.
        let open = op == OpKind::Open;
        let f = if open { 8 } else { 3 };
        let inode = num(&r[f]);
        if inode == 0 {
            return None;
        }
        let dev = num(&r[f + 1]);
        let start = num(&r[0]);
        let (fs_type, mount_point) = if open {
            (text(&r[17]), text(&r[18]))
        } else if let Some(m) = self.mounts.get(num(&r[19]) as u32) {
            // A system call's file is named by its mount's id.
            (m.fs_type.clone(), m.mount_point.clone())
        } else {
            (text(&r[5]), text(&r[6]))
        };
        let reads_or_writes = matches!(op, OpKind::Read | OpKind::Write | OpKind::Map);
        let offset = num(&r[12]) as i64;
        let vectored = via == Via::Syscall && self.vectored.contains(&Some(id));
        Some(Operation {
            path: text(&r[if open { 10 } else { 7 }]),
            op,
            via,
            pid: num(&r[15]) as u32,
            tid: num(&r[20]) as u32,
            rank: None,
            // The kernel's dev_t: major << 20 | minor.
            file: FileKey { dev_major: (dev >> 20) as u32, dev_minor: (dev & 0xf_ffff) as u32, inode },
            fs_type,
            mount_point,
            offset: if reads_or_writes { offset } else { 0 },
            // An io_uring request or a p…v2 call at offset -1 reads or writes at the file position.
            positioned: offset >= 0
                && match via {
                    Via::Syscall => self.positioned.contains(&Some(id)),
                    Via::IoUring | Via::Aio | Via::Mmap => true,
                },
            // A vectored call's size is in its iovecs: what it returned stands for what it asked.
            asked: match (reads_or_writes, vectored) {
                (false, _) => 0,
                (true, true) => (num(&r[13]) as i64).max(0) as u64,
                (true, false) => num(&r[11]),
            },
            result: num(&r[13]) as i64,
            // Neither a request's buffer nor a vectored call's is read: no memory alignment for them.
            mem: (reads_or_writes && via == Via::Syscall && !vectored).then(|| num(&r[16])),
            start_ns: start,
            end_ns: start + num(&r[14]),
        })
    }
}

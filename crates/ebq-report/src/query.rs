//! The report's one ebq query and the conversion of its rows into
//! [`Operation`]s: the only place that knows the report is fed by system
//! calls, io_uring and AIO requests and mapped pages. Everything after it (the Darshan fold, the
//! trace, the HTML) sees operations tagged with their [`Via`] only.

use super::mounts::Mounts;
use super::stdio;
use super::{FileKey, OpKind, Operation, Via};
use ebq::host::SyscallTable;
use ebq::runtime::Value;
use std::collections::HashMap;

/// The query behind the report: column order is what [`Decoder::operation`] reads.
///
/// Most rows are `io.ops`' (the view, `catalog/views/io_ops.sql`, is the
/// one place that says how a file operation is read from the kernel), one
/// row per operation; the report picks its paths and calls, and names them
/// with the codes the kernel fold compares ([`Via::code`], [`REQUEST_KINDS`]):
/// - `path` 0, system calls: read, pread64, readv, preadv, preadv2, the
///   writes alike, close, lseek, fsync, fdatasync (`io.ops`' `call`, the call
///   number, is the row's `id`). Their file is named by its mount's id
///   (`mount_id`), named once per mount in user space ([`super::mounts`]), not
///   as two strings per call: `fs_type` and `mount_point` are `''` for them
///   (a branch of its own, [`io_ops_calls`], so the view's string columns are
///   not read there). `buf` is the user buffer (Darshan's memory alignment).
/// - `path` 2, io_uring requests READ, READ_FIXED, WRITE, WRITE_FIXED and
///   FSYNC; `path` 3, AIO (iomap's direct I/O and `aio.submit`'s other
///   requests); `path` 4, the pages faults bring into file mappings (Darshan
///   sees none of them: they count in `EBQ_MMAP_*` only). A request's `id` is
///   its kind's index in [`REQUEST_KINDS`], from `io.ops`' `op`.
///
/// - the opens (open, openat, creat; those this machine has), `io.ops`'
///   branches of their own whose file is the fd the call returned, named by
///   strings ([`io_ops_opens`]).
///
/// And one kind of row `io.ops` does not have: `io_submit`, whose return is
/// the AIO requests it submitted, no file's operation
/// ([`Decoder::submitted`]), at its own tracepoints.
pub fn sql(syscalls: &SyscallTable) -> String {
    let opens: Vec<&str> = OPEN_CALLS.into_iter().filter(|c| syscalls.nr(c).is_some()).collect();
    union(&[io_ops_calls(), io_ops_requests(REQUEST_PATHS), io_submit_branch(), io_ops_opens(&opens)])
}

/// The query the kernel fold is fed (`fold.bpf.c`): [`sql`]'s rows, with
/// every system call in one branch on the raw tracepoints
/// ([`syscalls_for_kernel_fold`]), AIO's requests read from that branch's
/// `io_submit` and `io_getevents` rows by the fold itself but for iomap's
/// direct I/O ([`iomap_aio`]), and with `stdio_mark`, the stdio mark's
/// branches ([`stdio_mark_branches`], `--stdio`).
pub fn sql_for_kernel_fold(syscalls: &SyscallTable, stdio_mark: bool) -> String {
    let mut branches = vec![syscalls_for_kernel_fold(syscalls), io_ops_requests(FOLD_REQUEST_PATHS), iomap_aio()];
    if stdio_mark {
        branches.extend(stdio_mark_branches());
    }
    union(&branches)
}

/// `branches` as one UNION ALL in [`COLUMNS`].
fn union(branches: &[String]) -> String {
    format!("SELECT {COLUMNS} FROM ({}) u", branches.join(" UNION ALL "))
}

/// The kernel fold's system calls, [`FILE_CALLS`], the opens, `io_submit`
/// and `io_getevents`, in one pair of the raw `sys_enter` and `sys_exit`
/// (tp_btf) programs:
/// - **One pair.** [`sql`]'s opens and `io_submit` are JOINs of their own
///   classic `syscalls:*` tracepoints: six programs more, each paying a perf
///   event's dispatch at its call. Here they ride the pair every system call
///   already runs.
/// - **AIO's iocbs and events in the pair.** io.ops reads the AIO requests
///   iomap does not see (buffered, fsync) at `io_submit`'s and
///   `io_getevents`' classic tracepoints (`aio.submit`, `aio.complete`). A
///   classic `syscalls:*` tracepoint turns on the kernel's perf hooks
///   (`perf_syscall_enter`, `perf_syscall_exit`), which then run at every
///   system call of the machine: 1–8 % of fio's 4 KiB psync IOPS beside the
///   hand-written floor (issue 39, `bench/issue39/perf_hooks.sh`). Here `buf` is `io_submit`'s iocb array
///   and `io_getevents`' event array, and the fold walks them
///   (`fold.bpf.c`'s `ebq_fold_submitted`, `ebq_fold_reaped`).
/// - **An open's file is its return's.** Its row carries the columns of its
///   argument 0 (a path, or a directory's descriptor), which the fold
///   replaces by the file of the descriptor it returned: the fold runs in the
///   call's exit, in the calling thread (`ebq_fold_opened`).
/// - **Names late.** `file_name` is `''`: the fold names a new record from
///   `dentry_id`, once, not at every call (issue 39 item 1: the name at every
///   call was about 35 ns of the report's ~286 per read). `size` is 0, as the
///   fold reads `ret`.
fn syscalls_for_kernel_fold(syscalls: &SyscallTable) -> String {
    let has = |c: &&str| syscalls.nr(c).is_some();
    let calls: Vec<&str> = FILE_CALLS.into_iter().chain(OPEN_CALLS).chain(AIO_CALLS).filter(has).collect();
    let positioned: Vec<&str> = POSITIONED_CALLS.into_iter().filter(has).collect();
    let buffered: Vec<&str> = BUFFER_CALLS.into_iter().filter(has).collect();
    format!(
        "SELECT e.time AS time, {path} AS path, e.id AS id, e.inode AS inode, e.dev AS dev, '' AS fs_type, \
'' AS mount_point, '' AS file_name, 0 AS size, \
CASE WHEN e.id IN ({positioned}) THEN e.args[3] ELSE e.file_pos END AS offset, x.ret AS ret, \
x.time - e.time AS latency, x.pid AS pid, CASE WHEN e.id IN ({buffered}) THEN e.args[1]{arrays} ELSE 0 END AS buf, \
e.mount_id AS mount_id, x.tid AS tid, e.dentry_id AS dentry_id \
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id \
WHERE e.id IN ({calls})",
        path = Via::Syscall.code(),
        positioned = names_in("syscall_nr", &positioned),
        buffered = names_in("syscall_nr", &buffered),
        calls = names_in("syscall_nr", &calls),
        // io_submit's argument 2 is its iocb pointers, io_getevents' argument 3 its events.
        arrays = AIO_CALLS
            .iter()
            .zip([2, 3])
            .filter(|(c, _)| has(c))
            .map(|(c, arg)| format!(" WHEN e.id = syscall_nr('{c}') THEN e.args[{arg}]"))
            .collect::<String>(),
    )
}

/// The kind of each system call the report folds ([`Decoder::operation`];
/// the kernel fold's table of calls, `EBQ_FOLD_CALL_KINDS`, [`super::fold_c`]).
pub const SYSCALL_KINDS: [(&str, OpKind); 17] = [
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

/// The AIO calls the kernel fold reads in its raw pair: `io_submit`'s
/// return counts the requests submitted, its iocbs and `io_getevents`'
/// events are walked by the fold (`EBQ_NR_<call>` in its C).
pub const AIO_CALLS: [&str; 2] = ["io_submit", "io_getevents"];

/// The calls whose offset is their argument 3 (`io.ops`' `offset`; a flag
/// of the kernel fold's table of calls, [`super::fold_c`]).
pub const POSITIONED_CALLS: [&str; 6] = ["pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2"];

/// The …v calls: their size is in user memory (iovecs), not an argument,
/// and their buffer is no buffer of the data (no memory alignment; a flag of
/// the kernel fold's table of calls).
pub const VECTORED_CALLS: [&str; 6] = ["readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"];

/// The calls whose argument 1 is the user's buffer, or its iovec (`io.ops`' `buf`).
const BUFFER_CALLS: [&str; 10] =
    ["read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev", "pwritev", "pwritev2"];

/// The `path` of the stdio mark's rows: no operation's ([`Via::of_code`]
/// knows no such code, so [`Decoder::operation`] makes none of them), and
/// the fold's C compares it (`EBQ_FOLD_PATH_STDIO_MARK`).
pub const STDIO_MARK_PATH: u64 = 5;

/// The stdio mark rows' `id`s, by position (`EBQ_FOLD_MARK_<name>` in the
/// fold's C): a probed stdio function's entry, its return, and `fdopen`'s
/// entry, whose descriptor (the `offset` column) the fold looks up.
pub const STDIO_MARK_IDS: [&str; 3] = ["ENTER", "RETURN", "FDOPEN"];

/// Two branches over libc's probed stdio functions ([`stdio::FUNCS`]): a
/// row at each entry and each return, which the kernel fold turns into a
/// per-thread "inside stdio" depth, so the system calls libc makes inside
/// them are left out of POSIX in the kernel (`fold.bpf.c`). `fdopen`'s
/// entry carries its descriptor in `offset`. The STDIO counters are the
/// STDIO query's ([`stdio::sql`]); these rows only mark.
fn stdio_mark_branches() -> Vec<String> {
    let list = stdio::probe_list();
    let fdopen = stdio::FUNCS.iter().position(|(_, k)| *k == stdio::Kind::Fdopen).expect("fdopen is probed");
    let id = |name: &str| STDIO_MARK_IDS.iter().position(|n| *n == name).expect("a mark id");
    let [enter, ret, fdopen_id] = ["ENTER", "RETURN", "FDOPEN"].map(id);
    let row = |id: String, offset: &str| {
        format!(
            "SELECT time, {STDIO_MARK_PATH} AS path, {id} AS id, 0 AS inode, 0 AS dev, '' AS fs_type, \
'' AS mount_point, '' AS file_name, 0 AS size, {offset} AS offset, 0 AS ret, 0 AS latency, pid, 0 AS buf, \
0 AS mount_id, tid, 0 AS dentry_id"
        )
    };
    vec![
        format!(
            "{} FROM uprobe:{}:{list}",
            row(
                format!("CASE WHEN func = {fdopen} THEN {fdopen_id} ELSE {enter} END"),
                &format!("CASE WHEN func = {fdopen} THEN arg0 ELSE 0 END")
            ),
            stdio::LIBRARY
        ),
        format!("{} FROM uretprobe:{}:{list}", row(ret.to_string(), "0"), stdio::LIBRARY),
    ]
}

/// The report's columns, in the order [`Decoder`] and `fold.bpf.c` read them.
const COLUMNS: &str =
    "time, path, id, inode, dev, fs_type, mount_point, file_name, size, offset, ret, latency, pid, buf, \
mount_id, tid, dentry_id";

/// The system calls whose `io.ops` rows the report folds.
pub const FILE_CALLS: [&str; 14] = [
    "read",
    "pread64",
    "readv",
    "preadv",
    "preadv2",
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "close",
    "lseek",
    "fsync",
    "fdatasync",
];

/// The io_uring opcodes whose `io.ops` rows the report folds.
const REQUEST_OPCODES: [&str; 5] = ["READ", "READ_FIXED", "WRITE", "WRITE_FIXED", "FSYNC"];

/// The system calls that open a file (those this machine has get a branch each).
pub const OPEN_CALLS: [&str; 3] = ["open", "openat", "creat"];

/// `io.ops`' system calls the report folds, in its columns: the call number
/// is the row's `id`, the file's mount its id (no strings per call).
fn io_ops_calls() -> String {
    format!(
        "SELECT start AS time, {path} AS path, call AS id, inode, dev, '' AS fs_type, '' AS mount_point, \
file_name, bytes AS size, offset, ret, latency, pid, buf, mount_id, tid, 0 AS dentry_id \
FROM io.ops WHERE path = 'syscall' AND call IN ({calls})",
        path = Via::Syscall.code(),
        calls = names_in("syscall_nr", &FILE_CALLS),
    )
}

/// The requests [`sql`] reads from `io.ops`: io_uring's (of
/// [`REQUEST_OPCODES`]), AIO's and mapped pages.
const REQUEST_PATHS: &str = "(path = 'io_uring' AND call IN ({opcodes})) OR path IN ('aio', 'mmap')";

/// The requests the kernel fold reads from `io.ops`: AIO's come from its own
/// walk and [`iomap_aio`].
const FOLD_REQUEST_PATHS: &str = "(path = 'io_uring' AND call IN ({opcodes})) OR path = 'mmap'";

/// `io.ops`' requests and mapped pages of `paths` ([`REQUEST_PATHS`] or
/// [`FOLD_REQUEST_PATHS`]), in the report's columns: a request's `id` is its
/// kind's index in [`REQUEST_KINDS`], its mount named by its strings.
fn io_ops_requests(paths: &str) -> String {
    format!(
        "SELECT start AS time, CASE WHEN path = 'io_uring' THEN {io_uring} WHEN path = 'aio' THEN {aio} ELSE {mmap} END \
AS path, CASE WHEN op = 'write' THEN {write} WHEN op = 'sync' THEN {fsync} ELSE {read} END AS id, inode, dev, \
fs_type, mount_point, file_name, bytes AS size, offset, ret, latency, pid, 0 AS buf, 0 AS mount_id, 0 AS tid, \
0 AS dentry_id FROM io.ops WHERE {paths}",
        paths = paths.replace("{opcodes}", &names_in("io_uring_op", &REQUEST_OPCODES)),
        io_uring = Via::IoUring.code(),
        aio = Via::Aio.code(),
        mmap = Via::Mmap.code(),
        read = request_id(OpKind::Read),
        write = request_id(OpKind::Write),
        fsync = request_id(OpKind::Fsync),
    )
}

/// `io.ops`' `aio` requests that iomap's direct I/O runs (its first `aio`
/// branch, `catalog/views/io_ops.sql`), in the report's columns, for the
/// kernel fold: the view's other `aio` branch reads `aio.submit` and
/// `aio.complete`, whose classic tracepoints the fold does without
/// ([`syscalls_for_kernel_fold`]), so it cannot take the view's path whole.
fn iomap_aio() -> String {
    let flag =
        |name: &str| format!("b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', '{name}') != 0");
    format!(
        "SELECT b.time AS time, {aio} AS path, CASE WHEN {write} THEN {write_id} ELSE {read_id} END AS id, b.inode AS inode, \
b.dev AS dev, b.fs_type AS fs_type, b.mount_point AS mount_point, b.file_name AS file_name, b.iter.count AS size, \
b.iocb.ki_pos AS offset, c.ret AS ret, c.time - b.time AS latency, b.pid AS pid, 0 AS buf, 0 AS mount_id, 0 AS tid, \
0 AS dentry_id FROM iomap.iomap_dio_rw_begin b JOIN iomap.iomap_dio_complete c ON b.iocb = c.iocb WHERE {aio_rw}",
        aio = Via::Aio.code(),
        write = flag("WRITE"),
        aio_rw = flag("AIO_RW"),
        write_id = request_id(OpKind::Write),
        read_id = request_id(OpKind::Read),
    )
}

/// `f('a'), f('b'), …`.
fn names_in(f: &str, names: &[&str]) -> String {
    names.iter().map(|n| format!("{f}('{n}')")).collect::<Vec<_>>().join(", ")
}

/// `io_submit`'s calls: only their return (the requests submitted) is read.
fn io_submit_branch() -> String {
    format!(
        "SELECT e.time AS time, {path} AS path, syscall_nr('io_submit') AS id, 0 AS inode, 0 AS dev, '' AS fs_type, \
'' AS mount_point, '' AS file_name, 0 AS size, 0 AS offset, x.ret AS ret, x.time - e.time AS latency, \
x.pid AS pid, 0 AS buf, 0 AS mount_id, x.tid AS tid, 0 AS dentry_id \
FROM syscalls.sys_enter_io_submit e JOIN syscalls.sys_exit_io_submit x ON e.tid = x.tid",
        path = Via::Syscall.code()
    )
}

/// `io.ops`' opens (`opens`, those this machine has): the file is the fd
/// the call returned, named by its strings (an open is the file's first row).
fn io_ops_opens(opens: &[&str]) -> String {
    format!(
        "SELECT start AS time, {path} AS path, call AS id, inode, dev, fs_type, mount_point, file_name, \
0 AS size, 0 AS offset, ret, latency, pid, 0 AS buf, 0 AS mount_id, tid, 0 AS dentry_id \
FROM io.ops WHERE path = 'syscall' AND call IN ({calls})",
        path = Via::Syscall.code(),
        calls = names_in("syscall_nr", opens),
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

// Positions in [`COLUMNS`] past the file's (0 time, 1 path, 2 id, 3 inode, 4 dev, 5 fs_type,
// 6 mount_point, 7 file_name).
const SIZE: usize = 8;
const OFFSET: usize = 9;
const RET: usize = 10;
const LATENCY: usize = 11;
const PID: usize = 12;
const BUF: usize = 13;
const MOUNT_ID: usize = 14;
const TID: usize = 15;

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
        let kinds = SYSCALL_KINDS.into_iter().filter_map(|(n, k)| Some((syscalls.nr(n)?, k))).collect();
        let positioned = POSITIONED_CALLS.map(|n| syscalls.nr(n));
        let vectored = VECTORED_CALLS.map(|n| syscalls.nr(n));
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
            .then(|| (num(&r[RET]) as i64).max(0) as u64)
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
        // An open's file is the fd it returned (its branch's exit columns); the rest their fd's.
        let inode = num(&r[3]);
        if inode == 0 {
            return None;
        }
        let dev = num(&r[4]);
        let start = num(&r[0]);
        let (fs_type, mount_point) = match self.mounts.get(num(&r[MOUNT_ID]) as u32) {
            // A system call's file is named by its mount's id.
            Some(m) => (m.fs_type.clone(), m.mount_point.clone()),
            None => (text(&r[5]), text(&r[6])),
        };
        let reads_or_writes = matches!(op, OpKind::Read | OpKind::Write | OpKind::Map);
        let offset = num(&r[OFFSET]) as i64;
        let vectored = via == Via::Syscall && self.vectored.contains(&Some(id));
        let ret = num(&r[RET]) as i64;
        Some(Operation {
            path: text(&r[7]),
            op,
            via,
            pid: num(&r[PID]) as u32,
            tid: num(&r[TID]) as u32,
            rank: None,
            file: FileKey::of_kernel_dev(dev as u32, inode),
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
                (true, true) => ret.max(0) as u64,
                (true, false) => num(&r[SIZE]),
            },
            result: ret,
            // Neither a request's buffer nor a vectored call's is read: no memory alignment for them.
            mem: (reads_or_writes && via == Via::Syscall && !vectored).then(|| num(&r[BUF])),
            start_ns: start,
            end_ns: start + num(&r[LATENCY]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{sql, sql_for_kernel_fold, AIO_CALLS, FILE_CALLS, OPEN_CALLS};
    use ebq::host::{FixtureKernel, KernelInfo};
    use ebq::Engine;

    /// The report's query over `io.ops`, planned on the checked-in kernel: the
    /// view's branches it does not read (the copies, mmap and msync calls)
    /// attach nothing, and its system calls carry their mount by id, reading
    /// neither `fs_type` nor `mount_point` (only requests, pages and opens do).
    #[test]
    fn the_reports_query_reads_io_ops_and_no_mount_strings_per_call() {
        let kernel = FixtureKernel::checked_in();
        let text = sql(kernel.syscalls());
        let prepared = Engine::with_kernel(kernel).prepare(&text).expect("the report's query plans");
        let explain = prepared.physical.explain();
        for left_out in ["sys_exit_copy_file_range", "sys_exit_sendfile64", "sys_exit_splice", "sys_exit_msync"] {
            assert!(explain.lines().any(|l| l.contains("Left out") && l.contains(left_out)), "{left_out}:\n{explain}");
        }
        let computes: Vec<&str> = explain.lines().filter(|l| l.contains("[kernel] Compute")).collect();
        let syscalls = computes[0];
        assert!(syscalls.contains("c1_path = 0, c2_id = "), "{syscalls}");
        for unread in ["c5_fs_type = '', c6_mount_point = ''", "c14_mount_id = e.mount_id"] {
            assert!(syscalls.contains(unread), "{unread} in {syscalls}");
        }
        assert!(!syscalls.contains("fs_type = e.") && !syscalls.contains("mount_point = e."), "{syscalls}");
        // The view's IN list of calls and the report's are one list, the one check before a pair opens.
        let lines: Vec<&str> = explain.lines().collect();
        let raw = lines.iter().position(|l| l.contains("Attach     tracepoint:raw_syscalls:sys_enter")).unwrap();
        let filter = lines[raw..].iter().find(|l| l.contains("[kernel] Filter")).unwrap();
        assert_eq!(filter.matches("e.id == ").count(), FILE_CALLS.len(), "{filter}");
        assert!(!filter.contains("&&"), "{filter}");
        // The opens come from io.ops' own branches; its system-call branch (no open in it) is left out there.
        for open in ["sys_exit_open ", "sys_exit_openat ", "sys_exit_creat "] {
            assert!(lines.iter().any(|l| l.contains("[kernel] Attach") && l.contains(open)), "{open}:\n{explain}");
        }
        assert!(lines.iter().any(|l| l.contains("Left out") && l.contains("raw_syscalls:sys_exit")), "{explain}");
    }

    /// The kernel fold's system calls, the opens and the AIO calls among
    /// them, are one pair of the raw tracepoints, with one check of the call
    /// before a pair opens: no `syscalls:*` tracepoint (AIO's requests are
    /// walked by the fold in the pair's rows, not read at `aio.submit` and
    /// `aio.complete`), so the kernel's perf hooks stay off.
    #[test]
    fn the_kernel_folds_system_calls_are_one_raw_pair() {
        let kernel = FixtureKernel::checked_in();
        let text = sql_for_kernel_fold(kernel.syscalls(), false);
        let aio = AIO_CALLS.iter().filter(|c| kernel.syscalls().nr(c).is_some()).count();
        let prepared = Engine::with_kernel(kernel).prepare(&text).expect("the kernel fold's query plans");
        let explain = prepared.physical.explain();
        let lines: Vec<&str> = explain.lines().collect();
        let attached: Vec<&&str> = lines.iter().filter(|l| l.contains("[kernel] Attach")).collect();
        assert!(attached.iter().all(|l| !l.contains(":syscalls:")), "{explain}");
        let raw = lines.iter().position(|l| l.contains("Attach     tracepoint:raw_syscalls:sys_enter")).unwrap();
        let filter = lines[raw..].iter().find(|l| l.contains("[kernel] Filter")).unwrap();
        assert_eq!(filter.matches("e.id == ").count(), FILE_CALLS.len() + OPEN_CALLS.len() + aio, "{filter}");
        assert!(attached.iter().any(|l| l.contains("iomap_dio_rw_begin")), "iomap's direct AIO: {explain}");
    }
}

//! Darshan's STDIO counters from uprobes on libc's stdio calls (pure; the
//! query runs next to the POSIX one, `report/live.rs`), issue 37 item 3.
//!
//! The probed functions ([`FUNCS`]) are one ebq query, a JOIN of their
//! uprobes and uretprobes on the thread and the function ([`sql`]), as the
//! MPI-IO query is. Each call is folded by Darshan's rules
//! (darshan-runtime `lib/darshan-stdio.c`):
//! - **the record** is the path an `fopen`/`freopen` was given (Darshan
//!   hashes the path name into the record id); an `fdopen` takes the name of
//!   the POSIX record of its descriptor (the file the process's last open
//!   returning that fd opened; `STDIO_OPENS` and `STDIO_FDOPENS` both count
//!   it). A stream (`FILE *`, the open's return value) belongs to its record
//!   until `fclose`; a call on a stream no open was seen for (a stream
//!   opened before the trace) counts nowhere. `stdin`, `stdout`
//!   and `stderr` are Darshan's `<STDIN>`, `<STDOUT>` and `<STDERR>`
//!   records: Darshan opens them (at time 0) at a process's first stdio
//!   call and drops those that were neither read nor written; ebq does the
//!   same, the streams being libc's `_IO_2_1_stdin_`… in the calling process
//!   (the uprobe's `ip` less the function's file address is where libc is
//!   loaded: [`Layout`]). `printf`/`vprintf` write to `stdout` (libc's own,
//!   even if the program assigned `stdout` another stream).
//! - **the offset** is Darshan's own: 0 at `fopen`/`freopen` (not at
//!   `fdopen`), + the bytes of each read or write, `ftell` after a
//!   successful `fseek`/`fseeko`/`fsetpos` (whatever the whence, `SEEK_END`
//!   too), 0 at `rewind`. ebq reads `ftell`'s inputs from the stream at the
//!   seek's return ([`FILE_FIELDS`]): not the seek's own `lseek`, which
//!   glibc skips for a target inside its buffer and rounds down to a block.
//! - **bytes**: `fread`/`fwrite` size × items returned, `fprintf`/`vfprintf`/
//!   `printf`/`vprintf` the count returned, `fgetc`/`fputc`/`putc` 1 (unless
//!   EOF), `fgets`/`fputs` the string's length (Darshan's `strlen`),
//!   measured in the kernel by `user_strlen()` at the call's return (fgets's
//!   line, fputs's string): exact up to [`STRING_CAP`] bytes (64 KiB less
//!   16); a string that long or longer counts [`STRING_CAP`] and is counted
//!   in [`Fold::strings_at_cap`], the report's `strings_at_read_cap`). `fflush` counts in `STDIO_FLUSHES` and as a write of 0
//!   bytes (its times and `STDIO_MAX_BYTE_WRITTEN`, as Darshan's
//!   `STDIO_RECORD_WRITE(fp, 0, …, 1)`). `ftell`, `ftello` and `fgetpos`
//!   count nothing: they are probed for the system calls they make.
//!   `fscanf`/`vfscanf`/`__isoc99_fscanf`/`__isoc99_vfscanf` read `ftell`
//!   after less `ftell` before when they return nonzero (EOF too): the
//!   stream's position at the return from the JOIN's [`FILE_FIELDS`], at
//!   the entry from a plain uprobe query on the same functions
//!   ([`entry_sql`], matched by thread and time: [`positions_at_entry`]); a
//!   stream whose descriptor offset glibc does not know yet (−1 until its
//!   first seek or `ftell`) counts the read with 0 bytes, and in
//!   [`Fold::scanf_unmeasured`]. `getw` reads 4 bytes unless it returns
//!   EOF with `ferror` set (Darshan's `ret != EOF || ferror(stream) == 0`:
//!   EOF without an error counts too), `putw` writes 4 unless it returns EOF.
//! - failed calls count nothing (a NULL stream, 0 items, EOF, a negative
//!   `fseek`), as in Darshan; `fclose` counts whatever it returns.
//!
//! **System calls inside a stdio call are not POSIX calls** (Darshan's POSIX
//! module wraps the application's calls; libc's own go around it). A thread
//! runs one thing at a time, so a system call made while its thread is in a
//! stdio call is that call's, and is left out of POSIX. The kernel fold keeps
//! a per-thread depth of stdio calls for it (the report's query gains the
//! mark's branches, `query::sql_for_kernel_fold`, and `fold.bpf.c` keeps the
//! depth in task storage); when the operations are streamed (`--trace`,
//! `--html`, MPI-IO), user space leaves out a system call of the same thread
//! whose entry falls inside a stdio call's [entry, return] interval
//! ([`Calls::inside`]; the uprobe's and the tracepoints' times are the same
//! clock). A file used only through stdio then has no POSIX record, as in
//! Darshan. An `fdopen` is named by its descriptor's POSIX record
//! ([`Descriptors`]).
//!
//! **Nor do stdio calls inside a stdio call count**: glibc's `putw` calls
//! `fwrite`, `getw` `fread` and `fscanf` `vfscanf` at the probed addresses,
//! which Darshan's `LD_PRELOAD` wrappers never see. A call inside another
//! of the same thread ([`nested`]) is left out ([`Fold::nested_calls`]).
//!
//! Not done: exact lengths of `fgets`/`fputs` strings of
//! [`STRING_CAP`] bytes or more (counted, see above); the bytes of an
//! `fscanf` on a stream whose offset glibc does not know yet (counted, see
//! above); ranks (every record is rank
//! 0, as Darshan's non-MPI mode writes them: `STDIO_FASTEST_RANK`… and the
//! variances 0).

use super::kernel_fold::Fdopen;
use super::posix::{self, timer_no_overlap};
use super::{FileKey, OpKind, Operation, Via};
use ebq::runtime::Value;
use std::collections::{BTreeMap, HashMap};

/// What a probed function does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `fopen(path, mode)`, `freopen(path, mode, stream)`, `freopen64`.
    Open,
    /// `fdopen(fd, mode)`.
    Fdopen,
    /// `fread(ptr, size, n, stream)`.
    Fread,
    /// `fwrite(ptr, size, n, stream)`.
    Fwrite,
    /// `fprintf(stream, …)`, `vfprintf(stream, fmt, ap)`: returns the bytes.
    Printf,
    /// `printf(fmt, …)`, `vprintf(fmt, ap)`: [`Kind::Printf`] on `stdout`.
    Print,
    /// `fgetc(stream)` (`getc` and `_IO_getc` are its aliases).
    Fgetc,
    /// `fputc(c, stream)`, `putc(c, stream)` (`_IO_putc`).
    Fputc,
    /// `fgets(s, size, stream)`: the string it filled.
    Fgets,
    /// `fputs(s, stream)`.
    Fputs,
    /// `fseek(stream, offset, whence)`, `fseeko` (`fseeko64`), `fsetpos`
    /// (`fsetpos64`): the stream's position at the return is the offset.
    Fseek,
    /// `rewind(stream)`.
    Rewind,
    /// `ftell(stream)`, `ftello`, `fgetpos`: count nothing.
    Ftell,
    /// `fflush(stream)`.
    Fflush,
    /// `fscanf(stream, …)`, `vfscanf`, `__isoc99_fscanf`, `__isoc99_vfscanf`:
    /// Darshan counts `ftell` after less `ftell` before.
    Fscanf,
    /// `getw(stream)`: a 4-byte int.
    Getw,
    /// `putw(w, stream)`: a 4-byte int.
    Putw,
    /// `fclose(stream)`.
    Fclose,
}

/// Every probed libc function. Aliases of one address (`fopen64`,
/// `_IO_fwrite`, `getc`, `fseeko64`, `fsetpos64`, …) are one probe already:
/// listing both would count twice.
pub const FUNCS: [(&str, Kind); 30] = [
    ("fopen", Kind::Open),
    ("freopen", Kind::Open),
    ("freopen64", Kind::Open),
    ("fdopen", Kind::Fdopen),
    ("fread", Kind::Fread),
    ("fwrite", Kind::Fwrite),
    ("fprintf", Kind::Printf),
    ("vfprintf", Kind::Printf),
    ("printf", Kind::Print),
    ("vprintf", Kind::Print),
    ("fgetc", Kind::Fgetc),
    ("fputc", Kind::Fputc),
    ("putc", Kind::Fputc),
    ("fgets", Kind::Fgets),
    ("fputs", Kind::Fputs),
    ("fseek", Kind::Fseek),
    ("fseeko", Kind::Fseek),
    ("fsetpos", Kind::Fseek),
    ("rewind", Kind::Rewind),
    ("ftell", Kind::Ftell),
    ("ftello", Kind::Ftell),
    ("fgetpos", Kind::Ftell),
    ("fflush", Kind::Fflush),
    ("fclose", Kind::Fclose),
    ("fscanf", Kind::Fscanf),
    ("vfscanf", Kind::Fscanf),
    ("__isoc99_fscanf", Kind::Fscanf),
    ("__isoc99_vfscanf", Kind::Fscanf),
    ("getw", Kind::Getw),
    ("putw", Kind::Putw),
];

/// The library probed: the C library every dynamically linked program loads.
pub const LIBRARY: &str = "libc";

/// Every probed function as one uprobe's list: `{fopen,freopen,…}` (`func`
/// is a function's index in [`FUNCS`]).
pub fn probe_list() -> String {
    let names: Vec<&str> = FUNCS.iter().map(|(n, _)| *n).collect();
    format!("{{{}}}", names.join(","))
}

/// The query: each call's entry joined with its return on the thread and the
/// function (`func`, its index in [`FUNCS`]). `text` is the string at
/// argument 0 at entry (fopen's path). `length` is, at the return, the
/// length of fputs's string (argument 0) or of the line a successful fgets
/// returns (its buffer is empty at entry), by `user_strlen()`; 0 for every
/// other call, which reads no string for it. `ip` is the function's address in the
/// process (where libc is loaded: [`Layout`]). At a seek's return,
/// `file_offset`, `read_ptr` and `read_end` are its stream's `_offset`,
/// `_IO_read_ptr` and `_IO_read_end` (glibc's `struct _IO_FILE`, x86-64:
/// [`FILE_FIELDS`]), from which `ftell` computes the position (a JOIN
/// computes an expression over the entry's columns at the return). Column
/// order is what [`call`] reads.
pub fn sql() -> String {
    let list = probe_list();
    // The calls of one kind: `e.func = i OR …`, one term for each probed function of it.
    let of_kind = |kind: Kind| {
        let terms: Vec<String> =
            FUNCS.iter().enumerate().filter(|(_, (_, k))| *k == kind).map(|(i, _)| format!("e.func = {i}")).collect();
        terms.join(" OR ")
    };
    // The FILE fields are read at the return of a seek and of a scanf (its bytes are ftell after
    // less ftell before).
    let seeks = format!("{} OR {}", of_kind(Kind::Fseek), of_kind(Kind::Fscanf));
    let field = |at: u64, name: &str| format!("CASE WHEN {seeks} THEN user_u64(e.arg0 + {at}) ELSE 0 END AS {name}");
    let [offset, ptr, end] = FILE_FIELDS;
    let length = format!(
        "CASE WHEN ({}) AND x.retval != 0 THEN user_strlen(x.retval) WHEN {} THEN user_strlen(e.arg0) \
         ELSE 0 END AS length",
        of_kind(Kind::Fgets),
        of_kind(Kind::Fputs)
    );
    format!(
        "SELECT e.time, x.time - e.time AS latency, x.pid, x.tid, e.arg0, e.arg1, e.arg2, e.arg3, x.retval, \
         e.func AS func, str(e.arg0) AS text, {length}, e.ip AS ip, {}, {}, {}, \
         CASE WHEN {} THEN user_u32(e.arg0) ELSE 0 END AS file_flags \
         FROM uprobe:{LIBRARY}:{list} e JOIN uretprobe:{LIBRARY}:{list} x ON e.tid = x.tid AND e.func = x.func",
        field(offset, "file_offset"),
        field(ptr, "read_ptr"),
        field(end, "read_end"),
        of_kind(Kind::Getw)
    )
}

/// The query of the stream's position at the entry of the `fscanf` family
/// ([`Kind::Fscanf`]), which Darshan's `ftell` before the call is: the
/// JOIN's `user_u64()` reads are made at the return, so a plain uprobe on
/// the same functions reads [`FILE_FIELDS`] at the entry, each row matched
/// to its call by thread and time ([`positions_at_entry`]).
pub fn entry_sql() -> String {
    let names: Vec<&str> = FUNCS.iter().filter(|(_, k)| *k == Kind::Fscanf).map(|(n, _)| *n).collect();
    let [offset, ptr, end] = FILE_FIELDS;
    format!(
        "SELECT time, tid, user_u64(arg0 + {offset}) AS file_offset, user_u64(arg0 + {ptr}) AS read_ptr, \
         user_u64(arg0 + {end}) AS read_end FROM uprobe:{LIBRARY}:{{{}}}",
        names.join(",")
    )
}

/// `ftell`'s answer from a stream's [`FILE_FIELDS`] (no write pending, as
/// after a seek or in a read): `None` when the descriptor's offset is not
/// known (−1: glibc learns it at the first seek or `ftell`).
fn ftell(offset: u64, ptr: u64, end: u64) -> Option<i64> {
    let offset = offset as i64;
    (offset >= 0).then(|| offset - end.wrapping_sub(ptr) as i64)
}

/// One row of [`entry_sql`]: a thread's stream position at an `fscanf`'s entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    pub tid: u32,
    pub time_ns: u64,
    pub position: Option<i64>,
}

impl Entry {
    /// A row of [`entry_sql`].
    pub fn of(r: &[Value]) -> Entry {
        let n = |i: usize| super::int_at(r, i).unwrap_or(0);
        Entry { tid: n(1) as u32, time_ns: n(0), position: ftell(n(2), n(3), n(4)) }
    }
}

/// Gives each `fscanf` call (`calls` in time order) the position its
/// thread's entry row read: the first of that thread after its previous
/// `fscanf`'s return, if it is at or before the call's return (both uprobes
/// run at the same entry, in either order; a thread's calls follow each
/// other). Calls made inside another ([`nested`]) are skipped. A call whose
/// row is missing keeps `None` ([`Fold::scanf_unmeasured`]).
pub fn positions_at_entry(calls: &mut [Call], entries: &[Entry]) {
    let mut by_tid: HashMap<u32, Vec<&Entry>> = HashMap::new();
    for e in entries {
        by_tid.entry(e.tid).or_default().push(e);
    }
    for v in by_tid.values_mut() {
        v.sort_by_key(|e| e.time_ns);
    }
    let inner = nested(calls);
    let mut previous: HashMap<u32, u64> = HashMap::new();
    for (c, _) in calls.iter_mut().zip(inner).filter(|(c, inner)| c.kind == Kind::Fscanf && !inner) {
        let after = previous.insert(c.tid, c.end_ns).unwrap_or(0);
        let Some(v) = by_tid.get(&c.tid) else { continue };
        // The first row after the previous scan's return: the call's own entry (a nested
        // `vfscanf`'s row, at the same position, comes after it).
        let i = v.partition_point(|e| e.time_ns <= after);
        c.position_before = v.get(i).filter(|e| e.time_ns <= c.end_ns).and_then(|e| e.position);
    }
}

/// Which of `calls` (any order) libc made inside another probed stdio call
/// of the same thread: glibc's `putw` calls `fwrite`, `getw` `fread` and
/// `fscanf` `vfscanf`, at the addresses ebq probes. Darshan wraps the
/// program's calls (`LD_PRELOAD`), so libc's own never count: the fold
/// leaves these out ([`Fold::nested_calls`]).
pub fn nested(calls: &[Call]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..calls.len()).collect();
    // By thread, then entry; of two calls entered at once the longer first (it holds the other).
    order.sort_by_key(|&i| (calls[i].tid, calls[i].start_ns, std::cmp::Reverse(calls[i].end_ns)));
    let mut inner = vec![false; calls.len()];
    let mut open: Option<(u32, u64)> = None; // (tid, the latest return of the calls before)
    for i in order {
        let c = &calls[i];
        match open {
            Some((tid, end)) if tid == c.tid && c.end_ns <= end => inner[i] = true,
            Some((tid, end)) if tid == c.tid => open = Some((tid, end.max(c.end_ns))),
            _ => open = Some((c.tid, c.end_ns)),
        }
    }
    inner
}

/// Where glibc's `struct _IO_FILE` (x86-64, its public ABI) holds `_offset`
/// (the descriptor's offset, −1 when not known), `_IO_read_ptr` and
/// `_IO_read_end`. After a seek no write is pending, so `ftell` is
/// `_offset − (_IO_read_end − _IO_read_ptr)`.
pub const FILE_FIELDS: [u64; 3] = [144, 8, 16];

/// The longest `fgets` line or `fputs` string `user_strlen()` measures
/// exactly: one this long or longer counts this many, and is counted in
/// [`Fold::strings_at_cap`].
pub const STRING_CAP: u64 = ebq::bind::USER_STRLEN_CAP;

/// libc's three standard streams as the process sees them: the file
/// addresses of the probed functions and of `_IO_2_1_stdin_`,
/// `_IO_2_1_stdout_` and `_IO_2_1_stderr_` (the `FILE`s `stdin`, `stdout`
/// and `stderr` point at). A call's `ip` less its function's file address is
/// where libc is loaded in that process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layout {
    /// Each [`FUNCS`] entry's address in the file (`None`: not found).
    pub funcs: Vec<Option<u64>>,
    /// The three streams' addresses in the file (`None`: not found).
    pub std: Option<[u64; 3]>,
}

/// The data objects [`Layout::std`] names, in order.
pub const STD_STREAMS: [&str; 3] = ["_IO_2_1_stdin_", "_IO_2_1_stdout_", "_IO_2_1_stderr_"];

/// Darshan's names of the standard streams' records, in [`STD_STREAMS`]' order.
pub const STD_NAMES: [&str; 3] = ["<STDIN>", "<STDOUT>", "<STDERR>"];

impl Layout {
    /// The standard streams in the process of a call of function `func` whose address there is `ip`.
    fn streams(&self, func: usize, ip: u64) -> Option<[u64; 3]> {
        let bias = ip.wrapping_sub(self.funcs.get(func).copied().flatten()?);
        Some(self.std?.map(|a| bias.wrapping_add(a)))
    }
}

/// One completed stdio call.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub kind: Kind,
    pub pid: u32,
    pub tid: u32,
    /// The integer arguments at entry.
    pub args: [u64; 4],
    pub ret: u64,
    /// The string at argument 0 (fopen's path, see [`sql`]).
    pub text: String,
    /// The length of fputs's string or fgets's line (0 for other calls).
    pub length: u64,
    /// CLOCK_MONOTONIC ns at entry and return.
    pub start_ns: u64,
    pub end_ns: u64,
    /// `stdin`, `stdout` and `stderr` in the calling process (`None`: libc's layout not known).
    pub std_streams: Option<[u64; 3]>,
    /// A seek's or an `fscanf`'s stream position at its return, as `ftell`
    /// computes it (`None`: another call, or the descriptor's offset not known).
    pub position: Option<i64>,
    /// An `fscanf`'s stream position at its entry ([`positions_at_entry`]).
    pub position_before: Option<i64>,
    /// `getw`'s stream's `_flags` at its return (`_IO_ERR_SEEN` is `ferror`).
    pub flags: u32,
}

/// glibc's `_IO_ERR_SEEN` in `_flags`: what `ferror` tests.
const IO_ERR_SEEN: u32 = 0x20;

/// A row of [`sql`] as a call; `None` for a function index not in [`FUNCS`].
pub fn call(r: &[Value], layout: &Layout) -> Option<Call> {
    let n = |i: usize| super::int_at(r, i).unwrap_or(0);
    let s = |i: usize| match r.get(i) {
        Some(Value::S(s)) => s.clone(),
        _ => String::new(),
    };
    let func = n(9) as usize;
    let kind = FUNCS.get(func)?.1;
    let text = s(10);
    let (offset, ptr, end) = (n(13), n(14), n(15));
    let position = matches!(kind, Kind::Fseek | Kind::Fscanf).then(|| ftell(offset, ptr, end)).flatten();
    Some(Call {
        kind,
        pid: n(2) as u32,
        tid: n(3) as u32,
        args: [n(4), n(5), n(6), n(7)],
        ret: n(8),
        text,
        length: n(11),
        start_ns: n(0),
        end_ns: n(0) + n(1),
        std_streams: layout.streams(func, n(12)),
        position,
        position_before: None,
        flags: n(16) as u32,
    })
}

/// The stdio calls of a run, by thread, for [`Calls::inside`].
pub struct Calls {
    /// tid → the calls' entries in order, each with the latest return of
    /// the calls entered up to it (a thread's calls nest or follow each other).
    by_tid: HashMap<u32, Vec<(u64, u64)>>,
}

impl Calls {
    pub fn new(calls: &[Call]) -> Calls {
        let mut by_tid: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        for c in calls {
            by_tid.entry(c.tid).or_default().push((c.start_ns, c.end_ns));
        }
        for v in by_tid.values_mut() {
            v.sort_unstable();
            let mut last_end = 0;
            for (_, end) in v.iter_mut() {
                last_end = last_end.max(*end);
                *end = last_end;
            }
        }
        Calls { by_tid }
    }

    /// A system call thread `tid` entered at `at_ns` was made inside a stdio
    /// call (libc's own, not the program's): some call entered at or before
    /// it had not returned yet.
    pub fn inside(&self, tid: u32, at_ns: u64) -> bool {
        let Some(v) = self.by_tid.get(&tid) else { return false };
        let i = v.partition_point(|(start, _)| *start <= at_ns);
        i > 0 && at_ns <= v[i - 1].1
    }

    /// Leaves out of `ops` the system calls made inside stdio calls; returns how many.
    pub fn exclude(&self, ops: &mut Vec<Operation>) -> usize {
        let before = ops.len();
        ops.retain(|o| o.via != Via::Syscall || !self.inside(o.tid, o.start_ns));
        before - ops.len()
    }
}

/// Darshan's STDIO integer counters, in the log's order.
pub const COUNTERS: [&str; 14] = [
    "STDIO_OPENS",
    "STDIO_FDOPENS",
    "STDIO_READS",
    "STDIO_WRITES",
    "STDIO_SEEKS",
    "STDIO_FLUSHES",
    "STDIO_BYTES_WRITTEN",
    "STDIO_BYTES_READ",
    "STDIO_MAX_BYTE_READ",
    "STDIO_MAX_BYTE_WRITTEN",
    "STDIO_FASTEST_RANK",
    "STDIO_FASTEST_RANK_BYTES",
    "STDIO_SLOWEST_RANK",
    "STDIO_SLOWEST_RANK_BYTES",
];

/// Darshan's STDIO float counters, in the log's order.
pub const FCOUNTERS: [&str; 15] = [
    "STDIO_F_META_TIME",
    "STDIO_F_WRITE_TIME",
    "STDIO_F_READ_TIME",
    "STDIO_F_OPEN_START_TIMESTAMP",
    "STDIO_F_CLOSE_START_TIMESTAMP",
    "STDIO_F_WRITE_START_TIMESTAMP",
    "STDIO_F_READ_START_TIMESTAMP",
    "STDIO_F_OPEN_END_TIMESTAMP",
    "STDIO_F_CLOSE_END_TIMESTAMP",
    "STDIO_F_WRITE_END_TIMESTAMP",
    "STDIO_F_READ_END_TIMESTAMP",
    "STDIO_F_FASTEST_RANK_TIME",
    "STDIO_F_SLOWEST_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_BYTES",
];

/// One file's STDIO record: counters, and float counters in ns (times) or
/// CLOCK_MONOTONIC ns (timestamps, 0 when never set).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub counters: BTreeMap<&'static str, i64>,
    pub fcounters: BTreeMap<&'static str, i64>,
    /// Darshan's `rec_ref->offset`.
    offset: i64,
    last_meta_end: i64,
    last_read_end: i64,
    last_write_end: i64,
}

impl Record {
    fn new() -> Record {
        Record {
            counters: COUNTERS.iter().map(|k| (*k, 0)).collect(),
            fcounters: FCOUNTERS.iter().map(|k| (*k, 0)).collect(),
            offset: 0,
            last_meta_end: 0,
            last_read_end: 0,
            last_write_end: 0,
        }
    }

    pub fn get(&self, k: &str) -> i64 {
        self.counters.get(k).copied().unwrap_or(0)
    }

    fn inc(&mut self, k: &'static str, by: i64) {
        *self.counters.get_mut(k).expect("a STDIO counter") += by;
    }

    /// The first (`START`) and last (`END`) timestamps of one kind of call.
    fn stamp(&mut self, what: &str, t1: i64, t2: i64) {
        let start = FCOUNTERS.iter().find(|k| **k == format!("STDIO_F_{what}_START_TIMESTAMP")).expect("a kind");
        let end = FCOUNTERS.iter().find(|k| **k == format!("STDIO_F_{what}_END_TIMESTAMP")).expect("a kind");
        let s = self.fcounters.get_mut(start).expect("listed");
        if *s == 0 || *s > t1 {
            *s = t1;
        }
        self.fcounters.insert(end, t2);
    }

    fn meta(&mut self, t1: i64, t2: i64) {
        timer_no_overlap(self.fcounters.get_mut("STDIO_F_META_TIME").expect("listed"), t1, t2, &mut self.last_meta_end);
    }

    /// `STDIO_RECORD_OPEN`: `reset` for a path's open (not fdopen's).
    fn open(&mut self, reset: bool, fdopen: bool, t1: i64, t2: i64) {
        if reset {
            self.offset = 0;
        }
        self.inc("STDIO_OPENS", 1);
        if fdopen {
            self.inc("STDIO_FDOPENS", 1);
        }
        self.stamp("OPEN", t1, t2);
        self.meta(t1, t2);
    }

    /// `STDIO_RECORD_READ`.
    fn read(&mut self, bytes: i64, t1: i64, t2: i64) {
        let at = self.offset;
        self.offset = at + bytes;
        let max = self.counters.get_mut("STDIO_MAX_BYTE_READ").expect("listed");
        *max = (*max).max(at + bytes - 1);
        self.inc("STDIO_BYTES_READ", bytes);
        self.inc("STDIO_READS", 1);
        self.stamp("READ", t1, t2);
        timer_no_overlap(self.fcounters.get_mut("STDIO_F_READ_TIME").expect("listed"), t1, t2, &mut self.last_read_end);
    }

    /// `STDIO_RECORD_WRITE`: a flush counts in `STDIO_FLUSHES` instead of `STDIO_WRITES`.
    fn write(&mut self, bytes: i64, flush: bool, t1: i64, t2: i64) {
        let at = self.offset;
        self.offset = at + bytes;
        let max = self.counters.get_mut("STDIO_MAX_BYTE_WRITTEN").expect("listed");
        *max = (*max).max(at + bytes - 1);
        self.inc("STDIO_BYTES_WRITTEN", bytes);
        self.inc(if flush { "STDIO_FLUSHES" } else { "STDIO_WRITES" }, 1);
        self.stamp("WRITE", t1, t2);
        let time = self.fcounters.get_mut("STDIO_F_WRITE_TIME").expect("listed");
        timer_no_overlap(time, t1, t2, &mut self.last_write_end);
    }

    /// A successful `fseek` to `to` (`None`: not known, the offset stays) or `rewind`.
    fn seek(&mut self, to: Option<i64>, t1: i64, t2: i64) {
        if let Some(to) = to {
            self.offset = to;
        }
        self.meta(t1, t2);
        self.inc("STDIO_SEEKS", 1);
    }

    fn close(&mut self, t1: i64, t2: i64) {
        self.stamp("CLOSE", t1, t2);
        self.meta(t1, t2);
    }
}

/// The STDIO records by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fold {
    pub files: BTreeMap<String, Record>,
    /// Calls on a stream no open was seen for (streams opened before the
    /// trace; the standard streams when libc's layout is not known).
    pub unattributed: u64,
    /// Calls on a stream whose fopen was seen but whose path could not be
    /// read at the call's entry (the string's page not resident, as with
    /// glibc's own `/proc/self/maps` at start-up): no record can hold them.
    pub unnamed: u64,
    /// System calls left out of POSIX because libc made them inside a stdio call.
    pub inside_calls: u64,
    /// `fgets` lines and `fputs` strings read at [`STRING_CAP`] bytes: each
    /// counted that many, which is short if the string was longer.
    pub strings_at_cap: u64,
    /// `fscanf` calls counted as reads of 0 bytes: the stream's position
    /// before or after was not known (its descriptor's offset not yet
    /// known to glibc, or the entry's row missing).
    pub scanf_unmeasured: u64,
    /// Stdio calls libc made inside another probed stdio call ([`nested`]):
    /// not counted, as Darshan's wrappers never see them.
    pub nested_calls: u64,
}

/// The streams the fold knows, per process.
#[derive(Default)]
struct Streams {
    /// (pid, FILE *) → record name.
    named: HashMap<(u32, u64), String>,
    /// Streams opened with a path that could not be read.
    unnamed: std::collections::HashSet<(u32, u64)>,
    /// Processes whose standard streams were registered.
    seeded: std::collections::HashSet<u32>,
}

impl Streams {
    /// Darshan registers `<STDIN>`, `<STDOUT>` and `<STDERR>` (an open at
    /// time 0, offset 0) when a process makes its first stdio call.
    fn seed(&mut self, c: &Call, files: &mut BTreeMap<String, Record>) {
        let Some(std) = c.std_streams else { return };
        if !self.seeded.insert(c.pid) {
            return;
        }
        for (fp, name) in std.iter().zip(STD_NAMES) {
            self.named.insert((c.pid, *fp), name.to_string());
            files.entry(name.to_string()).or_insert_with(Record::new).open(true, false, 0, 0);
        }
    }

    /// An open's stream: named by `name`, or unnamed (`None`) when it succeeded.
    fn open(&mut self, c: &Call, name: Option<&String>) {
        let key = (c.pid, c.ret);
        if let Some(name) = name {
            self.unnamed.remove(&key);
            self.named.insert(key, name.clone());
        } else if c.ret != 0 {
            self.named.remove(&key);
            self.unnamed.insert(key);
        }
    }
}

/// Folds the calls (in time order) into records; `descriptors` names an
/// `fdopen`'s descriptor.
pub fn fold(calls: &[Call], descriptors: &Descriptors) -> Fold {
    let mut out = Fold::default();
    let mut streams = Streams::default();
    let inner = nested(calls);
    out.nested_calls = inner.iter().filter(|i| **i).count() as u64;
    for (c, _) in calls.iter().zip(inner).filter(|(_, inner)| !inner) {
        let (t1, t2) = (c.start_ns as i64, c.end_ns as i64);
        streams.seed(c, &mut out.files);
        let stream = match c.kind {
            Kind::Open | Kind::Fdopen => {
                let name = open_name(c, descriptors);
                streams.open(c, name.as_ref());
                if let Some(name) = name {
                    let r = out.files.entry(name).or_insert_with(Record::new);
                    r.open(c.kind == Kind::Open, c.kind == Kind::Fdopen, t1, t2);
                }
                continue;
            }
            Kind::Print => c.std_streams.map_or(0, |s| s[1]),
            Kind::Fread | Kind::Fwrite => c.args[3],
            Kind::Fputc | Kind::Fputs | Kind::Putw => c.args[1],
            Kind::Fgets => c.args[2],
            Kind::Printf
            | Kind::Fgetc
            | Kind::Fseek
            | Kind::Rewind
            | Kind::Ftell
            | Kind::Fflush
            | Kind::Fclose
            | Kind::Fscanf
            | Kind::Getw => c.args[0],
        };
        let key = (c.pid, stream);
        if streams.unnamed.contains(&key) {
            out.unnamed += 1;
            if c.kind == Kind::Fclose {
                streams.unnamed.remove(&key);
            }
            continue;
        }
        let Some(r) = streams.named.get(&key).and_then(|n| out.files.get_mut(n)) else {
            out.unattributed += u64::from(c.kind != Kind::Ftell);
            continue;
        };
        match apply(r, c, t1, t2) {
            Counted::String if c.length >= STRING_CAP => out.strings_at_cap += 1,
            Counted::Unmeasured => out.scanf_unmeasured += 1,
            _ => {}
        }
        if c.kind == Kind::Fclose {
            streams.named.remove(&key);
        }
    }
    // Darshan drops a standard stream's record that was neither read nor written.
    out.files.retain(|name, r| !STD_NAMES.contains(&name.as_str()) || r.get("STDIO_READS") + r.get("STDIO_WRITES") > 0);
    out
}

/// What [`apply`] counted that the fold accounts for.
#[derive(PartialEq)]
enum Counted {
    Other,
    /// A string's length (`fgets`, `fputs`).
    String,
    /// An `fscanf` read whose bytes are not known (0 counted).
    Unmeasured,
}

/// What a call on a known stream does to its record.
fn apply(r: &mut Record, c: &Call, t1: i64, t2: i64) -> Counted {
    let int = c.ret as u32 as i32;
    let eof = int == -1;
    match c.kind {
        // Darshan: `ret != 0` (EOF too), ftell after less ftell before.
        Kind::Fscanf if int != 0 => {
            let bytes = c.position.zip(c.position_before).map(|(after, before)| after - before);
            r.read(bytes.unwrap_or(0), t1, t2);
            if bytes.is_none() {
                return Counted::Unmeasured;
            }
        }
        // Darshan: `ret != EOF || ferror(stream) == 0` (so EOF without an error counts 4 too).
        Kind::Getw if !eof || c.flags & IO_ERR_SEEN == 0 => r.read(4, t1, t2),
        Kind::Putw if !eof => r.write(4, false, t1, t2),
        Kind::Fread if c.ret > 0 => r.read((c.args[1] * c.ret) as i64, t1, t2),
        Kind::Fwrite if c.ret > 0 => r.write((c.args[1] * c.ret) as i64, false, t1, t2),
        Kind::Printf | Kind::Print if int > 0 => r.write(i64::from(int), false, t1, t2),
        Kind::Fgetc if !eof => r.read(1, t1, t2),
        Kind::Fputc if !eof => r.write(1, false, t1, t2),
        Kind::Fgets if c.ret != 0 => {
            r.read(c.length as i64, t1, t2);
            return Counted::String;
        }
        Kind::Fputs if !eof && int > 0 => {
            r.write(c.length as i64, false, t1, t2);
            return Counted::String;
        }
        Kind::Fflush if int >= 0 => r.write(0, true, t1, t2),
        // Darshan's offset is `ftell` after the seek: the stream's position at its return.
        Kind::Fseek if int >= 0 => r.seek(c.position, t1, t2),
        Kind::Rewind => r.seek(Some(0), t1, t2),
        Kind::Fclose => r.close(t1, t2),
        _ => {}
    }
    Counted::Other
}

/// The record an open names: fopen's and freopen's path, fdopen's
/// descriptor's POSIX record (the last open of that fd by the process
/// before the call); `None` for a failed open or an unknown descriptor.
fn open_name(c: &Call, descriptors: &Descriptors) -> Option<String> {
    if c.ret == 0 {
        return None;
    }
    match c.kind {
        Kind::Open => Some(c.text.clone()).filter(|p| !p.is_empty()),
        _ => descriptors.name(c),
    }
}

/// Where an `fdopen`'s descriptor is named from: the POSIX record of the file
/// it was open on, as the report's POSIX side knows it.
pub enum Descriptors<'a> {
    /// Streamed operations (in time order): the process's last open that
    /// returned the descriptor before the call.
    Operations(&'a [Operation]),
    /// The kernel fold: the file the stdio mark found at the descriptor at
    /// the call's entry ([`Fdopen`]: the one of the call's thread and
    /// descriptor nearest its start), named by that file's record.
    Kernel { fdopens: &'a [Fdopen], records: &'a BTreeMap<FileKey, posix::Record> },
}

impl Descriptors<'_> {
    /// The name of `fdopen` call `c`'s descriptor, if a POSIX record has it.
    fn name(&self, c: &Call) -> Option<String> {
        match self {
            Descriptors::Operations(posix) => posix
                .iter()
                .rev()
                .filter(|o| o.op == OpKind::Open && o.pid == c.pid && o.start_ns <= c.start_ns)
                .find(|o| o.result == c.args[0] as i64)
                .map(|o| o.path.clone()),
            Descriptors::Kernel { fdopens, records } => fdopens
                .iter()
                .filter(|f| f.tid == c.tid && f.fd == c.args[0] as i32)
                .min_by_key(|f| f.time_ns.abs_diff(c.start_ns))
                .and_then(|f| records.get(&f.file))
                .map(|r| r.name.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(kind: Kind, args: [u64; 4], ret: u64, text: &str, t: u64) -> Call {
        Call {
            kind,
            pid: 7,
            tid: 7,
            args,
            ret,
            text: text.into(),
            // fputs's string, fgets's line: the length user_strlen() measured.
            length: text.len() as u64,
            start_ns: t,
            end_ns: t + 10,
            std_streams: None,
            position: None,
            position_before: None,
            flags: 0,
        }
    }

    const FP: u64 = 0x5555_0000;

    #[test]
    fn calls_on_a_stream_whose_path_was_unreadable_are_unnamed_not_unattributed() {
        let calls = vec![
            c(Kind::Open, [0; 4], FP, "", 100), // the path's page was not resident
            c(Kind::Fgets, [0, 0, FP, 0], 0x7000, "x", 200),
            c(Kind::Fclose, [FP, 0, 0, 0], 0, "", 300),
            c(Kind::Fgetc, [FP, 0, 0, 0], 1, "", 400), // after close: unattributed
        ];
        let f = fold(&calls, &Descriptors::Operations(&[]));
        assert!(f.files.is_empty());
        assert_eq!((f.unnamed, f.unattributed), (2, 1));
    }

    #[test]
    fn an_fdopen_in_the_kernel_fold_is_named_by_the_record_of_the_file_its_mark_found() {
        let file = |inode| FileKey { dev_major: 8, dev_minor: 1, inode };
        let records: BTreeMap<FileKey, posix::Record> = [
            (file(12), posix::Record::new("q.dat", "ext4", "/")),
            (file(13), posix::Record::new("r.dat", "ext4", "/")),
        ]
        .into_iter()
        .collect();
        // fd 3 on thread 7 was fdopen'ed twice (q.dat, then r.dat after a close and an open); thread 8's is another.
        let mark = |tid, time_ns, inode| Fdopen { tid, fd: 3, time_ns, file: file(inode) };
        let fdopens = [mark(7, 101, 12), mark(7, 501, 13), mark(8, 100, 13)];
        let calls = vec![
            c(Kind::Fdopen, [3, 0, 0, 0], FP, "", 100),
            c(Kind::Fwrite, [0, 10, 1, FP], 1, "", 200),
            c(Kind::Fclose, [FP, 0, 0, 0], 0, "", 300),
            c(Kind::Fdopen, [3, 0, 0, 0], FP, "", 500),
            c(Kind::Fputc, [b'x'.into(), FP, 0, 0], 1, "", 600),
            c(Kind::Fdopen, [4, 0, 0, 0], FP + 1, "", 700), // no mark for fd 4: not named
        ];
        let f = fold(&calls, &Descriptors::Kernel { fdopens: &fdopens, records: &records });
        assert_eq!(f.files.keys().collect::<Vec<_>>(), ["q.dat", "r.dat"]);
        assert_eq!((f.files["q.dat"].get("STDIO_BYTES_WRITTEN"), f.files["r.dat"].get("STDIO_BYTES_WRITTEN")), (10, 1));
        assert_eq!(f.files["q.dat"].get("STDIO_FDOPENS"), 1);
    }

    #[test]
    fn a_stream_folds_by_darshans_rules() {
        let calls = vec![
            c(Kind::Open, [0; 4], FP, "/tmp/s.dat", 100),
            c(Kind::Fwrite, [0, 4096, 3, FP], 3, "", 200),
            c(Kind::Fwrite, [0, 4096, 3, FP], 0, "", 300), // failed: nothing
            c(Kind::Printf, [FP, 0, 0, 0], 11, "", 400),
            c(Kind::Fflush, [FP, 0, 0, 0], 0, "", 500),
            Call { position: Some(100), ..c(Kind::Fseek, [FP, 100, 0, 0], 0, "", 600) },
            c(Kind::Fread, [0, 10, 5, FP], 5, "", 700),
            c(Kind::Fgetc, [FP, 0, 0, 0], u64::from(u32::MAX), "", 800), // EOF
            c(Kind::Ftell, [FP, 0, 0, 0], 150, "", 900),
            c(Kind::Fclose, [FP, 0, 0, 0], 0, "", 1000),
            c(Kind::Fwrite, [0, 1, 1, FP], 1, "", 1100), // after close: unattributed
        ];
        let f = fold(&calls, &Descriptors::Operations(&[]));
        let r = &f.files["/tmp/s.dat"];
        let want = [
            ("STDIO_OPENS", 1),
            ("STDIO_WRITES", 2),
            ("STDIO_FLUSHES", 1),
            ("STDIO_BYTES_WRITTEN", 3 * 4096 + 11),
            ("STDIO_MAX_BYTE_WRITTEN", 3 * 4096 + 11 - 1),
            ("STDIO_SEEKS", 1),
            ("STDIO_READS", 1),
            ("STDIO_BYTES_READ", 50),
            ("STDIO_MAX_BYTE_READ", 149),
        ];
        for (k, v) in want {
            assert_eq!(r.get(k), v, "{k}");
        }
        assert_eq!(r.fcounters["STDIO_F_WRITE_START_TIMESTAMP"], 200);
        assert_eq!(r.fcounters["STDIO_F_WRITE_END_TIMESTAMP"], 510);
        assert_eq!(r.fcounters["STDIO_F_WRITE_TIME"], 30);
        assert_eq!(r.fcounters["STDIO_F_META_TIME"], 30);
        assert_eq!(f.unattributed, 1);
    }

    #[test]
    fn system_calls_inside_a_stdio_call_of_the_same_thread_are_its_own() {
        let mut a = c(Kind::Fwrite, [0; 4], 1, "", 100);
        a.end_ns = 200;
        let calls = Calls::new(&[a, Call { tid: 8, ..c(Kind::Fflush, [0; 4], 0, "", 300) }]);
        assert!(calls.inside(7, 100) && calls.inside(7, 150) && calls.inside(7, 200));
        assert!(!calls.inside(7, 99) && !calls.inside(7, 201) && !calls.inside(7, 305) && !calls.inside(9, 150));
        assert!(calls.inside(8, 305));
    }

    #[test]
    fn a_seek_takes_the_streams_position_at_its_return_and_long_strings_are_counted_at_the_cap() {
        let cap = STRING_CAP as i64;
        let calls = vec![
            c(Kind::Open, [0; 4], FP, "/tmp/e.dat", 100),
            // A string of the cap or longer: user_strlen() gives the cap.
            Call { length: STRING_CAP, ..c(Kind::Fputs, [0, FP, 0, 0], 1, "", 200) },
            // fseek(fp, 10, SEEK_END) after the cap's bytes: ftell gives cap + 10.
            Call { position: Some(cap + 10), ..c(Kind::Fseek, [FP, 10, 2, 0], 0, "", 300) },
            c(Kind::Fputc, [b'y'.into(), FP, 0, 0], 121, "", 400),
            // A seek whose descriptor offset was not known: the offset stays.
            c(Kind::Fseek, [FP, 0, 2, 0], 0, "", 500),
            c(Kind::Fputc, [b'z'.into(), FP, 0, 0], 122, "", 600),
            c(Kind::Fgets, [0, 8, FP, 0], 0x7000, "short\n", 700),
        ];
        let f = fold(&calls, &Descriptors::Operations(&[]));
        let r = &f.files["/tmp/e.dat"];
        assert_eq!(
            (r.get("STDIO_SEEKS"), r.get("STDIO_MAX_BYTE_WRITTEN"), r.get("STDIO_BYTES_WRITTEN")),
            (2, cap + 11, cap + 2)
        );
        assert_eq!((r.get("STDIO_BYTES_READ"), r.get("STDIO_MAX_BYTE_READ")), (6, cap + 17));
        assert_eq!(f.strings_at_cap, 1);
    }

    #[test]
    fn scans_count_the_position_moved_and_words_four_bytes() {
        let at =
            |c: Call, before: Option<i64>, after: Option<i64>| Call { position_before: before, position: after, ..c };
        let calls = vec![
            c(Kind::Open, [0; 4], FP, "/tmp/w.dat", 100),
            at(c(Kind::Fscanf, [FP, 0, 0, 0], 2, "", 200), Some(10), Some(16)),
            // A match failure (0) counts nothing; EOF (-1) counts what moved.
            at(c(Kind::Fscanf, [FP, 0, 0, 0], 0, "", 300), Some(16), Some(17)),
            at(c(Kind::Fscanf, [FP, 0, 0, 0], u64::from(u32::MAX), "", 400), Some(17), Some(19)),
            // The offset not known: a read of 0 bytes, accounted.
            at(c(Kind::Fscanf, [FP, 0, 0, 0], 1, "", 500), None, Some(30)),
            c(Kind::Putw, [7, FP, 0, 0], 0, "", 600),
            c(Kind::Putw, [7, FP, 0, 0], u64::from(u32::MAX), "", 700), // failed
            c(Kind::Getw, [FP, 0, 0, 0], u64::from(u32::MAX), "", 800), // EOF, no error: 4
            Call { flags: IO_ERR_SEEN, ..c(Kind::Getw, [FP, 0, 0, 0], u64::from(u32::MAX), "", 900) },
        ];
        let f = fold(&calls, &Descriptors::Operations(&[]));
        let r = &f.files["/tmp/w.dat"];
        assert_eq!((r.get("STDIO_READS"), r.get("STDIO_BYTES_READ")), (4, 6 + 2 + 4));
        assert_eq!((r.get("STDIO_WRITES"), r.get("STDIO_BYTES_WRITTEN")), (1, 4));
        assert_eq!(f.scanf_unmeasured, 1);
    }

    #[test]
    fn a_scan_takes_its_threads_entry_row_between_its_previous_scan_and_its_return() {
        let scan = |tid: u32, t: u64| Call { tid, ..c(Kind::Fscanf, [FP, 0, 0, 0], 1, "", t) };
        let mut calls = vec![scan(7, 100), scan(8, 105), scan(7, 200), scan(7, 300)];
        let e = |tid: u32, time_ns: u64, p: i64| Entry { tid, time_ns, position: Some(p) };
        // Thread 7's second scan has no row (lost): it must not take the first's.
        let entries = [e(7, 99, 1), e(8, 106, 50), e(7, 301, 3)];
        positions_at_entry(&mut calls, &entries);
        let got: Vec<Option<i64>> = calls.iter().map(|c| c.position_before).collect();
        assert_eq!(got, [Some(1), Some(50), None, Some(3)]);
    }

    #[test]
    fn calls_libc_makes_inside_a_stdio_call_count_once_as_darshans_wrappers_see_them() {
        let within = |c: Call, start_ns: u64, end_ns: u64| Call { start_ns, end_ns, ..c };
        let mut calls = vec![
            c(Kind::Open, [0; 4], FP, "/tmp/n.dat", 100),
            // putw → fwrite(&w, 4, 1, fp), getw → fread(&w, 4, 1, fp): glibc's own calls.
            within(c(Kind::Putw, [7, FP, 0, 0], 0, "", 0), 200, 290),
            within(c(Kind::Fwrite, [0, 4, 1, FP], 1, "", 0), 210, 280),
            within(c(Kind::Getw, [FP, 0, 0, 0], 7, "", 0), 300, 390),
            within(c(Kind::Fread, [0, 4, 1, FP], 1, "", 0), 310, 380),
            // fscanf → vfscanf (both probed as scans), then a scan of its own.
            within(c(Kind::Fscanf, [FP, 0, 0, 0], 1, "", 0), 400, 490),
            within(c(Kind::Fscanf, [FP, 0, 0, 0], 1, "", 0), 410, 480),
            within(c(Kind::Fscanf, [FP, 0, 0, 0], 1, "", 0), 500, 590),
            // Another thread's call inside this one's interval is no nested call.
            Call { tid: 8, ..within(c(Kind::Fwrite, [0, 4, 1, FP], 1, "", 0), 505, 506) },
        ];
        let inner: Vec<usize> = nested(&calls).iter().enumerate().filter(|(_, n)| **n).map(|(i, _)| i).collect();
        assert_eq!(inner, [2, 4, 6]);
        // Entry rows: fscanf's own at 401, vfscanf's at 411 (same position), the second scan's at 501.
        let e = |time_ns: u64, p: i64| Entry { tid: 7, time_ns, position: Some(p) };
        positions_at_entry(&mut calls, &[e(401, 8), e(411, 8), e(501, 20)]);
        for (i, after) in [(5, 20), (7, 26)] {
            calls[i].position = Some(after);
        }
        let f = fold(&calls, &Descriptors::Operations(&[]));
        let r = &f.files["/tmp/n.dat"];
        assert_eq!((r.get("STDIO_WRITES"), r.get("STDIO_BYTES_WRITTEN")), (2, 8));
        assert_eq!((r.get("STDIO_READS"), r.get("STDIO_BYTES_READ")), (3, 4 + 12 + 6));
        assert_eq!((f.nested_calls, f.scanf_unmeasured), (3, 0));
    }

    #[test]
    fn the_standard_streams_are_darshans_records_when_read_or_written() {
        let (stdin, stdout, stderr) = (0x7f00_1000, 0x7f00_2000, 0x7f00_3000);
        let std = |mut c: Call| {
            c.std_streams = Some([stdin, stdout, stderr]);
            c
        };
        let calls = vec![
            std(c(Kind::Print, [0; 4], 12, "", 100)),
            std(c(Kind::Fputs, [0, stdout, 0, 0], 1, "four", 200)),
            std(c(Kind::Fflush, [stdout, 0, 0, 0], 0, "", 300)),
            std(c(Kind::Fflush, [stderr, 0, 0, 0], 0, "", 400)), // only flushed: no record
            std(c(Kind::Fgetc, [stdin, 0, 0, 0], u64::from(b'q'), "", 500)),
            Call { pid: 8, ..std(c(Kind::Print, [0; 4], 3, "", 600)) },
        ];
        let f = fold(&calls, &Descriptors::Operations(&[]));
        assert_eq!(f.files.keys().collect::<Vec<_>>(), ["<STDIN>", "<STDOUT>"]);
        let out = &f.files["<STDOUT>"];
        let got: Vec<i64> = ["STDIO_OPENS", "STDIO_WRITES", "STDIO_FLUSHES", "STDIO_BYTES_WRITTEN"]
            .iter()
            .map(|k| out.get(k))
            .collect();
        assert_eq!(got, [2, 3, 1, 19]);
        assert_eq!(out.fcounters["STDIO_F_OPEN_START_TIMESTAMP"], 0);
        assert_eq!((f.files["<STDIN>"].get("STDIO_READS"), f.unattributed), (1, 0));
    }
}

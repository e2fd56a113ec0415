//! Darshan's POSIX module, folded from [`Operation`]s in time order.
//!
//! The rules are darshan-runtime's `lib/darshan-posix.c` (`POSIX_RECORD_OPEN`,
//! `POSIX_RECORD_READ`/`WRITE`, the `lseek`/`fsync`/`fdatasync`/`close`
//! wrappers) and `darshan-common.h`, so the counters keep Darshan's names:
//! - a call that failed (result < 0) counts nowhere but in ebq's own
//!   `EBQ_ERRORS`;
//! - access sizes are the bytes a read or write *returned*, bucketed with
//!   inclusive upper edges (`0_100` holds 0..=100, `100_1K` 101..=1024, …,
//!   `100M_1G` ..=2^30, then `1G_PLUS`); an empty read is in `0_100`;
//! - `last_byte` = offset + bytes − 1 of the previous read (write); a read is
//!   sequential when its offset is > last_byte, consecutive when it is
//!   last_byte + 1; both `last_byte`s are reset to 0 at open and close (so the
//!   first access after an open at offset 0 is neither); the stride is
//!   offset − last_byte − 1 when offset > last_byte ≠ 0, else 0;
//! - `POSIX_RW_SWITCHES` counts read↔write changes, never reset;
//! - the most common access sizes (reads and writes together) and strides:
//!   only the first 32 distinct values of a file are tracked, 0 never fills a
//!   slot, slots are ordered by count, then value, both descending;
//! - fsync and fdatasync count in `POSIX_F_WRITE_TIME`, open/close/lseek in
//!   `POSIX_F_META_TIME`; times add without overlap (`DARSHAN_TIMER_INC_NO_OVERLAP`);
//! - `POSIX_FILE_ALIGNMENT` is the file system's block size (`statfs` f_bsize
//!   of the mount point, as Darshan reads it); `POSIX_MEM_ALIGNMENT` is 8
//!   (Darshan's configure default), and a buffer address not a multiple of it
//!   counts in `POSIX_MEM_NOT_ALIGNED`.
//!
//! - the offset of a `read`/`write` is Darshan's own tracking, not the
//!   kernel's `f_pos`: 0 at open, the result of `lseek`, offset + bytes after
//!   *any* read or write, `pread`/`pwrite` included (so a `read` after a
//!   `pread` is counted at the end of the `pread`, as Darshan counts it; the
//!   trace keeps the kernel's true offset). A file whose open was not seen
//!   (`-p PID` attached later) starts from `f_pos`.
//!
//! What ebq adds: `EBQ_ERRORS`, and per kernel path ([`Via`]: `SYSCALL`,
//! `IO_URING`, `AIO`, `MMAP`) the reads, writes, their bytes and the fsyncs
//! (`EBQ_IO_URING_READS`, `EBQ_SYSCALL_BYTES_WRITTEN`, `EBQ_AIO_FSYNCS`, …).
//! `POSIX_*` means what it means in Darshan (issue 37 item 2): Darshan's
//! POSIX module wraps libc's calls, so it counts the system calls the
//! process makes (glibc's POSIX AIO, `aio_read`, is its helper threads'
//! `pread64`s: system calls too) and never an io_uring request, an AIO
//! iocb (`io_submit`) or a page a fault maps in. Those are in ebq's
//! per-path counters alone (no `POSIX_*` counter, no effect on Darshan's
//! offset, sequentiality or times), so `EBQ_SYSCALL_READS` = `POSIX_READS`
//! and the other paths are what Darshan would miss. `EBQ_MMAP_READS` counts
//! the faults and fault-arounds that brought pages of the file into a
//! mapping, `EBQ_MMAP_BYTES_READ` those pages' bytes (a store's fault brings
//! its page in too: no `WRITES`).
//!
//! Where ebq differs on purpose: a file is its (device, inode), not its path
//! (and Darshan's offset is per file, so two fds of one file share it in
//! both). Timestamps are seconds since the report's start.

use super::darshan_log::POSIX_HEAD;
use super::{FileKey, OpKind, Operation, Via};
use std::collections::BTreeMap;

pub use super::buckets::{bucket, BUCKETS};

/// Darshan's counters ebq has no event for: descriptors duplicated or
/// taken from streams, stats, mappings, renames, the open mode.
const NOT_COUNTED: [&str; 8] = [
    "POSIX_FILENOS",
    "POSIX_DUPS",
    "POSIX_STATS",
    "POSIX_MMAPS",
    "POSIX_RENAME_SOURCES",
    "POSIX_RENAME_TARGETS",
    "POSIX_RENAMED_FROM",
    "POSIX_MODE",
];

/// Integer counters of every record: Darshan's up to the size buckets (but
/// [`NOT_COUNTED`]), and ebq's failed calls.
fn counters() -> impl Iterator<Item = &'static str> {
    POSIX_HEAD.into_iter().filter(|c| !NOT_COUNTED.contains(c)).chain(["EBQ_ERRORS"])
}

/// ebq's per-path counters: `EBQ_<PATH>_<what>` (the kernel fold's `per_path[]` order).
pub const PER_PATH: [&str; 5] = ["READS", "WRITES", "BYTES_READ", "BYTES_WRITTEN", "FSYNCS"];

/// The name of a per-path counter: `EBQ_IO_URING_READS`.
pub fn per_path(via: Via, what: &str) -> String {
    format!("EBQ_{}_{what}", via.name().to_ascii_uppercase())
}

/// Darshan's memory alignment (its `--with-mem-align` default).
pub const MEM_ALIGNMENT: i64 = 8;

/// Darshan's cap on distinct common values tracked per file.
const COMMON_MAX_TRACKED: usize = 32;

/// Counts of the first [`COMMON_MAX_TRACKED`] distinct values.
#[derive(Default, Clone, Debug)]
pub struct CommonValues(BTreeMap<i64, i64>);

impl CommonValues {
    pub fn add(&mut self, v: i64) {
        if let Some(c) = self.0.get_mut(&v) {
            *c += 1;
        } else if self.0.len() < COMMON_MAX_TRACKED {
            self.0.insert(v, 1);
        }
    }

    /// The four slots: (value, count), count then value descending, 0 left out.
    pub fn top4(&self) -> Vec<(i64, i64)> {
        top4(self.0.iter().map(|(v, c)| (*v, *c)))
    }
}

pub(super) fn top4(values: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = values.filter(|(v, _)| *v != 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    v.truncate(4);
    v
}

/// One Darshan POSIX record: a file, or (summed) a file system.
#[derive(Clone, Debug)]
pub struct Record {
    pub name: String,
    pub fs_type: String,
    pub mount_point: String,
    /// Integer counters by Darshan name (every name of [`counters`] and the size buckets).
    pub counters: BTreeMap<String, i64>,
    /// The access-size and stride slots: (value, count), at most four each.
    pub access: Vec<(i64, i64)>,
    pub stride: Vec<(i64, i64)>,
    /// Timestamps (absolute ns, 0 = never) and times (ns) by Darshan name.
    pub fcounters: BTreeMap<&'static str, i64>,
    /// Files folded into this record (1 for a file).
    pub files: u64,
}

impl Record {
    pub(super) fn new(name: &str, fs_type: &str, mount_point: &str) -> Record {
        let mut counters: BTreeMap<String, i64> = counters().map(|c| (c.to_string(), 0)).collect();
        for via in Via::ALL {
            for what in PER_PATH {
                counters.insert(per_path(via, what), 0);
            }
        }
        for b in BUCKETS {
            counters.insert(format!("POSIX_SIZE_READ_{b}"), 0);
            counters.insert(format!("POSIX_SIZE_WRITE_{b}"), 0);
        }
        counters.insert("POSIX_MEM_ALIGNMENT".into(), MEM_ALIGNMENT);
        Record {
            name: name.into(),
            fs_type: fs_type.into(),
            mount_point: mount_point.into(),
            counters,
            access: vec![],
            stride: vec![],
            fcounters: FCOUNTERS.iter().map(|f| (*f, 0)).collect(),
            files: 1,
        }
    }

    /// A counter by name (0 for a name it does not have).
    pub fn get(&self, name: &str) -> i64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    fn inc(&mut self, name: &str, by: i64) {
        *self.counters.get_mut(name).expect("a name of counters()") += by;
    }

    /// Bytes read + written (the busiest-first order).
    pub fn bytes(&self) -> i64 {
        self.get("POSIX_BYTES_READ") + self.get("POSIX_BYTES_WRITTEN")
    }

    /// ns in reads, writes and metadata.
    pub fn time_ns(&self) -> i64 {
        self.fcounters["POSIX_F_READ_TIME"] + self.fcounters["POSIX_F_WRITE_TIME"] + self.fcounters["POSIX_F_META_TIME"]
    }

    /// The integer counters with the common-value slots, as Darshan names them.
    pub fn all_counters(&self) -> BTreeMap<String, i64> {
        let mut out = self.counters.clone();
        for (kind, slots, v, c) in
            [("ACCESS", &self.access, "ACCESS", "COUNT"), ("STRIDE", &self.stride, "STRIDE", "COUNT")]
        {
            for i in 0..4 {
                let (val, n) = slots.get(i).copied().unwrap_or((0, 0));
                out.insert(format!("POSIX_{kind}{}_{v}", i + 1), val);
                out.insert(format!("POSIX_{kind}{}_{c}", i + 1), n);
            }
        }
        out
    }
}

/// Float counters (held in ns; timestamps absolute, 0 = never).
pub const FCOUNTERS: [&str; 13] = [
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
];

/// A file's record while operations are folded in, with Darshan's per-record state.
struct Open {
    rec: Record,
    access: CommonValues,
    stride: CommonValues,
    last_byte_read: i64,
    last_byte_written: i64,
    last_io: Option<OpKind>,
    /// Darshan's offset (`rec_ref->offset`); `None` until an open or lseek is seen.
    offset: Option<i64>,
    last_read_end: i64,
    last_write_end: i64,
    last_meta_end: i64,
}

/// `DARSHAN_TIMER_INC_NO_OVERLAP`.
pub(crate) fn timer_no_overlap(timer: &mut i64, t1: i64, t2: i64, last: &mut i64) {
    *timer += if t1 > *last { t2 - t1 } else { t2 - *last };
    if t2 > *last {
        *last = t2;
    }
}

fn first(rec: &mut Record, name: &'static str, t: i64) {
    let v = rec.fcounters.get_mut(name).expect("a name of FCOUNTERS");
    if *v == 0 || *v > t {
        *v = t;
    }
}

impl Open {
    /// Folds one operation on the file into its record as Darshan's POSIX
    /// module would: a failed call counts as an error only; another path's
    /// request only in ebq's per-path counters ([`Open::add_request`]).
    fn add(&mut self, op: &Operation, block_size: i64) {
        let (t1, t2) = (op.start_ns as i64, op.end_ns as i64);
        let rec = &mut self.rec;
        if op.result < 0 {
            rec.inc("EBQ_ERRORS", 1);
            return;
        }
        if rec.fs_type.is_empty() && !op.fs_type.is_empty() {
            rec.fs_type.clone_from(&op.fs_type);
            rec.mount_point.clone_from(&op.mount_point);
        }
        if rec.name.is_empty() {
            rec.name.clone_from(&op.path);
        }
        // Darshan sees libc's calls only: another path's request counts in ebq's per-path counters alone.
        if op.via != Via::Syscall {
            self.add_request(op);
            return;
        }
        let f = &mut rec.fcounters;
        match op.op {
            OpKind::Open | OpKind::Close => self.add_open_or_close(op.op, t1, t2),
            OpKind::Seek => {
                self.offset = Some(op.result);
                timer_no_overlap(f.get_mut("POSIX_F_META_TIME").unwrap(), t1, t2, &mut self.last_meta_end);
                rec.inc("POSIX_SEEKS", 1);
            }
            OpKind::Fsync | OpKind::Fdatasync => {
                timer_no_overlap(f.get_mut("POSIX_F_WRITE_TIME").unwrap(), t1, t2, &mut self.last_write_end);
                rec.inc(if op.op == OpKind::Fsync { "POSIX_FSYNCS" } else { "POSIX_FDSYNCS" }, 1);
                rec.inc(&per_path(op.via, "FSYNCS"), 1);
            }
            // A mapping's pages are never a system call's (the per-path branch above took them).
            OpKind::Map => {}
            OpKind::Read | OpKind::Write => {
                self.add_read_or_write(op, block_size);
                self.add_io_times(op.op == OpKind::Read, op.result, t1, t2);
            }
        }
    }

    /// An io_uring, AIO or mapped-page request: its count and bytes under its path's name.
    fn add_request(&mut self, op: &Operation) {
        let (count, bytes) = match op.op {
            OpKind::Read | OpKind::Map => ("READS", Some("BYTES_READ")),
            OpKind::Write => ("WRITES", Some("BYTES_WRITTEN")),
            OpKind::Fsync | OpKind::Fdatasync => ("FSYNCS", None),
            OpKind::Open | OpKind::Close | OpKind::Seek => return,
        };
        self.rec.inc(&per_path(op.via, count), 1);
        if let Some(b) = bytes {
            self.rec.inc(&per_path(op.via, b), op.result);
        }
    }

    /// An open (the offset back to 0) or a close: sequentiality starts over; meta time and timestamps.
    fn add_open_or_close(&mut self, kind: OpKind, t1: i64, t2: i64) {
        let rec = &mut self.rec;
        if kind == OpKind::Open {
            self.offset = Some(0);
        }
        self.last_byte_read = 0;
        self.last_byte_written = 0;
        let (start, end, count) = if kind == OpKind::Open {
            ("POSIX_F_OPEN_START_TIMESTAMP", "POSIX_F_OPEN_END_TIMESTAMP", Some("POSIX_OPENS"))
        } else {
            ("POSIX_F_CLOSE_START_TIMESTAMP", "POSIX_F_CLOSE_END_TIMESTAMP", None)
        };
        let f = &mut rec.fcounters;
        timer_no_overlap(f.get_mut("POSIX_F_META_TIME").unwrap(), t1, t2, &mut self.last_meta_end);
        f.insert(end, t2);
        first(rec, start, t1);
        if let Some(c) = count {
            rec.inc(c, 1);
        }
    }

    /// A read's or write's counters: its offset (the file position unless
    /// positioned), sequential and consecutive, stride, sizes, alignment and
    /// read/write switches.
    fn add_read_or_write(&mut self, op: &Operation, block_size: i64) {
        let rec = &mut self.rec;
        let read = op.op == OpKind::Read;
        let ret = op.result;
        let off = if op.positioned { op.offset } else { self.offset.unwrap_or(op.offset) };
        self.offset = Some(off + ret);
        let last = if read { &mut self.last_byte_read } else { &mut self.last_byte_written };
        let n = |r: &str, w: &str| if read { r.to_string() } else { w.to_string() };
        let (seq, consec) = (off > *last, off == *last + 1);
        let stride = if off > 0 && off > *last && *last != 0 { off - *last - 1 } else { 0 };
        *last = off + ret - 1;
        rec.inc(&n("POSIX_SEQ_READS", "POSIX_SEQ_WRITES"), seq as i64);
        rec.inc(&n("POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES"), consec as i64);
        let max = n("POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN");
        if rec.get(&max) < off + ret - 1 {
            rec.counters.insert(max, off + ret - 1);
        }
        rec.inc(&n("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"), ret);
        rec.inc(&n("POSIX_READS", "POSIX_WRITES"), 1);
        rec.inc(&per_path(op.via, &n("BYTES_READ", "BYTES_WRITTEN")), ret);
        rec.inc(&per_path(op.via, &n("READS", "WRITES")), 1);
        rec.inc(&format!("POSIX_SIZE_{}_{}", n("READ", "WRITE"), BUCKETS[bucket(ret)]), 1);
        self.access.add(ret);
        self.stride.add(stride);
        if op.mem.is_some_and(|m| m as i64 % MEM_ALIGNMENT != 0) {
            rec.inc("POSIX_MEM_NOT_ALIGNED", 1);
        }
        if block_size > 0 && off % block_size != 0 {
            rec.inc("POSIX_FILE_NOT_ALIGNED", 1);
        }
        let other = if read { OpKind::Write } else { OpKind::Read };
        if self.last_io == Some(other) {
            rec.inc("POSIX_RW_SWITCHES", 1);
        }
        self.last_io = Some(op.op);
    }

    /// A read's or write's timestamps, slowest call (and its size) and time, overlaps counted once.
    fn add_io_times(&mut self, read: bool, ret: i64, t1: i64, t2: i64) {
        let rec = &mut self.rec;
        let (start, end, max_t, max_size, time, last_end) = if read {
            (
                "POSIX_F_READ_START_TIMESTAMP",
                "POSIX_F_READ_END_TIMESTAMP",
                "POSIX_F_MAX_READ_TIME",
                "POSIX_MAX_READ_TIME_SIZE",
                "POSIX_F_READ_TIME",
                &mut self.last_read_end,
            )
        } else {
            (
                "POSIX_F_WRITE_START_TIMESTAMP",
                "POSIX_F_WRITE_END_TIMESTAMP",
                "POSIX_F_MAX_WRITE_TIME",
                "POSIX_MAX_WRITE_TIME_SIZE",
                "POSIX_F_WRITE_TIME",
                &mut self.last_write_end,
            )
        };
        first(rec, start, t1);
        let f = &mut rec.fcounters;
        f.insert(end, t2);
        if f[max_t] < t2 - t1 {
            f.insert(max_t, t2 - t1);
            rec.counters.insert(max_size.into(), ret);
        }
        timer_no_overlap(rec.fcounters.get_mut(time).unwrap(), t1, t2, last_end);
    }
}

/// The fold's result: one record per file and one per file system.
pub struct Fold {
    pub files: BTreeMap<FileKey, Record>,
    pub filesystems: BTreeMap<(String, String), Record>,
}

/// Folds `ops` (sorted by start time) into Darshan records. `block_size`
/// gives a mount point's block size (≤ 0: unknown, no file alignment).
pub fn fold(ops: &[Operation], block_size: &mut dyn FnMut(&str) -> i64) -> Fold {
    let mut open: BTreeMap<FileKey, Open> = BTreeMap::new();
    let mut sizes: BTreeMap<String, i64> = BTreeMap::new();
    for op in ops {
        let o = open.entry(op.file).or_insert_with(|| Open {
            rec: Record::new("", "", ""),
            access: CommonValues::default(),
            stride: CommonValues::default(),
            last_byte_read: 0,
            last_byte_written: 0,
            last_io: None,
            offset: None,
            last_read_end: 0,
            last_write_end: 0,
            last_meta_end: 0,
        });
        let bs = if op.mount_point.is_empty() {
            o.rec.get("POSIX_FILE_ALIGNMENT")
        } else {
            *sizes.entry(op.mount_point.clone()).or_insert_with(|| block_size(&op.mount_point))
        };
        o.rec.counters.insert("POSIX_FILE_ALIGNMENT".into(), bs);
        o.add(op, bs);
    }
    let files: BTreeMap<FileKey, Record> = open
        .into_iter()
        .map(|(k, mut o)| {
            o.rec.access = o.access.top4();
            o.rec.stride = o.stride.top4();
            (k, o.rec)
        })
        .collect();
    Fold { filesystems: filesystems(&files), files }
}

/// The files' records summed per file system (fs type, mount point).
pub fn filesystems(files: &BTreeMap<FileKey, Record>) -> BTreeMap<(String, String), Record> {
    let mut filesystems: BTreeMap<(String, String), Record> = BTreeMap::new();
    for f in files.values() {
        let key = (f.fs_type.clone(), f.mount_point.clone());
        match filesystems.get_mut(&key) {
            None => {
                filesystems.insert(key, f.clone());
            }
            Some(t) => merge(t, f),
        }
    }
    filesystems
}

/// Adds file `f` into file-system record `t`: sums, except maxima (the
/// largest), alignments (the same on one file system), first timestamps
/// (the earliest), last timestamps (the latest), the slowest read/write
/// (with its size) and the common values (counts of equal values summed,
/// then the top four again).
pub(super) fn merge(t: &mut Record, f: &Record) {
    t.files += 1;
    for (k, v) in &f.counters {
        let e = t.counters.entry(k.clone()).or_insert(0);
        match k.as_str() {
            "POSIX_MAX_BYTE_READ" | "POSIX_MAX_BYTE_WRITTEN" => *e = (*e).max(*v),
            "POSIX_FILE_ALIGNMENT"
            | "POSIX_MEM_ALIGNMENT"
            | "POSIX_MAX_READ_TIME_SIZE"
            | "POSIX_MAX_WRITE_TIME_SIZE" => {}
            _ => *e += v,
        }
    }
    for (k, v) in &f.fcounters {
        let e = t.fcounters.get_mut(k).unwrap();
        if k.ends_with("START_TIMESTAMP") {
            if *v != 0 && (*e == 0 || *v < *e) {
                *e = *v;
            }
        } else if k.ends_with("END_TIMESTAMP") {
            *e = (*e).max(*v);
        } else if *k == "POSIX_F_MAX_READ_TIME" || *k == "POSIX_F_MAX_WRITE_TIME" {
            if *v > *e {
                *e = *v;
                let size = if *k == "POSIX_F_MAX_READ_TIME" {
                    "POSIX_MAX_READ_TIME_SIZE"
                } else {
                    "POSIX_MAX_WRITE_TIME_SIZE"
                };
                t.counters.insert(size.into(), f.get(size));
            }
        } else {
            *e += v;
        }
    }
    for (mine, theirs) in [(&mut t.access, &f.access), (&mut t.stride, &f.stride)] {
        let mut sum: BTreeMap<i64, i64> = mine.iter().copied().collect();
        for (v, c) in theirs {
            *sum.entry(*v).or_insert(0) += c;
        }
        *mine = top4(sum.into_iter());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, offset: i64, result: i64, t: u64) -> Operation {
        Operation {
            path: "f".into(),
            op: kind,
            via: Via::Syscall,
            pid: 1,
            tid: 1,
            rank: None,
            file: FileKey { dev_major: 8, dev_minor: 1, inode: 12 },
            fs_type: "ext4".into(),
            mount_point: "/".into(),
            offset,
            positioned: true,
            asked: result.max(0) as u64,
            result,
            mem: Some(4096),
            start_ns: t,
            end_ns: t + 10,
        }
    }

    #[test]
    fn buckets_have_inclusive_upper_edges() {
        let at = |n: i64| BUCKETS[bucket(n)];
        assert_eq!((at(0), at(100), at(101), at(1024), at(1025)), ("0_100", "0_100", "100_1K", "100_1K", "1K_10K"));
        assert_eq!(
            (at(1 << 20), at((1 << 20) + 1), at(1 << 30), at((1 << 30) + 1)),
            ("100K_1M", "1M_4M", "100M_1G", "1G_PLUS")
        );
    }

    #[test]
    fn reopen_resets_sequentiality_and_failures_count_as_errors() {
        use OpKind::*;
        let ops = [
            op(Open, 0, 3, 1),
            op(Read, 0, 100, 100),
            op(Read, 100, 100, 200),
            op(Read, -1i64 as u64 as i64, -22, 250),
            op(Close, 0, 0, 300),
            op(Open, 0, 3, 400),
            op(Read, 200, 50, 500),
            op(Write, 250, 0, 600),
        ];
        let fold = fold(&ops, &mut |_| 4096);
        let f = fold.files.values().next().unwrap();
        let c = f.all_counters();
        let want = [
            ("POSIX_OPENS", 2),
            ("POSIX_READS", 3),
            ("POSIX_WRITES", 1),
            ("POSIX_CONSEC_READS", 1),
            // 100 > 99, and 200 > 0 after the reopen reset.
            ("POSIX_SEQ_READS", 2),
            ("POSIX_MAX_BYTE_READ", 249),
            ("POSIX_BYTES_READ", 250),
            ("POSIX_SIZE_READ_0_100", 3),
            ("POSIX_SIZE_WRITE_0_100", 1),
            ("POSIX_RW_SWITCHES", 1),
            ("EBQ_ERRORS", 1),
            ("POSIX_ACCESS1_ACCESS", 100),
            ("POSIX_ACCESS1_COUNT", 2),
            ("POSIX_ACCESS2_ACCESS", 50),
            ("POSIX_FILE_NOT_ALIGNED", 3),
            ("POSIX_FILE_ALIGNMENT", 4096),
        ];
        for (k, v) in want {
            assert_eq!(c[k], v, "{k}");
        }
        assert_eq!(f.fcounters["POSIX_F_META_TIME"], 30);
        assert_eq!(f.fcounters["POSIX_F_OPEN_START_TIMESTAMP"], 1);
        assert_eq!(f.fcounters["POSIX_F_OPEN_END_TIMESTAMP"], 410);
    }

    #[test]
    fn requests_and_mapped_pages_count_in_their_paths_alone() {
        use OpKind::*;
        let on = |via: Via, o: Operation| Operation { via, ..o };
        let ops = [
            op(Open, 0, 3, 1),
            on(Via::IoUring, op(Read, 0, 4096, 100)),
            on(Via::Aio, op(Write, 4096, 512, 200)),
            on(Via::IoUring, op(Fsync, 0, 0, 250)),
            on(Via::Mmap, op(Map, 0, 16384, 300)),
            op(Read, 100, 100, 400),
        ];
        let fold = fold(&ops, &mut |_| 4096);
        let c = fold.files.values().next().unwrap().all_counters();
        let want = [
            // Darshan's: the open and the one read(2), placed after the open (its offset untouched by the request).
            ("POSIX_OPENS", 1),
            ("POSIX_READS", 1),
            ("POSIX_BYTES_READ", 100),
            ("POSIX_WRITES", 0),
            ("POSIX_FSYNCS", 0),
            ("POSIX_SEQ_READS", 1),
            ("POSIX_SIZE_READ_1K_10K", 0),
            ("EBQ_SYSCALL_READS", 1),
            ("EBQ_IO_URING_READS", 1),
            ("EBQ_IO_URING_BYTES_READ", 4096),
            ("EBQ_IO_URING_FSYNCS", 1),
            ("EBQ_AIO_WRITES", 1),
            ("EBQ_AIO_BYTES_WRITTEN", 512),
            ("EBQ_MMAP_READS", 1),
            ("EBQ_MMAP_BYTES_READ", 16384),
        ];
        for (k, v) in want {
            assert_eq!(c[k], v, "{k}");
        }
    }
}

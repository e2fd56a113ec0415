//! The POSIX fold in the kernel: `fold.bpf.c` keeps every file's Darshan
//! state in BPF maps as the rows happen (the engine hands each row of
//! [`super::query::sql`] to its `ebq_fold` instead of a ring buffer), and this
//! module reads those maps back into the [`posix::Fold`] that
//! [`posix::fold`] makes from streamed rows.
//!
//! The C is `Decoder::{submitted, operation}` and `Open::add` rule for rule;
//! what differs (and why) is said at the top of `fold.bpf.c`: operations are
//! folded in completion order rather than sorted by start; a row that finds
//! its file's lock held too long, or the file map full, is counted dropped;
//! the file alignment is the block size of the last mount point seen.
//!
//! What user space adds, because only it knows the file system's block size
//! (`statfs`): `POSIX_FILE_ALIGNMENT`, and `POSIX_FILE_NOT_ALIGNED` from the
//! kernel's histogram of Darshan offsets by trailing zero bits (exact for a
//! power-of-two block size, as file systems' are; for any other it is 0).

use super::fold_c;
use super::mounts::Mounts;
use super::posix::{self, Record, BUCKETS};
use super::{FileKey, Via};
use ebq::host::SyscallTable;
use std::collections::BTreeMap;

/// The files' records (an array of `struct ebq_fold_file`, each naming its
/// file in its `key`; a free slot's inode is 0).
pub const FILES_MAP: &str = "ebq_fold_files";
/// The per-CPU totals (one `struct ebq_fold_totals`).
pub const TOTALS_MAP: &str = "ebq_fold_totals";

/// The hand-written C: `ebq_fold` and its structs and maps, after
/// [`fold_c::header`] (the facts it shares with Rust) and before
/// [`fold_c::layout_asserts`].
const BODY: &str = include_str!("fold.bpf.c");

/// The fold's C (`ebq_fold` and its maps) for this machine: a call it lacks
/// (`open` on arm64) is -1, which no row's call number is.
pub fn source(syscalls: &SyscallTable, stdio_mark: bool) -> String {
    format!("{}\n{BODY}{}", fold_c::header(&mut |name| syscalls.nr(name), stdio_mark), fold_c::layout_asserts())
}

/// What the rows were, over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Rows that were a file's operation (`Decoder::operation`), folded.
    pub operations: u64,
    /// AIO requests `io_submit` calls submitted (`Decoder::submitted`).
    pub aio_submitted: u64,
    /// Operations via AIO.
    pub aio_counted: u64,
    /// Rows of no file's operation (a failed open, a bad fd, …).
    pub no_file: u64,
    /// System calls of a file left out of POSIX: libc made them inside a
    /// stdio call (the stdio mark, `EBQ_FOLD_STDIO_MARK`; 0 without it).
    pub inside_stdio: u64,
    /// Rows of files that found every record taken ([`layout::FILES`]):
    /// not folded, counted `dropped` (the streamed report has no such cap).
    pub past_files: u64,
}

/// `struct ebq_fold_totals`'s `__u64` fields, in order ([`Totals`]' fields).
pub(super) const TOTALS: [&str; 6] =
    ["operations", "aio_submitted", "aio_counted", "no_file", "inside_stdio", "past_files"];
const TOTALS_SIZE: usize = 8 * TOTALS.len();

/// Sums [`TOTALS_MAP`]'s one slot over the CPUs: `per_cpu_values` holds one
/// value (`struct ebq_fold_totals`, native endian) per CPU.
pub fn totals(per_cpu_values: &[Vec<u8>]) -> Totals {
    let mut t = Totals::default();
    for v in per_cpu_values.iter().filter(|v| v.len() >= TOTALS_SIZE) {
        let total = |name: &str| u64_at(v, 8 * TOTALS.iter().position(|f| *f == name).expect("a total"));
        t.operations += total("operations");
        t.aio_submitted += total("aio_submitted");
        t.aio_counted += total("aio_counted");
        t.no_file += total("no_file");
        t.inside_stdio += total("inside_stdio");
        t.past_files += total("past_files");
    }
    t
}

/// The `fdopen` calls' files, kept by the stdio mark: `struct
/// ebq_fold_fdopen` → `struct ebq_fold_key`.
pub const FDOPENS_MAP: &str = "ebq_fold_fdopens";

/// One `fdopen`'s descriptor as the kernel found it at the call's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fdopen {
    pub tid: u32,
    pub fd: i32,
    /// When the mark's row was made (CLOCK_MONOTONIC ns): within the call.
    pub time_ns: u64,
    /// The file open at `fd` then.
    pub file: FileKey,
}

/// [`FDOPENS_MAP`]'s entries (key and value bytes, native endian); entries
/// of another size than the C's are skipped.
pub fn fdopens(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<Fdopen> {
    entries
        .iter()
        .filter(|(k, v)| k.len() == layout::FDOPEN_KEY_SIZE && v.len() == layout::KEY_SIZE)
        .map(|(k, v)| Fdopen { tid: u32_at(k, 0), fd: u32_at(k, 4) as i32, time_ns: u64_at(k, 8), file: file_key(v) })
        .collect()
}

/// A `struct ebq_fold_key` (native endian) as the file it names.
fn file_key(b: &[u8]) -> FileKey {
    FileKey::of_kernel_dev(u32_at(b, 0), u64_at(b, layout::KEY_INODE))
}

/// `struct ebq_fold_key` and `struct ebq_fold_file`: the C asserts these
/// offsets (`fold_c::layout_asserts`), so the two cannot disagree and compile.
pub(super) mod layout {
    pub const KEY_SIZE: usize = 16;
    /// `struct ebq_fold_fdopen`: tid, fd, time.
    pub const FDOPEN_KEY_SIZE: usize = 16;
    pub const KEY_INODE: usize = 8;
    pub const LAST_IO: usize = 4;
    pub const OFFSET_KNOWN: usize = 8;
    pub const ALIGN_KNOWN: usize = 12;
    pub const ACCESS_USED: usize = 16;
    pub const STRIDE_USED: usize = 20;
    pub const OFFSET: usize = 24;
    pub const LAST_BYTE: usize = 32;
    pub const LAST_END: usize = 48;
    pub const COUNTERS: usize = 72;
    pub const PER_PATH: usize = 224;
    pub const SIZE: usize = 384;
    pub const FCOUNTERS: usize = 544;
    pub const ALIGN: usize = 648;
    pub const ACCESS: usize = 1168;
    pub const STRIDE: usize = 1680;
    pub const FS_TYPE: usize = 2192;
    pub const MOUNT_POINT: usize = 2208;
    pub const NAME: usize = 2272;
    pub const ALIGN_MOUNT: usize = 2336;
    pub const MOUNT_ID: usize = 2400;
    pub const ALIGN_MOUNT_ID: usize = 2404;
    pub const ACCESS_SEEN: usize = 2408;
    pub const STRIDE_SEEN: usize = 2440;
    /// The record's own `struct ebq_fold_key` (inode 0: a free slot).
    pub const KEY: usize = 2472;
    /// `cold_tail[]`, never touched: no two records' hot fields share a cache line.
    pub const COLD_TAIL: usize = 2488;
    pub const COLD_TAIL_SIZE: usize = 72;
    pub const VALUE_SIZE: usize = 2560;
    /// Records (`EBQ_FOLD_FILES`): the array's slots, preallocated.
    pub const FILES: usize = 4096;
    /// Slots of `access[]` and `stride[]` (Darshan's 32), `{ __s64 value, count; }` each.
    pub const COMMON: usize = 32;
    /// Words of `access_seen[]` and `stride_seen[]`, the kernel's filter of the values
    /// in the slots (256 bits: at most 32 set, so a value not tracked mostly skips the scan).
    pub const COMMON_SEEN: usize = 4;
    /// `align[]`: trailing zero bits 0..=63 of a nonzero offset, then offset 0.
    pub const ALIGN_SLOTS: usize = 65;
    /// Every field of `struct ebq_fold_file` after `lock` with its offset, for the C's assertions.
    pub const FILE_FIELDS: [(&str, usize); 25] = [
        ("last_io", LAST_IO),
        ("offset_known", OFFSET_KNOWN),
        ("align_known", ALIGN_KNOWN),
        ("access_used", ACCESS_USED),
        ("stride_used", STRIDE_USED),
        ("offset", OFFSET),
        ("last_byte", LAST_BYTE),
        ("last_end", LAST_END),
        ("counters", COUNTERS),
        ("per_path", PER_PATH),
        ("size", SIZE),
        ("fcounters", FCOUNTERS),
        ("align", ALIGN),
        ("access", ACCESS),
        ("stride", STRIDE),
        ("fs_type", FS_TYPE),
        ("mount_point", MOUNT_POINT),
        ("name", NAME),
        ("align_mount", ALIGN_MOUNT),
        ("mount_id", MOUNT_ID),
        ("align_mount_id", ALIGN_MOUNT_ID),
        ("access_seen", ACCESS_SEEN),
        ("stride_seen", STRIDE_SEEN),
        ("key", KEY),
        ("cold_tail", COLD_TAIL),
    ];
}
use layout::*;

/// `counters[]` in order (the C's `EBQ_FOLD_C_*`, generated by [`fold_c`]).
pub(super) const COUNTER_NAMES: [&str; 19] = [
    "POSIX_OPENS",
    "POSIX_SEEKS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_MAX_BYTE_READ",
    "POSIX_MAX_BYTE_WRITTEN",
    "POSIX_CONSEC_READS",
    "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS",
    "POSIX_SEQ_WRITES",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
    "POSIX_RW_SWITCHES",
    "POSIX_MEM_NOT_ALIGNED",
    "EBQ_ERRORS",
];

/// `per_path[via * PER_PATH_NAMES.len() + i]`, via in [`Via::ALL`] order.
use posix::PER_PATH as PER_PATH_NAMES;

/// `fcounters[]` in order (the C's `EBQ_FOLD_F_*`, generated by [`fold_c`]).
pub(super) const FCOUNTER_NAMES: [&str; 13] = [
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
];

// The fields follow each other as the C declares them. (Darshan's running
// state, last_io … last_end and the slots' filters, is the kernel's alone: user space decodes the
// counters, but lists the whole layout.)
const _: () = {
    assert!(OFFSET_KNOWN == LAST_IO + 4 && ALIGN_KNOWN == OFFSET_KNOWN + 4 && ACCESS_USED == ALIGN_KNOWN + 4);
    assert!(STRIDE_USED == ACCESS_USED + 4 && OFFSET == STRIDE_USED + 4 && LAST_BYTE == OFFSET + 8);
    assert!(LAST_END == LAST_BYTE + 8 * 2 && COUNTERS == LAST_END + 8 * 3);
    assert!(PER_PATH == COUNTERS + 8 * COUNTER_NAMES.len());
    assert!(SIZE == PER_PATH + 8 * PER_PATH_NAMES.len() * Via::ALL.len());
    assert!(FCOUNTERS == SIZE + 8 * 2 * BUCKETS.len());
    assert!(ALIGN == FCOUNTERS + 8 * FCOUNTER_NAMES.len());
    assert!(ACCESS == ALIGN + 8 * ALIGN_SLOTS);
    assert!(STRIDE == ACCESS + 16 * COMMON);
    assert!(FS_TYPE == STRIDE + 16 * COMMON);
    assert!(MOUNT_ID == ALIGN_MOUNT + 64 && ALIGN_MOUNT_ID == MOUNT_ID + 4 && ACCESS_SEEN == ALIGN_MOUNT_ID + 4);
    assert!(STRIDE_SEEN == ACCESS_SEEN + 8 * COMMON_SEEN && KEY == STRIDE_SEEN + 8 * COMMON_SEEN);
    assert!(COLD_TAIL == KEY + KEY_SIZE && VALUE_SIZE == COLD_TAIL + COLD_TAIL_SIZE);
    // A whole number of cache lines, the last 64 bytes or more cold.
    assert!(VALUE_SIZE.is_multiple_of(64) && COLD_TAIL_SIZE >= 64);
};

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    u64_at(b, at) as i64
}

/// A `char[len]` field as the engine decodes a string column (up to the
/// first NUL, bytes that are not UTF-8 escaped).
fn text_at(b: &[u8], at: usize, len: usize) -> String {
    let raw = &b[at..at + len];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(len);
    ebq::sink::escape_bytes(&raw[..end]).into_owned()
}

/// The common-value slots in use, as (value, count).
fn slots(b: &[u8], at: usize, used: u32) -> impl Iterator<Item = (i64, i64)> + '_ {
    (0..(used as usize).min(COMMON)).map(move |i| (i64_at(b, at + 16 * i), i64_at(b, at + 16 * i + 8)))
}

/// `POSIX_FILE_NOT_ALIGNED` from the histogram of offsets by trailing zero
/// bits: an offset is a multiple of 2^k iff it has at least k trailing zero
/// bits (two's complement: so for negative offsets too, as Rust's `%` says),
/// and 0 is a multiple of all. Unknown block sizes (≤ 0) count nothing, as
/// in posix.rs; one not a power of two cannot be told from the histogram: 0.
fn not_aligned(b: &[u8], block_size: i64) -> i64 {
    if block_size <= 0 || (block_size as u64).count_ones() != 1 {
        return 0;
    }
    let k = block_size.trailing_zeros() as usize;
    (0..k).map(|z| i64_at(b, ALIGN + 8 * z)).sum()
}

/// One file's record from its `struct ebq_fold_file` (`block_size`: its mount point's, 0 if none).
fn record(v: &[u8], block_size: i64, mounts: &mut Mounts) -> Record {
    let mut rec = Record::new(&text_at(v, NAME, 64), &text_at(v, FS_TYPE, 16), &text_at(v, MOUNT_POINT, 64));
    // A system call's file: its mount by id (the kernel kept no strings for it).
    if let (true, Some(m)) = (rec.fs_type.is_empty(), mounts.get(u32_at(v, MOUNT_ID))) {
        rec.fs_type.clone_from(&m.fs_type);
        rec.mount_point.clone_from(&m.mount_point);
    }
    for (i, name) in COUNTER_NAMES.iter().enumerate() {
        rec.counters.insert(name.to_string(), i64_at(v, COUNTERS + 8 * i));
    }
    for (p, via) in Via::ALL.into_iter().enumerate() {
        for (i, what) in PER_PATH_NAMES.iter().enumerate() {
            rec.counters.insert(posix::per_path(via, what), i64_at(v, PER_PATH + 8 * (PER_PATH_NAMES.len() * p + i)));
        }
    }
    for (w, side) in ["READ", "WRITE"].into_iter().enumerate() {
        for (i, b) in BUCKETS.iter().enumerate() {
            rec.counters.insert(format!("POSIX_SIZE_{side}_{b}"), i64_at(v, SIZE + 8 * (BUCKETS.len() * w + i)));
        }
    }
    for (i, name) in FCOUNTER_NAMES.iter().enumerate() {
        rec.fcounters.insert(name, i64_at(v, FCOUNTERS + 8 * i));
    }
    rec.counters.insert("POSIX_FILE_ALIGNMENT".into(), block_size);
    rec.counters.insert("POSIX_FILE_NOT_ALIGNED".into(), not_aligned(v, block_size));
    rec.access = posix::top4(slots(v, ACCESS, u32_at(v, ACCESS_USED)));
    rec.stride = posix::top4(slots(v, STRIDE, u32_at(v, STRIDE_USED)));
    rec
}

/// [`FILES_MAP`]'s entries (key and value bytes, native endian) as the
/// records [`posix::fold`] makes: one per file, and the files summed per
/// file system with posix's `merge`. `block_size` gives a mount point's
/// block size (≤ 0: unknown), asked once per mount point as posix::fold does.
/// A value names its file (its `key`); free slots (inode 0) and entries of
/// another size than the C's are skipped.
pub fn records(
    files: &[(Vec<u8>, Vec<u8>)],
    mounts: &mut Mounts,
    block_size: &mut dyn FnMut(&str) -> i64,
) -> posix::Fold {
    let mut sizes: BTreeMap<String, i64> = BTreeMap::new();
    let mut out: BTreeMap<FileKey, Record> = BTreeMap::new();
    for (_, v) in files {
        if v.len() != VALUE_SIZE || u64_at(v, KEY + KEY_INODE) == 0 {
            continue;
        }
        let key = file_key(&v[KEY..KEY + KEY_SIZE]);
        // posix::fold: the block size of the mount point of the last row that named one.
        let bs = match u32_at(v, ALIGN_KNOWN) {
            0 => 0,
            _ => {
                let mut mount = text_at(v, ALIGN_MOUNT, 64);
                if mount.is_empty() {
                    mount = mounts.get(u32_at(v, ALIGN_MOUNT_ID)).map(|m| m.mount_point.clone()).unwrap_or_default();
                }
                match mount.is_empty() {
                    true => 0,
                    false => *sizes.entry(mount).or_insert_with_key(|m| block_size(m)),
                }
            }
        };
        out.insert(key, record(v, bs, mounts));
    }
    posix::Fold { filesystems: posix::filesystems(&out), files: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `struct ebq_fold_file` as the kernel leaves it, built field by field.
    struct Value(Vec<u8>);

    impl Value {
        fn new() -> Value {
            Value(vec![0; VALUE_SIZE])
        }
        fn u32(&mut self, at: usize, v: u32) -> &mut Self {
            self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
            self
        }
        fn i64(&mut self, at: usize, v: i64) -> &mut Self {
            self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
            self
        }
        fn text(&mut self, at: usize, s: &str) -> &mut Self {
            self.0[at..at + s.len()].copy_from_slice(s.as_bytes());
            self
        }
        fn counter(&mut self, name: &str, v: i64) -> &mut Self {
            let i = COUNTER_NAMES.iter().position(|c| *c == name).expect("a counter");
            self.i64(COUNTERS + 8 * i, v)
        }
        fn fcounter(&mut self, name: &str, v: i64) -> &mut Self {
            let i = FCOUNTER_NAMES.iter().position(|c| *c == name).expect("an fcounter");
            self.i64(FCOUNTERS + 8 * i, v)
        }
        fn common(&mut self, at: usize, used_at: usize, slots: &[(i64, i64)]) -> &mut Self {
            for (i, (v, c)) in slots.iter().enumerate() {
                self.i64(at + 16 * i, *v).i64(at + 16 * i + 8, *c);
            }
            self.u32(used_at, slots.len() as u32)
        }
    }

    /// An array entry: its index (unread) and the record `v` naming its file.
    fn slot(major: u32, minor: u32, inode: u64, mut v: Value) -> (Vec<u8>, Vec<u8>) {
        v.0[KEY..KEY + KEY_SIZE].copy_from_slice(&key(major, minor, inode));
        (vec![0; 4], v.0)
    }

    fn key(major: u32, minor: u32, inode: u64) -> Vec<u8> {
        let mut k = vec![0; KEY_SIZE];
        k[..4].copy_from_slice(&(major << 20 | minor).to_ne_bytes());
        k[8..].copy_from_slice(&inode.to_ne_bytes());
        k
    }

    /// A file read 4 times (at 0, 512, 4096 and 8193) and written once (at
    /// 3), after an open, on ext4 mounted at /data.
    fn file() -> Value {
        let mut v = Value::new();
        v.text(NAME, "f.dat").text(FS_TYPE, "ext4").text(MOUNT_POINT, "/data");
        v.u32(ALIGN_KNOWN, 1).text(ALIGN_MOUNT, "/data");
        v.counter("POSIX_OPENS", 1).counter("POSIX_READS", 4).counter("POSIX_WRITES", 1);
        v.counter("POSIX_BYTES_READ", 4000).counter("EBQ_ERRORS", 2).counter("POSIX_MAX_WRITE_TIME_SIZE", 7);
        // per_path: io_uring (1) reads, aio (2) bytes written.
        v.i64(PER_PATH + 8 * 5, 3).i64(PER_PATH + 8 * (2 * 5 + 3), 7);
        // POSIX_SIZE_READ_100_1K: 4; POSIX_SIZE_WRITE_0_100: 1.
        v.i64(SIZE + 8, 4).i64(SIZE + 8 * 10, 1);
        v.fcounter("POSIX_F_OPEN_START_TIMESTAMP", 100).fcounter("POSIX_F_READ_TIME", 55);
        v.fcounter("POSIX_F_MAX_WRITE_TIME", 9);
        // Offsets by trailing zeros: 3 and 8193 (0), 512 (9), 4096 (12), 0 (slot 64).
        v.i64(ALIGN, 2).i64(ALIGN + 8 * 9, 1).i64(ALIGN + 8 * 12, 1).i64(ALIGN + 8 * 64, 1);
        // Access sizes (0 takes a slot but is never shown) and strides.
        v.common(ACCESS, ACCESS_USED, &[(1000, 3), (0, 5), (7, 1), (100, 1), (3, 3), (9, 1)]);
        v.common(STRIDE, STRIDE_USED, &[(0, 4), (511, 1)]);
        v
    }

    #[test]
    fn a_files_value_becomes_its_record() {
        let mut asked = vec![];
        let fold = records(&[slot(8, 1, 12, file())], &mut Mounts::default(), &mut |m: &str| {
            asked.push(m.to_string());
            4096
        });
        assert_eq!(asked, ["/data"]);
        let (k, f) = fold.files.iter().next().unwrap();
        assert_eq!(*k, FileKey { dev_major: 8, dev_minor: 1, inode: 12 });
        assert_eq!((f.name.as_str(), f.fs_type.as_str(), f.mount_point.as_str()), ("f.dat", "ext4", "/data"));
        let c = f.all_counters();
        let want = [
            ("POSIX_OPENS", 1),
            ("POSIX_READS", 4),
            ("POSIX_WRITES", 1),
            ("POSIX_BYTES_READ", 4000),
            ("POSIX_MAX_WRITE_TIME_SIZE", 7),
            ("EBQ_ERRORS", 2),
            ("EBQ_IO_URING_READS", 3),
            ("EBQ_AIO_BYTES_WRITTEN", 7),
            ("EBQ_SYSCALL_READS", 0),
            ("POSIX_SIZE_READ_100_1K", 4),
            ("POSIX_SIZE_WRITE_0_100", 1),
            ("POSIX_SIZE_READ_0_100", 0),
            // 3, 8193 and 512 are not multiples of 4096; 4096 and 0 are.
            ("POSIX_FILE_NOT_ALIGNED", 3),
            ("POSIX_FILE_ALIGNMENT", 4096),
            ("POSIX_MEM_ALIGNMENT", 8),
            // Count, then value, descending; 0 left out.
            ("POSIX_ACCESS1_ACCESS", 1000),
            ("POSIX_ACCESS1_COUNT", 3),
            ("POSIX_ACCESS2_ACCESS", 3),
            ("POSIX_ACCESS2_COUNT", 3),
            ("POSIX_ACCESS3_ACCESS", 100),
            ("POSIX_ACCESS4_ACCESS", 9),
            ("POSIX_ACCESS4_COUNT", 1),
            ("POSIX_STRIDE1_STRIDE", 511),
            ("POSIX_STRIDE1_COUNT", 1),
            ("POSIX_STRIDE2_STRIDE", 0),
            ("POSIX_STRIDE2_COUNT", 0),
        ];
        for (name, v) in want {
            assert_eq!(c[name], v, "{name}");
        }
        // Every counter posix.rs has, and no other.
        let fresh = Record::new("", "", "").all_counters();
        assert!(c.keys().eq(fresh.keys()));
        assert_eq!(f.fcounters["POSIX_F_OPEN_START_TIMESTAMP"], 100);
        assert_eq!(f.fcounters["POSIX_F_READ_TIME"], 55);
        assert_eq!(f.fcounters["POSIX_F_MAX_WRITE_TIME"], 9);
        assert_eq!(f.fcounters.len(), posix::FCOUNTERS.len());
        assert_eq!(f.files, 1);
    }

    #[test]
    fn file_alignment_needs_a_known_power_of_two_block_size() {
        let v = file().0;
        for (bs, want) in [(4096, 3), (512, 2), (1, 0), (1 << 20, 4), (-1, 0), (0, 0), (3000, 0)] {
            assert_eq!(not_aligned(&v, bs), want, "{bs}");
        }
        // No row named a mount point: no block size, no alignment counted.
        let mut v = file();
        v.u32(ALIGN_KNOWN, 0);
        let fold =
            records(&[slot(8, 1, 12, v)], &mut Mounts::default(), &mut |_| panic!("no mount point to ask about"));
        let f = fold.files.values().next().unwrap();
        assert_eq!((f.get("POSIX_FILE_ALIGNMENT"), f.get("POSIX_FILE_NOT_ALIGNED")), (0, 0));
    }

    #[test]
    fn files_of_one_file_system_are_merged() {
        let mut other = file();
        other.text(NAME, "g.dat").counter("POSIX_READS", 6);
        other.common(ACCESS, ACCESS_USED, &[(7, 10)]);
        let mut elsewhere = Value::new();
        elsewhere.text(NAME, "h").text(FS_TYPE, "tmpfs").text(MOUNT_POINT, "/tmp");
        let mut calls = 0;
        let fold = records(
            &[slot(8, 1, 12, file()), slot(8, 1, 13, other), slot(0, 40, 5, elsewhere)],
            &mut Mounts::default(),
            &mut |_| {
                calls += 1;
                4096
            },
        );
        assert_eq!(calls, 1, "one statfs per mount point");
        assert_eq!(fold.files.len(), 3);
        let data = &fold.filesystems[&("ext4".to_string(), "/data".to_string())];
        assert_eq!((data.files, data.get("POSIX_READS"), data.get("POSIX_FILE_NOT_ALIGNED")), (2, 10, 6));
        // merge sums the files' top fours: f.dat's one 7 was not in its top four.
        assert_eq!(data.access[0], (7, 10));
        assert_eq!(fold.filesystems[&("tmpfs".to_string(), "/tmp".to_string())].files, 1);
    }

    /// The array's free slots (and one a CPU took for a file another CPU's slot named first) name no file.
    #[test]
    fn a_slot_of_inode_0_is_no_file() {
        let fold =
            records(&[(vec![0; 4], Value::new().0), slot(8, 1, 12, file())], &mut Mounts::default(), &mut |_| 4096);
        assert_eq!(fold.files.keys().copied().collect::<Vec<_>>(), [FileKey::of_kernel_dev(8 << 20 | 1, 12)]);
    }

    /// A system call's file: no strings in the kernel, its mount by id, named from mountinfo.
    #[test]
    fn a_file_seen_by_mount_id_is_named_from_the_mount_table() {
        let mut v = Value::new();
        v.text(NAME, "x.dat").u32(MOUNT_ID, 31).u32(ALIGN_KNOWN, 1).u32(ALIGN_MOUNT_ID, 31);
        let mut mounts = Mounts::parsed("31 22 0:26 / /dev/shm rw shared:4 - tmpfs tmpfs rw\n");
        let mut asked = vec![];
        let fold = records(&[slot(0, 26, 7, v)], &mut mounts, &mut |m: &str| {
            asked.push(m.to_string());
            4096
        });
        let r = fold.files.values().next().unwrap();
        assert_eq!((r.fs_type.as_str(), r.mount_point.as_str()), ("tmpfs", "/dev/shm"));
        assert_eq!(r.get("POSIX_FILE_ALIGNMENT"), 4096);
        assert_eq!(asked, ["/dev/shm"]);
    }

    #[test]
    fn totals_sum_over_cpus() {
        let cpu = |x: [u64; 6]| x.iter().flat_map(|x| x.to_ne_bytes()).collect();
        let t = totals(&[cpu([1, 2, 3, 4, 5, 6]), cpu([10, 20, 30, 40, 50, 60])]);
        let want = Totals {
            operations: 11,
            aio_submitted: 22,
            aio_counted: 33,
            no_file: 44,
            inside_stdio: 55,
            past_files: 66,
        };
        assert_eq!(t, want);
    }

    #[test]
    fn an_fdopen_entry_is_its_thread_descriptor_time_and_file() {
        let k: Vec<u8> =
            [7u32.to_ne_bytes(), (-1i32).to_ne_bytes()].concat().into_iter().chain(99u64.to_ne_bytes()).collect();
        let v = key(8, 1, 12);
        let got = fdopens(&[(k.clone(), v), (k, vec![0; 3])]);
        let file = FileKey { dev_major: 8, dev_minor: 1, inode: 12 };
        assert_eq!(got, [Fdopen { tid: 7, fd: -1, time_ns: 99, file }], "the short value is skipped");
    }
}

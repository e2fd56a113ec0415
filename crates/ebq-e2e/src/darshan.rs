//! `darshan`: a workload of known POSIX calls that prints its own tally under
//! Darshan's POSIX rules (darshan-runtime `lib/darshan-posix.c`,
//! `darshan-common.h`), for `ebq report io` to be compared against.
//!
//! Per `--files` path: open (create, truncate); read/write/pread/pwrite of
//! every size-bucket boundary (0, 1, 100, 101, 1024, 1025, … 2^30, 2^30+1
//! bytes), some from buffers off 8-byte alignment; lseek; fsync; fdatasync;
//! two failing calls (pread at offset -1, lseek with whence 99: EINVAL); a
//! short and an empty read at EOF; close; a reopen with a write and a pread;
//! close. `--side-files` get the same without the four sizes ≥ 100 MiB.
//!
//! The tally is this program's own bookkeeping: Darshan's offset tracking
//! (0 at open, the lseek result, offset + bytes after read()/write()), the
//! bytes each call returned, and its buffer address. It is printed per file
//! (with dev and inode) and per file system (by st_dev), plus, per float
//! timestamp, the CLOCK_MONOTONIC bracket [before, after] of the call that
//! sets it and the user-side time sums, which bound what the kernel can see.

use super::{emit_report, os_err, set_comm, Error};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;

const SMALL: [i64; 16] = [
    0,
    1,
    100,
    101,
    1024,
    1025,
    10240,
    10241,
    102400,
    102401,
    1 << 20,
    (1 << 20) + 1,
    4 << 20,
    (4 << 20) + 1,
    10 << 20,
    (10 << 20) + 1,
];
const BIG: [i64; 4] = [100 << 20, (100 << 20) + 1, 1 << 30, (1 << 30) + 1];
/// Darshan's size buckets, as `ebq report io` defines them (a file that imports nothing).
#[path = "../../ebq-report/src/buckets.rs"]
mod buckets;
use buckets::{bucket, BUCKETS};
const MEM_ALIGNMENT: i64 = 8;

/// `darshan --files P1,...,PK [--side-files Q1,...] [--comm NAME] [--report FILE]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct DarshanCfg {
    /// The files that get every size up to 2^30 + 1 bytes.
    #[arg(long, required = true, value_delimiter = ',', action = clap::ArgAction::Set)]
    files: Vec<String>,
    /// The files that stop at 10 MiB + 1 bytes.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set)]
    side_files: Vec<String>,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Io {
    Read,
    Write,
}

/// One file's Darshan record and the state Darshan keeps beside it.
#[derive(Default, Clone)]
struct Tally {
    c: BTreeMap<String, i64>,
    access: BTreeMap<i64, i64>,
    stride: BTreeMap<i64, i64>,
    /// [before, after] of the call that set each timestamp.
    brackets: BTreeMap<&'static str, (i64, i64)>,
    /// User-side sums of read, write and meta time, and the slowest read/write.
    user_ns: BTreeMap<&'static str, i64>,
    offset: i64,
    last_byte_read: i64,
    last_byte_written: i64,
    last_io: Option<u8>,
    dev: (u32, u32),
    inode: u64,
    /// Every call on the file, failed ones included (the trace's rows).
    calls: u64,
    /// The bytes each read and write returned, by the counter that names the
    /// slowest one's size (which call the kernel times slowest is not known here).
    sizes: BTreeMap<&'static str, BTreeSet<i64>>,
}

impl Tally {
    fn inc(&mut self, k: &str, by: i64) {
        *self.c.entry(k.to_string()).or_insert(0) += by;
    }

    fn first(&mut self, k: &'static str, t: (i64, i64)) {
        self.brackets.entry(k).or_insert(t);
    }

    fn user(&mut self, k: &'static str, t: (i64, i64)) {
        *self.user_ns.entry(k).or_insert(0) += t.1 - t.0;
    }

    fn common(map: &mut BTreeMap<i64, i64>, v: i64) {
        let tracked = map.len();
        match map.get_mut(&v) {
            Some(c) => *c += 1,
            None if tracked < 32 => {
                map.insert(v, 1);
            }
            None => {}
        }
    }

    fn open(&mut self, t: (i64, i64)) {
        self.calls += 1;
        self.offset = 0;
        self.last_byte_read = 0;
        self.last_byte_written = 0;
        self.inc("POSIX_OPENS", 1);
        self.first("POSIX_F_OPEN_START_TIMESTAMP", t);
        self.brackets.insert("POSIX_F_OPEN_END_TIMESTAMP", t);
        self.user("POSIX_F_META_TIME", t);
    }

    fn close(&mut self, t: (i64, i64)) {
        self.calls += 1;
        self.last_byte_read = 0;
        self.last_byte_written = 0;
        self.first("POSIX_F_CLOSE_START_TIMESTAMP", t);
        self.brackets.insert("POSIX_F_CLOSE_END_TIMESTAMP", t);
        self.user("POSIX_F_META_TIME", t);
    }

    fn io(&mut self, io: Io, ret: i64, at: Option<i64>, buf: usize, block: i64, t: (i64, i64)) {
        self.calls += 1;
        if ret < 0 {
            self.inc("EBQ_ERRORS", 1);
            return;
        }
        let slowest_size = if io == Io::Read { "POSIX_MAX_READ_TIME_SIZE" } else { "POSIX_MAX_WRITE_TIME_SIZE" };
        self.sizes.entry(slowest_size).or_default().insert(ret);
        let off = at.unwrap_or(self.offset);
        let (r, name) = if io == Io::Read { ("READ", "READS") } else { ("WRITE", "WRITES") };
        let last = if io == Io::Read { self.last_byte_read } else { self.last_byte_written };
        if off > last {
            self.inc(&format!("POSIX_SEQ_{name}"), 1);
        }
        if off == last + 1 {
            self.inc(&format!("POSIX_CONSEC_{name}"), 1);
        }
        let stride = if off > 0 && off > last && last != 0 { off - last - 1 } else { 0 };
        if io == Io::Read {
            self.last_byte_read = off + ret - 1;
        } else {
            self.last_byte_written = off + ret - 1;
        }
        self.offset = off + ret;
        let max = if io == Io::Read { "POSIX_MAX_BYTE_READ" } else { "POSIX_MAX_BYTE_WRITTEN" };
        if self.c.get(max).copied().unwrap_or(0) < off + ret - 1 {
            self.c.insert(max.into(), off + ret - 1);
        }
        self.inc(if io == Io::Read { "POSIX_BYTES_READ" } else { "POSIX_BYTES_WRITTEN" }, ret);
        self.inc(&format!("POSIX_{name}"), 1);
        self.inc(&format!("POSIX_SIZE_{r}_{}", BUCKETS[bucket(ret)]), 1);
        Self::common(&mut self.access, ret);
        Self::common(&mut self.stride, stride);
        if buf as i64 % MEM_ALIGNMENT != 0 {
            self.inc("POSIX_MEM_NOT_ALIGNED", 1);
        }
        if block > 0 && off % block != 0 {
            self.inc("POSIX_FILE_NOT_ALIGNED", 1);
        }
        let code = if io == Io::Read { 1 } else { 2 };
        if self.last_io.is_some_and(|l| l != code) {
            self.inc("POSIX_RW_SWITCHES", 1);
        }
        self.last_io = Some(code);
        if io == Io::Read {
            self.first("POSIX_F_READ_START_TIMESTAMP", t);
            self.brackets.insert("POSIX_F_READ_END_TIMESTAMP", t);
            self.user("POSIX_F_READ_TIME", t);
        } else {
            self.first("POSIX_F_WRITE_START_TIMESTAMP", t);
            self.brackets.insert("POSIX_F_WRITE_END_TIMESTAMP", t);
            self.user("POSIX_F_WRITE_TIME", t);
        }
        let slowest = if io == Io::Read { "POSIX_F_MAX_READ_TIME" } else { "POSIX_F_MAX_WRITE_TIME" };
        let e = self.user_ns.entry(slowest).or_insert(0);
        *e = (*e).max(t.1 - t.0);
    }
}

/// Top four non-zero values: count, then value, descending.
fn top4(values: &BTreeMap<i64, i64>) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = values.iter().filter(|(v, _)| **v != 0).map(|(v, c)| (*v, *c)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    v.truncate(4);
    v
}

/// Common-value slots: (value, count).
type Slots = [(i64, i64)];

/// The record's counters with every name present (zeros included) and the four slots.
fn counters(t: &Tally, slots: (&Slots, &Slots)) -> BTreeMap<String, i64> {
    let mut c = t.c.clone();
    for k in [
        "POSIX_OPENS",
        "POSIX_READS",
        "POSIX_WRITES",
        "POSIX_SEEKS",
        "POSIX_FSYNCS",
        "POSIX_FDSYNCS",
        "POSIX_BYTES_READ",
        "POSIX_BYTES_WRITTEN",
        "POSIX_MAX_BYTE_READ",
        "POSIX_MAX_BYTE_WRITTEN",
        "POSIX_CONSEC_READS",
        "POSIX_CONSEC_WRITES",
        "POSIX_SEQ_READS",
        "POSIX_SEQ_WRITES",
        "POSIX_RW_SWITCHES",
        "POSIX_MEM_NOT_ALIGNED",
        "POSIX_FILE_NOT_ALIGNED",
        "EBQ_ERRORS",
    ] {
        c.entry(k.into()).or_insert(0);
    }
    for b in BUCKETS {
        c.entry(format!("POSIX_SIZE_READ_{b}")).or_insert(0);
        c.entry(format!("POSIX_SIZE_WRITE_{b}")).or_insert(0);
    }
    c.insert("POSIX_MEM_ALIGNMENT".into(), MEM_ALIGNMENT);
    for (kind, list) in [("ACCESS", slots.0), ("STRIDE", slots.1)] {
        for i in 0..4 {
            let (v, n) = list.get(i).copied().unwrap_or((0, 0));
            c.insert(format!("POSIX_{kind}{}_{kind}", i + 1), v);
            c.insert(format!("POSIX_{kind}{}_COUNT", i + 1), n);
        }
    }
    c
}

/// The workload's calls on one file, each tallied as it returns.
struct Run {
    buf: *mut u8,
}

fn ret_of(r: isize) -> i64 {
    if r < 0 {
        -i64::from(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        r as i64
    }
}

impl Run {
    fn timed<T>(f: impl FnOnce() -> T) -> (T, (i64, i64)) {
        let t1 = crate::monotonic_ns() as i64;
        let r = f();
        (r, (t1, crate::monotonic_ns() as i64))
    }

    /// The buffer at the mapping's start, or one byte past it (misaligned).
    fn buf(&self, misaligned: bool) -> *mut u8 {
        self.buf.wrapping_add(misaligned as usize)
    }

    /// `path` opened with `flags`, the call tallied as Darshan's open.
    fn open(&self, path: &str, flags: i32, t: &mut Tally) -> Result<OpenFile<'_>, Error> {
        let c = CString::new(path).map_err(|_| Error::Usage("path contains NUL".into()))?;
        // SAFETY: c is NUL-terminated.
        let (fd, tm) = Self::timed(|| unsafe { libc::open(c.as_ptr(), flags, 0o644) });
        if fd < 0 {
            return Err(os_err(&format!("open {path}")));
        }
        t.open(tm);
        // SAFETY: fstatfs fills a zeroed plain struct for an open fd.
        let block = unsafe {
            let mut sfs: libc::statfs = std::mem::zeroed();
            libc::fstatfs(fd, &mut sfs);
            sfs.f_bsize
        };
        Ok(OpenFile { run: self, fd, block })
    }

    /// The file's calls, each tallied as Darshan counts it: small writes and
    /// reads (every other one positioned, some buffers misaligned), the big
    /// ones with `big`, both syncs, two failing calls, a short and an empty
    /// read, then a reopen (Darshan starts sequentiality over).
    fn file(&self, path: &str, big: bool, t: &mut Tally) -> Result<(), Error> {
        let f = self.open(path, libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC, t)?;
        let st = f.stat();
        t.dev = (libc::major(st.st_dev), libc::minor(st.st_dev));
        t.inode = st.st_ino;
        t.c.insert("POSIX_FILE_ALIGNMENT".into(), f.block);
        f.small_and_big(t, big);
        f.syncs(t)?;
        // The two failing calls.
        f.read(t, 16, Some(-1), self.buf(false));
        f.seek(t, 0, 99);
        // A short read (1000 of 4096 bytes) and an empty one at EOF.
        f.seek(t, f.stat().st_size - 1000, libc::SEEK_SET);
        f.read(t, 4096, None, self.buf(false));
        f.read(t, 4096, None, self.buf(false));
        f.close(t);
        let f = self.open(path, libc::O_RDWR, t)?;
        f.write(t, 4096, None, self.buf(true));
        f.read(t, 100, Some(8192), self.buf(false));
        f.close(t);
        Ok(())
    }
}

/// A file [`Run::file`] has open: its calls, each timed and tallied.
struct OpenFile<'a> {
    run: &'a Run,
    fd: i32,
    /// The file system's block size (Darshan's file alignment).
    block: i64,
}

impl OpenFile<'_> {
    fn stat(&self) -> libc::stat {
        // SAFETY: fstat fills a zeroed plain struct for an open fd.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            libc::fstat(self.fd, &mut st);
            st
        }
    }

    /// `read` (at the file position) or `pread` (at `at`) of `n` bytes into `b`.
    fn read(&self, t: &mut Tally, n: i64, at: Option<i64>, b: *mut u8) {
        // SAFETY: b points into the mapping, which holds 2^30 + 64 bytes.
        let (r, tm) = Run::timed(|| unsafe {
            match at {
                Some(o) => libc::pread(self.fd, b.cast(), n as usize, o),
                None => libc::read(self.fd, b.cast(), n as usize),
            }
        });
        t.io(Io::Read, ret_of(r), at, b as usize, self.block, tm);
    }

    /// `write` or `pwrite`, as [`OpenFile::read`].
    fn write(&self, t: &mut Tally, n: i64, at: Option<i64>, b: *mut u8) {
        // SAFETY: as for read.
        let (r, tm) = Run::timed(|| unsafe {
            match at {
                Some(o) => libc::pwrite(self.fd, b.cast(), n as usize, o),
                None => libc::write(self.fd, b.cast(), n as usize),
            }
        });
        t.io(Io::Write, ret_of(r), at, b as usize, self.block, tm);
    }

    fn seek(&self, t: &mut Tally, off: i64, whence: i32) {
        // SAFETY: lseek on our fd.
        let (r, tm) = Run::timed(|| unsafe { libc::lseek(self.fd, off, whence) });
        t.calls += 1;
        if r < 0 {
            t.inc("EBQ_ERRORS", 1);
        } else {
            t.offset = r;
            t.inc("POSIX_SEEKS", 1);
            t.user("POSIX_F_META_TIME", tm);
        }
    }

    /// Writes: write() at the offset, pwrite() 512 bytes past it (a stride),
    /// every third buffer misaligned; then from offset 0 the reads alike
    /// (pread 4096 past it); each followed by the big ones with `big`.
    fn small_and_big(&self, t: &mut Tally, big: bool) {
        let buf = |misaligned| self.run.buf(misaligned);
        for (i, n) in SMALL.iter().enumerate() {
            let at = (i % 2 == 1).then(|| t.offset + 512);
            self.write(t, *n, at, buf(i % 3 == 1));
        }
        for n in BIG.iter().filter(|_| big) {
            self.write(t, *n, Some(0), buf(false));
        }
        self.seek(t, 0, libc::SEEK_SET);
        for (i, n) in SMALL.iter().enumerate() {
            let at = (i % 2 == 1).then(|| t.offset + 4096);
            self.read(t, *n, at, buf(i % 3 == 2));
        }
        for n in BIG.iter().filter(|_| big) {
            self.read(t, *n, Some(0), buf(false));
        }
    }

    /// fsync, then fdatasync.
    fn syncs(&self, t: &mut Tally) -> Result<(), Error> {
        for (name, f) in
            [("POSIX_FSYNCS", libc::fsync as unsafe extern "C" fn(i32) -> i32), ("POSIX_FDSYNCS", libc::fdatasync)]
        {
            // SAFETY: fsync/fdatasync on our fd.
            let (r, tm) = Run::timed(|| unsafe { f(self.fd) });
            if r < 0 {
                return Err(os_err(name));
            }
            t.calls += 1;
            t.inc(name, 1);
            t.user("POSIX_F_WRITE_TIME", tm);
        }
        Ok(())
    }

    fn close(self, t: &mut Tally) {
        // SAFETY: closing our fd once (self is consumed).
        let (_, tm) = Run::timed(|| unsafe { libc::close(self.fd) });
        t.close(tm);
    }
}

pub(crate) fn run_darshan(cfg: &DarshanCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let len = (1usize << 30) + 64;
    // SAFETY: a private anonymous mapping; untouched pages read as zeros.
    let buf = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if buf == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    let run = Run { buf: buf.cast() };
    let mut tallies: Vec<(String, Tally)> = vec![];
    for (path, big) in cfg.files.iter().map(|p| (p, true)).chain(cfg.side_files.iter().map(|p| (p, false))) {
        let mut t = Tally::default();
        run.file(path, big, &mut t)?;
        tallies.push((path.clone(), t));
    }
    // SAFETY: unmapping the mapping made above.
    unsafe { libc::munmap(buf, len) };
    emit_report(cfg.report.as_deref(), &report(&tallies))
}

/// The report: each file's record, then each file system's (by st_dev).
fn report(tallies: &[(String, Tally)]) -> Value {
    let mut files = vec![];
    let mut fs: BTreeMap<(u32, u32), Vec<&(String, Tally)>> = BTreeMap::new();
    for entry in tallies {
        let (path, t) = entry;
        let (a, s) = (top4(&t.access), top4(&t.stride));
        files.push(json!({
            "path": path,
            "dev": format!("{}:{}", t.dev.0, t.dev.1),
            "inode": t.inode,
            "calls": t.calls,
            "counters": counters(t, (&a, &s)),
            "sizes": t.sizes,
            "brackets": t.brackets,
            "user_ns": t.user_ns,
        }));
        fs.entry(t.dev).or_default().push(entry);
    }
    let systems: Vec<Value> = fs.into_iter().map(|(dev, members)| filesystem(dev, &members)).collect();
    json!({"pid": std::process::id(), "files": files, "filesystems": systems})
}

/// One file system's record: sums, except the byte maxima (largest) and the
/// alignments (the same); common values: each file's four slots summed by
/// value, then the top four again.
fn filesystem(dev: (u32, u32), members: &[&(String, Tally)]) -> Value {
    let mut sum: BTreeMap<String, i64> = BTreeMap::new();
    let (mut access, mut stride) = (BTreeMap::new(), BTreeMap::new());
    let mut sizes: BTreeMap<&'static str, BTreeSet<i64>> = BTreeMap::new();
    for (_, t) in members {
        for (k, v) in &t.sizes {
            sizes.entry(k).or_default().extend(v);
        }
        let (a, s) = (top4(&t.access), top4(&t.stride));
        for (k, v) in counters(t, (&a, &s)) {
            if k.starts_with("POSIX_ACCESS") || k.starts_with("POSIX_STRIDE") {
                continue;
            }
            let e = sum.entry(k.clone()).or_insert(0);
            match k.as_str() {
                "POSIX_MAX_BYTE_READ" | "POSIX_MAX_BYTE_WRITTEN" => *e = (*e).max(v),
                "POSIX_FILE_ALIGNMENT" | "POSIX_MEM_ALIGNMENT" => *e = v,
                _ => *e += v,
            }
        }
        for (v, c) in a {
            *access.entry(v).or_insert(0) += c;
        }
        for (v, c) in s {
            *stride.entry(v).or_insert(0) += c;
        }
    }
    let t = Tally { c: sum, ..Tally::default() };
    let paths: Vec<&str> = members.iter().map(|(p, _)| p.as_str()).collect();
    json!({
        "dev": format!("{}:{}", dev.0, dev.1),
        "paths": paths,
        "counters": counters(&t, (&top4(&access), &top4(&stride))),
        "sizes": sizes,
    })
}
